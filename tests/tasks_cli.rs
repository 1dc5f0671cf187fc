//! `skillshift tasks` as a user runs it: validate passes on the shipped data
//! and names file, task and field on a broken copy (exit 2); show prints the
//! intent, both versions' start URLs and the reference solutions; list pipes.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "support/cli.rs"]
mod cli;
mod support;

use cli::{bin, data};

use support::copy_dir;

#[test]
fn validate_passes_on_the_shipped_gitlab_data() {
    let out = bin().args(["tasks", "--data"]).arg(data()).args(["validate", "--sites", "gitlab"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("ok  gitlab v1: 162 tasks, 162 reference solutions"), "{stdout}");
    assert!(stdout.contains("ok  gitlab v2: 162 tasks"), "{stdout}");
}

#[test]
fn validate_names_file_task_and_field_on_a_broken_copy() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&data(), dir.path());
    let file = dir.path().join("tasks/gitlab.v1.json");
    let mut tasks: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    tasks[5]["eval"]["reference_answers"] = serde_json::Value::Null;
    tasks[5]["eval"]["eval_types"] = serde_json::json!(["string_match"]);
    std::fs::write(&file, serde_json::to_string_pretty(&tasks).unwrap()).unwrap();
    let out = bin().args(["tasks", "--data"]).arg(dir.path()).args(["validate", "--sites", "gitlab"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.contains("tasks/gitlab.v1.json: task 5: field eval.reference_answers")),
        "{stderr}"
    );
}

#[test]
fn validate_refuses_a_real_task_file_that_changes_more_than_an_evaluator() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&data(), dir.path());
    let validate = |dir: &std::path::Path| {
        bin().args(["tasks", "--data"]).arg(dir).args(["validate", "--sites", "wordpress"]).output().unwrap()
    };
    let out = validate(dir.path());
    assert!(out.status.success(), "the shipped tasks/real/ holds: {}", String::from_utf8_lossy(&out.stderr));
    let file = dir.path().join("tasks/real/wordpress.v2.json");
    let mut tasks: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    tasks[16]["intent"] = serde_json::json!("Open Appearance > Navigation");
    std::fs::write(&file, serde_json::to_string_pretty(&tasks).unwrap()).unwrap();
    let out = validate(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("tasks/real/wordpress.v2.json: task 16") && stderr.contains("more than its eval"),
        "{stderr}"
    );
}

#[test]
fn show_prints_intent_both_start_urls_and_solutions() {
    let out = bin().args(["tasks", "--data"]).arg(data()).args(["show", "skillshift.gitlab.v2.7"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "intent:     Close issue #",
        "start v1:   __GITLAB__/",
        "start v2:   __GITLAB__/",
        "reference solution (v1):",
        "click button \"Close issue\"",
        "reference solution (v2):",
        "click menuitem \"Close issue\"",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let missing =
        bin().args(["tasks", "--data"]).arg(data()).args(["show", "skillshift.gitlab.v1.999"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("skillshift.gitlab.v1.999"), "{err}");
}

/// Output into a pipe whose reader has gone (`| head -1`) ends quietly with exit 0, for every command that
/// prints lines: no panic (exit 101), no error line.
#[test]
fn output_into_a_closed_pipe_is_not_an_error() {
    let data = data();
    let data = data.to_str().expect("utf-8");
    for args in [
        vec!["tasks", "show", "skillshift.gitlab.v1.3", "--data", data],
        vec!["tasks", "validate", "--data", data],
        vec!["tasks", "list", "--site", "gitlab", "--data", data],
    ] {
        into_a_closed_pipe(&args);
    }
}

/// Runs `skillshift ARGS` with its stdout's reader gone before the first line is written; it must end with
/// exit 0 and no panic.
fn into_a_closed_pipe(args: &[&str]) {
    let mut child = bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

/// The same for commands outside `tasks`, the one writer behind them all: `calibrate --dry-run`, `tasks validate
/// FILE` and `local --simulate`, whose sweep status line came from the library before it went through the writer.
#[test]
fn other_commands_into_a_closed_pipe_are_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let families = dir.path().join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0]}}}"#).unwrap();
    let out = dir.path().join("local");
    let configs = concat!(env!("CARGO_MANIFEST_DIR"), "/common/tests/data/webarena/configs.json");
    for args in [
        vec!["calibrate", "--dry-run"],
        vec!["tasks", "validate", configs],
        vec![
            "local",
            "--workers",
            "1",
            "--simulate",
            "5",
            "--sites",
            "gitlab",
            "--conditions",
            "src",
            "--families",
            families.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        into_a_closed_pipe(&args);
    }
}
