//! The viewer over a live sweep: a real `skillshift coordinator --http` with a
//! token and simulated workers serves the viewer's JSON on its HTTP port
//! behind the token (`/healthz` open), and `skillshift view --coordinator`
//! points at it.

mod support;

use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{Options, Sandbox, BIN};

/// A plain HTTP/1.1 GET: the status code and the body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the http port");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("send");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    let code = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("not http: {out}"));
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

fn json(addr: &str, path: &str) -> Value {
    let (code, body) = get(addr, path);
    assert_eq!(code, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

#[test]
fn the_coordinators_http_port_serves_the_viewer_of_a_live_sweep_behind_its_token() {
    let opts = Options { http: true, ..Options::default() };
    let sb = Sandbox::start_with(2, 20, opts);
    let http = sb.http_addr.clone().expect("the coordinator's http address");
    let id = sb.submit(2, &[]);
    sb.wait_state(&id, "done", Duration::from_secs(60));
    let exported = sb.export(&id, "out/per_task.jsonl");
    assert!(!exported.is_empty());

    let sweeps = json(&http, "/api/sweeps?token=sandbox-token");
    assert_eq!(sweeps["live"], true, "{sweeps}");
    let sweep = sweeps["sweeps"].as_array().and_then(|s| s.iter().find(|s| s["id"] == id.as_str())).cloned();
    let sweep = sweep.unwrap_or_else(|| panic!("sweep {id} not listed: {sweeps}"));
    assert_eq!(sweep["state"], "done", "{sweep}");
    let treatment = sweep["treatments"][0]["name"].as_str().expect("a treatment").to_string();
    assert_eq!(sweep["treatments"][0]["attempts"], exported.len() as u64, "{sweep}");

    let grid = json(&http, &format!("/api/grid?sweep={id}&treatment={treatment}&token=sandbox-token"));
    let cells = grid["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 18, "{grid}");
    let count = |cell: &Value| -> u64 {
        cell["attempts"].as_object().expect("counts").values().filter_map(Value::as_u64).sum()
    };
    let attempts: u64 = cells.iter().map(count).sum();
    assert_eq!(attempts, exported.len() as u64, "the grid counts every attempt of the store: {grid}");
    let successes: u64 = cells.iter().filter_map(|c| c["attempts"]["success"].as_u64()).sum();
    let exported_successes = exported.iter().filter(|r| r["outcome"] == "success").count() as u64;
    assert_eq!(successes, exported_successes, "{grid}");
    let gitlab: u64 = cells.iter().filter(|c| c["site"] == "gitlab").map(count).sum();
    assert_eq!(gitlab, attempts, "a gitlab-only sweep: {grid}");

    // The page and every /api/* need the token; /healthz does not.
    for path in ["/api/sweeps", &format!("/api/grid?sweep={id}&treatment={treatment}"), "/view", "/", "/api/events"] {
        let (code, body) = get(&http, path);
        assert_eq!(code, 401, "{path}: {body}");
    }
    assert_eq!(get(&http, "/api/sweeps?token=wrong").0, 401);
    assert_eq!(get(&http, "/healthz"), (200, "ok\n".to_string()));
    let (code, page) = get(&http, "/view?token=sandbox-token");
    assert_eq!(code, 200);
    assert!(page.contains("app.js?token=sandbox-token"), "the viewer's page: {page}");
    assert_eq!(get(&http, "/app.js?token=sandbox-token").0, 200, "the page's script, at the root");
    let (code, status) = get(&http, "/?token=sandbox-token");
    assert_eq!(code, 200);
    assert!(status.contains("skillshift coordinator") && status.contains(&id), "{status}");

    // `view --coordinator` checks the port with the token and prints the viewer's URL.
    let view = |token: &str| {
        Command::new(BIN)
            .args(["view", "--coordinator", &sb.url(), "--coordinator-http", &format!("http://{http}")])
            .args(["--token", token])
            .env_remove("SKILLSHIFT_TOKEN")
            .output()
            .expect("run view")
    };
    let ok = view("sandbox-token");
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    assert_eq!(String::from_utf8_lossy(&ok.stdout), format!("http://{http}/view?token=sandbox-token\n"));
    let refused = view("wrong");
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("refused the token"), "{err}");
}
