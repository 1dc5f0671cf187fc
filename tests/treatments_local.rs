//! Two treatments compared end to end on real Chromium and the embedded fixture sites: `skillshift local`
//! with `--treatment CONTROL --treatment example=...` runs both over the same units under one contract, and
//! `skillshift compare` on its export reaches a verdict from the interval; a changed frozen field on one side
//! makes it a directional observation; `--reuse-baseline` runs only the candidate's units and compares alike,
//! and is refused when the contract differs.

mod support;

#[path = "support/cli.rs"]
mod cli;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{read_records, units};

fn families(dir: &Path) -> String {
    let path = dir.join("families.json");
    std::fs::write(&path, r#"{"sites": {"gitlab": {"families": [0]}}}"#).expect("families file");
    path.display().to_string()
}

/// `skillshift local` over gitlab family 0, conditions src and tgt, two reps, with `extra` flags.
fn local(dir: &Path, out: &str, extra: &[&str]) -> Output {
    let fam = families(dir);
    let out = dir.join(out);
    let mut args = vec!["local", "--workers", "2", "--sites", "gitlab", "--conditions", "src,tgt"];
    args.extend(["--families", &fam, "--count", "2", "--out"]);
    let out = out.display().to_string();
    args.push(&out);
    args.extend(extra);
    cli::bin().args(&args).output().expect("run skillshift local")
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "exit {:?}\nstdout:\n{}\nstderr:\n{err}", o.status, String::from_utf8_lossy(&o.stdout));
    err
}

fn compare(base: &Path, cand: &Path, bt: &str, ct: &str, json: bool) -> Output {
    let (b, c) = (base.display().to_string(), cand.display().to_string());
    let mut args = vec!["compare", "--baseline", &b, "--candidate", &c];
    args.extend(["--treatment-baseline", bt, "--treatment-candidate", ct]);
    if json {
        args.extend(["--format", "json"]);
    }
    cli::bin().args(&args).output().expect("run skillshift compare")
}

fn compare_json(base: &Path, cand: &Path, bt: &str, ct: &str) -> Value {
    let o = compare(base, cand, bt, ct, true);
    ok(&o);
    serde_json::from_slice(&o.stdout).expect("compare --format json")
}

const TWO: [&str; 4] = ["--treatment", "CONTROL", "--treatment", "example=data/skills/example.json"];

#[test]
fn two_treatments_in_one_local_run_reach_a_verdict_and_a_changed_field_is_directional_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = ok(&local(dir.path(), "both", &TWO));
    assert!(err.contains("8 units"), "1 family x 2 conditions x 2 reps x 2 treatments: {err}");
    let records = dir.path().join("both/per_task.jsonl");
    let recs = read_records(&records);
    // Both treatments over the same units, under one config_digest.
    let by_unit = units(&recs);
    let control: Vec<_> = by_unit.keys().filter(|k| k.0 == "CONTROL").map(|k| (&k.1, &k.2, k.3)).collect();
    let example: Vec<_> = by_unit.keys().filter(|k| k.0 == "example").map(|k| (&k.1, &k.2, k.3)).collect();
    assert_eq!(control.len(), 4);
    assert_eq!(control, example, "the two sides ran the same units");
    let digests: std::collections::BTreeSet<String> =
        recs.iter().map(|r| r["config_digest"].as_str().unwrap_or("none").to_string()).collect();
    assert_eq!(digests.len(), 1, "one config_digest for both treatments: {digests:?}");
    // The skills agent calls no model: every attempt records a measured $0 (issue 31: spend gates decide).
    assert!(recs.iter().all(|r| r["cost_usd"] == 0.0 && r["llm_calls"] == 0), "{recs:?}");
    // The contract: treatments beside the frozen fields, the digest the records carry.
    let contract: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("both/contract.json")).expect("contract"))
            .expect("contract JSON");
    assert_eq!(contract["config_digest"].as_str(), digests.iter().next().map(String::as_str));
    assert_eq!(contract["treatments"]["CONTROL"]["skill_library"], Value::Null);
    assert!(contract["treatments"]["example"]["skill_library"].as_str().is_some_and(|d| d.starts_with("sha256:")));
    assert!(
        dir.path().join("both/summary.CONTROL.json").exists() && dir.path().join("both/summary.example.json").exists()
    );

    let c = compare_json(&records, &records, "CONTROL", "example");
    assert_eq!(c["contract"]["equivalent"], true, "{:#}", c["contract"]);
    assert_eq!(c["contract"]["differs"], serde_json::json!([]));
    assert_eq!(c["directional_only"], false);
    // The verdict follows from the overall interval, whichever way the fixture sites go.
    let lo = c["overall"]["interval"][0].as_f64().expect("interval low");
    let hi = c["overall"]["interval"][1].as_f64().expect("interval high");
    let want = if lo > 0.0 {
        "better"
    } else if hi < 0.0 {
        "worse"
    } else {
        "inconclusive"
    };
    assert_eq!(c["verdict"], want, "interval [{lo}, {hi}]: {}", c["verdict_reason"]);
    let text = compare(&records, &records, "CONTROL", "example", false);
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains("contract: equivalent"), "{text}");
    assert!(!text.contains("directional only"), "{text}");

    // One frozen field changed on one side: the comparison names it and is directional only.
    ok(&local(dir.path(), "short", &["--treatment", "example=data/skills/example.json", "--max-steps", "5"]));
    let short = dir.path().join("short/per_task.jsonl");
    let c = compare_json(&records, &short, "CONTROL", "example");
    assert_eq!(c["contract"]["equivalent"], false);
    assert_eq!(c["contract"]["differs"], serde_json::json!(["max_steps"]));
    assert_eq!(c["directional_only"], true);
    let text = compare(&records, &short, "CONTROL", "example", false);
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains("max_steps") && text.contains("directional only"), "{text}");

    // The baseline reused: only the candidate's units run, and the comparison is the one-sweep comparison.
    // (The whole run holds both treatments and would be refused: nothing would be left to run.)
    let baseline = support::only_treatment(&records, "CONTROL", &dir.path().join("baseline"));
    let base = baseline.display().to_string();
    let mut reuse = TWO.to_vec();
    reuse.extend(["--reuse-baseline", &base]);
    let err = ok(&local(dir.path(), "reused", &reuse));
    assert!(err.contains("reusing 4 records of CONTROL from"), "{err}");
    assert!(err.contains(": 4 units on 2 workers"), "only the candidate's 4 units ran: {err}");
    let reused = dir.path().join("reused/per_task.jsonl");
    let rr = read_records(&reused);
    let first_sweep = recs[0]["sweep"].as_str().expect("a sweep id").to_string();
    let sweeps: std::collections::BTreeSet<(String, String)> = rr
        .iter()
        .map(|r| (r["treatment"].as_str().unwrap_or("").to_string(), r["sweep"].as_str().unwrap_or("").to_string()))
        .collect();
    assert!(sweeps.contains(&("CONTROL".to_string(), first_sweep.clone())), "CONTROL comes from the first run");
    assert!(!sweeps.contains(&("example".to_string(), first_sweep)), "example ran again");
    let again = compare_json(&reused, &reused, "CONTROL", "example");
    assert_eq!(again["contract"]["equivalent"], true, "{:#}", again["contract"]);
    assert_eq!(again["contract"]["treatments"]["baseline"]["reused_from"]["records"], Value::String(base.clone()));
    let one = compare_json(&records, &records, "CONTROL", "example");
    for key in ["cells", "overall", "verdict"] {
        assert_eq!(again[key], one[key], "{key} differs between the reused and the one-sweep comparison");
    }

    // A changed frozen field: refused, one line, exit 2, nothing run.
    let mut bad = reuse.clone();
    bad.extend(["--max-steps", "5"]);
    let o = local(dir.path(), "refused", &bad);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("--reuse-baseline") && err.contains("max_steps"), "{err}");
    assert!(!dir.path().join("refused/per_task.jsonl").exists());
}
