//! The fixture sites' v2 shifts what sites/CHANGES.md says it shifts, proven in real Chromium through
//! `skillshift tasks audit` (a solutions file in a copy of the data directory stands in for what is run):
//! * each example skill (written against v1), bound to the first task of its template, passes on v1,
//!   and on v2 fails where CHANGES.md says "breaks" and passes where it says "survives";
//! * v1's reference solution fails on v2 wherever the two versions' solutions differ (one task per
//!   template of the differing ones), except where CHANGES.md says the template's skill survives v2 (a
//!   redirect, say, still takes the old path to the new page): there it passes.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod support;

#[path = "support/cli.rs"]
mod cli;

use cli::{data, root};

use support::copy_dir;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

const SITES: [&str; 3] = ["gitlab", "magento", "wordpress"];

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// (site, skill name, breaks on v2) rows of CHANGES.md; the site is the `## ` section's.
fn expectations() -> Vec<(String, String, bool)> {
    let text = std::fs::read_to_string(root().join("sites/CHANGES.md")).unwrap();
    let mut rows = Vec::new();
    let mut site = None;
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("## ") {
            let h = header.to_lowercase();
            site = SITES.iter().find(|s| h.contains(*s)).map(|s| s.to_string());
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 4 && cells[1].starts_with('`') && matches!(cells[2], "breaks" | "survives") {
            if let Some(site) = &site {
                rows.push((site.clone(), cells[1].trim_matches('`').to_string(), cells[2] == "breaks"));
            }
        }
    }
    rows
}

/// A skill's steps bound to a task's instantiation: every `{{param}}` replaced by its value.
fn bind(steps: &Value, task: &Value) -> Value {
    let mut text = steps.to_string();
    for (k, v) in task["instantiation_dict"].as_object().unwrap() {
        let value = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let escaped = serde_json::to_string(&value).unwrap();
        text = text.replace(&format!("{{{{{k}}}}}"), &escaped[1..escaped.len() - 1]);
    }
    serde_json::from_str(&text).unwrap()
}

/// Runs the audit on `dir` over `families` (site -> task ids) and returns (uid -> reference verdict).
fn audit(dir: &Path, families: &BTreeMap<String, Vec<usize>>, versions: &str) -> BTreeMap<String, String> {
    let sites: serde_json::Map<String, Value> =
        families.iter().map(|(s, ids)| (s.clone(), serde_json::json!({ "families": ids }))).collect();
    let file = dir.join("families.json");
    std::fs::write(&file, serde_json::json!({ "sites": sites }).to_string()).unwrap();
    let names: Vec<&str> = families.keys().map(String::as_str).collect();
    let out = cli::bin()
        .args(["tasks", "--data"])
        .arg(dir)
        .args(["audit", "--json", "--versions", versions, "--sites", &names.join(","), "--families"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 0 or 1: a reference failing is what some of these runs are for; 2 is an audit that could not run.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["tasks"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["status"] != "error"), "{}", report["tasks"]);
    rows.iter()
        .map(|r| (r["uid"].as_str().unwrap().to_string(), r["reference"]["verdict"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn v1_skills_break_on_v2_where_changes_md_says() {
    let rows = expectations();
    assert!(rows.len() >= 60, "CHANGES.md lists only {} skills", rows.len());
    let library = read(&data().join("skills/example.json"));
    let skills = library["skills"].as_array().unwrap();
    // Every example skill is accounted for in CHANGES.md.
    for s in skills {
        let (site, name) = (s["site"].as_str().unwrap(), s["name"].as_str().unwrap());
        assert!(
            rows.iter().any(|(rs, rn, _)| rs == site && rn == name),
            "{site} skill {name} is missing from CHANGES.md"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&data(), dir.path());
    let mut families: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut expected = Vec::new();
    for site in SITES {
        let v1 = read(&data().join(format!("tasks/{site}.v1.json")));
        let v2 = read(&data().join(format!("tasks/{site}.v2.json")));
        let mut sol: Vec<Value> =
            ["v1", "v2"].iter().map(|v| read(&data().join(format!("solutions/{site}.{v}.json")))).collect();
        for (rs, name, breaks) in rows.iter().filter(|(rs, _, _)| rs == site) {
            let skill = skills.iter().find(|s| s["site"] == *rs && s["name"] == *name).unwrap();
            let at = v1
                .as_array()
                .unwrap()
                .iter()
                .position(|t| t["intent_template"] == skill["description"])
                .unwrap_or_else(|| panic!("{site} {name}: no task of its template"));
            for (i, version) in [&v1, &v2].iter().enumerate() {
                sol[i][at] = bind(&skill["steps"], &version[at]);
            }
            families.entry(site.to_string()).or_default().push(at);
            expected.push((format!("skillshift.{site}.v1.{at}"), true, name.clone()));
            expected.push((format!("skillshift.{site}.v2.{at}"), !breaks, name.clone()));
        }
        for (i, v) in ["v1", "v2"].iter().enumerate() {
            std::fs::write(dir.path().join(format!("solutions/{site}.{v}.json")), sol[i].to_string()).unwrap();
        }
    }
    let verdicts = audit(dir.path(), &families, "v1,v2");
    let mut problems = Vec::new();
    let mut broke = 0;
    for (uid, passes, name) in &expected {
        let got = verdicts.get(uid).map(String::as_str);
        match (passes, got) {
            (true, Some("pass")) => {}
            (false, Some("fail")) => broke += 1,
            _ => problems
                .push(format!("{name} on {uid}: expected {}, got {got:?}", if *passes { "pass" } else { "fail" })),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(broke >= 20, "only {broke} skills break on v2");
}

#[test]
fn v1_solutions_on_v2_fail_where_the_versions_differ_unless_changes_md_says_the_skill_survives() {
    let rows = expectations();
    let library = read(&data().join("skills/example.json"));
    let skills = library["skills"].as_array().unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&data(), dir.path());
    let mut families: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut expected: BTreeMap<String, bool> = BTreeMap::new();
    for site in SITES {
        let tasks = read(&data().join(format!("tasks/{site}.v2.json")));
        let v1 = read(&data().join(format!("solutions/{site}.v1.json")));
        let mut v2 = read(&data().join(format!("solutions/{site}.v2.json")));
        let mut templates = std::collections::BTreeSet::new();
        for (i, t) in tasks.as_array().unwrap().iter().enumerate() {
            if v1[i] != v2[i] && templates.insert(t["intent_template_id"].as_u64().unwrap()) {
                v2[i] = v1[i].clone();
                families.entry(site.to_string()).or_default().push(i);
                // The template's skill is v1's solution with placeholders: CHANGES.md says whether it survives v2.
                let skill =
                    skills.iter().find(|k| k["site"] == site && k["description"] == t["intent_template"]).unwrap();
                let survives = rows.iter().any(|(rs, n, breaks)| rs == site && skill["name"] == *n && !breaks);
                expected.insert(format!("skillshift.{site}.v2.{i}"), survives);
            }
        }
        std::fs::write(dir.path().join(format!("solutions/{site}.v2.json")), v2.to_string()).unwrap();
    }
    let n: usize = families.values().map(Vec::len).sum();
    assert!(n >= 20, "only {n} templates differ between the versions");
    let verdicts = audit(dir.path(), &families, "v2");
    assert_eq!(verdicts.len(), n);
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(uid, passes)| verdicts.get(*uid).map(String::as_str) != Some(if **passes { "pass" } else { "fail" }))
        .map(|(uid, passes)| {
            format!("{uid}: expected {}, got {:?}", if *passes { "pass" } else { "fail" }, verdicts.get(uid))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Most differing templates break: the shifts are real.
    assert!(expected.values().filter(|p| !**p).count() >= n / 2, "{expected:?}");
}
