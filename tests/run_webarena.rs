//! `skillshift run ID --tasks FILE --site NAME=URL... [--evaluator strict]`:
//! one task of a WebArena config file (site `shopping_admin`, which is not a
//! grid site) against a small HTTP site this test serves, driven by a
//! scripted `cmd:` agent through real headless Chromium; the record's outcome
//! follows the evaluator mode. Bad input is one line and exit 2.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "support/cli.rs"]
mod cli;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

/// A stand-in admin site: every path answers a small page titled by the path.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).map(|n| n == 0).unwrap_or(true) || h == "\r\n" {
                        break;
                    }
                }
                let body = format!("<!doctype html><title>{path}</title><main><h1>Admin {path}</h1></main>");
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    format!("http://{addr}")
}

fn task_file(dir: &Path) -> std::path::PathBuf {
    let task = json!({
        "sites": ["shopping_admin"], "task_id": 702, "require_login": false, "storage_state": null,
        "start_url": "__SHOPPING_ADMIN__/dashboard", "geolocation": null,
        "intent_template": "Open the orders", "instantiation_dict": {}, "intent": "Open the orders",
        "require_reset": false, "intent_template_id": 1,
        "eval": {"eval_types": ["url_match"], "reference_answers": null,
                 "reference_url": "__SHOPPING_ADMIN__/sales/order", "program_html": [], "url_note": "GOLD in PRED"}
    });
    let path = dir.join("702.json");
    std::fs::write(&path, task.to_string()).unwrap();
    path
}

/// A `cmd:` agent that goes to `url` and stops.
fn agent(dir: &Path, url: &str) -> String {
    let script = dir.join("agent.py");
    std::fs::write(
        &script,
        format!(
            "import json, sys\nsys.stdin.readline()\nfor i, act in enumerate(['goto [{url}]', 'stop [done]']):\n    sys.stdin.readline()\n    print(json.dumps({{'type': 'action', 'action': act}}), flush=True)\n"
        ),
    )
    .unwrap();
    format!("cmd:python3 {}", script.display())
}

fn run(args: &[&str]) -> (Output, Value) {
    let data = tempfile::tempdir().unwrap();
    let out = cli::bin()
        .arg("run")
        .args(args)
        .args(["--condition", "src", "--max-steps", "5"])
        .arg("--data")
        .arg(data.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let record = stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()).unwrap_or_default();
    (out, record)
}

#[test]
fn a_webarena_task_runs_against_given_sites_scored_by_the_chosen_rules() {
    let base = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = task_file(dir.path());
    let admin = format!("{base}/admin");
    // The agent ends on a longer path: WebArena's "GOLD in PRED" passes it, strict does not.
    let agent = agent(dir.path(), &format!("{admin}/sales/order/view/7"));
    let site = format!("shopping_admin={admin}");
    let file = file.to_str().unwrap();

    let (out, record) = run(&["702", "--tasks", file, "--site", &site, "--agent", &agent]);
    assert!(out.status.success());
    assert_eq!(record["outcome"], "success", "{record}");
    assert_eq!(record["uid"].as_str().map(|u| u.ends_with(".702")), Some(true), "{record}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("url_match pass"));

    let (out, record) = run(&["702", "--tasks", file, "--site", &site, "--agent", &agent, "--evaluator", "strict"]);
    assert!(out.status.success());
    assert_eq!(record["outcome"], "failure", "{record}");
}

#[test]
fn bad_webarena_run_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = task_file(dir.path());
    let file = file.to_str().unwrap();
    for (args, wanted) in [
        (vec!["702", "--tasks", file], "shopping_admin"),
        (vec!["703", "--tasks", file, "--site", "shopping_admin=http://h/admin"], "no task with task_id 703"),
        (vec!["seven", "--tasks", file, "--site", "shopping_admin=http://h/admin"], "must be a task_id"),
        (vec!["skillshift.gitlab.v1.0", "--site", "gitlab=http://h"], "--site needs --tasks"),
        (vec!["702", "--tasks", file, "--site", "shopping_admin=http://h/admin", "--evaluator", "loose"], "evaluator"),
    ] {
        let (out, _) = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(wanted), "{args:?}: {stderr}");
    }
}
