//! `skillshift view` and `report`'s failure categories as a user runs them:
//! the built binary on a small export directory, checking the first stdout
//! line, the served JSON, the exit codes and the one error line.

#[path = "support/cli.rs"]
mod cli;

use cli::skillshift;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// A records file: one success on gitlab src, two tgt-exec failures (a skill
/// failure and a wrong URL, naming trajectories) and a worker-lost error.
fn write_records(dir: &Path) {
    let lines = [
        r#"{"uid":"skillshift.gitlab.v1.3","site":"gitlab","condition":"src","success":true,"steps":2,"skill_calls":1,"skill_failures":0,"outcome":"success","treatment":"ASI","sweep":"sw-cli"}"#,
        r#"{"uid":"skillshift.gitlab.v2.3","site":"gitlab","condition":"tgt-exec","success":false,"steps":2,"skill_calls":1,"skill_failures":1,"outcome":"failure","treatment":"ASI","sweep":"sw-cli","failure_category":"skill_failure","trajectory":"trajectories/ASI/skillshift.gitlab.v2.3.tgt-exec.0.0.json"}"#,
        r#"{"uid":"skillshift.gitlab.v2.4","site":"gitlab","condition":"tgt-exec","success":false,"steps":1,"skill_calls":0,"skill_failures":0,"outcome":"failure","treatment":"ASI","sweep":"sw-cli","failure_category":"wrong_url","trajectory":"trajectories/ASI/skillshift.gitlab.v2.4.tgt-exec.0.0.json"}"#,
        r#"{"uid":"skillshift.gitlab.v2.5","site":"gitlab","condition":"tgt-exec","success":null,"steps":null,"skill_calls":null,"skill_failures":null,"outcome":"error","error":"worker_lost","treatment":"ASI","sweep":"sw-cli","failure_category":"worker_lost"}"#,
    ];
    std::fs::write(dir.join("per_task.jsonl"), lines.join("\n") + "\n").expect("write records");
}

#[test]
fn view_prints_its_url_first_and_serves_the_export() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_records(dir.path());
    let mut child = cli::bin()
        .args(["view", dir.path().to_str().expect("utf8"), "--listen", "127.0.0.1:0", "--token", "tok"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start view");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("first line");
    let url = first.trim_end();
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (addr, query) = rest.split_once('/').expect("a path");
    assert_eq!(query, "?token=tok", "{url}");
    let get = |path: &str| -> String {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        out
    };
    let sweeps = get("/api/sweeps?token=tok");
    let unauthorised = get("/api/sweeps");
    let _ = child.kill();
    let _ = child.wait();
    assert!(sweeps.starts_with("HTTP/1.1 200"), "{sweeps}");
    assert!(sweeps.contains(r#""id":"sw-cli""#) && sweeps.contains(r#""name":"ASI""#), "{sweeps}");
    assert!(unauthorised.starts_with("HTTP/1.1 401"), "{unauthorised}");
}

#[test]
fn view_of_a_directory_that_is_not_an_export_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = skillshift(&["view", dir.path().to_str().expect("utf8"), "--listen", "127.0.0.1:0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a directory holding per_task.jsonl"), "{err}");
}

#[test]
fn report_lists_failure_categories_with_counts_and_trajectories_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_records(dir.path());
    let file = dir.path().join("per_task.jsonl");
    let f = file.to_str().expect("utf8");
    let table = skillshift(&["report", f, "--allow-partial"]);
    assert_eq!(table.status.code(), Some(0), "{}", String::from_utf8_lossy(&table.stderr));
    let t = String::from_utf8_lossy(&table.stdout);
    assert!(t.contains("Failure categories by cell"), "{t}");
    let row = t.lines().find(|l| l.contains(" skill_failure ")).expect("a skill_failure row");
    assert!(
        row.starts_with("gitlab tgt-exec")
            && row.ends_with("trajectories/ASI/skillshift.gitlab.v2.3.tgt-exec.0.0.json")
    );
    let md = String::from_utf8_lossy(&skillshift(&["report", f, "--allow-partial", "--format", "markdown"]).stdout)
        .into_owned();
    assert!(md.contains("| gitlab tgt-exec | worker_lost | 1 | -- |"), "{md}");
    let html =
        String::from_utf8_lossy(&skillshift(&["report", f, "--allow-partial", "--format", "html"]).stdout).into_owned();
    assert!(
        html.contains("<td>wrong_url</td><td>1</td><td>trajectories/ASI/skillshift.gitlab.v2.4.tgt-exec.0.0.json</td>")
    );
    let json = skillshift(&["report", f, "--allow-partial", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("summary json");
    let cell = &v["failure_categories"]["gitlab"]["tgt-exec"];
    assert_eq!(cell["skill_failure"]["count"], 1);
    assert_eq!(cell["worker_lost"]["trajectories"], serde_json::json!([]));
    assert_eq!(v["failure_categories"]["gitlab"]["src"], serde_json::json!({}));
}
