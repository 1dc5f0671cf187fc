//! A newcomer's first hour without a browser, and a browser that stops starting mid-sweep:
//! * `local` and `worker` without Chromium end at once with exit 2 and one line naming what is missing and
//!   the command that installs it; `local` leaves no store or records behind;
//! * a real worker (real Chromium, real coordinator over gRPC) whose browser stops starting mid-sweep stops
//!   leasing after one `browser` error (its check that a browser starts then fails), answers `/readyz` 503 with
//!   the reason, is named with the reason in `sweep status`, and takes work again once its browser starts; the
//!   sweep then finishes with no unit invalid.

mod support;

#[path = "support/cli.rs"]
mod cli;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::Sandbox;
use support::{free_addr, http_get as get};

/// Polls `f` every 200 ms until it holds; panics with `what` after `limit`.
fn wait_for(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "{what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn local_without_a_browser_is_exit_2_with_the_install_command_and_nothing_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let out = cli::bin()
        .env("SKILLSHIFT_CHROMIUM", "/nonexistent/chromium")
        .args(["local", "--out"])
        .arg(&out_dir)
        .output()
        .expect("run local");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("/nonexistent/chromium") && lines[0].contains("bash scripts/install-deps.sh"),
        "{stderr}"
    );
    assert!(!out_dir.exists(), "local left {} behind", out_dir.display());
}

#[test]
fn a_worker_without_a_browser_is_exit_2_before_it_registers() {
    let sb = Sandbox::start(0, 0);
    let out = cli::bin()
        .env("SKILLSHIFT_CHROMIUM", "/nonexistent/chromium")
        .args(["worker", "--embedded-sites", "--coordinator", &sb.url(), "--token", "sandbox-token", "--outbox"])
        .arg(sb.path("outbox-x"))
        .output()
        .expect("run worker");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no browser: Chromium /nonexistent/chromium is not installed"), "{stderr}");
    assert!(sb.sweep(&["list"]).status.success(), "the coordinator is up: {}", sb.logs());
    assert!(!sb.read_log("coordinator-1.log").contains("worker registered"), "{}", sb.logs());
}

#[test]
fn a_browser_that_stops_starting_mid_sweep_stops_the_worker_leasing_and_is_named_in_sweep_status() {
    let mut sb = Sandbox::start(0, 0);
    sb.real_workers = true;
    // The worker's browser is this script: the real headless shell while the flag file exists, a failure after.
    let flag = sb.path("browser-on");
    std::fs::write(&flag, "").expect("flag");
    let wrapper = sb.path("chromium.sh");
    let real = if std::path::Path::new("/usr/lib/chromium/chromium-headless-shell").exists() {
        "/usr/lib/chromium/chromium-headless-shell"
    } else {
        "/usr/lib/chromium/chromium"
    };
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ -f '{}' ]; then exec {real} \"$@\"; fi\necho 'browser switched off by the test' >&2\nexit 1\n",
            flag.display()
        ),
    )
    .expect("wrapper");
    std::process::Command::new("chmod").arg("+x").arg(&wrapper).status().expect("chmod");
    let metrics = free_addr();
    let worker = cli::bin()
        .env("SKILLSHIFT_CHROMIUM", &wrapper)
        .args(["worker", "--embedded-sites", "--browser-reuse", "1", "--name", "wB", "--coordinator", &sb.url()])
        .args(["--token", "sandbox-token"])
        .args(["--metrics-addr", &metrics, "--outbox"])
        .arg(sb.path("outbox-b"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(sb.path("worker-b.log")).expect("log"))
        .spawn()
        .expect("spawn worker");
    sb.workers.push(worker);
    let log = sb.path("worker-b.log");
    wait_for(Duration::from_secs(60), &format!("the worker never became ready: {}", log.display()), || {
        get(&metrics, "/readyz").map(|r| r.0) == Some(200)
    });
    let id = sb.submit(20, &[]);
    sb.wait_until(&id, Duration::from_secs(120), |st| st["units"]["done"].as_u64() >= Some(3));
    std::fs::remove_file(&flag).expect("switch the browser off");
    wait_for(Duration::from_secs(120), "the worker never said its browser fails", || {
        get(&metrics, "/readyz").is_some_and(|(code, body)| code == 503 && body.contains("not taking work: browser:"))
    });
    // The attempt that found the browser off may still be ending: wait for it.
    sb.wait_until(&id, Duration::from_secs(60), |st| st["units"]["running"] == 0);
    std::thread::sleep(Duration::from_secs(2));
    let st = sb.status(&id).expect("status");
    assert_eq!(st["workers_unavailable"][0]["name"], "wB", "{st}");
    let why = st["workers_unavailable"][0]["unavailable"].as_str().unwrap_or_default().to_string();
    assert!(why.starts_with("browser: "), "{st}");
    let text = sb.sweep(&["status", &id]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.lines().any(|l| l.starts_with("worker wB (") && l.contains("takes no work: browser:")), "{text}");
    // The errors say why, counted.
    assert!(text.contains("attempts errored") && text.contains("× browser: "), "{text}");
    // It stops leasing: one attempt (its one slot's) errored, then its browser failed a check; no unit spent a
    // second retry on the broken worker.
    assert_eq!(st["attempts"]["error"], 1, "{st}");
    std::thread::sleep(Duration::from_secs(3));
    let later = sb.status(&id).expect("status");
    assert_eq!(later["attempts"]["error"], st["attempts"]["error"], "it leased more work: {later}");
    assert_eq!(later["units"]["running"], 0, "{later}");
    // Its browser starts again: it takes work again and the sweep finishes.
    std::fs::write(&flag, "").expect("switch the browser on");
    wait_for(Duration::from_secs(120), "the worker never took work again", || {
        get(&metrics, "/readyz").map(|r| r.0) == Some(200)
    });
    let done = sb.wait_state(&id, "done", Duration::from_secs(300));
    assert_eq!(done["units"]["invalid"], 0, "{done}");
    assert!(done.get("workers_unavailable").is_none(), "{done}");
    // A worker stopped with SIGTERM drains and stops its chromedriver and browsers.
    sb.signal_worker(0, "TERM");
    let status = sb.workers[0].wait().expect("worker exits");
    assert!(status.success(), "{status:?}");
    let log = sb.read_log("worker-b.log");
    assert!(log.contains("taking no new work until it starts again"), "{log}");
    assert!(log.contains("the browser starts again; taking work"), "{log}");
}

/// Every live process as (pid, comm, ppid, pgid), from `/proc` (zombies left out: they are dead).
fn processes() -> Vec<(u32, String, u32, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = stat[open + 1..close].to_string();
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let (Some(state), Some(ppid), Some(pgid)) = (rest.first(), rest.get(1), rest.get(2)) else { continue };
        let (Ok(pid), Ok(ppid), Ok(pgid)) = (stat[..open].trim().parse(), ppid.parse(), pgid.parse()) else { continue };
        if *state != "Z" && *state != "X" {
            out.push((pid, comm, ppid, pgid));
        }
    }
    out
}

#[test]
fn a_worker_killed_with_sigkill_mid_attempt_leaves_no_chromedriver_or_browser_behind() {
    let mut sb = Sandbox::start(0, 0);
    sb.real_workers = true;
    let metrics = free_addr();
    let worker = cli::bin()
        .args(["worker", "--embedded-sites", "--name", "wK", "--coordinator", &sb.url(), "--token", "sandbox-token"])
        .args(["--metrics-addr", &metrics, "--outbox"])
        .arg(sb.path("outbox-k"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(sb.path("worker-k.log")).expect("log"))
        .spawn()
        .expect("spawn worker");
    let pid = worker.id();
    sb.workers.push(worker);
    wait_for(Duration::from_secs(60), "the worker never became ready", || {
        get(&metrics, "/readyz").map(|r| r.0) == Some(200)
    });
    let id = sb.submit(10, &[]);
    sb.wait_until(&id, Duration::from_secs(120), |st| st["units"]["done"].as_u64() >= Some(1));
    // Its chromedriver groups, and every process in them (the browsers).
    let groups: Vec<u32> =
        processes().iter().filter(|p| p.2 == pid && p.1.contains("chromedriver")).map(|p| p.3).collect();
    assert!(!groups.is_empty(), "the worker runs a chromedriver");
    let members: Vec<(u32, String)> =
        processes().into_iter().filter(|p| groups.contains(&p.3)).map(|p| (p.0, p.1)).collect();
    assert!(members.iter().any(|(_, comm)| comm.contains("chrom") && !comm.contains("driver")), "{members:?}");
    sb.kill_worker(0);
    wait_for(Duration::from_secs(15), "chromedriver or Chromium outlived the killed worker", || {
        let alive: Vec<u32> = processes().iter().map(|p| p.0).collect();
        members.iter().all(|(p, _)| !alive.contains(p))
    });
}
