//! `--families FILE` never silently runs something other than what it names:
//! an empty `"sites"` object is refused (it used to run the full grid), and so
//! are families for a site that `--sites` leaves out (they used to be dropped).
//! Each ends with one clear line on stderr and exit 2, before anything runs.

#[path = "support/cli.rs"]
mod cli;

fn start(families: &str, extra: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("families.json");
    std::fs::write(&path, families).expect("families file");
    let out = cli::bin()
        .args(["sweep", "start", "--families", path.to_str().expect("utf-8"), "--skills", "none"])
        .args(extra)
        // Nothing listens here: the refusal must come before any connection.
        .env("SKILLSHIFT_COORDINATOR", "http://127.0.0.1:9")
        .env_remove("SKILLSHIFT_TOKEN")
        .output()
        .expect("run skillshift");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn an_empty_sites_object_is_refused_not_run_as_the_full_grid() {
    let (code, err) = start(r#"{"sites": {}}"#, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("\"sites\" is empty"), "{err}");
}

#[test]
fn families_for_a_site_outside_sites_are_refused_not_dropped() {
    let (code, err) =
        start(r#"{"sites": {"gitlab": {"families": [0]}, "magento": {"families": [1]}}}"#, &["--sites", "gitlab"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("families for magento, which --sites gitlab leaves out"), "{err}");
    // Within --sites the same file goes on to the coordinator (here unreachable: exit 2 for that reason).
    let (code, err) = start(r#"{"sites": {"gitlab": {"families": [0]}}}"#, &["--sites", "gitlab"]);
    assert_eq!(code, Some(2));
    assert!(!err.contains("leaves out") && !err.contains("is empty"), "{err}");
}
