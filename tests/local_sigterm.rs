//! `skillshift local` stopped by a signal leaves no chromedriver or Chromium behind: SIGTERM in the middle
//! of a sweep drains the workers, exports what was done and closes every browser; a second signal during
//! the drain exits at once and still kills them, and the external agents too. Real Chromium, real
//! processes.

mod support;

#[path = "support/cli.rs"]
mod cli;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process's start time (field 22 of /proc/PID/stat) and parent, or None when it is gone or a zombie.
fn stat(pid: u32) -> Option<(u64, u32, String)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = s.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state).
    if fields.first() == Some(&"Z") {
        return None;
    }
    Some((fields.get(19)?.parse().ok()?, fields.get(1)?.parse().ok()?, comm))
}

/// Every live descendant of `root`: pid -> (start time, command name).
fn descendants(root: u32) -> BTreeMap<u32, (u64, String)> {
    let mut parent = BTreeMap::new();
    for e in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if let Some((start, ppid, comm)) = stat(pid) {
            parent.insert(pid, (ppid, start, comm));
        }
    }
    let mut out = BTreeMap::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, (ppid, start, comm)) in &parent {
            if *ppid == p && !out.contains_key(pid) {
                out.insert(*pid, (*start, comm.clone()));
                frontier.push(*pid);
            }
        }
    }
    out
}

fn is_browser(comm: &str) -> bool {
    comm.starts_with("chrom")
}

/// The external agent of the second test: it never answers, so its attempts run until they are
/// cancelled, and a drain waits for them.
const SILENT_AGENT: &str = "cmd:sh -c 'sleep 600; echo done'";

/// Whether a process is what the silent agent started (its shell is not told apart from the browsers'
/// wardens, also shells; the two die together, in one process group).
fn is_agent(comm: &str) -> bool {
    comm == "sleep"
}

/// Starts `local` over gitlab's families under every condition (with `args` added) and waits until its
/// browsers run and it has done some of the sweep; returns the child and the browser and agent
/// processes seen then and since.
fn start(out: &Path, args: &[&str]) -> (Child, BTreeMap<u32, (u64, String)>) {
    let ours = |c: &str| is_browser(c) || is_agent(c);
    let child = cli::bin()
        .args(["local", "--workers", "2", "--sites", "gitlab", "--out"])
        .arg(out)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start skillshift local");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = BTreeMap::new();
    loop {
        let now: BTreeMap<_, _> = descendants(child.id()).into_iter().filter(|(_, (_, c))| ours(c)).collect();
        seen.extend(now);
        let drivers = seen.values().filter(|(_, c)| c == "chromedriver").count();
        let chromiums = seen.values().filter(|(_, c)| is_browser(c)).count() - drivers;
        if drivers >= 2 && chromiums >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "no browsers under `local` within 120 s: {seen:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Some attempts under way, so the signal lands in the middle of the sweep.
    let busy = Instant::now() + Duration::from_secs(4);
    while Instant::now() < busy {
        seen.extend(descendants(child.id()).into_iter().filter(|(_, (_, c))| ours(c)));
        std::thread::sleep(Duration::from_millis(200));
    }
    (child, seen)
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().expect("run kill");
    assert!(ok.success(), "kill -{sig} {pid}");
}

/// Waits for the child's exit; its stderr.
fn wait(mut child: Child, limit: Duration) -> (std::process::ExitStatus, String) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for local") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (status, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("`local` did not exit within {} s of the signal", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The processes among `seen` still alive (same pid and start time) a moment after `local` exited.
fn left(seen: &BTreeMap<u32, (u64, String)>) -> Vec<String> {
    std::thread::sleep(Duration::from_millis(500));
    seen.iter()
        .filter(|(pid, (start, _))| stat(**pid).is_some_and(|(s, _, _)| s == *start))
        .map(|(pid, (_, comm))| format!("{comm} {pid}"))
        .collect()
}

#[test]
fn sigterm_drains_exports_and_leaves_no_browser_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let (child, seen) = start(&out, &[]);
    let pid = child.id();
    signal(pid, "TERM");
    let (status, err) = wait(child, Duration::from_secs(180));
    assert!(status.code().is_some(), "`local` was killed by a signal: {status:?}\n{err}");
    assert!(err.contains("shutting down"), "no shutdown line:\n{err}");
    let orphans = left(&seen);
    assert!(orphans.is_empty(), "browsers left after SIGTERM: {orphans:?}\nstderr:\n{err}");
    // The orderly path exports what was done before the signal.
    let records = std::fs::read_to_string(out.join("per_task.jsonl")).expect("per_task.jsonl after SIGTERM");
    assert!(records.lines().count() >= 1, "no record exported after SIGTERM:\n{err}");
    assert!(err.contains("wrote "), "no export line:\n{err}");
}

/// The agent never answers, so the drain the first signal starts waits for the running attempts (up to
/// 60 s): the second signal lands in it whatever this machine's speed.
#[test]
fn a_second_signal_exits_at_once_and_still_kills_the_browsers_and_agents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, seen) = start(&dir.path().join("out"), &["--agent", SILENT_AGENT]);
    let agents = seen.values().filter(|(_, c)| is_agent(c)).count();
    assert!(agents >= 2, "no agent running under `local` (one per worker expected): {seen:?}");
    let pid = child.id();
    signal(pid, "TERM");
    // The second signal once the first is handled (its line printed), so it is the second one.
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut err = String::new();
    while !err.contains("shutting down") {
        let n = stderr.read_line(&mut err).expect("read stderr");
        assert!(n > 0, "stderr closed before the shutdown line:\n{err}");
    }
    signal(pid, "INT");
    let (status, _) = wait(child, Duration::from_secs(30));
    stderr.read_to_string(&mut err).expect("read stderr");
    assert_eq!(status.code(), Some(130), "second signal: {status:?}\n{err}");
    assert!(!err.contains("wrote "), "the orderly path ran to its export instead:\n{err}");
    let orphans = left(&seen);
    assert!(orphans.is_empty(), "processes left after a second signal: {orphans:?}\nstderr:\n{err}");
}
