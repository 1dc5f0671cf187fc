//! Numbers that cannot be mixed up (issue 31 items 1 and 2, issue 30 item 11), end to end with the
//! built binary: `local --simulate` runs a real coordinator and simulated workers over real gRPC and a
//! sled store, so the made-up records here are what a user's `--simulate` run writes.
//!
//! * Simulated is a frozen contract field: a real run refuses a simulated baseline, `compare` refuses
//!   made-up records (and never mixes them with real ones), `calibrate anchor` refuses them and records
//!   the agent that produced the records, and grading refuses a simulated anchor or simulated records,
//!   unless `--allow-simulated` (a demo) says so and the output is marked.
//! * Reuse the right way round: the reused treatment is the baseline in the printed `compare` line, in
//!   `contract.json` and in the verdict; a reuse file holding every requested treatment is refused; a
//!   reused record whose own `config_digest` is not its contract's is refused, naming the line.

#[path = "support/cli.rs"]
mod cli;
mod support;

use cli::{refused, skillshift as run};

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::read_records;

fn families(dir: &Path) -> String {
    let path = dir.join("families.json");
    std::fs::write(&path, r#"{"sites": {"gitlab": {"families": [0, 1]}}}"#).expect("families file");
    path.display().to_string()
}

/// `skillshift local` over gitlab families 0 and 1, conditions src and tgt, with `extra` flags.
fn local(dir: &Path, out: &str, extra: &[&str]) -> Output {
    let fam = families(dir);
    let out = dir.join(out).display().to_string();
    let mut args = vec!["local", "--workers", "2", "--sites", "gitlab", "--conditions", "src,tgt"];
    args.extend(["--families", &fam, "--out", &out]);
    args.extend(extra);
    cli::bin()
        .args(&args)
        .env("OPENAI_API_KEY", "sk-not-used")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run skillshift local")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn ok(o: &Output) -> (String, String) {
    let (out, err) = text(o);
    assert!(o.status.success(), "exit {:?}\nstdout:\n{out}\nstderr:\n{err}", o.status);
    (out, err)
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

#[test]
fn a_simulated_baseline_is_refused_by_a_real_run_and_simulated_records_by_compare() {
    let dir = tempfile::tempdir().expect("tempdir");
    ok(&local(dir.path(), "sim", &["--simulate", "20", "--treatment", "CONTROL", "--treatment", "ex=none"]));
    let sim = dir.path().join("sim/per_task.jsonl");
    let contract = json(&dir.path().join("sim/contract.json"));
    assert_eq!(contract["simulated"], true, "the frozen contract says so: {contract:#}");
    assert!(read_records(&sim).iter().all(|r| r["simulated"] == true));

    // A real run reusing it: refused before anything runs (no browser is started for it).
    let simf = sim.display().to_string();
    let o =
        local(dir.path(), "real", &["--treatment", "CONTROL", "--treatment", "ex2=none", "--reuse-baseline", &simf]);
    let err = refused(&o);
    assert!(err.contains("--reuse-baseline") && err.contains("simulated"), "{err}");
    assert!(!dir.path().join("real/per_task.jsonl").exists(), "nothing ran");

    // compare: made-up records reach no verdict; with --allow-simulated they do, and say what they are.
    let base = ["compare", "--baseline", &simf, "--candidate", &simf];
    let pair = ["--treatment-baseline", "CONTROL", "--treatment-candidate", "ex"];
    let err = refused(&run(&[&base[..], &pair[..]].concat()));
    assert!(err.contains("made up by a --simulate worker") && err.contains("--allow-simulated"), "{err}");
    let (out, _) = ok(&run(&[&base[..], &pair[..], &["--allow-simulated"]].concat()));
    assert!(out.contains("--simulate worker"), "the demo is marked: {out}");

    // A real side against a simulated one: refused even with the demo flag.
    let real = dir.path().join("hand/per_task.jsonl");
    std::fs::create_dir_all(real.parent().expect("folder")).expect("mkdir");
    let lines: Vec<String> = std::fs::read_to_string(&sim)
        .expect("records")
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("record");
            v.as_object_mut().expect("object").remove("simulated");
            v.to_string()
        })
        .collect();
    std::fs::write(&real, lines.join("\n") + "\n").expect("write");
    let realf = real.display().to_string();
    let mixed = ["compare", "--baseline", &realf, "--candidate", &simf, "--allow-simulated"];
    let err = refused(&run(&[&mixed[..], &pair[..]].concat()));
    assert!(err.contains("mix records a --simulate worker made up with real ones"), "{err}");
}

#[test]
fn an_anchor_of_simulated_or_non_reference_records_is_refused_and_grading_refuses_a_simulated_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let subset = "data/calibration_set.json";
    let cal = ["--families", subset, "--sites", "gitlab,magento,wordpress", "--conditions"];
    let all = "src,src-perc,src-exec,tgt,tgt-perc,tgt-exec";
    let sim_local = |out: &str, agent: &str| {
        let out = dir.path().join(out).display().to_string();
        let mut args = vec!["local", "--workers", "2", "--simulate", "5", "--skills", "none", "--agent", agent];
        args.extend(cal);
        args.extend([all, "--out", &out]);
        let o = cli::bin()
            .args(&args)
            .env("OPENAI_API_KEY", "sk-not-used")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .expect("local");
        ok(&o);
    };
    sim_local("ref", "reference");
    sim_local("skills", "skills");
    let anchor = dir.path().join("anchor.json");
    let anchor_s = anchor.display().to_string();
    let make = |records: &str, extra: &[&str]| {
        let records = dir.path().join(records).join("per_task.jsonl").display().to_string();
        let mut args = vec!["calibrate", "anchor", "--records", &records, "--out", &anchor_s];
        args.extend(extra);
        run(&args)
    };
    // Made-up records make no anchor.
    let err = refused(&make("ref", &[]));
    assert!(err.contains("made up by a --simulate worker") && err.contains("--allow-simulated"), "{err}");
    assert!(!anchor.exists());
    // The agent is the one that produced the records (contract.json says skills), not a label by default.
    let err = refused(&make("skills", &["--allow-simulated"]));
    assert!(err.contains("agent 'skills', not the no-skill reference agent"), "{err}");
    let err = refused(&make("skills", &["--allow-simulated", "--agent", "reference"]));
    assert!(err.contains("--agent reference, but contract.json beside the records says agent 'skills'"), "{err}");
    let (out, _) = ok(&make("skills", &["--allow-simulated", "--allow-non-reference"]));
    assert!(out.contains("agent skills") && out.contains("SIMULATED"), "{out}");
    let a = json(&anchor);
    assert_eq!((a["agent"].as_str(), a["simulated"].as_bool()), (Some("skills"), Some(true)), "{a:#}");
    // The demo anchor for the reference run: published, and marked.
    ok(&make("ref", &["--allow-simulated"]));
    let mut a = json(&anchor);
    assert_eq!((a["agent"].as_str(), a["simulated"].as_bool()), (Some("reference"), Some(true)));
    a["status"] = "published".into();
    std::fs::write(&anchor, a.to_string()).expect("anchor");

    // Grading: a simulated anchor or simulated records are refused; the demo flag grades and marks it.
    let records = dir.path().join("ref/per_task.jsonl").display().to_string();
    let grade = ["calibrate", "--records", &records, "--reference", &anchor_s];
    let err = refused(&run(&grade));
    assert!(err.contains("computed from simulated records"), "{err}");
    let (out, _) = ok(&run(&[&grade[..], &["--allow-simulated"]].concat()));
    assert!(out.starts_with("SIMULATED: "), "{out}");
    assert!(!out.contains("the environment matches the anchor"), "{out}");
    // A real-looking anchor (no simulated mark) still refuses the made-up records.
    a.as_object_mut().expect("object").remove("simulated");
    std::fs::write(&anchor, a.to_string()).expect("anchor");
    let err = refused(&run(&grade));
    assert!(err.contains("the records of") && err.contains("made up by a --simulate worker"), "{err}");
}

#[test]
fn a_reused_baseline_is_the_baseline_a_file_holding_every_treatment_is_refused_and_a_forged_line_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = ["--simulate", "20", "--count", "2"];
    ok(&local(dir.path(), "sim1", &[&sim[..], &["--treatment", "CONTROL", "--treatment", "example=none"]].concat()));
    let sim1 = dir.path().join("sim1/per_task.jsonl").display().to_string();

    // The issue's command: CONTROL comes from sim1, ex2 runs.
    let two = ["--treatment", "CONTROL", "--treatment", "ex2=data/skills/example.json", "--reuse-baseline", &sim1];
    let (out, err) = ok(&local(dir.path(), "reused", &[&sim[..], &two[..]].concat()));
    assert!(err.contains("reusing 8 records of CONTROL"), "{err}");
    assert!(out.contains("--treatment-baseline CONTROL --treatment-candidate ex2"), "{out}");
    assert!(!out.contains("--treatment-baseline ex2"), "{out}");
    let first = out.lines().position(|l| l == "treatment CONTROL:");
    let second = out.lines().position(|l| l == "treatment ex2:");
    assert!(first.is_some() && first < second, "the baseline's table first: {out}");
    let contract = json(&dir.path().join("reused/contract.json"));
    let order: Vec<&String> = contract["treatments"].as_object().expect("treatments").keys().collect();
    assert_eq!(order, ["CONTROL", "ex2"], "{contract:#}");
    assert!(contract["treatments"]["CONTROL"]["reused_from"].is_object());
    let reused = dir.path().join("reused/per_task.jsonl").display().to_string();
    let c = ok(&run(&[
        "compare",
        "--baseline",
        &reused,
        "--candidate",
        &reused,
        "--treatment-baseline",
        "CONTROL",
        "--treatment-candidate",
        "ex2",
        "--format",
        "json",
        "--allow-simulated",
    ]));
    let c: Value = serde_json::from_str(&c.0).expect("compare json");
    assert_eq!(c["contract"]["treatments"]["baseline"]["method"], "CONTROL", "{:#}", c["contract"]);
    assert!(c["contract"]["treatments"]["baseline"]["reused_from"].is_object());
    assert_eq!(c["contract"]["treatments"]["candidate"]["method"], "ex2");

    // A reuse file holding every requested treatment: refused as documented, nothing run.
    let both = ["--treatment", "CONTROL", "--treatment", "example=none", "--reuse-baseline", &sim1];
    let err = refused(&local(dir.path(), "again", &[&sim[..], &both[..]].concat()));
    assert!(err.contains("it holds every treatment of the sweep (CONTROL, example); nothing is left to run"), "{err}");
    assert!(!dir.path().join("again/per_task.jsonl").exists());

    // A forged baseline: one record's own digest differs from contract.json's (its outcome flipped too).
    let forged_dir = dir.path().join("forged");
    std::fs::create_dir_all(&forged_dir).expect("mkdir");
    std::fs::copy(dir.path().join("sim1/contract.json"), forged_dir.join("contract.json")).expect("contract");
    let mut lines: Vec<String> = std::fs::read_to_string(dir.path().join("sim1/per_task.jsonl"))
        .expect("records")
        .lines()
        .map(String::from)
        .collect();
    let mut v: Value = serde_json::from_str(&lines[2]).expect("record");
    v["config_digest"] = format!("sha256:{}", "0".repeat(64)).into();
    let flipped = v["success"] != true;
    v["success"] = Value::Bool(flipped);
    v["outcome"] = if flipped { "success" } else { "failure" }.into();
    v["failure_category"] = if flipped { Value::Null } else { "wrong_answer".into() };
    for k in ["error", "error_detail"] {
        v.as_object_mut().expect("object").remove(k);
    }
    if v["steps"].is_null() {
        v["steps"] = 3.into();
    }
    lines[2] = v.to_string();
    std::fs::write(forged_dir.join("per_task.jsonl"), lines.join("\n") + "\n").expect("forged");
    let forged = forged_dir.join("per_task.jsonl").display().to_string();
    let one = ["--treatment", "CONTROL", "--treatment", "ex2=none", "--reuse-baseline", &forged];
    let err = refused(&local(dir.path(), "forged-run", &[&sim[..], &one[..]].concat()));
    assert!(err.contains(&format!("--reuse-baseline {forged}:3: the record's config_digest is sha256:000")), "{err}");
    assert!(!dir.path().join("forged-run/per_task.jsonl").exists(), "nothing ran");
}
