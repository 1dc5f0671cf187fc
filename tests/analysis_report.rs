//! `skillshift report` as a user runs it: the built binary on temporary
//! files, checking printed numbers, exit codes and the one error line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use skillshift_analysis::synth::{write_grid, Plan};

fn skillshift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skillshift"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run skillshift")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn synthetic(dir: &Path, name: &str, plan: &Plan) -> PathBuf {
    let p = dir.join(name);
    let mut buf = Vec::new();
    write_grid(plan, &mut buf).expect("generate");
    std::fs::write(&p, buf).expect("write");
    p
}

fn plan(treatment: &str, success_pct: u64, max_calls: u64) -> Plan {
    Plan { treatment: treatment.into(), reps: 1, error_pct: 3, skills: true, max_calls, success_pct, seed: 11 }
}

fn rec(cond: &str, attempt: u32, outcome: &str, steps: &str, calls: &str, fails: &str) -> String {
    let v = if cond.starts_with("src") { "v1" } else { "v2" };
    let success = match outcome {
        "success" => "true",
        "error" => "null",
        _ => "false",
    };
    format!(
        r#"{{"uid": "skillshift.gitlab.{v}.0", "site": "gitlab", "condition": "{cond}", "success": {success}, "steps": {steps}, "skill_calls": {calls}, "skill_failures": {fails}, "outcome": "{outcome}", "attempt": {attempt}, "duration_ms": {}}}"#,
        100 + attempt
    )
}

/// One gitlab family under all six conditions, built to exercise each rule the seeds call easy to get wrong.
fn rules_file() -> String {
    [
        // src: attempt 0 an error, attempt 1 a failure whose 2 skill calls both hit runtime errors,
        // attempt 2 a success that must not count (the lowest valid attempt wins).
        rec("tgt", 0, "failure", "8", "1", "0"),
        rec("src", 2, "success", "1", "0", "0"),
        rec("src", 0, "error", "null", "null", "null"),
        rec("src", 1, "failure", "10", "2", "2"),
        // src-perc: every attempt an error: invalid, never a failure.
        rec("src-perc", 0, "error", "null", "null", "null"),
        rec("src-perc", 1, "error", "null", "null", "null"),
        rec("src-exec", 0, "success", "3", "0", "0"),
        rec("tgt-perc", 0, "success", "2", "1", "1"),
        rec("tgt-exec", 0, "timeout", "10", "0", "0"),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn json_summary_follows_each_easy_to_get_wrong_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(dir.path(), "per_task.jsonl", &rules_file());
    let o = skillshift(&["report", f.to_str().expect("utf8"), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    let keys: Vec<&str> = v.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["schema", "method", "source", "config_digest", "metrics", "n", "reasons", "cells", "ledger", "reliability"]
    );
    assert_eq!(v["schema"], "skillshift.summary/1");
    assert_eq!(v["source"], "run");
    assert_eq!(v["method"], "default");
    let m = &v["metrics"];
    let close = |x: &Value, want: f64| (x.as_f64().expect("number") - want).abs() < 1e-9;
    // Invalid is never a failure: 2 successes over 5 evaluable cells, not 6.
    assert!(close(&m["SR"]["websites"]["gitlab"], 40.0), "{}", m["SR"]);
    // AS averages over every evaluable task, failed ones included: (10 + 3 + 8 + 2 + 10) / 5.
    assert!(close(&m["AS"]["websites"]["gitlab"], 6.6), "{}", m["AS"]);
    // SFR counts runtime errors as failures: src 2/2, tgt 0/1, tgt-perc 1/1; cells without calls are null, not 0.
    assert!(close(&m["SFR"]["websites"]["gitlab"], 200.0 / 3.0), "{}", m["SFR"]);
    let cells = &v["cells"]["gitlab"];
    assert!(close(&cells["src"]["AS"], 10.0), "lowest valid attempt wins: {}", cells["src"]);
    assert!(close(&cells["src"]["SR"], 0.0));
    assert_eq!(cells["src-perc"]["SR"], Value::Null);
    assert_eq!((cells["src-perc"]["evaluable"].as_u64(), cells["src-perc"]["invalid"].as_u64()), (Some(0), Some(1)));
    assert!(close(&cells["src-exec"]["ASC"], 0.0));
    assert_eq!(cells["src-exec"]["SFR"], Value::Null);
    let reasons = v["reasons"].as_object().expect("reasons");
    assert!(reasons.contains_key("SFR.cells.gitlab.src-exec"));
    assert!(reasons.contains_key("SR.cells.gitlab.src-perc"));
    // Sites without records: null marginals, each with a reason.
    assert_eq!(m["SR"]["websites"]["magento"], Value::Null);
    assert!(reasons.contains_key("SR.websites.magento"));
    assert_eq!(v["n"]["tasks"]["gitlab"], 1);
    assert_eq!(v["n"]["skill_calls"]["overall"], 4);
    let l = &v["ledger"];
    assert_eq!(l["attempts"]["all"], 9);
    assert_eq!(l["attempts"]["error"], 3);
    assert_eq!(l["units"]["all"], 6);
    assert_eq!(l["units"]["invalid"], 1);
    assert_eq!(l["units"]["eventual_success"], 2);
    assert!(close(&l["rates"]["eventual_completion"], 0.4));
    assert_eq!(v["reliability"]["k"], serde_json::json!([1]));
}

#[test]
fn skill_calls_null_makes_asc_and_sfr_null_metrics_with_reasons() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = Plan { skills: false, ..plan("AWM", 35, 0) };
    let f = synthetic(dir.path(), "awm.jsonl", &p);
    let o = skillshift(&["report", f.to_str().expect("utf8"), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["metrics"]["ASC"], Value::Null);
    assert_eq!(v["metrics"]["SFR"], Value::Null);
    assert!(v["reasons"]["ASC"].as_str().expect("reason").contains("skill_calls: null"));
    assert!(v["reasons"]["SFR"].is_string());
    assert_eq!(v["n"]["tasks"], serde_json::json!({"gitlab": 162, "magento": 114, "wordpress": 79}));
}

#[test]
fn table_markdown_and_html_show_the_same_two_decimal_numbers_and_the_low_invocation_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(dir.path(), "per_task.jsonl", &rules_file());
    let t = skillshift(&["report", f.to_str().expect("utf8")]);
    assert!(t.status.success());
    let text = stdout(&t);
    let sfr_line = text.lines().find(|l| l.starts_with("SFR ")).expect("SFR row");
    assert!(sfr_line.contains("66.67 ⚠︎"), "{sfr_line}");
    assert!(text.contains("SR by cell (successes/evaluable)"));
    assert!(text.contains("0.00 (0/1)"), "counts beside rates:\n{text}");
    assert!(text.contains(skillshift_analysis::reliability::ONE_REP_WARNING));
    assert!(text.contains("treatment default · 9 records from"));
    let md = stdout(&skillshift(&["report", f.to_str().expect("utf8"), "--format", "markdown"]));
    assert!(md.contains("| SFR |") && md.contains("66.67 ⚠︎"));
    let html = stdout(&skillshift(&["report", f.to_str().expect("utf8"), "--format", "html"]));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("title=\"4 skill invocations\">66.67 ⚠︎"), "hover count");
    assert!(!html.contains("<script src") && !html.contains("<link"), "self-contained");
}

#[test]
fn several_treatments_need_a_choice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut buf = Vec::new();
    write_grid(&plan("CONTROL", 30, 0), &mut buf).expect("gen");
    write_grid(&plan("ASI", 40, 2), &mut buf).expect("gen");
    let f = dir.path().join("both.jsonl");
    std::fs::write(&f, buf).expect("write");
    let o = skillshift(&["report", f.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("several treatments (CONTROL, ASI)"), "{e}");
    let o = skillshift(&["report", f.to_str().expect("utf8"), "--treatment", "ASI", "--format", "json"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["method"], "ASI");
}

#[test]
fn a_partial_run_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = rules_file();
    // A second family only under src: gitlab's cells now hold 2 and 1 families.
    text.push_str(&rec("src", 0, "success", "4", "0", "0").replace("v1.0", "v1.5"));
    text.push('\n');
    let f = write(dir.path(), "partial.jsonl", &text);
    let o = skillshift(&["report", f.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is partial: gitlab has 1 task families in src-perc but 2 in src"), "{}", stderr(&o));
    let o = skillshift(&["report", f.to_str().expect("utf8"), "--allow-partial"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("note: partial run: gitlab"), "{}", stdout(&o));
}

#[test]
fn malformed_input_is_one_line_naming_file_and_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = rec("tgt", 0, "failure", "8", "1", "0");
    let other = good.replace("v2.0", "v2.1");
    let nulls =
        good.replace("\"skill_calls\": 1, \"skill_failures\": 0", "\"skill_calls\": null, \"skill_failures\": null");
    let cases: Vec<(&str, String, &str)> = vec![
        (&other, "{\"uid\": \"skillshift.gitlab.v2.0\",".into(), ":2: not valid JSON"),
        (&other, good.replace("\"tgt\"", "\"target\""), ":2: unknown condition 'target'"),
        (
            &other,
            good.replace("v2.0", "v1.0"),
            ":2: uid skillshift.gitlab.v1.0 is a v1 task but condition 'tgt' runs v2",
        ),
        (&good, good.clone(), ":2: duplicate record: line 1"),
        (
            &other,
            good.replace("\"skill_failures\": 0", "\"skill_failures\": 3"),
            ":2: skill_failures (3) is greater than skill_calls (1)",
        ),
        (&other, good.replace("\"steps\": 8, ", ""), ":2: missing required field 'steps'"),
        (&other, nulls, ":2: skill_calls is null but line 1"),
    ];
    for (i, (first, line, want)) in cases.iter().enumerate() {
        let name = format!("bad{i}.jsonl");
        let f = write(dir.path(), &name, &format!("{first}\n{line}\n"));
        let o = skillshift(&["report", f.to_str().expect("utf8")]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{want}: {e}");
        assert_eq!(e.lines().count(), 1, "{want}: one line, got {e:?}");
        assert!(e.contains(&format!("{name}{want}")), "{e:?} should contain {name}{want}");
        assert!(stdout(&o).is_empty());
    }
    let o = skillshift(&["report", "/nonexistent/per_task.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read /nonexistent/per_task.jsonl"));
    assert_eq!(stderr(&o).lines().count(), 1);
}

#[test]
fn every_summary_the_report_emits_for_a_full_run_passes_leaderboard_validate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = synthetic(dir.path(), "full.jsonl", &plan("ASI", 40, 1));
    let o = skillshift(&["report", f.to_str().expect("utf8"), "--format", "json"]);
    assert!(o.status.success());
    let s = write(dir.path(), "asi.json", &stdout(&o));
    let o = skillshift(&["leaderboard", "validate", s.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("(ASI): accepted"));
}
