//! `skillshift bench step` runs on a page of its own (a file: URL, so no server) and
//! prints the JSON keys docs/formats.md pins, with timings that are real measurements.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

#[path = "support/cli.rs"]
mod cli;

const PAGE: &str = r##"<!doctype html><title>Bench fixture</title>
<nav><a href="#one">One</a> <a href="#two">Two</a> <a href="/elsewhere">Elsewhere</a></nav>
<main><h1 id="one">One</h1><label>Name <input type="text"></label><label>Note <textarea></textarea></label>
<div style="height:3000px"></div><h2 id="two">Two</h2></main>"##;

#[test]
fn bench_step_prints_the_pinned_json() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    std::fs::write(&page, PAGE).unwrap();
    let url = format!("file://{}", page.display());
    let out = cli::bin().args(["bench", "step", "--url", &url, "--steps", "6", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["url", "steps", "errors", "setup_ms", "observe_ms", "act_ms", "step_ms", "obs_chars"], "{v}");
    assert_eq!(v["url"], url.as_str());
    assert_eq!(v["steps"], 6);
    assert_eq!(v["errors"], 0, "every rotated action works on this page: {v}");
    assert!(v["setup_ms"]["n"].as_u64().unwrap() >= 1, "{v}");
    for k in ["setup_ms", "observe_ms", "act_ms", "step_ms"] {
        let (p50, p90) = (v[k]["p50"].as_f64().unwrap(), v[k]["p90"].as_f64().unwrap());
        assert!(p50 > 0.0 && p50 <= p90, "{k}: {v}");
    }
    // A step is its observation plus its action.
    assert!(v["step_ms"]["p50"].as_f64().unwrap() >= v["observe_ms"]["p50"].as_f64().unwrap(), "{v}");
    let first = v["obs_chars"]["first"].as_u64().unwrap();
    assert!(first > "Tab 0 (current): Bench fixture".len() as u64, "{v}");
    // The typed text is in the last observation, so it is longer than the first.
    assert!(v["obs_chars"]["last"].as_u64().unwrap() > first, "{v}");
}
