//! `skillshift tasks validate FILE... --json` on WebArena's own configs, as a
//! user runs it: the 60 real configs kept as test data all load (exit 0), a
//! broken copy names task and field (exit 1), a file that is not JSON is exit 2.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "support/cli.rs"]
mod cli;

use std::path::PathBuf;

fn configs() -> PathBuf {
    cli::root().join("common/tests/data/webarena/configs.json")
}

fn validate(files: &[&std::path::Path]) -> (Option<i32>, serde_json::Value, String) {
    let out = cli::bin().args(["tasks", "validate"]).args(files).arg("--json").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), json, String::from_utf8_lossy(&out.stderr).to_string())
}

#[test]
fn real_webarena_configs_all_load() {
    let (code, report, stderr) = validate(&[&configs()]);
    assert_eq!(code, Some(0), "{report} {stderr}");
    let file = &report["files"][0];
    assert_eq!(file["tasks"], 60);
    assert_eq!(file["loaded"], 60);
    assert_eq!(file["problems"], serde_json::json!([]));
}

#[test]
fn a_broken_copy_names_task_and_field_and_a_non_json_file_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut tasks: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(configs()).unwrap()).unwrap();
    let id = tasks[3]["task_id"].clone();
    tasks[3]["eval"]["eval_types"] = serde_json::json!(["string_match", "vibe_match"]);
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, tasks.to_string()).unwrap();
    let (code, report, _) = validate(&[&broken]);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(report["files"][0]["loaded"], 59);
    let problem = &report["files"][0]["problems"][0];
    assert_eq!(problem["task_id"], id);
    assert_eq!(problem["field"], "eval.eval_types");

    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{ not json").unwrap();
    let (code, _, stderr) = validate(&[&configs(), &junk]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("junk.json"), "{stderr}");
}
