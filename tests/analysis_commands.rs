//! `skillshift compare`, `calibrate` and `leaderboard` as a user runs them:
//! the built binary on temporary files, checking output, exit codes and the
//! one error line. Records are synthetic (generated noise), never results.

use std::path::{Path, PathBuf};

use serde_json::Value;
use skillshift_analysis::synth::{write_grid, Plan};

#[path = "support/cli.rs"]
mod cli;

use cli::{s, skillshift, stderr as err, stdout as out};

fn synthetic(dir: &Path, name: &str, treatment: &str, success_pct: u64, seed: u64) -> PathBuf {
    let plan =
        Plan { treatment: treatment.into(), reps: 1, error_pct: 2, skills: true, max_calls: 1, success_pct, seed };
    cli::synthetic(dir, name, &plan)
}

#[test]
fn compare_gives_better_worse_and_the_seed_004_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let weak = synthetic(dir.path(), "control.jsonl", "CONTROL", 10, 3);
    let strong = synthetic(dir.path(), "asi.jsonl", "ASI", 60, 3);
    let o = skillshift(&["compare", "--baseline", s(&weak), "--candidate", s(&strong)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let t = out(&o);
    assert!(t.contains("verdict: better"), "{t}");
    assert!(t.contains("seed-004 verdict (delta >= 0): pass"));
    assert!(t.contains("warning: weak baseline: baseline SR"), "{t}");
    assert!(t.contains("paired (162)"), "both ran the same units: {t}");
    assert!(t.lines().any(|l| l.starts_with("overall (macro)")));

    let o = skillshift(&["compare", "--baseline", s(&strong), "--candidate", s(&weak), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "a regression alone is not an error");
    let v: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(v["verdict"], "worse");
    assert_eq!(v["seed004_verdict"], "fail");
    assert_eq!(v["cells"].as_array().expect("cells").len(), 18);
    let [lo, hi] = [v["overall"]["interval"][0].as_f64(), v["overall"]["interval"][1].as_f64()];
    assert!(lo.expect("lo") < hi.expect("hi") && hi.expect("hi") < 0.0);
    let o = skillshift(&["compare", "--baseline", s(&strong), "--candidate", s(&weak), "--fail-on-regression"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn compare_with_one_seed_is_inconclusive_and_differing_contracts_are_directional_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a_dir).expect("mkdir");
    std::fs::create_dir_all(&b_dir).expect("mkdir");
    let a = synthetic(&a_dir, "per_task.jsonl", "X", 40, 5);
    let b = synthetic(&b_dir, "per_task.jsonl", "X", 40, 5);
    let o = skillshift(&["compare", "--baseline", s(&a), "--candidate", s(&b)]);
    assert!(
        out(&o).contains("verdict: inconclusive (the 95% interval of the overall SR delta spans 0)"),
        "{}",
        out(&o)
    );

    std::fs::write(a_dir.join("contract.json"), r#"{"model": {"name": "m1"}, "max_steps": 10, "temperature": 0}"#)
        .expect("write");
    std::fs::write(b_dir.join("contract.json"), r#"{"model": {"name": "m2"}, "max_steps": 15, "temperature": 0}"#)
        .expect("write");
    let strong = synthetic(&b_dir, "per_task.jsonl", "X", 90, 5);
    let o = skillshift(&["compare", "--baseline", s(&a), "--candidate", s(&strong), "--format", "json"]);
    let v: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(v["verdict"], "inconclusive", "a large delta under another contract is no verdict");
    assert_eq!(v["directional_only"], true);
    assert_eq!(v["contract"]["differing"], serde_json::json!(["max_steps", "model.name"]));
    let o = skillshift(&["compare", "--baseline", s(&a), "--candidate", s(&strong)]);
    assert!(out(&o).contains("directional only"));
}

#[test]
fn compare_two_treatments_of_one_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut buf = Vec::new();
    for (t, pct) in [("CONTROL", 30), ("ASI", 35)] {
        let plan =
            Plan { treatment: t.into(), reps: 2, error_pct: 0, skills: true, max_calls: 1, success_pct: pct, seed: 1 };
        write_grid(&plan, &mut buf).expect("gen");
    }
    let f = dir.path().join("both.jsonl");
    std::fs::write(&f, buf).expect("write");
    let o = skillshift(&["compare", "--baseline", s(&f), "--candidate", s(&f)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("name two treatments"), "{}", err(&o));
    let o = skillshift(&[
        "compare",
        "--baseline",
        s(&f),
        "--candidate",
        s(&f),
        "--treatment-baseline",
        "CONTROL",
        "--treatment-candidate",
        "ASI",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("baseline CONTROL"));
    assert!(out(&o).contains("paired (324)"), "2 reps x 162 families: {}", out(&o));
}

#[test]
fn calibrate_refuses_what_it_cannot_check_with_exit_2() {
    // The shipped anchor is unpublished.
    let o = skillshift(&["calibrate", "--records", "Cargo.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("is unpublished"), "{}", err(&o));
    assert_eq!(err(&o).lines().count(), 1);
    // The step budget is checked before anything else: the missing records file is never opened.
    let o = skillshift(&["calibrate", "--max-steps", "15", "--records", "/nonexistent.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--max-steps 15 differs from the anchor's max_steps 10"), "{}", err(&o));
    let o = skillshift(&["calibrate", "--dry-run", "--max-steps", "12"]);
    assert_eq!(o.status.code(), Some(2));
    let o = skillshift(&["calibrate", "--reference", "/nonexistent/anchor.json", "--records", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("cannot read anchor /nonexistent/anchor.json"));
    let o = skillshift(&["calibrate", "--dry-run", "--subset", "/nonexistent/set.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("calibration subset missing"));
}

#[test]
fn calibrate_dry_run_prints_cells_counts_and_uids() {
    let o = skillshift(&["calibrate", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let t = out(&o);
    assert!(t.contains("30 families x 6 conditions = 180 runs"), "{t}");
    assert!(t.contains("gitlab: 14 of 162 families: 0 11 23 34"));
    assert!(t.lines().any(|l| l.starts_with("  magento    tgt-exec   10 tasks  skillshift.magento.v2.0 ")), "{t}");
    let o = skillshift(&["calibrate", "--dry-run", "--site", "wordpress"]);
    assert!(out(&o).contains("6 families x 6 conditions = 36 runs"));
    assert!(out(&o).contains("skillshift.wordpress.v1.65"));
}

#[test]
fn calibrate_anchor_then_grade_passes_a_match_and_fails_a_shift() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = synthetic(dir.path(), "reference.jsonl", "reference", 40, 9);
    let anchor = dir.path().join("anchor.json");
    // No contract.json beside hand-made records: --agent says who produced them.
    let o =
        skillshift(&["calibrate", "anchor", "--agent", "reference", "--records", s(&reference), "--out", s(&anchor)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let a: Value = serde_json::from_str(&std::fs::read_to_string(&anchor).expect("anchor")).expect("json");
    assert_eq!(a["status"], "published");
    assert_eq!(a["max_steps"], 10);
    let sr = &a["cells"]["wordpress"]["src"]["SR"];
    let (p, n) = (sr["value"].as_f64().expect("value") / 100.0, 6.0);
    assert!((sr["sigma"].as_f64().expect("sigma") - 100.0 * (p * (1.0 - p) / n).sqrt()).abs() < 1e-9);

    let o = skillshift(&["calibrate", "--records", s(&reference), "--reference", s(&anchor)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    let t = out(&o);
    assert_eq!(t.lines().filter(|l| l.contains(" PASS  [image ")).count(), 36, "{t}");
    assert_eq!(t.lines().filter(|l| l.ends_with("[not gated]")).count(), 36);
    assert!(t.contains("  gitlab     tgt       SR   observed "), "{t}");

    let shifted = synthetic(dir.path(), "shifted.jsonl", "reference", 100, 9);
    let o = skillshift(&["calibrate", "--records", s(&shifted), "--reference", s(&anchor)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).lines().any(|l| l.contains(" SR ") && l.contains("FAIL  [image gitlab-v2]")), "{}", out(&o));
    // --site grades one website only.
    let o = skillshift(&["calibrate", "--records", s(&shifted), "--reference", s(&anchor), "--site", "magento"]);
    assert!(out(&o).lines().all(|l| !l.contains("[image gitlab")));

    // Records missing for a cell: exit 2.
    let text = std::fs::read_to_string(&reference).expect("read");
    let only_gitlab: String =
        text.lines().filter(|l| l.contains("\"site\":\"gitlab\"")).map(|l| format!("{l}\n")).collect();
    let g = dir.path().join("gitlab.jsonl");
    std::fs::write(&g, only_gitlab).expect("write");
    let o = skillshift(&["calibrate", "--records", s(&g), "--reference", s(&anchor)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("records missing for cell magento src"), "{}", err(&o));
    let o = skillshift(&["calibrate", "--records", s(&g), "--reference", s(&anchor), "--site", "gitlab"]);
    assert_eq!(o.status.code(), Some(0));
    // Without records, calibrate runs the sweep on a coordinator; none answers here: one line, exit 2.
    let o = skillshift(&["calibrate", "--reference", s(&anchor), "--coordinator", "http://127.0.0.1:9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("coordinator at http://127.0.0.1:9 is unreachable"), "{}", err(&o));
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
}

#[test]
fn leaderboard_validate_and_render() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = dir.path().join("entries");
    std::fs::create_dir_all(&entries).expect("mkdir");
    for (name, pct) in [("low", 20), ("high", 70)] {
        let f = synthetic(dir.path(), &format!("{name}.jsonl"), name, pct, 2);
        let o = skillshift(&["report", s(&f), "--format", "json"]);
        assert!(o.status.success());
        std::fs::write(entries.join(format!("{name}.json")), out(&o)).expect("write");
    }
    let o = skillshift(&["leaderboard", "validate", s(&entries.join("low.json")), s(&entries.join("high.json"))]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));

    // A mistyped cell breaks the identity; a calibration-sized run fails n.tasks.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(entries.join("low.json")).expect("r")).expect("j");
    v["metrics"]["SR"]["websites"]["gitlab"] = serde_json::json!(99.0);
    v["n"]["tasks"]["wordpress"] = serde_json::json!(6);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, v.to_string()).expect("write");
    let o = skillshift(&["leaderboard", "validate", s(&bad)]);
    assert_eq!(o.status.code(), Some(1));
    let t = out(&o);
    assert!(t.lines().any(|l| l.contains("refused: identity: SR: mean(3 websites)")), "{t}");
    assert!(t.contains("refused: n.tasks: n.tasks.wordpress is 6, expected 79"), "{t}");
    let o = skillshift(&["leaderboard", "validate", s(&bad), "/nonexistent.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(err(&o).lines().count(), 1);

    std::fs::copy(&bad, entries.join("bad.json")).expect("copy");
    let page = dir.path().join("board.html");
    let o = skillshift(&["leaderboard", "render", s(&entries), "--out", s(&page)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("skipped"), "refused entries are left out");
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(html.find(">high<").expect("high") < html.find(">low<").expect("low"), "sorted by SR");
    assert!(!html.contains("data-sort=\"SFR\""));
    assert!(html.contains("data-sort=\"ASC\""));
    assert!(out(&o).contains(" with 2 entries"), "{}", out(&o));
    // One admitted entry is "1 entry".
    let single = dir.path().join("single");
    std::fs::create_dir_all(&single).expect("mkdir");
    let one = std::fs::read_dir(&entries)
        .expect("entries")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().is_some_and(|n| n != "bad.json"))
        .expect("an admitted entry");
    std::fs::copy(&one, single.join("one.json")).expect("copy");
    let o = skillshift(&["leaderboard", "render", s(&single), "--out", s(&page)]);
    assert!(out(&o).trim_end().ends_with(" with 1 entry"), "{}", out(&o));
}

/// Rewrite every line of a records file through `f`.
fn edit_lines(path: &Path, f: impl Fn(&mut Value)) {
    let text = std::fs::read_to_string(path).expect("read");
    let mut out = String::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).expect("line");
        f(&mut v);
        out.push_str(&v.to_string());
        out.push('\n');
    }
    std::fs::write(path, out).expect("write");
}

#[test]
fn leaderboard_refuses_a_simulated_summary_and_one_carrying_records_and_accepts_a_real_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = synthetic(dir.path(), "real.jsonl", "REAL", 40, 4);
    let sim = synthetic(dir.path(), "sim.jsonl", "SIM", 40, 4);
    edit_lines(&sim, |v| v["simulated"] = true.into());
    let summary = |records: &Path, name: &str| {
        let o = skillshift(&["report", s(records), "--format", "json"]);
        assert!(o.status.success(), "{}", err(&o));
        let p = dir.path().join(name);
        std::fs::write(&p, out(&o)).expect("write");
        p
    };
    let real_json = summary(&real, "real.json");
    let sim_json = summary(&sim, "sim.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&sim_json).expect("read")).expect("json");
    assert_eq!(v["simulated"], true, "a summary built from simulated records says so");
    let t = out(&skillshift(&["report", s(&sim)]));
    assert!(t.contains("SIMULATED: some of these records were made up by a --simulate worker"), "{t}");

    let o = skillshift(&["leaderboard", "validate", s(&real_json)]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(out(&o).contains("(REAL): accepted"));
    let o = skillshift(&["leaderboard", "validate", s(&sim_json)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).contains("(SIM): refused: simulated: simulated is true"), "{}", out(&o));

    // Per-task records embedded in an entry: refused, naming the rule and the key.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&real_json).expect("read")).expect("json");
    let records: Vec<Value> = std::fs::read_to_string(&real)
        .expect("read")
        .lines()
        .take(50)
        .map(|l| serde_json::from_str(l).expect("l"))
        .collect();
    v["records"] = Value::Array(records);
    let with_records = dir.path().join("with_records.json");
    std::fs::write(&with_records, v.to_string()).expect("write");
    let o = skillshift(&["leaderboard", "validate", s(&with_records)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).contains("refused: unknown-key: records is not a key of the summary"), "{}", out(&o));
    // And an entry without a method.
    v.as_object_mut().expect("object").remove("records");
    v.as_object_mut().expect("object").remove("method");
    std::fs::write(&with_records, v.to_string()).expect("write");
    let o = skillshift(&["leaderboard", "validate", s(&with_records)]);
    assert!(out(&o).contains("refused: method: method is missing"), "{}", out(&o));
}

#[test]
fn compare_json_carries_the_contract_and_treatment_fields_alone_do_not_break_equivalence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_dir, b_dir) = (dir.path().join("control"), dir.path().join("asi"));
    std::fs::create_dir_all(&a_dir).expect("mkdir");
    std::fs::create_dir_all(&b_dir).expect("mkdir");
    let a = synthetic(&a_dir, "per_task.jsonl", "CONTROL", 20, 5);
    let b = synthetic(&b_dir, "per_task.jsonl", "ASI", 60, 5);
    // Today's contract.json: the library is inside, so the digests differ, but the frozen fields agree.
    edit_lines(&a, |v| v["config_digest"] = "sha256:control".into());
    edit_lines(&b, |v| v["config_digest"] = "sha256:asi".into());
    let frozen = r#""schema": "skillshift.contract/1", "max_steps": 10, "temperature": 0, "model": "m""#;
    std::fs::write(
        a_dir.join("contract.json"),
        format!(r#"{{{frozen}, "skill_libraries": {{"CONTROL": null}}, "config_digest": "sha256:control"}}"#),
    )
    .expect("write");
    std::fs::write(
        b_dir.join("contract.json"),
        format!(r#"{{{frozen}, "skill_libraries": {{"ASI": "sha256:lib"}}, "config_digest": "sha256:asi"}}"#),
    )
    .expect("write");
    let o = skillshift(&["compare", "--baseline", s(&a), "--candidate", s(&b), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(v["verdict"], "better", "{}", v["verdict_reason"]);
    let c = &v["contract"];
    assert_eq!(c["equivalent"], true);
    assert_eq!(c["differs"], serde_json::json!([]));
    assert_eq!(c["treatments"]["baseline"], serde_json::json!({"method": "CONTROL", "skill_library": null}));
    assert_eq!(c["treatments"]["candidate"], serde_json::json!({"method": "ASI", "skill_library": "sha256:lib"}));
    assert_eq!(v["directional_only"], false);
    assert_eq!(v["seed004_verdict"], "pass");
    assert_eq!(v["baseline_health"]["status"], "healthy");
    let t = out(&skillshift(&["compare", "--baseline", s(&a), "--candidate", s(&b)]));
    assert!(t.contains("contract: equivalent"), "{t}");
    assert!(t.contains("treatments: baseline CONTROL (no skill library) · candidate ASI (skill library sha256:lib)"));

    // A separate treatment section, and a changed step budget: only the frozen field is listed.
    std::fs::write(
        b_dir.join("contract.json"),
        r#"{"schema": "skillshift.contract/1", "max_steps": 15, "temperature": 0, "model": "m",
            "treatment": {"method": "ASI", "skill_library": "sha256:lib"}}"#,
    )
    .expect("write");
    let v: Value = serde_json::from_str(&out(&skillshift(&[
        "compare",
        "--baseline",
        s(&a),
        "--candidate",
        s(&b),
        "--format",
        "json",
    ])))
    .expect("json");
    assert_eq!(v["contract"]["equivalent"], false);
    assert_eq!(v["contract"]["differs"], serde_json::json!(["max_steps"]));
    assert_eq!(v["verdict"], "inconclusive");
    assert_eq!(v["directional_only"], true);
    let t = out(&skillshift(&["compare", "--baseline", s(&a), "--candidate", s(&b)]));
    assert!(t.contains("contract: not equivalent, differs in max_steps"), "{t}");
    assert!(t.contains("directional only"));
}

#[test]
fn compare_pairs_two_treatments_of_one_file_and_applies_gates_to_both_sides() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut buf = Vec::new();
    for (t, pct) in [("CONTROL", 15), ("ASI", 60)] {
        let plan =
            Plan { treatment: t.into(), reps: 2, error_pct: 0, skills: true, max_calls: 1, success_pct: pct, seed: 8 };
        write_grid(&plan, &mut buf).expect("gen");
    }
    let f = dir.path().join("both.jsonl");
    std::fs::write(&f, buf).expect("write");
    edit_lines(&f, |v| {
        let steps = v["steps"].as_u64().unwrap_or(0);
        v["llm_calls"] = steps.into();
        v["cost_usd"] = (0.001 * steps as f64).into();
    });
    let gates = dir.path().join("gates.json");
    std::fs::write(
        &gates,
        r#"{"schema": "skillshift.gates/1",
            "gates": [{"name": "autonomous success", "metric": "ledger.rates.attempt_success", "min": 0.4}]}"#,
    )
    .expect("write");
    let args = |format: &str| {
        skillshift(&[
            "compare",
            "--baseline",
            s(&f),
            "--candidate",
            s(&f),
            "--baseline-treatment",
            "CONTROL",
            "--candidate-treatment",
            "ASI",
            "--gates",
            s(&gates),
            "--format",
            format,
        ])
    };
    let o = args("json");
    assert_eq!(o.status.code(), Some(0), "the candidate passes its gates: {}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(v["verdict"], "better", "{}", v["verdict_reason"]);
    assert_eq!(v["contract"]["equivalent"], true, "one file, one digest");
    assert!(v["cells"][0]["pairing"].as_str().expect("pairing").starts_with("paired ("));
    assert_eq!(v["gates"]["baseline"]["readiness"], "fail");
    assert_eq!(v["gates"]["candidate"]["readiness"], "pass");
    assert_eq!(v["baseline_health"]["status"], "warning", "a 15% baseline is weak");
    assert!(v["baseline_health"]["warnings"][0].as_str().expect("w").starts_with("weak baseline"));
    // LLM use per side, successes and failures apart.
    let u = &v["usage"]["candidate"];
    let (ok, bad, all) = (
        u["success"]["llm_calls"]["total"].as_f64(),
        u["non_success"]["llm_calls"]["total"].as_f64(),
        u["all"]["llm_calls"]["total"].as_f64(),
    );
    assert_eq!(ok.zip(bad).map(|(a, b)| a + b), all);
    let t = out(&args("table"));
    assert!(t.contains("Readiness gates, baseline") && t.contains("Readiness gates, candidate"), "{t}");
    assert!(t.lines().any(|l| l.starts_with("candidate") && l.contains("failure or timeout")), "{t}");
    // Swapped, the candidate fails its gate: exit 1.
    let o = skillshift(&[
        "compare",
        "--baseline",
        s(&f),
        "--candidate",
        s(&f),
        "--treatment-baseline",
        "ASI",
        "--treatment-candidate",
        "CONTROL",
        "--gates",
        s(&gates),
    ]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn a_macro_delta_interval_stays_inside_plus_minus_100_points() {
    // One cell, a few units: every baseline attempt fails and every candidate attempt succeeds,
    // so the delta is +100 and the normal approximation of the macro mean would reach past it.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut lines = String::new();
    for (t, ok) in [("CONTROL", false), ("ASI", true)] {
        for id in 0..3 {
            lines.push_str(&format!(
                "{{\"uid\":\"skillshift.gitlab.v1.{id}\",\"site\":\"gitlab\",\"condition\":\"src\",\"success\":{ok},\
                 \"steps\":3,\"skill_calls\":1,\"skill_failures\":0,\"treatment\":\"{t}\"}}\n"
            ));
        }
    }
    let f = dir.path().join("one_cell.jsonl");
    std::fs::write(&f, lines).expect("write");
    let o = skillshift(&[
        "compare",
        "--baseline",
        s(&f),
        "--candidate",
        s(&f),
        "--treatment-baseline",
        "CONTROL",
        "--treatment-candidate",
        "ASI",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out(&o)).unwrap_or_else(|e| panic!("json: {e}: {}{}", out(&o), err(&o)));
    let overall = &v["overall"];
    assert_eq!(overall["delta"].as_f64(), Some(100.0), "{overall}");
    let iv = overall["interval"].as_array().expect("an interval");
    let (lo, hi) = (iv[0].as_f64().expect("lo"), iv[1].as_f64().expect("hi"));
    assert!(lo > 0.0 && lo < 100.0 && hi <= 100.0, "{lo} {hi}");
}
