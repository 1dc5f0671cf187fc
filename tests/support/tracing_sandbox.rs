//! Real processes for the telemetry tests: a coordinator and workers started
//! from the `skillshift` binary on loopback, each pointed at the test's OTLP
//! receiver by the standard variables, and stopped with SIGTERM so they flush
//! their spans the way an operator's Ctrl-C would.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_skillshift")
}

/// A child process, sent SIGTERM (then killed) when dropped.
pub struct Proc {
    pub name: String,
    child: Option<Child>,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGTERM, then waits up to `deadline` for a graceful exit (SIGKILL after).
    pub fn terminate(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let end = Instant::now() + deadline;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= end {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(5));
    }
}

fn command(args: &[&str], env: &[(&str, String)]) -> Command {
    let mut c = Command::new(bin());
    c.args(args);
    // The tests choose every telemetry variable themselves.
    for k in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"] {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Starts `skillshift coordinator` on port 0 with its HTTP port; returns it
/// and the (grpc, http) addresses from its first stdout line.
pub fn coordinator(dir: &Path, env: &[(&str, String)]) -> (Proc, SocketAddr, SocketAddr) {
    coordinator_with(dir, env, &[])
}

/// As [`coordinator`], with more flags (`--llm-concurrency N`, ...).
pub fn coordinator_with(dir: &Path, env: &[(&str, String)], args: &[&str]) -> (Proc, SocketAddr, SocketAddr) {
    let data = dir.join("coordinator").display().to_string();
    let mut all = vec!["coordinator", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--data-dir", &data];
    all.extend_from_slice(args);
    let mut child =
        command(&all, env).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn coordinator");
    let stdout = child.stdout.take().expect("coordinator stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = tx.send(first);
        }
        // Keep draining so the coordinator never blocks on a full pipe.
        for _ in lines {}
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).expect("coordinator printed its addresses");
    // "coordinator listening on 127.0.0.1:P (http 127.0.0.1:Q)"
    let grpc = line.split_whitespace().nth(3).and_then(|a| a.parse().ok()).expect("grpc address in first line");
    let http = line
        .split("(http ")
        .nth(1)
        .and_then(|r| r.trim_end_matches(')').parse().ok())
        .expect("http address in first line");
    (Proc { name: "coordinator".into(), child: Some(child) }, grpc, http)
}

/// Starts `skillshift worker` with `args` after the connection flags.
pub fn worker(name: &str, coordinator: SocketAddr, dir: &Path, args: &[&str], env: &[(&str, String)]) -> Proc {
    let url = format!("http://{coordinator}");
    let outbox = dir.join(format!("outbox-{name}")).display().to_string();
    let mut all = vec!["worker", "--coordinator", &url, "--name", name, "--outbox", &outbox];
    all.extend_from_slice(args);
    let child = command(&all, env).stdout(Stdio::null()).stderr(Stdio::inherit()).spawn().expect("spawn worker");
    Proc { name: name.into(), child: Some(child) }
}

/// Runs `skillshift sweep --coordinator URL <args>` to completion.
pub fn sweep(coordinator: SocketAddr, args: &[&str]) -> Output {
    let url = format!("http://{coordinator}");
    let mut all = vec!["sweep", "--coordinator", &url];
    all.extend_from_slice(args);
    command(&all, &[]).output().expect("run skillshift sweep")
}

/// Submits a sweep and returns its id.
pub fn start_sweep(coordinator: SocketAddr, args: &[&str]) -> String {
    let mut all = vec!["start"];
    all.extend_from_slice(args);
    let out = sweep(coordinator, &all);
    assert!(out.status.success(), "sweep start failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Polls `sweep status --json` until the sweep is done (or `deadline`).
pub fn wait_done(coordinator: SocketAddr, id: &str, deadline: Duration) -> serde_json::Value {
    let end = Instant::now() + deadline;
    loop {
        let out = sweep(coordinator, &["status", id, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        if v["state"] == "done" || Instant::now() >= end {
            return v;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Exports the sweep's records and parses them.
pub fn export(coordinator: SocketAddr, id: &str, dir: &Path) -> Vec<serde_json::Value> {
    let out_path = dir.join(format!("{id}.jsonl"));
    let out = sweep(coordinator, &["export", id, "--out", &out_path.display().to_string()]);
    assert!(out.status.success(), "sweep export failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(&out_path)
        .expect("exported records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record is JSON"))
        .collect()
}

/// `GET path` on a loopback HTTP port; returns (status line, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect http");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").expect("send request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read response");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_string() };
    (head.lines().next().unwrap_or("").to_string(), body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}
