//! The real WordPress 6.1.9 from Debian's packages (`bash scripts/real-sites.sh wordpress`, docs/real-sites.md)
//! run by the harness as a user runs it, in real headless Chromium:
//! * a mutating task's effect, read through WordPress's own REST API, is there after the attempt and gone
//!   after the env-ctrl reset;
//! * `skillshift local --real-sites FILE --sites wordpress` runs 12 families under all six conditions on
//!   the two real instances (the perturbations injected into the real pages), 0 errors, every source task
//!   solved by the `skills` agent with the real-WordPress library, the records and the frozen contract
//!   naming the real instances' digests;
//! * `skillshift tasks audit --real-sites FILE` on the first task of every template, both versions, with
//!   the real reference solutions and the tasks adapted to 6.1 (`data/tasks/real/`): every one `ok`.
//!
//! One test, in order: the instances are shared, and a reset by one step would change what another reads.
//! The whole column (79 tasks x 6 conditions) is `scripts/real-sites/column.sh`.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

#[path = "support/real_sites.rs"]
mod real_sites;

#[path = "support/cli.rs"]
mod cli;

use cli::{bin, root};
use real_sites::{curl, first_per_template, reset, sites_file, start_real_sites};

/// Post 18's title as WordPress's REST API renders it.
fn post_title(url: &str) -> String {
    let v: Value = serde_json::from_str(&curl(&[&format!("{url}/wp-json/wp/v2/posts/18")])).unwrap();
    v["title"]["rendered"].as_str().unwrap().to_string()
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `tasks audit --real-sites FILE --families FAMILIES --json`, its report.
fn audit(file: &Path, families: &Path) -> Value {
    let out = bin()
        .args(["tasks", "audit", "--sites", "wordpress", "--json"])
        .arg("--real-sites")
        .arg(file)
        .arg("--families")
        .arg(families)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!("audit --json: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn families_file(dir: &Path, ids: &[u64]) -> PathBuf {
    let path = dir.join("families.json");
    std::fs::write(&path, serde_json::json!({"sites": {"wordpress": {"families": ids}}}).to_string()).unwrap();
    path
}

#[test]
fn the_real_wordpress_runs_resets_and_audits_as_the_fixture_does() {
    let file = start_real_sites();
    let cfg = sites_file(&file);
    let v1 = &cfg["sites"]["wordpress-v1"];
    let (url, ctl) = (v1["url"].as_str().unwrap(), v1["env_ctrl"].as_str().unwrap());
    let tmp = tempfile::tempdir().unwrap();

    // A mutating task (rename post 18) through the harness, then the reset, both read through the REST API.
    reset(ctl);
    let before = post_title(url);
    assert_eq!(before, "Thoughts on Open Source");
    let run = bin()
        .args(["run", "skillshift.wordpress.v1.7", "--condition", "src", "--reset-policy", "never"])
        .arg("--sites")
        .arg(&file)
        .arg("--skills")
        .arg(root().join("data/skills/real-wordpress.json"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    let record: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(record["success"], true, "the rename on the real v1: {out}");
    assert_eq!(post_title(url), "Thoughts on Open Source: A Second Look", "the attempt's effect, read through REST");
    reset(ctl);
    assert_eq!(post_title(url), before, "the reset restores the seeded database");

    // `local` on 12 families, all six conditions, both real instances.
    let picked: Vec<u64> = first_per_template().into_iter().map(|(id, _)| id).take(12).collect();
    let families = families_file(tmp.path(), &picked);
    let out_dir = tmp.path().join("local");
    let local = bin()
        .args(["local", "--sites", "wordpress", "--workers", "2"])
        .arg("--real-sites")
        .arg(&file)
        .arg("--families")
        .arg(&families)
        .arg("--skills")
        .arg(root().join("data/skills/real-wordpress.json"))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&local.stdout), String::from_utf8_lossy(&local.stderr));
    assert!(local.status.success(), "local --real-sites: {said}");
    assert!(said.contains("ran on the real instances of"), "the note says where it ran: {said}");
    // One record per attempt: a unit whose attempt errored (a lost sign-in) and was retried has two; its
    // last attempt is its measurement.
    let mut last: BTreeMap<(String, String), Value> = BTreeMap::new();
    for r in read_jsonl(&out_dir.join("per_task.jsonl")) {
        let key = (r["uid"].as_str().unwrap().to_string(), r["condition"].as_str().unwrap().to_string());
        if last.get(&key).is_none_or(|seen| seen["attempt"].as_u64() < r["attempt"].as_u64()) {
            last.insert(key, r);
        }
    }
    let records: Vec<Value> = last.into_values().collect();
    assert_eq!(records.len(), 12 * 6, "12 families x 6 conditions");
    let conditions: BTreeSet<&str> = records.iter().map(|r| r["condition"].as_str().unwrap()).collect();
    assert_eq!(conditions.len(), 6);
    let errors: Vec<&Value> = records.iter().filter(|r| r["outcome"] == "error").collect();
    assert!(errors.is_empty(), "units whose last attempt errored on the real instances: {errors:?}");
    for r in &records {
        let image = if r["condition"].as_str().unwrap().starts_with("src") { "wordpress-v1" } else { "wordpress-v2" };
        assert_eq!(r["images"][image], cfg["sites"][image]["digest"], "{} ran on the real instance", r["uid"]);
    }
    // Every src task solved: the classic editor's autosave (sent when the title loses focus, "Publish"
    // disabled while it runs) is part of the input that started it, so "Publish" is clicked after it.
    let src_failed: Vec<&Value> =
        records.iter().filter(|r| r["condition"] == "src" && r["success"] != true).map(|r| &r["uid"]).collect();
    assert!(src_failed.is_empty(), "the skills agent solves every src task on the real v1: {src_failed:?}");
    let contract: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("contract.json")).unwrap()).unwrap();
    let contract_text = contract.to_string();
    for image in ["wordpress-v1", "wordpress-v2"] {
        let digest = cfg["sites"][image]["digest"].as_str().unwrap();
        assert!(contract_text.contains(digest), "the contract names {image}'s real digest");
    }

    // The audit: every template's first task, both versions, on the real instances.
    let all: Vec<(u64, u64)> = first_per_template();
    let families = families_file(tmp.path(), &all.iter().map(|(id, _)| *id).collect::<Vec<_>>());
    let report = audit(&file, &families);
    assert_eq!(report["real_sites"], serde_json::json!(["wordpress-v1", "wordpress-v2"]));
    let mut rows: BTreeMap<(String, u64), Value> = BTreeMap::new();
    for row in report["tasks"].as_array().unwrap() {
        rows.insert((row["version"].as_str().unwrap().to_string(), row["task_id"].as_u64().unwrap()), row.clone());
    }
    // A sign-in the real application lost on a loaded machine is an environment error, which a sweep retries
    // (`--max-retries`): those task-versions are audited once more, and only once.
    let lost: Vec<u64> = rows
        .values()
        .filter(|r| r["status"] == "error" && r["detail"].as_str().unwrap_or("").contains("site_login"))
        .map(|r| r["task_id"].as_u64().unwrap())
        .collect::<BTreeSet<u64>>()
        .into_iter()
        .collect();
    if !lost.is_empty() {
        let again = audit(&file, &families_file(tmp.path(), &lost));
        for row in again["tasks"].as_array().unwrap() {
            rows.insert((row["version"].as_str().unwrap().to_string(), row["task_id"].as_u64().unwrap()), row.clone());
        }
    }
    assert_eq!(rows.len(), 2 * 19, "every template's first task on both versions");
    let not_ok: Vec<(&String, &u64, &Value)> =
        rows.iter().filter(|(_, row)| row["status"] != "ok").map(|((v, id), row)| (v, id, &row["detail"])).collect();
    assert!(not_ok.is_empty(), "task-versions not ok on the real instances: {not_ok:?}");
}
