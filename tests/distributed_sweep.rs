//! A sweep across real worker processes over gRPC on loopback, with the
//! coordinator's sled store on disk; and the shared token refusing strangers.

mod support;

use std::time::Duration;

use support::{outcome, units, Options, Sandbox};

#[test]
fn a_sweep_across_three_workers_completes_with_one_outcome_per_unit() {
    let sb = Sandbox::start(3, 60);
    let id = sb.submit(8, &["--seed", "7"]);
    let st = sb.wait_state(&id, "done", Duration::from_secs(60));
    assert_eq!(st["units"]["total"], 48, "8 families x 6 conditions");
    assert_eq!(st["units"]["done"].as_u64().unwrap_or(0) + st["units"]["invalid"].as_u64().unwrap_or(0), 48);
    assert_eq!(st["units"]["queued"], 0);
    assert_eq!(st["units"]["running"], 0);

    let records = sb.export(&id, "per_task.jsonl");
    let by_unit = units(&records);
    assert_eq!(by_unit.len(), 48, "every unit has records");
    let decided = by_unit.values().filter(|rs| outcome(rs).is_some()).count();
    assert_eq!(decided as u64, st["units"]["done"].as_u64().unwrap_or(0), "one outcome per done unit");
    assert_eq!(records.len() as u64, st["attempts"]["total"].as_u64().unwrap_or(0), "every attempt exported once");
    for r in &records {
        assert_eq!(r["sweep"], id.as_str());
        assert!(r["config_digest"].as_str().is_some_and(|d| d.starts_with("sha256:")));
        let uid = r["uid"].as_str().unwrap_or_default();
        let v = if r["condition"].as_str().unwrap_or_default().starts_with("src") { "v1" } else { "v2" };
        assert!(uid.starts_with(&format!("skillshift.gitlab.{v}.")), "uid {uid} matches its condition");
    }
    let workers: std::collections::BTreeSet<&str> = records.iter().filter_map(|r| r["worker"].as_str()).collect();
    assert_eq!(workers.len(), 3, "all three workers ran attempts: {workers:?}");

    let contract: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.path("contract.json")).expect("contract.json beside the records"),
    )
    .expect("contract is JSON");
    assert_eq!(contract["config_digest"], records[0]["config_digest"]);
    assert_eq!(contract["seed"], 7);

    // A second export is byte-identical: the order is deterministic.
    sb.export(&id, "again.jsonl");
    assert_eq!(
        std::fs::read(sb.path("per_task.jsonl")).expect("first"),
        std::fs::read(sb.path("again.jsonl")).expect("second")
    );

    let listed = sb.sweep(&["list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&id));
    // watch returns at once with exit 0 for a done sweep, and stays quiet apart from its last line.
    let watched = sb.sweep(&["watch", &id]);
    assert_eq!(watched.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&watched.stdout).lines().count(), 1);
}

#[test]
fn cancel_stops_a_sweep_and_watch_exits_1_then_resume_finishes_it() {
    let sb = Sandbox::start(1, 200);
    let id = sb.submit(4, &[]);
    sb.wait_until(&id, Duration::from_secs(20), |s| s["attempts"]["total"].as_u64().unwrap_or(0) >= 1);
    let out = sb.sweep(&["cancel", &id]);
    assert!(out.status.success());
    let st = sb.wait_state(&id, "cancelled", Duration::from_secs(5));
    assert!(st["units"]["queued"] == 0);
    assert_eq!(sb.sweep(&["watch", &id]).status.code(), Some(1), "watch of a cancelled sweep exits 1");
    assert!(sb.sweep(&["resume", &id]).status.success());
    sb.wait_state(&id, "done", Duration::from_secs(60));
}

#[test]
fn workers_and_clients_without_the_token_are_refused() {
    let mut sb = Sandbox::start_with(0, 50, Options { token: Some("right".into()), ..Options::default() });
    let bad = sb.add_worker(50, &["--token", "wrong"]);
    let status = sb.workers[bad].wait().expect("worker exits");
    assert_eq!(status.code(), Some(2), "a refused worker exits 2");
    let log = sb.read_log("worker-0.log");
    assert!(log.contains("refused") && log.contains("wrong token"), "clear line: {log}");

    // A control client without a token is refused too.
    let out = std::process::Command::new(support::BIN)
        .args(["sweep", "list", "--coordinator", &sb.url()])
        .env_remove("SKILLSHIFT_TOKEN")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing token"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");

    // With the right token the same worker is accepted and runs the sweep.
    sb.add_worker(50, &[]);
    let id = sb.submit(1, &[]);
    sb.wait_state(&id, "done", Duration::from_secs(30));
}

#[test]
fn an_unreachable_coordinator_is_one_line_and_exit_2() {
    let out = std::process::Command::new(support::BIN)
        .args(["sweep", "status", "sw-0", "--coordinator", "http://127.0.0.1:9"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unreachable") && err.lines().count() == 1, "{err}");
}

#[test]
fn a_spent_cost_budget_stops_the_sweep_and_resume_says_why_it_cannot() {
    // Simulated LLM attempts cost about $0.001-0.004 each; $0.01 is spent after a handful.
    let sb = Sandbox::start(2, 30);
    let id = sb.submit(10, &["--agent", "reference", "--cost-budget", "0.01"]);
    // Stopped means cancelled with nothing left running: the records of attempts in flight at the stop
    // are in, so the spend is final.
    let st = sb.wait_until(&id, Duration::from_secs(60), |s| s["state"] == "cancelled" && s["units"]["running"] == 0);
    let stopped = st["stopped"].as_str().unwrap_or_default();
    assert!(stopped.starts_with("cost budget of $0.01 reached ($0.0"), "{st}");
    let spent = st["cost_usd"].as_f64().unwrap_or(0.0);
    assert!(st["units"]["done"].as_u64().unwrap_or(0) < 60, "the sweep stopped early: {st}");

    // The exported records' costs add up to what the status says was spent.
    let records = sb.export(&id, "per_task.jsonl");
    let total: f64 = records.iter().filter_map(|r| r["cost_usd"].as_f64()).sum();
    assert!((total - spent).abs() < 1e-9, "records {total} vs status {spent}");
    // Reservations keep the spend within the budget, but for one attempt dearer than any before it.
    let dearest = records.iter().filter_map(|r| r["cost_usd"].as_f64()).fold(0.0, f64::max);
    assert!(spent <= 0.01 + dearest, "spent {spent} passes the $0.01 budget by more than one attempt ({dearest})");
    assert!(records.iter().all(|r| r["outcome"] == "error" || r["llm_calls"].as_u64().is_some_and(|n| n > 0)));

    let resumed = sb.sweep(&["resume", &id]);
    assert_eq!(resumed.status.code(), Some(2));
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(err.contains("cannot resume") && err.contains("cost budget"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(sb.status(&id).expect("status")["state"], "cancelled", "still stopped");
    let watched = sb.sweep(&["watch", &id]);
    assert_eq!(watched.status.code(), Some(1), "watch of a stopped sweep exits 1");
    assert!(String::from_utf8_lossy(&watched.stdout).contains("stopped: cost budget"));
}

#[test]
fn a_cost_budget_is_never_passed_by_the_attempts_in_flight() {
    // Four workers of two slots each: eight attempts could be in flight when the budget runs out.
    let mut sb = Sandbox::start(2, 20);
    for _ in 0..2 {
        sb.add_worker(20, &["--slots", "2"]);
    }
    for budget in ["0.02", "0.05"] {
        let id = sb.submit(20, &["--agent", "reference", "--cost-budget", budget]);
        let st = sb.wait_until(&id, Duration::from_secs(90), |s| s["state"] != "running" && s["units"]["running"] == 0);
        let budget: f64 = budget.parse().expect("a number");
        let records = sb.export(&id, &format!("budget-{budget}.jsonl"));
        let costs: Vec<f64> = records.iter().filter_map(|r| r["cost_usd"].as_f64()).collect();
        let spent: f64 = costs.iter().sum();
        let dearest = costs.iter().copied().fold(0.0, f64::max);
        // Made-up records say so, through the wire and the store into the export.
        assert!(records.iter().all(|r| r["simulated"] == true || r["error"] == "worker_lost"), "{records:?}");
        assert!((st["cost_usd"].as_f64().unwrap_or(-1.0) - spent).abs() < 1e-9, "status {st} vs records {spent}");
        assert!(spent <= budget + dearest, "spent {spent} of {budget} (dearest attempt {dearest}): {st}");
        assert!(spent > budget / 2.0, "the budget was used, not refused: {spent} of {budget}");
        if st["state"] == "cancelled" {
            assert!(st["stopped"].as_str().unwrap_or_default().starts_with("cost budget of"), "{st}");
        }
    }
}

/// `skillshift calibrate` against the sandbox's coordinator.
fn calibrate(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    std::process::Command::new(support::BIN)
        .arg("calibrate")
        .args(args)
        .env("SKILLSHIFT_COORDINATOR", sb.url())
        .env("SKILLSHIFT_TOKEN", "sandbox-token")
        .output()
        .expect("run skillshift calibrate")
}

#[test]
fn calibrate_submits_the_calibration_sweep_then_grades_it() {
    let sb = Sandbox::start(3, 10);
    // An anchor from an earlier reference run of the same subset (simulated workers are
    // deterministic per unit, so a second run reproduces it exactly).
    let first = sb.sweep(&[
        "start",
        "--families",
        "data/calibration_set.json",
        "--skills",
        "none",
        "--agent",
        "reference",
        "--max-steps",
        "10",
    ]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let first = String::from_utf8_lossy(&first.stdout).trim().to_string();
    sb.wait_state(&first, "done", Duration::from_secs(120));
    sb.export(&first, "anchor-run/per_task.jsonl");
    let anchor = sb.path("anchor.json");
    let records = sb.path("anchor-run/per_task.jsonl");
    let made = std::process::Command::new(support::BIN)
        .args(["calibrate", "anchor", "--model", "simulated", "--allow-simulated", "--records"])
        .arg(&records)
        .arg("--out")
        .arg(&anchor)
        .output()
        .expect("calibrate anchor");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let mut a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&anchor).expect("anchor")).expect("json");
    a["status"] = "published".into();
    std::fs::write(&anchor, a.to_string()).expect("write anchor");

    // calibrate with no --records: submits 180 runs, waits, exports, grades.
    let out_dir = sb.path("calibration");
    let run = calibrate(
        &sb,
        &[
            "--reference",
            anchor.to_str().expect("utf-8"),
            "--out",
            out_dir.to_str().expect("utf-8"),
            "--allow-simulated",
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("calibration sweep sw-") && stderr.contains("180 runs"), "{stderr}");
    assert!(stdout.contains("all 36 gated values within"), "{stdout}");
    let graded = support::read_records(&out_dir.join("per_task.jsonl"));
    assert_eq!(units(&graded).len(), 180, "30 families x 6 conditions");
    assert!(graded.iter().all(|r| r["treatment"] == "CONTROL" && r["skill_calls"].is_null()));
    let contract: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("contract.json")).expect("contract")).expect("json");
    assert_eq!(contract["max_steps"], 10);
    assert_eq!(contract["agent"]["name"], "reference");

    // An anchor this environment does not match: one cell's SR moved far beyond its sigma.
    a["cells"]["gitlab"]["tgt"]["SR"] = serde_json::json!({"value": 99.0, "sigma": 0.5});
    std::fs::write(&anchor, a.to_string()).expect("write anchor");
    let run = calibrate(
        &sb,
        &[
            "--reference",
            anchor.to_str().expect("utf-8"),
            "--out",
            out_dir.to_str().expect("utf-8"),
            "--allow-simulated",
        ],
    );
    assert_eq!(run.status.code(), Some(1), "{}", String::from_utf8_lossy(&run.stdout));
    assert!(String::from_utf8_lossy(&run.stdout).contains("FAIL"));

    // A step budget other than the anchor's is refused before anything is submitted.
    let before = String::from_utf8_lossy(&sb.sweep(&["list"]).stdout).lines().count();
    let run =
        calibrate(&sb, &["--reference", anchor.to_str().expect("utf-8"), "--max-steps", "5", "--allow-simulated"]);
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&sb.sweep(&["list"]).stdout).lines().count(), before, "nothing submitted");
}

#[test]
fn a_two_treatment_sweep_pairs_its_units_and_a_reused_baseline_runs_only_the_candidate() {
    let sb = Sandbox::start(2, 10);
    let two = ["--treatment", "CONTROL", "--treatment", "example=data/skills/example.json"];
    let id = sb.submit(3, &two);
    sb.wait_state(&id, "done", Duration::from_secs(60));
    let first = sb.path("first/per_task.jsonl");
    std::fs::create_dir_all(first.parent().expect("a folder")).expect("mkdir");
    let records = sb.export(&id, "first/per_task.jsonl");
    let treatments: std::collections::BTreeSet<_> = records.iter().map(|r| r["treatment"].to_string()).collect();
    assert_eq!(treatments.len(), 2, "{treatments:?}");
    let digests: std::collections::BTreeSet<_> = records.iter().map(|r| r["config_digest"].to_string()).collect();
    assert_eq!(digests.len(), 1, "one contract for both treatments");

    // A second sweep reusing the first's CONTROL: only example's 18 units run. (The whole first run would
    // be refused: it holds every treatment, so nothing would be left to run.)
    let whole = first.to_str().expect("utf-8").to_string();
    let mut again = two.to_vec();
    again.extend(["--reuse-baseline", &whole]);
    let fam = sb.families(3);
    let mut start = vec!["start", "--sites", "gitlab", "--skills", "none", "--families", fam.to_str().expect("utf-8")];
    start.extend(again.iter().copied());
    let o = sb.sweep(&start);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("it holds every treatment of the sweep"));
    let baseline = support::only_treatment(&first, "CONTROL", &sb.path("baseline"));
    let base = baseline.to_str().expect("utf-8").to_string();
    let mut args = two.to_vec();
    args.extend(["--reuse-baseline", &base]);
    let id2 = sb.submit(3, &args);
    let st = sb.wait_state(&id2, "done", Duration::from_secs(60));
    assert_eq!(st["units"]["total"], 18, "3 families x 6 conditions of example only: {st}");
    let second = sb.path("second.jsonl");
    let out = sb.sweep(&["export", &id2, "--out", second.to_str().expect("utf-8"), "--reuse-baseline", &base]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let merged = support::read_records(&second);
    assert_eq!(merged.iter().filter(|r| r["treatment"] == "CONTROL").count(), 18);
    assert!(merged.iter().filter(|r| r["treatment"] == "CONTROL").all(|r| r["sweep"] == id.as_str()));
    // The reused treatment is the baseline: first in the merged contract.
    let contract: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.path("contract.json")).expect("contract")).expect("json");
    let order: Vec<&String> = contract["treatments"].as_object().expect("treatments").keys().collect();
    assert_eq!(order, ["CONTROL", "example"], "{contract}");
    let compare = |file: &std::path::Path| {
        let o = std::process::Command::new(support::BIN)
            .args(["compare", "--baseline", file.to_str().expect("utf-8"), "--candidate"])
            .arg(file)
            .args(["--treatment-baseline", "CONTROL", "--treatment-candidate", "example", "--format", "json"])
            .arg("--allow-simulated")
            .output()
            .expect("compare");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("json")
    };
    let (one, reused) = (compare(&first), compare(&second));
    assert_eq!(reused["contract"]["equivalent"], true, "{}", reused["contract"]);
    assert_eq!(reused["directional_only"], false);
    for key in ["cells", "overall", "verdict"] {
        assert_eq!(reused[key], one[key], "{key}: the reused comparison is the one-sweep comparison");
    }

    // Another frozen contract: refused with one line before anything is submitted.
    let mut bad = args.clone();
    bad.extend(["--max-steps", "7"]);
    let fam = sb.families(3);
    let mut start = vec!["start", "--sites", "gitlab", "--families", fam.to_str().expect("utf-8")];
    start.extend(bad.iter().copied());
    let o = sb.sweep(&start);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("max_steps") && err.trim().lines().count() == 1, "{err}");
}

#[test]
fn queued_units_no_worker_can_run_are_named_instead_of_an_eta() {
    // Only simulated workers, and a real sweep: none of its units can run anywhere.
    let mut sb = Sandbox::start_with(1, 50, Options { http: true, ..Options::default() });
    sb.real_workers = true;
    let id = sb.submit(2, &[]);
    let st = sb.wait_until(&id, Duration::from_secs(20), |st| st["unrunnable"].is_array());
    let rows = st["unrunnable"].as_array().cloned().unwrap_or_default();
    let queued: u64 = rows.iter().filter_map(|r| r["queued"].as_u64()).sum();
    assert_eq!(queued, 12, "2 families x 6 conditions wait: {rows:?}");
    let out = sb.sweep(&["status", &id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no worker can run 12 queued units (gitlab v1, gitlab v2)"), "{text}");
    let http = sb.http_addr.clone().expect("http port");
    let (code, body) = support::http_get(&http, "/api/status?token=sandbox-token").expect("GET /api/status");
    assert_eq!(code, 200);
    let api: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let sweep = api["sweeps"].as_array().and_then(|s| s.iter().find(|s| s["id"] == id.as_str())).cloned();
    let sweep = sweep.expect("the sweep is listed");
    assert_eq!(sweep["eta_ms"], serde_json::Value::Null);
    assert_eq!(sweep["unrunnable"][0]["queued"], 6, "{sweep}");
    // A simulated sweep beside it runs on the same worker and names nothing.
    sb.real_workers = false;
    let sim = sb.submit(1, &[]);
    let done = sb.wait_state(&sim, "done", Duration::from_secs(60));
    assert!(done.get("unrunnable").is_none(), "{done}");
}
