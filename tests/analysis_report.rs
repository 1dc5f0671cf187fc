//! `skillshift report` as a user runs it: the built binary on temporary
//! files, checking printed numbers, exit codes and the one error line.

use std::path::{Path, PathBuf};

use serde_json::Value;
use skillshift_analysis::synth::{write_grid, Plan};

#[path = "support/cli.rs"]
mod cli;

use cli::{skillshift, stderr, stdout, synthetic};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
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
        [
            "schema",
            "method",
            "source",
            "config_digest",
            "metrics",
            "intervals",
            "n",
            "reasons",
            "cells",
            "ledger",
            "reliability",
            "cost",
            "gates",
            "failure_categories"
        ]
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
    // 1 timeout (tgt-exec) among 6 evaluable attempts.
    assert!(close(&l["rates"]["timeout"], 1.0 / 6.0));
    // No record carries LLM use: null, never 0.
    assert_eq!(
        v["cost"],
        serde_json::json!({"total_usd": null, "per_unit_usd": null, "tokens_in": null, "tokens_out": null, "llm_calls": null})
    );
    assert_eq!(v["gates"]["readiness"], "not determined");
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

/// Wilson's score interval, written out from the textbook formula (independent of the crate's code):
/// (p + z²/2n ∓ z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), clipped to [0, 1].
fn wilson(p: f64, n: f64) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let mid = p + z * z / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    let scale = 1.0 + z * z / n;
    (((mid - spread) / scale).max(0.0), ((mid + spread) / scale).min(1.0))
}

fn pair(v: &Value) -> (f64, f64) {
    (v[0].as_f64().expect("lo"), v[1].as_f64().expect("hi"))
}

#[test]
fn intervals_beside_every_headline_sr_match_an_independent_computation_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = synthetic(dir.path(), "full.jsonl", &Plan { reps: 2, ..plan("ASI", 40, 1) });
    let path = f.to_str().expect("utf8");
    let v: Value = serde_json::from_str(&stdout(&skillshift(&["report", path, "--format", "json"]))).expect("json");
    let iv = &v["intervals"];
    assert_eq!(iv["level"], 0.95);
    assert_eq!(iv["method"], serde_json::json!({"cells": "wilson", "marginals": "stratified-wilson"}));
    let conds = ["src", "src-perc", "src-exec", "tgt", "tgt-perc", "tgt-exec"];
    // Every cell: Wilson over its successes / evaluable, in percent.
    let mut gitlab = Vec::new();
    for site in ["gitlab", "magento", "wordpress"] {
        for c in conds {
            let cell = &v["cells"][site][c];
            let n = cell["evaluable"].as_f64().expect("n");
            let p = cell["SR"].as_f64().expect("SR") / 100.0;
            let (lo, hi) = wilson(p, n);
            let (got_lo, got_hi) = pair(&iv["SR"]["cells"][site][c]);
            assert!((got_lo - 100.0 * lo).abs() < 1e-9 && (got_hi - 100.0 * hi).abs() < 1e-9, "{site} {c}");
            if site == "gitlab" {
                gitlab.push((p, n));
            }
        }
    }
    // A website: the unweighted mean of its six cells, Wilson at n_eff = k² / Σ 1/n_i (stratified Wilson).
    let k = gitlab.len() as f64;
    let mean = gitlab.iter().map(|(p, _)| p).sum::<f64>() / k;
    let n_eff = k * k / gitlab.iter().map(|(_, n)| 1.0 / n).sum::<f64>();
    let (lo, hi) = wilson(mean, n_eff);
    let (got_lo, got_hi) = pair(&iv["SR"]["websites"]["gitlab"]);
    assert!((got_lo - 100.0 * lo).abs() < 1e-9 && (got_hi - 100.0 * hi).abs() < 1e-9, "{got_lo} {lo}");
    assert!((100.0 * mean - v["metrics"]["SR"]["websites"]["gitlab"].as_f64().expect("sr")).abs() < 1e-9);
    // The ledger's attempt success: Wilson over success / evaluable attempts.
    let a = &v["ledger"]["attempts"];
    let (s_, e_) = (a["success"].as_f64().expect("s"), a["evaluable"].as_f64().expect("e"));
    let (lo, hi) = wilson(s_ / e_, e_);
    let (got_lo, got_hi) = pair(&iv["ledger"]["attempt_success"]);
    assert!((got_lo - lo).abs() < 1e-12 && (got_hi - hi).abs() < 1e-12);

    // The same intervals, two decimals, in the table, Markdown and HTML, with the method named.
    let (o_lo, o_hi) = pair(&iv["SR"]["overall"]);
    let cell = pair(&iv["SR"]["cells"]["magento"]["tgt"]);
    for format in ["table", "markdown", "html"] {
        let t = stdout(&skillshift(&["report", path, "--format", format]));
        assert!(t.contains(&format!("{o_lo:.2}")) && t.contains(&format!("{o_hi:.2}")), "{format}");
        assert!(t.contains(&format!("[{:.2}, {:.2}]", cell.0, cell.1)), "{format}: cell interval");
        assert!(t.contains("stratified Wilson interval"), "{format}: the method is stated");
        assert!(t.contains("SR 95% lo") && t.contains("SR 95% hi"), "{format}");
    }
}

/// Add LLM use to every non-error line of a records file: calls = steps, 1000 tokens in and 50 out per call,
/// $0.002 per call.
fn with_usage(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read");
    let mut out = String::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).expect("line");
        if v["outcome"] != "error" {
            let steps = v["steps"].as_u64().expect("steps");
            v["llm_calls"] = steps.into();
            v["tokens_in"] = (1000 * steps).into();
            v["tokens_out"] = (50 * steps).into();
            v["cost_usd"] = (0.002 * steps as f64).into();
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    std::fs::write(path, out).expect("write");
}

#[test]
fn cost_and_llm_use_by_population_and_gates_with_their_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = synthetic(dir.path(), "costed.jsonl", &plan("ASI", 40, 1));
    with_usage(&f);
    let path = f.to_str().expect("utf8");
    let v: Value = serde_json::from_str(&stdout(&skillshift(&["report", path, "--format", "json"]))).expect("json");
    // Totals recomputed from the file itself.
    let text = std::fs::read_to_string(&f).expect("read");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("line")).collect();
    let calls: u64 = lines.iter().filter_map(|l| l["llm_calls"].as_u64()).sum();
    let cost: f64 = lines.iter().filter_map(|l| l["cost_usd"].as_f64()).sum();
    let units = v["ledger"]["units"]["all"].as_f64().expect("units");
    assert_eq!(v["cost"]["llm_calls"].as_u64(), Some(calls));
    assert_eq!(v["cost"]["tokens_in"].as_u64(), Some(1000 * calls));
    assert!((v["cost"]["total_usd"].as_f64().expect("usd") - cost).abs() < 1e-9);
    assert!((v["cost"]["per_unit_usd"].as_f64().expect("per unit") - cost / units).abs() < 1e-12);
    let t = stdout(&skillshift(&["report", path]));
    assert!(t.contains("LLM use by population"), "{t}");
    let ok_calls: u64 =
        lines.iter().filter(|l| l["outcome"] == "success").filter_map(|l| l["llm_calls"].as_u64()).sum();
    let success_row = t.lines().find(|l| l.starts_with("success ") && l.contains('(')).expect("success row");
    assert!(success_row.contains(&format!(" {ok_calls} (")), "{success_row}");
    assert!(t.lines().any(|l| l.starts_with("failure or timeout ")));
    assert!(t.contains("missing llm_calls on"), "error attempts carry no use: totals are lower bounds: {t}");

    let gates = |name: &str, body: &str| {
        let g = dir.path().join(name);
        std::fs::write(&g, format!(r#"{{"schema": "skillshift.gates/1", "gates": [{body}]}}"#)).expect("write");
        g
    };
    let sr = v["ledger"]["rates"]["attempt_success"].as_f64().expect("rate");
    let pass = gates("pass.json", r#"{"name": "success", "metric": "ledger.rates.attempt_success", "min": 0.2}"#);
    let o = skillshift(&["report", path, "--gates", pass.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("readiness: pass"));
    let fail = gates(
        "fail.json",
        r#"{"name": "success", "metric": "ledger.rates.attempt_success", "min": 0.2},
           {"name": "spend", "metric": "cost.total_usd", "max": 0.01}"#,
    );
    let o = skillshift(&["report", path, "--gates", fail.to_str().expect("utf8"), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let j: Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(j["gates"]["readiness"], "fail");
    assert_eq!(j["gates"]["results"][1]["verdict"], "fail", "a lower bound above the budget fails it");
    let straddle = gates(
        "straddle.json",
        &format!(r#"{{"name": "success", "metric": "ledger.rates.attempt_success", "min": {sr}}}"#),
    );
    let o = skillshift(&["report", path, "--gates", straddle.to_str().expect("utf8"), "--format", "json"]);
    assert_eq!(o.status.code(), Some(2), "a threshold inside the interval cannot be decided");
    let j: Value = serde_json::from_str(&stdout(&o)).expect("json");
    let r = &j["gates"]["results"][0];
    assert_eq!((r["verdict"].as_str(), r["min"].as_f64()), (Some("inconclusive"), Some(sr)));
    let (lo, hi) = pair(&r["interval"]);
    assert!(lo < sr && sr < hi);
    assert_eq!(
        r.as_object().expect("result").keys().map(String::as_str).collect::<Vec<_>>(),
        ["name", "metric", "observed", "min", "interval", "verdict", "reason"]
    );

    // A bad gates file is one line naming the file and the gate, exit 2, before anything is printed.
    for (body, want) in [
        (
            r#"{"name": "t", "metric": "ledger.rates.timout", "max": 0.1}"#,
            "gate 1 ('t'): metric 'ledger.rates.timout' is not in the summary",
        ),
        (
            r#"{"name": "t", "metric": "ledger.rates.timeout", "min": 0.1, "max": 0.2}"#,
            "gate 1 ('t'): has both min and max",
        ),
        (r#"{"name": "t", "metric": "ledger.rates.timeout"}"#, "gate 1 ('t'): has neither min nor max"),
        (r#"{"name": "t", "metric": "cost.total_usd", "max": "NaN"}"#, "gate 1 ('t'): 'max' must be a finite number"),
    ] {
        let g = gates("bad.json", body);
        let o = skillshift(&["report", path, "--gates", g.to_str().expect("utf8")]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(&format!("gates file {}: {want}", g.display())), "{e}");
        assert!(stdout(&o).is_empty());
    }
}
