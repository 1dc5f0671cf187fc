//! The phase table's CPU floor (`scripts/bench/phases.py`, `scripts/bench/phases.sh`, `skillshift bench
//! floors`): on a small span log whose answer is known, each row's CPU floor is its count times the floor's
//! machine CPU (a settle by whether it navigated, an action by whether it sent input) and the grid's floor is
//! their sum; and end to end, a real sweep in real headless Chromium and the real floors make the table with
//! every column filled; and the machine's CPU sampled through a sweep is given to the phases open at each moment.

#[path = "support/cli.rs"]
mod cli;

use std::process::Command;

fn phases(args: &[&str]) -> (bool, String, String) {
    let out = Command::new("python3")
        .arg(cli::root().join("scripts/bench/phases.py"))
        .args(args)
        .output()
        .expect("run phases.py");
    (out.status.success(), cli::stdout(&out), cli::stderr(&out))
}

/// One span log line.
fn span(name: &str, id: u64, parent: u64, start: u64, wall: u64, fields: &str) -> String {
    format!(
        r#"{{"name":"{name}","id":{id},"parent":{parent},"start_us":{start},"wall_us":{wall},"entered_us":{start},"busy_us":{wall},"fields":{{{fields}}}}}"#
    )
}

#[test]
fn each_rows_cpu_floor_is_its_count_times_the_floor_and_the_grid_sums_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    // One attempt: a start page (its settle inside), an observation, a click that navigated, a tab switch,
    // a skill whose locate found its target and whose settle stayed on the page, a screenshot. Children
    // close before their parents, so they come first.
    let lines = [
        span("settle", 2, 1, 10, 5, r#""navigated":"true""#),
        span("start", 1, 10, 10, 10, ""),
        span("observe", 3, 10, 20, 5, ""),
        span("settle", 5, 4, 30, 5, r#""navigated":"true""#),
        span("act", 4, 10, 25, 10, r#""kind":"click""#),
        span("act", 6, 10, 35, 2, r#""kind":"tab_focus""#),
        span("locate", 8, 7, 40, 3, ""),
        span("settle", 9, 7, 45, 2, r#""navigated":"false""#),
        span("skill", 7, 10, 40, 10, ""),
        span("screenshot", 11, 10, 50, 5, ""),
        span("run", 10, 0, 0, 60, ""),
    ];
    let log = dir.path().join("spans.jsonl");
    std::fs::write(&log, lines.join("\n")).expect("write the span log");
    let floors = dir.path().join("floors.json");
    let cpu = |p50: f64, cpu: f64| format!(r#"{{"what": "w", "n": 1, "p50": {p50}, "p90": {p50}, "cpu_ms": {cpu}}}"#);
    let doc = format!(
        r#"{{"rounds": 1, "pages": [], "cores": 2, "idle_cores": 0.01, "floors": {{"attempt_frame": {}, "navigate": {},
        "round_trip": {}, "observe": {}, "click": {}, "query": {}, "screenshot": {}}}}}"#,
        cpu(30.0, 100.0),
        cpu(15.0, 40.0),
        cpu(0.3, 1.0),
        cpu(5.0, 8.0),
        cpu(16.0, 2.0),
        cpu(7.0, 6.0),
        cpu(44.0, 30.0),
    );
    std::fs::write(&floors, doc).expect("write the floors");
    let args = [log.to_str().expect("utf-8"), "--slots", "1", "--wall", "0.0001", "--cpu", "0.5"];
    let (ok, out, err) = phases(&[&args[..], &["--floors", floors.to_str().expect("utf-8")]].concat());
    assert!(ok, "{err}");
    // ms: the frame 100; observe 8; the click 2 (the tab switch sent no input); its settle, a navigation, 40;
    // the skill's input 2; its locate 6; its settle stayed, one question, 1; the screenshot 30. Sum 189.
    for row in [
        "| start page (navigate, settle to the load) | 0.0 | 10.0% | 1 | 0.0 |  | 0.1 |",
        "| act (primitive actions) | 0.0 | 7.0% | 2 (1 with input) | 0.0 | 16.0 | 0.0 |",
        "| act: settle (a click's navigation, if any) | 0.0 | 5.0% | 1 (1 new documents) | 0.0 | 15.0 | 0.0 |",
        "| skill: settle (a click's navigation) | 0.0 | 2.0% | 1 (0 new documents) | 0.0 | 15.0 | 0.0 |",
    ] {
        assert!(out.contains(row), "{row} missing:\n{out}");
    }
    assert!(
        out.contains("the grid's CPU floor: 0.2 CPU-s; on 2 cores, no less than 0.1 s of wall time; the sweep used 0.5 CPU-s of the machine, 2.65 times the floor"),
        "{out}"
    );
    let (ok, json, err) = phases(&[&args[..], &["--floors", floors.to_str().expect("utf-8"), "--json"]].concat());
    assert!(ok, "{err}");
    let t: serde_json::Value = serde_json::from_str(&json).expect("phases.py --json");
    let floor = t["grid_floor"]["cpu_floor_s"].as_f64().expect("the grid's CPU floor");
    assert!((floor - 0.189).abs() < 1e-9, "100 + 8 + 2 + 40 + 2 + 6 + 1 + 30 ms: {floor}");
    let row = |phase: &str| {
        let rows = t["rows"].as_array().expect("rows");
        let r = rows.iter().find(|r| r["phase"].as_str().is_some_and(|p| p.starts_with(phase))).expect("the row");
        r["cpu_floor_s"].as_f64().expect("a CPU floor")
    };
    for (phase, want) in [("act (", 0.002), ("act: settle", 0.040), ("skill: settle", 0.001), ("skill: locate", 0.006)]
    {
        assert!((row(phase) - want).abs() < 1e-9, "{phase}: {} against {want}", row(phase));
    }

    // Without a floor's CPU the grid's floor is not given; a floors file that is not one is named.
    std::fs::write(&floors, r#"{"floors": {"navigate": {"p50": 15.0}}}"#).expect("write");
    let (ok, out, err) = phases(&[&args[..], &["--floors", floors.to_str().expect("utf-8")]].concat());
    assert!(ok, "{err}");
    assert!(!out.contains("CPU floor:"), "{out}");
    std::fs::write(&floors, "[1, 2]").expect("write");
    let (ok, _, err) = phases(&[&args[..], &["--floors", floors.to_str().expect("utf-8")]].concat());
    assert!(!ok && err.contains("floors.json") && err.lines().count() == 1, "{err}");
}

#[test]
fn each_rows_cpu_in_the_sweep_is_the_machines_sampled_cpu_over_its_own_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    // One attempt on the log's clock (ms): a start page 0-20 (its settle 10-20), an observation 20-40, the run's
    // own 40-50; the log opened at 1 s on the monotonic clock.
    let lines = [
        r#"{"epoch":{"clock":"monotonic","us":1000000}}"#.to_string(),
        span("settle", 2, 1, 10_000, 10_000, r#""navigated":"true""#),
        span("start", 1, 10, 0, 20_000, ""),
        span("observe", 3, 10, 20_000, 20_000, ""),
        span("run", 10, 0, 0, 50_000, ""),
    ];
    let log = dir.path().join("spans.jsonl");
    std::fs::write(&log, lines.join("\n")).expect("write the span log");
    // 100 ticks a second. Idle: 50 ticks over 1 s, half a core. Then the sweep's samples (log ms: busy ticks
    // since the last): 0; 10: 2; 20: 3; 30: 2; 40: 2; 55: 3; 60: 2.
    let mut samples = vec![
        r#"{"clock": "monotonic", "hz": 100, "every_ms": 10, "idle_s": 1}"#.to_string(),
        "0 0 0".into(),
        "1000000 50 200".into(),
        "start".into(),
    ];
    let mut busy = 50;
    for (ms, ticks) in [(0, 0), (10, 2), (20, 3), (30, 2), (40, 2), (55, 3), (60, 2)] {
        busy += ticks;
        samples.push(format!("{} {busy} 0", 1_000_000 + ms * 1_000));
    }
    let sampled = dir.path().join("samples.txt");
    std::fs::write(&sampled, samples.join("\n")).expect("write the samples");
    let floors = dir.path().join("floors.json");
    std::fs::write(
        &floors,
        r#"{"cores": 2, "floors": {"attempt_frame": {"p50": 1, "cpu_ms": 20}, "observe": {"p50": 1, "cpu_ms": 10},
        "navigate": {"p50": 1, "cpu_ms": 5}, "round_trip": {"p50": 1, "cpu_ms": 1}, "click": {"p50": 1, "cpu_ms": 1},
        "query": {"p50": 1, "cpu_ms": 1}, "screenshot": {"p50": 1, "cpu_ms": 1}}}"#,
    )
    .expect("write the floors");
    let base = [log.to_str().expect("utf-8"), "--slots", "1", "--wall", "0.06"];
    let with = ["--floors", floors.to_str().expect("utf-8"), "--cpu-samples", sampled.to_str().expect("utf-8")];
    let (ok, json, err) = phases(&[&base[..], &with[..], &["--json"]].concat());
    assert!(ok, "{err}");
    let t: serde_json::Value = serde_json::from_str(&json).expect("phases.py --json");
    let cpu = |phase: &str| {
        let rows = t["rows"].as_array().expect("rows");
        let r = rows.iter().find(|r| r["phase"].as_str().is_some_and(|p| p.starts_with(phase))).expect("the row");
        r["cpu_s"].as_f64().expect("a row's CPU")
    };
    // Each interval's CPU less half a core: 15, 25, 15, 15, 22.5 (40-55: two thirds the run's own, a third no
    // attempt), 17.5 ms.
    for (phase, want) in [("start page", 0.040), ("observe", 0.030), ("run, rest", 0.015), ("queue wait", 0.025)] {
        assert!((cpu(phase) - want).abs() < 1e-9, "{phase}: {} against {want}: {json}", cpu(phase));
    }
    let by = &t["cpu_by_phase"];
    assert!((by["idle_cores"].as_f64().expect("idle") - 0.5).abs() < 1e-9, "{by}");
    assert!((by["sampled_s"].as_f64().expect("sampled") - 0.110).abs() < 1e-9, "every tick given out: {by}");
    assert!((by["rows_s"].as_f64().expect("rows") - 0.110).abs() < 1e-9, "{by}");
    let (ok, out, err) = phases(&[&base[..], &with[..]].concat());
    assert!(ok, "{err}");
    assert!(out.contains("| CPU in the sweep, CPU-s | sweep / floor |"), "{out}");
    // The observation used 30 ms against its floor's 10; the frame 40 against 20.
    assert!(out.contains("| observe | 0.0 | 33.3% | 1 | 20.0 | 1.0 | 0.0 | 0.0 | 3.00 |"), "{out}");
    assert!(out.contains("start page, checkin) 0.0 CPU-s, 2.00 times their floor"), "{out}");

    // A log with no epoch cannot be set against samples; a samples file that is not one is named. One line each.
    let old = dir.path().join("old.jsonl");
    std::fs::write(&old, lines[1..].join("\n")).expect("write");
    let (ok, _, err) =
        phases(&[&[old.to_str().expect("utf-8"), "--slots", "1", "--wall", "0.06"][..], &with[..]].concat());
    assert!(!ok && err.contains("old.jsonl") && err.contains("epoch") && err.lines().count() == 1, "{err}");
    std::fs::write(&sampled, "not json\n").expect("write");
    let (ok, _, err) = phases(&[&base[..], &with[..]].concat());
    assert!(!ok && err.contains("samples.txt") && err.lines().count() == 1, "{err}");
}

#[test]
fn a_real_sweep_and_the_real_floors_fill_the_table_and_the_grids_floor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let families = dir.path().join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0, 11, 23, 34]}}}"#).expect("families");
    let out_dir = dir.path().join("phases");
    let out = Command::new("bash")
        .current_dir(cli::root())
        .arg("scripts/bench/phases.sh")
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_skillshift"))
        .args(["--floor-rounds", "2", "--cpu-by-phase", "--out"])
        .arg(&out_dir)
        .args(["--", "--workers", "1", "--sites", "gitlab", "--screenshots", "none", "--families"])
        .arg(&families)
        .output()
        .expect("run phases.sh");
    assert!(out.status.success(), "{}", cli::stderr(&out));
    let table = std::fs::read_to_string(out_dir.join("table.md")).expect("the table");
    // The slots are the workers the sweep says it ran on (its "units on W workers" line) times the slots each.
    assert!(table.starts_with("24 attempts;") && table.contains(" x 1 slots = "), "{table}");
    assert!(table.contains("new documents)") && table.contains("with input)"), "{table}");
    assert!(table.contains("the grid's CPU floor: ") && table.contains("the sweep used "), "{table}");
    // The machine's CPU, sampled through the sweep, given to the rows: most of it, and no row's share negative
    // beyond the ticks' coarseness.
    let json = phases(&[
        out_dir.join("spans.jsonl").to_str().expect("utf-8"),
        "--slots",
        "1",
        "--wall",
        "1",
        "--floors",
        out_dir.join("floors.json").to_str().expect("utf-8"),
        "--cpu-samples",
        out_dir.join("cpu_samples.txt").to_str().expect("utf-8"),
        "--json",
    ]);
    assert!(json.0, "{}", json.2);
    let t: serde_json::Value = serde_json::from_str(&json.1).expect("phases.py --json");
    let by = &t["cpu_by_phase"];
    let (sampled, rows) = (by["sampled_s"].as_f64().expect("sampled"), by["rows_s"].as_f64().expect("rows"));
    assert!(sampled > 0.5 && (rows - sampled).abs() < 1e-6, "every interval given out: {by}");
    assert!(by["frame_s"].as_f64().is_some_and(|f| f > 0.0) && by["frame_floor_s"].as_f64().is_some(), "{by}");
    assert!(table.contains("CPU in the sweep, CPU-s") && table.contains("CPU by phase: "), "{table}");

    let floors: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("floors.json")).expect("floors.json"))
            .expect("floors.json is JSON");
    assert!(floors["idle_cores"].as_f64().is_some(), "{floors}");
    let keys = ["attempt_frame", "checkout_cycle", "context_cycle", "navigate", "observe", "observe_new", "query"];
    for key in keys.into_iter().chain(["round_trip", "click", "screenshot"]) {
        let cpu = floors["floors"][key]["cpu_ms"].as_f64();
        assert!(cpu.is_some_and(|c| c.is_finite() && c >= 0.0), "{key}: {floors}");
    }
    assert_eq!(floors["floors"]["attempt_frame"]["n"], 12, "2 rounds over the six start pages: {floors}");
    assert_eq!(floors["floors"]["checkout_cycle"]["n"], 12, "{floors}");
}

#[test]
fn the_floors_refuse_no_rounds_and_the_tasks_pages_are_each_site_versions_own() {
    let err = cli::refused(&cli::skillshift(&["bench", "floors", "--rounds", "0"]));
    assert!(err.contains("--rounds"), "{err}");
    // The tasks' pages: each site-version's distinct start and checked pages, as paths of its own.
    for site in skillshift_common::Site::ALL {
        for version in skillshift_common::Version::ALL {
            let pages = skillshift_sites::bench::pages(*site, *version);
            assert!(pages.len() > 1 && pages.len() <= 40, "{site:?} {version:?}: {pages:?}");
            assert!(pages.iter().all(|p| p.starts_with('/')), "{site:?} {version:?}: {pages:?}");
        }
    }
}
