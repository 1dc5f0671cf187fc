//! The coordinator and two workers on three network hosts: each in its own
//! network namespace, the workers joined to the coordinator's by veth pairs
//! with their own addresses (10.77.1.0/24 and 10.77.2.0/24). A simulated
//! sweep runs; one worker's link is cut mid-attempt (`ip link set down`: no
//! reset, no FIN, the worker goes silent) and healed after the lease TTL.
//! Expected: the sweep completes, no record is lost or doubled, the cut
//! worker's attempts are recorded as `worker_lost` while it is away and then
//! replaced by its own late records, and the outcome rule (the lowest
//! non-error attempt) decides every unit.
//!
//! Needs root and `ip netns`; where namespaces cannot be made the test says
//! why on stderr and passes without running (CI runs it as root).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{key, outcome, read_records, units, BIN};

const TOKEN: &str = "netns-token";
// Long enough that a worker starved by a loaded machine still renews in time: with 1,500 ms, CI once saw
// two attempts lost less than the TTL after the cut.
const TTL_MS: u64 = 3000;

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Three namespaces and two veth pairs; all removed on drop.
struct Net {
    coordinator: String,
    workers: [String; 2],
    /// The coordinator-side end of each worker's link.
    links: [String; 2],
}

impl Net {
    fn make() -> Result<Net, String> {
        let tag = std::process::id() % 100_000;
        let net = Net {
            coordinator: format!("ss{tag}c"),
            workers: [format!("ss{tag}w1"), format!("ss{tag}w2")],
            links: [format!("s{tag}c1"), format!("s{tag}c2")],
        };
        ip(&["netns", "add", &net.coordinator])?;
        ip(&["-n", &net.coordinator, "link", "set", "lo", "up"])?;
        for (i, w) in net.workers.iter().enumerate() {
            let (c_end, w_end) = (&net.links[i], format!("s{tag}w{}", i + 1));
            let subnet = i + 1;
            ip(&["netns", "add", w])?;
            ip(&["-n", w, "link", "set", "lo", "up"])?;
            ip(&["link", "add", c_end, "netns", &net.coordinator, "type", "veth", "peer", "name", &w_end, "netns", w])?;
            ip(&["-n", &net.coordinator, "addr", "add", &format!("10.77.{subnet}.1/24"), "dev", c_end])?;
            ip(&["-n", w, "addr", "add", &format!("10.77.{subnet}.2/24"), "dev", &w_end])?;
            ip(&["-n", &net.coordinator, "link", "set", c_end, "up"])?;
            ip(&["-n", w, "link", "set", &w_end, "up"])?;
        }
        Ok(net)
    }

    /// Cuts (`false`) or heals (`true`) worker `i`'s link at the coordinator's end.
    fn link(&self, i: usize, up: bool) {
        let state = if up { "up" } else { "down" };
        ip(&["-n", &self.coordinator, "link", "set", &self.links[i], state]).expect("set the link");
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of every veth pair, and so the pair.
        for ns in self.workers.iter().chain([&self.coordinator]) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// Why namespaces cannot be made here, if they cannot.
fn unavailable() -> Option<String> {
    let euid =
        Command::new("id").arg("-u").output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if euid.as_deref() != Some("0") {
        return Some(format!("not root (uid {})", euid.unwrap_or_default()));
    }
    let probe = format!("ss{}probe", std::process::id() % 100_000);
    match ip(&["netns", "add", &probe]) {
        Ok(()) => {
            let _ = ip(&["netns", "del", &probe]);
            None
        }
        Err(e) => Some(e),
    }
}

/// The processes of the cluster, killed on drop.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn in_ns(ns: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, BIN]);
    c.env_remove("SKILLSHIFT_TOKEN").env_remove("SKILLSHIFT_COORDINATOR");
    c
}

/// `skillshift sweep ARGS` run inside the coordinator's namespace.
fn sweep(net: &Net, port: u16, args: &[&str]) -> Output {
    in_ns(&net.coordinator)
        .arg("sweep")
        .args(args)
        .env("SKILLSHIFT_COORDINATOR", format!("http://127.0.0.1:{port}"))
        .env("SKILLSHIFT_TOKEN", TOKEN)
        .output()
        .expect("run skillshift sweep")
}

fn status(net: &Net, port: u16, id: &str) -> Option<Value> {
    let out = sweep(net, port, &["status", id, "--json"]);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten()
}

fn wait_until(net: &Net, port: u16, id: &str, limit: Duration, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        if let Some(st) = status(net, port, id).filter(|s| pred(s)) {
            return st;
        }
        assert!(t0.elapsed() < limit, "{what} not reached within {limit:?}: {:?}", status(net, port, id));
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn export(net: &Net, port: u16, id: &str, path: &std::path::Path) -> Vec<Value> {
    let out = sweep(net, port, &["export", id, "--out", path.to_str().expect("utf-8 path")]);
    assert!(out.status.success(), "export: {}", String::from_utf8_lossy(&out.stderr));
    read_records(path)
}

#[test]
fn a_worker_cut_off_by_the_network_mid_attempt_loses_nothing_and_its_late_records_are_decided_by_the_rule() {
    if let Some(why) = unavailable() {
        eprintln!("skipping the network-namespace test: {why}");
        return;
    }
    let net = Net::make().expect("network namespaces");
    let dir = tempfile::tempdir().expect("temp dir");
    let log = |name: &str| std::fs::File::create(dir.path().join(name)).expect("log file");
    let mut procs = Procs(Vec::new());

    let mut coordinator = in_ns(&net.coordinator)
        .args(["coordinator", "--listen", "0.0.0.0:0", "--token", TOKEN, "--lease-ttl-ms", &TTL_MS.to_string()])
        .arg("--data-dir")
        .arg(dir.path().join("coordinator"))
        .stdout(Stdio::piped())
        .stderr(log("coordinator.log"))
        .spawn()
        .expect("spawn the coordinator");
    let mut line = String::new();
    BufReader::new(coordinator.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
    procs.0.push(coordinator);
    let port: u16 = line
        .trim()
        .strip_prefix("coordinator listening on ")
        .and_then(|a| a.split_whitespace().next())
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));

    for (i, ns) in net.workers.iter().enumerate() {
        let url = format!("http://10.77.{}.1:{port}", i + 1);
        let worker = in_ns(ns)
            .args(["worker", "--coordinator", &url, "--token", TOKEN, "--simulate", "1500", "--slots", "2"])
            .args(["--name", &format!("netns-w{}", i + 1)])
            .arg("--outbox")
            .arg(dir.path().join(format!("outbox-{i}")))
            .stdout(Stdio::null())
            .stderr(log(&format!("worker-{i}.log")))
            .spawn()
            .expect("spawn a worker");
        procs.0.push(worker);
    }

    let families = dir.path().join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0]}}}"#).expect("families file");
    let out = sweep(
        &net,
        port,
        &[
            "start",
            "--simulated",
            "--sites",
            "gitlab",
            "--families",
            families.to_str().expect("utf-8"),
            "--skills",
            "none",
        ],
    );
    assert!(out.status.success(), "sweep start: {}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();

    // Both workers busy (4 slots of 6 units), then worker 1 is cut off mid-attempt.
    wait_until(&net, port, &id, Duration::from_secs(30), "4 attempts running", |s| s["units"]["running"] == 4);
    net.link(0, false);
    let cut_at = Instant::now();
    // Past the TTL its leases are released: its attempts become worker_lost, its units run again on worker 2.
    let st = wait_until(&net, port, &id, Duration::from_secs(30), "the cut worker's attempts lost", |s| {
        s["attempts"]["error"].as_u64().unwrap_or(0) >= 2
    });
    // A lease runs one TTL from the last message heard, and the worker's last heartbeat may precede the
    // cut by up to one heartbeat interval (TTL / 6): not lost before TTL - TTL / 6. (Here 3.08-3.25 s.)
    let earliest = Duration::from_millis(TTL_MS - TTL_MS / 6);
    assert!(cut_at.elapsed() >= earliest, "lost {:?} after the cut, before the TTL ran: {st}", cut_at.elapsed());
    let snapshot = export(&net, port, &id, &dir.path().join("during.jsonl"));
    let lost: Vec<Value> = snapshot.iter().filter(|r| r["error"] == "worker_lost").cloned().collect();
    assert!(lost.len() >= 2, "both running attempts of the cut worker are lost: {lost:?}");
    let cut_worker = lost[0]["worker"].clone();
    assert!(lost.iter().all(|r| r["worker"] == cut_worker), "only the cut worker lost attempts: {lost:?}");
    // Worker 2 runs the lost units again and finishes the sweep while worker 1 is still cut off.
    wait_until(&net, port, &id, Duration::from_secs(90), "the sweep done", |s| s["state"] == "done");
    net.link(0, true);
    // The healed worker delivers its finished attempts late, after the sweep is done; each replaces its
    // worker_lost entry.
    let deadline = Instant::now() + Duration::from_secs(60);
    let records = loop {
        let records = export(&net, port, &id, &dir.path().join("per_task.jsonl"));
        if records.iter().all(|r| r["error"] != "worker_lost") {
            break records;
        }
        assert!(
            Instant::now() < deadline,
            "late records never arrived; worker 1's log:\n{}",
            std::fs::read_to_string(dir.path().join("worker-0.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(300));
    };

    let by_unit = units(&records); // panics on a key stored twice
    assert_eq!(by_unit.len(), 6, "every unit of 1 family x 6 conditions has records");
    for (unit, rs) in &by_unit {
        let attempts: Vec<u64> = rs.iter().map(|r| r["attempt"].as_u64().unwrap_or(u64::MAX)).collect();
        assert_eq!(attempts, (0..rs.len() as u64).collect::<Vec<_>>(), "no attempt of {unit:?} lost");
        assert!(outcome(rs).is_some(), "{unit:?} has an outcome");
    }
    for l in &lost {
        let late = records.iter().find(|r| key(r) == key(l)).expect("the lost attempt keeps its key");
        assert_eq!(late["worker"], cut_worker, "stored as the cut worker's own record: {late}");
        let (t, u, c, rep, attempt) = key(l);
        let unit = &by_unit[&(t, u, c, rep)];
        assert!(unit.len() as u64 > attempt + 1, "the lost unit ran again as attempt {}: {unit:?}", attempt + 1);
        let decided = outcome(unit).expect("an outcome");
        if late["outcome"] != "error" {
            // Its unit ran again on worker 2; the late record, the lower attempt, decides whatever arrived first.
            assert_eq!(decided["attempt"].as_u64(), Some(attempt), "the late record decides its unit: {decided}");
        }
    }
    let st = status(&net, port, &id).expect("status");
    assert_eq!(st["units"]["done"], st["units"]["total"], "{st}");
    eprintln!(
        "netns partition: {} records for {} units, {} lost attempts replaced by late records",
        records.len(),
        by_unit.len(),
        lost.len()
    );
}
