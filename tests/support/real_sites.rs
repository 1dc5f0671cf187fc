//! The real WordPress instances of `bash scripts/real-sites.sh wordpress` (docs/real-sites.md), for the
//! tests that run the harness on them: started (or found running), their sites file read, reset. Include it
//! beside `#[path = "support/cli.rs"] mod cli;`, whose repository root it reads from.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::cli::root;

/// Starts (or finds running) both instances; the sites file's path.
pub fn start_real_sites() -> PathBuf {
    let out = Command::new("bash").arg(root().join("scripts/real-sites.sh")).arg("wordpress").output().unwrap();
    assert!(out.status.success(), "real-sites.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = PathBuf::from(stdout.lines().last().unwrap().trim());
    assert!(path.is_file(), "real-sites.sh printed {path:?}, not a file");
    path
}

pub fn sites_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn curl(args: &[&str]) -> String {
    let out = Command::new("curl").args(["-s", "--max-time", "30"]).args(args).output().unwrap();
    assert!(out.status.success(), "curl {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `POST <env_ctrl>/reset`, which must succeed.
pub fn reset(env_ctrl: &str) {
    let v: Value = serde_json::from_str(&curl(&["-X", "POST", &format!("{env_ctrl}/reset")])).unwrap();
    assert_eq!(v["success"], true, "reset: {v}");
}

/// The first task of every WordPress template: (task id, template id).
pub fn first_per_template() -> Vec<(u64, u64)> {
    let tasks: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root().join("data/tasks/wordpress.v1.json")).unwrap()).unwrap();
    let mut first = std::collections::BTreeMap::new();
    for t in &tasks {
        first.entry(t["intent_template_id"].as_u64().unwrap()).or_insert(t["task_id"].as_u64().unwrap());
    }
    first.into_iter().map(|(template, id)| (id, template)).collect()
}

/// The WordPress tasks of `version` as the real instances run them: `data/tasks/real/` where it has the
/// version's file (the tasks adapted to 6.1), else the fixture's.
pub fn real_tasks(version: &str) -> Vec<Value> {
    let adapted = root().join(format!("data/tasks/real/wordpress.{version}.json"));
    let path = if adapted.exists() { adapted } else { root().join(format!("data/tasks/wordpress.{version}.json")) };
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
