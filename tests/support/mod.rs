//! A sandbox for the distributed tests: a coordinator and N workers of the
//! built `skillshift` binary, as real processes on loopback, with their store
//! and outboxes in a temporary folder. One line starts a cluster:
//! `Sandbox::start(3, 100)` (three workers, simulated attempts of ~100 ms).
//! Every child is killed when the sandbox is dropped.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_skillshift");

pub struct Options {
    pub token: Option<String>,
    pub lease_ttl_ms: u64,
    pub tls: Tls,
    /// Serve the HTTP port too (on a free port; see [`Sandbox::http_addr`]).
    pub http: bool,
    /// More flags for the coordinator.
    pub coordinator_args: Vec<String>,
}

/// How the sandbox's coordinator speaks TLS (the material is in tests/fixtures/tls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    Off,
    /// The coordinator presents server.pem; clients verify it with ca.pem.
    Server,
    /// As `Server`, and clients must present client.pem.
    Mutual,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            token: Some("sandbox-token".into()),
            lease_ttl_ms: 30_000,
            tls: Tls::Off,
            http: false,
            coordinator_args: Vec::new(),
        }
    }
}

/// A file of the test TLS material.
pub fn tls_file(name: &str) -> String {
    format!("{}/tests/fixtures/tls/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub opts: Options,
    pub addr: String,
    /// The HTTP port's address, with [`Options::http`].
    pub http_addr: Option<String>,
    coordinator: Option<Child>,
    pub workers: Vec<Child>,
    coordinator_starts: u32,
    /// Its workers run real browsers: `sweep start` then submits a real sweep. By default the sandbox's
    /// workers are `--simulate` ones, which take only sweeps whose contract says `simulated`, so
    /// [`Sandbox::sweep`] adds `--simulated` to every `start`.
    pub real_workers: bool,
}

impl Sandbox {
    /// A coordinator and `workers` simulated workers of `simulate_ms` each.
    pub fn start(workers: usize, simulate_ms: u64) -> Sandbox {
        Self::start_with(workers, simulate_ms, Options::default())
    }

    pub fn start_with(workers: usize, simulate_ms: u64, opts: Options) -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut sb = Sandbox {
            dir,
            opts,
            addr: String::new(),
            http_addr: None,
            coordinator: None,
            workers: Vec::new(),
            coordinator_starts: 0,
            real_workers: false,
        };
        sb.start_coordinator("127.0.0.1:0");
        for _ in 0..workers {
            sb.add_worker(simulate_ms, &[]);
        }
        sb
    }

    pub fn url(&self) -> String {
        let scheme = if self.opts.tls == Tls::Off { "http" } else { "https" };
        format!("{scheme}://{}", self.addr)
    }

    /// The flags a client of this coordinator needs for TLS.
    pub fn client_tls_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.opts.tls != Tls::Off {
            args.extend(["--ca".to_string(), tls_file("ca.pem")]);
        }
        if self.opts.tls == Tls::Mutual {
            args.extend(["--tls-cert".to_string(), tls_file("client.pem"), "--tls-key".into(), tls_file("client.key")]);
        }
        args
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn log(&self, name: &str) -> std::fs::File {
        std::fs::File::create(self.path(name)).expect("log file")
    }

    /// Starts (or restarts, on the same address) the coordinator.
    pub fn start_coordinator(&mut self, listen: &str) {
        self.coordinator_starts += 1;
        let mut cmd = Command::new(BIN);
        cmd.args(["coordinator", "--listen", listen, "--data-dir"])
            .arg(self.path("coordinator"))
            .args(["--lease-ttl-ms", &self.opts.lease_ttl_ms.to_string()])
            .env_remove("SKILLSHIFT_TOKEN")
            .stdout(Stdio::piped())
            .stderr(self.log(&format!("coordinator-{}.log", self.coordinator_starts)));
        if let Some(t) = &self.opts.token {
            cmd.args(["--token", t]);
        }
        if self.opts.http {
            cmd.args(["--http", "127.0.0.1:0"]);
        }
        cmd.args(&self.opts.coordinator_args);
        if self.opts.tls != Tls::Off {
            cmd.args(["--tls-cert", &tls_file("server.pem"), "--tls-key", &tls_file("server.key")]);
        }
        if self.opts.tls == Tls::Mutual {
            cmd.args(["--ca", &tls_file("ca.pem")]);
        }
        let mut child = cmd.spawn().expect("spawn coordinator");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("coordinator's first line");
        let addr = line.trim().strip_prefix("coordinator listening on ").unwrap_or_else(|| {
            panic!(
                "unexpected first line {line:?}; log: {}",
                self.read_log(&format!("coordinator-{}.log", self.coordinator_starts))
            )
        });
        self.addr = addr.split_whitespace().next().unwrap_or(addr).to_string();
        self.http_addr = addr.split("(http ").nth(1).map(|h| h.trim_end_matches(')').to_string());
        self.coordinator = Some(child);
    }

    pub fn read_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// Starts one more simulated worker; returns its index.
    pub fn add_worker(&mut self, simulate_ms: u64, extra: &[&str]) -> usize {
        let i = self.workers.len();
        let name = format!("worker-{i}");
        let mut cmd = Command::new(BIN);
        cmd.args(["worker", "--coordinator", &self.url(), "--simulate", &simulate_ms.to_string(), "--name", &name])
            .arg("--outbox")
            .arg(self.path(&format!("outbox-{i}")))
            .args(extra)
            .args(self.client_tls_args())
            .env_remove("SKILLSHIFT_TOKEN")
            .env_remove("SKILLSHIFT_COORDINATOR")
            .stdout(Stdio::null())
            .stderr(self.log(&format!("{name}.log")));
        if let Some(t) = &self.opts.token {
            if !extra.contains(&"--token") {
                cmd.args(["--token", t]);
            }
        }
        self.workers.push(cmd.spawn().expect("spawn worker"));
        i
    }

    /// `skillshift sweep ARGS...` against this coordinator.
    pub fn sweep(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(BIN);
        let mut args = args.to_vec();
        if args.first() == Some(&"start") && !self.real_workers && !args.contains(&"--simulated") {
            args.insert(1, "--simulated");
        }
        cmd.arg("sweep")
            .args(&args)
            .args(self.client_tls_args())
            .env("SKILLSHIFT_COORDINATOR", self.url())
            .env_remove("SKILLSHIFT_TOKEN");
        if let Some(t) = &self.opts.token {
            cmd.env("SKILLSHIFT_TOKEN", t);
        }
        cmd.output().expect("run skillshift sweep")
    }

    /// Writes a `--families` file limiting gitlab to `0..n`.
    pub fn families(&self, n: u32) -> PathBuf {
        let path = self.path("families.json");
        let ids: Vec<u32> = (0..n).collect();
        let v = serde_json::json!({"sites": {"gitlab": {"families": ids}}});
        std::fs::write(&path, v.to_string()).expect("families file");
        path
    }

    /// Submits a gitlab-only sweep of `n` families x 6 conditions; returns its id.
    pub fn submit(&self, n: u32, extra: &[&str]) -> String {
        let fam = self.families(n);
        let fam = fam.to_str().expect("utf-8 path");
        let mut args = vec!["start", "--sites", "gitlab", "--families", fam, "--skills", "none"];
        args.extend_from_slice(extra);
        let out = self.sweep(&args);
        assert!(out.status.success(), "sweep start failed: {}", String::from_utf8_lossy(&out.stderr));
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(id.starts_with("sw-") && !id.contains('\n'), "start prints only the id: {id:?}");
        id
    }

    pub fn status(&self, id: &str) -> Option<Value> {
        let out = self.sweep(&["status", id, "--json"]);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    /// Polls until the sweep's state is `state` (panics after `limit`).
    pub fn wait_state(&self, id: &str, state: &str, limit: Duration) -> Value {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.status(id) {
                if st["state"] == state {
                    return st;
                }
            }
            if t0.elapsed() > limit {
                panic!("sweep {id} not {state} within {limit:?}: {:?}\n{}", self.status(id), self.logs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Polls until `pred` holds on the status.
    pub fn wait_until(&self, id: &str, limit: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.status(id).filter(|s| pred(s)) {
                return st;
            }
            if t0.elapsed() > limit {
                panic!("condition not reached within {limit:?}: {:?}\n{}", self.status(id), self.logs());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `sweep export` into the sandbox; returns the records.
    pub fn export(&self, id: &str, name: &str) -> Vec<Value> {
        let out_path = self.path(name);
        let out = self.sweep(&["export", id, "--out", out_path.to_str().expect("utf-8")]);
        assert!(out.status.success(), "export failed: {}", String::from_utf8_lossy(&out.stderr));
        read_records(&out_path)
    }

    /// The coordinator's process id (0 when it is not running).
    pub fn coordinator_pid(&self) -> u32 {
        self.coordinator.as_ref().map_or(0, |c| c.id())
    }

    pub fn worker_pid(&self, i: usize) -> u32 {
        self.workers[i].id()
    }

    pub fn signal_worker(&self, i: usize, sig: &str) {
        signal(self.worker_pid(i), sig);
    }

    pub fn kill_worker(&mut self, i: usize) {
        self.signal_worker(i, "KILL");
        let _ = self.workers[i].wait();
    }

    /// Whether the coordinator process is still running.
    pub fn coordinator_alive(&mut self) -> bool {
        self.coordinator.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// kill -9 of the coordinator.
    pub fn kill_coordinator(&mut self) {
        if let Some(mut c) = self.coordinator.take() {
            signal(c.id(), "KILL");
            let _ = c.wait();
        }
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        if let Ok(rd) = std::fs::read_dir(self.dir.path()) {
            let mut names: Vec<_> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect();
            names.sort();
            for p in names {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                s.push_str(&format!("--- {} ---\n", p.display()));
                for l in tail.into_iter().rev() {
                    s.push_str(l);
                    s.push('\n');
                }
            }
        }
        s
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for w in &mut self.workers {
            let _ = w.kill();
            let _ = w.wait();
        }
        if let Some(mut c) = self.coordinator.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A process's peak resident memory (`VmHWM` of `/proc/PID/status`), in bytes.
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM line");
    let kb: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM in kB");
    kb * 1024
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let meta = e.metadata().expect("metadata");
        n += if meta.is_dir() { dir_bytes(&e.path()) } else { meta.len() };
    }
    n
}

pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().expect("kill").success();
    assert!(ok, "kill -{sig} {pid} failed");
}

pub fn read_records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("records file");
    text.lines().map(|l| serde_json::from_str(l).expect("a JSON record per line")).collect()
}

/// A run of `treatment` alone: its records of `records` (lines kept as written) and the contract.json
/// beside them, copied into `dir`; returns the new records file. A reuse file that holds every treatment
/// of a sweep is refused, so a baseline to reuse is cut out of a two-treatment run this way.
pub fn only_treatment(records: &Path, treatment: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let from = records.parent().expect("a folder").join("contract.json");
    std::fs::copy(from, dir.join("contract.json")).expect("copy contract.json");
    let text = std::fs::read_to_string(records).expect("records file");
    let kept: String = text
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["treatment"] == treatment))
        .map(|l| format!("{l}\n"))
        .collect();
    let out = dir.join("per_task.jsonl");
    std::fs::write(&out, kept).expect("write records");
    out
}

/// The record key of docs/formats.md#record-validation: (treatment, uid, condition, rep, attempt).
pub fn key(r: &Value) -> (String, String, String, u64, u64) {
    (
        r["treatment"].as_str().unwrap_or("default").to_string(),
        r["uid"].as_str().unwrap_or_default().to_string(),
        r["condition"].as_str().unwrap_or_default().to_string(),
        r["rep"].as_u64().unwrap_or(0),
        r["attempt"].as_u64().unwrap_or(0),
    )
}

/// Unit -> its records sorted by attempt; panics on a duplicated key.
pub fn units(records: &[Value]) -> BTreeMap<(String, String, String, u64), Vec<Value>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out: BTreeMap<_, Vec<Value>> = BTreeMap::new();
    for r in records {
        let k = key(r);
        assert!(seen.insert(k.clone()), "two records share the key {k:?}");
        out.entry((k.0, k.1, k.2, k.3)).or_default().push(r.clone());
    }
    for v in out.values_mut() {
        v.sort_by_key(|r| r["attempt"].as_u64().unwrap_or(0));
    }
    out
}

/// The unit's outcome record by docs/formats.md#unit-outcome: the non-error record with the lowest attempt.
pub fn outcome(records: &[Value]) -> Option<&Value> {
    records.iter().find(|r| r["outcome"] != "error")
}

/// Copies a directory tree (a data directory to edit in a test).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// (status, body) of a plain `GET path` on `addr`, or `None` when nothing answers.
pub fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, text.split("\r\n\r\n").nth(1).unwrap_or_default().to_string()))
}

/// A loopback address no one listens on (yet).
pub fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").to_string()
}
