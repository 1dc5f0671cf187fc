//! A trajectory survives what a record survives, over real processes: a
//! coordinator, and a worker running a real attempt in headless Chromium on
//! the embedded fixture sites. The coordinator is killed (-9) while the
//! attempt runs, so the record and its trajectory can only wait in the
//! worker's outbox; the worker is killed (-9) once they are there; both are
//! started again, and `sweep export` holds the record, its trajectory (steps
//! equal to the record's) and its screenshots, with no fixture password in
//! any file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use skillshift_common::{Site, Version};

mod support;

#[path = "support/cli.rs"]
mod cli;

use support::Sandbox;

/// Starts a worker of real browsers on the embedded sites (its outbox and name fixed, so a
/// restart is the same worker); returns its index in the sandbox.
fn add_browser_worker(sb: &mut Sandbox) -> usize {
    let data = cli::data();
    let i = sb.workers.len();
    let mut cmd = cli::bin();
    cmd.args(["worker", "--coordinator", &sb.url(), "--embedded-sites", "--name", "browser-worker"])
        .arg("--outbox")
        .arg(sb.path("outbox-browser"))
        .arg("--data")
        .arg(&data)
        .env_remove("SKILLSHIFT_TOKEN")
        .env_remove("SKILLSHIFT_COORDINATOR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(sb.path(&format!("browser-worker-{i}.log"))).expect("log"));
    if let Some(t) = &sb.opts.token {
        cmd.args(["--token", t]);
    }
    sb.workers.push(cmd.spawn().expect("spawn worker"));
    i
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The processes `pid` started, and theirs (chromedriver and its browsers), from /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
    for t in tasks {
        let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        for c in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
            out.push(c);
            out.extend(descendants(c));
        }
    }
    out
}

/// kill -9 of one process that may have exited already.
fn end(pid: u32) {
    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).stderr(Stdio::null()).status();
}

fn wait_for(limit: Duration, what: &str, sb: &Sandbox, mut pred: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !pred() {
        assert!(t0.elapsed() < limit, "{what} not within {limit:?}\n{}", sb.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_trajectory_survives_kill_9_of_its_worker_after_the_record_was_written_and_a_coordinator_restart() {
    let mut sb = Sandbox::start(0, 0);
    sb.real_workers = true;
    let w = add_browser_worker(&mut sb);
    let families = sb.path("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [3]}}}"#).expect("families");
    let out = sb.sweep(&[
        "start",
        "--sites",
        "gitlab",
        "--conditions",
        "tgt-exec",
        "--families",
        families.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "sweep start: {}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();

    // The attempt is running: the coordinator goes away before it can take the record.
    sb.wait_until(&id, Duration::from_secs(120), |s| s["units"]["running"] == 1);
    sb.kill_coordinator();
    let outbox = sb.path("outbox-browser");
    let waiting = |ext: &str| files_under(&outbox).iter().any(|p| p.extension().is_some_and(|x| x == ext));
    wait_for(Duration::from_secs(180), "the record and trajectory in the outbox", &sb, || {
        waiting("json") && waiting("traj")
    });
    // kill -9 leaves the worker's browsers behind: end them too, by their ids, once it is gone.
    let orphans = descendants(sb.worker_pid(w));
    sb.kill_worker(w);
    for pid in orphans {
        end(pid);
    }

    let addr = sb.addr.clone();
    sb.start_coordinator(&addr);
    let again = add_browser_worker(&mut sb);
    sb.wait_state(&id, "done", Duration::from_secs(180));
    // The trajectory follows its record: wait until the worker's outbox has let it go.
    wait_for(Duration::from_secs(60), "the trajectory acknowledged", &sb, || !waiting("traj"));

    let records = sb.export(&id, "export/per_task.jsonl");
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_ne!(r["outcome"], "error", "the worker's own record, not a lost one: {r}");
    let file = r["trajectory"].as_str().expect("the record names its trajectory");
    let t: Value =
        serde_json::from_slice(&std::fs::read(sb.path("export").join(file)).expect("trajectory file")).expect("json");
    assert_eq!(t["steps"].as_array().map(Vec::len), r["steps"].as_u64().map(|n| n as usize));
    assert_eq!(t["failure_category"], r["failure_category"]);
    assert!(r["failure_category"].is_string(), "a failed attempt has a category: {r}");
    let shots: Vec<&str> =
        t["steps"].as_array().into_iter().flatten().filter_map(|s| s["screenshot"].as_str()).collect();
    assert!(!shots.is_empty(), "a failure keeps its screenshots");
    for s in shots {
        let png = std::fs::read(sb.path("export/trajectories").join(s)).expect("screenshot file");
        assert!(png.starts_with(b"\x89PNG"));
    }

    let browsers = descendants(sb.worker_pid(again));
    sb.signal_worker(again, "TERM");
    let _ = sb.workers[again].wait();
    for pid in browsers {
        end(pid);
    }

    // No fixture password anywhere in the export.
    let passwords: Vec<String> = [Site::Gitlab, Site::Magento, Site::Wordpress]
        .iter()
        .flat_map(|s| {
            skillshift_worker::capture::Capture::login_secrets(&skillshift_sites::app(*s, Version::V1).login_steps())
        })
        .collect();
    assert!(!passwords.is_empty());
    for path in files_under(&sb.path("export")) {
        let bytes = std::fs::read(&path).expect("read");
        for p in &passwords {
            assert!(!bytes.windows(p.len()).any(|w| w == p.as_bytes()), "password in {}", path.display());
        }
    }
}
