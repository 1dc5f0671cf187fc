//! `skillshift tasks audit` as a user runs it, in real headless Chromium: a stratified sample
//! (the first task of every template of every site, both versions) is all `ok`; a task file carrying
//! the old invite evaluator (one `must_include` across two table cells, which Chromium's `innerText`
//! separates with a tab) exits 1 naming those tasks with the evaluator's expected and got; perturbed
//! runs are reported apart; without a browser the audit is exit 2 with one line naming what is
//! missing and the command that installs it.
//!
//! The full audit (710 task-versions, the four perturbed conditions) is `scripts/audit.sh`, with its
//! figures in docs/tasks.md.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod support;

#[path = "support/cli.rs"]
mod cli;

use cli::{bin, data};

use support::copy_dir;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn tasks(site: &str, version: &str) -> Vec<Value> {
    let path = data().join(format!("tasks/{site}.{version}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The first task of every template, per site: a `--families` file's `sites` map.
fn one_per_template() -> (Value, usize) {
    let mut sites = serde_json::Map::new();
    let mut n = 0;
    for site in ["gitlab", "magento", "wordpress"] {
        let mut first: BTreeMap<u64, u64> = BTreeMap::new();
        for t in tasks(site, "v1") {
            let template = t["intent_template_id"].as_u64().unwrap();
            first.entry(template).or_insert(t["task_id"].as_u64().unwrap());
        }
        n += first.len();
        let families: Vec<u64> = first.into_values().collect();
        sites.insert(site.into(), serde_json::json!({ "families": families }));
    }
    (serde_json::json!({ "sites": sites }), n)
}

fn audit(data: &Path, args: &[&str]) -> Output {
    bin().args(["tasks", "--data"]).arg(data).arg("audit").args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn every_template_of_every_site_passes_its_reference_and_fails_doing_nothing_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let (families, templates) = one_per_template();
    let file = dir.path().join("families.json");
    std::fs::write(&file, families.to_string()).unwrap();
    let out = audit(&data(), &["--json", "--families", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["schema"], "skillshift.audit/1");
    let rows = report["tasks"].as_array().unwrap();
    // Both versions of every template.
    assert_eq!(rows.len(), 2 * templates, "{}", text(&out));
    assert_eq!(report["counts"]["ok"], 2 * templates);
    for r in rows {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["reference"]["verdict"], "pass", "{r}");
        assert_eq!(r["idle"]["verdict"], "fail", "{r}");
        let evaluators = r["reference"]["evaluators"].as_array().unwrap();
        assert!(!evaluators.is_empty() && evaluators.iter().all(|e| e["verdict"] == "pass"), "{r}");
    }
    assert!(report["wall_s"].as_f64().unwrap() > 0.0);
    // Progress went to stderr, the report alone to stdout.
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{0}/{0} attempts", 4 * templates)));
}

#[test]
fn the_old_invite_evaluator_is_named_with_its_expected_and_got() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&data(), dir.path());
    let file = dir.path().join("tasks/gitlab.v1.json");
    let mut tasks: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let invites: Vec<usize> = tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t["intent_template"] == "Invite {{username}} to {{project}} as {{role}}")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(invites.len(), 7);
    for &i in &invites[..2] {
        let check = &mut tasks[i]["eval"]["program_html"][0];
        check["locator"] = Value::from("document.querySelector(\"#members-table\").innerText");
        let wanted = check["required_contents"]["must_include"][0].as_str().unwrap().replace(" | ", " ");
        check["required_contents"]["must_include"] = serde_json::json!([wanted]);
    }
    std::fs::write(&file, serde_json::to_string_pretty(&tasks).unwrap()).unwrap();
    let families = dir.path().join("families.json");
    let ids = [invites[0], invites[1], invites[2]];
    std::fs::write(&families, serde_json::json!({"sites": {"gitlab": {"families": ids}}}).to_string()).unwrap();
    let out = audit(dir.path(), &["--sites", "gitlab", "--versions", "v1", "--families", families.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for &i in &invites[..2] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("skillshift.gitlab.v1.{i} reference_fails")))
            .unwrap_or_else(|| panic!("no line for task {i}: {stdout}"));
        let wanted = tasks[i]["eval"]["program_html"][0]["required_contents"]["must_include"][0].as_str().unwrap();
        assert!(line.contains(&format!("expected {{\"must_include\":[\"{wanted}\"]}}")), "{line}");
        // What Chromium read: the cells apart, a tab between them.
        assert!(line.contains("got Account\\tMax role"), "{line}");
    }
    assert!(!stdout.contains(&format!("skillshift.gitlab.v1.{} ", invites[2])), "{stdout}");
    assert!(stdout.contains("3 task-versions: 1 ok, 2 reference_fails"), "{stdout}");
}

#[test]
fn perturbed_runs_are_reported_apart_and_never_change_a_status() {
    let dir = tempfile::tempdir().unwrap();
    let families = dir.path().join("families.json");
    std::fs::write(&families, serde_json::json!({"sites": {"wordpress": {"families": [0, 1, 2]}}}).to_string())
        .unwrap();
    let out = audit(
        &data(),
        &[
            "--json",
            "--sites",
            "wordpress",
            "--conditions",
            "src-perc,tgt-exec",
            "--families",
            families.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tasks"].as_array().unwrap().len(), 6);
    let perturbed = report["perturbed"].as_array().unwrap();
    // Each condition runs on its own version only: 3 tasks under src-perc (v1), 3 under tgt-exec (v2).
    assert_eq!(perturbed.len(), 6, "{}", text(&out));
    for p in perturbed {
        let uid = p["uid"].as_str().unwrap();
        let wanted = if p["condition"] == "src-perc" { ".v1." } else { ".v2." };
        assert!(uid.contains(wanted), "{p}");
        assert!(["pass", "fail"].contains(&p["verdict"].as_str().unwrap()), "{p}");
    }
}

#[test]
fn without_a_browser_the_audit_is_exit_2_naming_what_is_missing() {
    let out = bin()
        .env("SKILLSHIFT_CHROMIUM", "/nonexistent/chromium")
        .args(["tasks", "--data"])
        .arg(data())
        .args(["audit", "--sites", "wordpress", "--versions", "v1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("/nonexistent/chromium") && lines[0].contains("scripts/install-deps.sh"), "{stderr}");
    assert!(out.stdout.is_empty());
}
