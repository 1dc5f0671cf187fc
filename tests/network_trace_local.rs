//! An attempt's network trace end to end, in real Chromium on the embedded fixture sites: `skillshift
//! local` runs gitlab family 15 (change the profile's bio), and the trajectory its coordinator
//! exports holds, in its `network` part, the reference solution's POST with its method, URL, status,
//! post data (the text the solution fills in) and redirect, made during the agent's first step in
//! its first tab; every cookie value and every `Cookie`/`Set-Cookie` header value is redacted. A
//! `SKILLSHIFT_NETWORK_TRACE` other than `on`, `off` or `bodies` stops `local`, `worker`, `run` and
//! `tasks audit` at their start, in one line.

mod support;

#[path = "support/cli.rs"]
mod cli;

use serde_json::Value;

const FAMILY: usize = 15;

/// The text the reference solution of gitlab.v1 task `FAMILY` fills into the `Bio` box, form-encoded.
fn solution_bio() -> String {
    let path = cli::data().join("solutions/gitlab.v1.json");
    let solutions: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("solutions")).expect("json");
    let fill = solutions[FAMILY]
        .as_array()
        .expect("a solution")
        .iter()
        .find(|a| a["action"] == "fill" && a["target"]["name"] == "Bio")
        .expect("the solution fills in the bio");
    let text = fill["text"].as_str().expect("text");
    form_encode(text)
}

/// `application/x-www-form-urlencoded`, as a browser encodes a field's value.
fn form_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b' ' => "+".to_string(),
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[test]
fn a_local_attempts_exported_trajectory_holds_the_solutions_post_with_cookies_redacted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let families = dir.path().join("families.json");
    std::fs::write(&families, format!(r#"{{"sites": {{"gitlab": {{"families": [{FAMILY}]}}}}}}"#)).expect("write");
    let out = dir.path().join("out");
    let run = cli::bin()
        .args(["local", "--workers", "1", "--sites", "gitlab", "--conditions", "src", "--families"])
        .arg(&families)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run skillshift local");
    assert!(run.status.success(), "local failed: {}", String::from_utf8_lossy(&run.stderr));
    let records = std::fs::read_to_string(out.join("per_task.jsonl")).expect("records");
    let record: Value = serde_json::from_str(records.lines().next().expect("a record")).expect("json");
    assert_eq!(record["outcome"], "success", "{record}");
    let path = out.join(record["trajectory"].as_str().expect("the record names its trajectory"));
    let text = std::fs::read_to_string(&path).expect("trajectory file");
    let t: Value = serde_json::from_str(&text).expect("trajectory json");
    let entries = t["network"]["log"]["entries"].as_array().expect("a network trace");
    assert_eq!(t["network"]["log"]["version"], "1.2");

    let posts: Vec<&Value> = entries.iter().filter(|e| e["request"]["method"] == "POST").collect();
    assert_eq!(posts.len(), 1, "the solution posts once: {posts:#?}");
    let post = posts[0];
    let start = t["start_url"].as_str().expect("start url");
    let base = start.trim_end_matches('/');
    assert_eq!(post["request"]["url"], format!("{base}/-/profile"));
    assert_eq!(post["response"]["status"], 303);
    assert_eq!(post["response"]["redirectURL"], format!("{base}/-/profile"));
    assert_eq!(post["request"]["postData"]["mimeType"], "application/x-www-form-urlencoded");
    let posted = post["request"]["postData"]["text"].as_str().expect("post data");
    assert!(posted.split('&').any(|kv| kv == format!("bio={}", solution_bio())), "{posted}");
    assert_eq!((post["_step"].as_u64(), post["_tab"].as_u64()), (Some(1), Some(0)));
    assert_eq!(post["_resourceType"], "Document");
    // The redirect is followed, and the page shown again.
    assert!(entries.iter().any(|e| e["request"]["method"] == "GET"
        && e["request"]["url"] == post["response"]["redirectURL"]
        && e["response"]["status"] == 200
        && e["_step"] == 1));

    // The attempt is signed in (a session cookie rides every request), and no cookie value is kept.
    assert!(post["request"]["cookies"].as_array().is_some_and(|c| !c.is_empty()), "{post:#?}");
    let mut cookies = 0;
    for e in entries {
        for side in ["request", "response"] {
            for c in e[side]["cookies"].as_array().into_iter().flatten() {
                assert_eq!(c["value"], "[redacted]", "{c}");
                cookies += 1;
            }
            for h in e[side]["headers"].as_array().into_iter().flatten() {
                let name = h["name"].as_str().unwrap_or_default().to_ascii_lowercase();
                if name == "cookie" || name == "set-cookie" {
                    assert_eq!(h["value"], "[redacted]", "{h}");
                }
            }
        }
    }
    assert!(cookies > 0);
}

/// `SKILLSHIFT_NETWORK_TRACE` is checked when a command that runs attempts starts: a value other
/// than `on`, `off` or `bodies` is one line naming it, exit 2, before any site or browser starts.
#[test]
fn a_network_trace_setting_other_than_on_off_or_bodies_stops_every_command_that_runs_attempts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8 path");
    for args in [
        vec!["local", "--workers", "1", "--sites", "gitlab", "--conditions", "src", "--out", out],
        vec!["worker", "--embedded-sites", "--coordinator", "http://127.0.0.1:9"],
        vec!["run", "skillshift.gitlab.v1.0", "--condition", "src"],
        vec!["tasks", "audit", "--sites", "gitlab"],
    ] {
        let run = cli::bin().args(&args).env("SKILLSHIFT_NETWORK_TRACE", "yes").output().expect("run skillshift");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("SKILLSHIFT_NETWORK_TRACE is 'yes': expected on, off or bodies"), "{args:?}: {stderr}");
        assert!(run.stdout.is_empty(), "{args:?}: nothing ran");
    }
    assert!(!dir.path().join("out").exists(), "local wrote nothing");
}
