//! The process groups this process started and still runs: every chromedriver with the Chromium it
//! started, every external (`cmd:`) agent with what it started. Each owner kills its group when it
//! is dropped; [`kill_all`] is for an exit that skips destructors (a second Ctrl-C), so neither
//! browsers nor agents outlive it.

use std::collections::BTreeSet;
use std::sync::Mutex;

static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Notes a running group by its leader's pid (the group id).
pub(crate) fn register(pgid: u32) {
    if let Ok(mut live) = LIVE.lock() {
        live.insert(pgid);
    }
}

/// Kills group `pgid` at once and forgets it. Call it once per group: the id may be reused after
/// its leader is reaped.
pub(crate) fn kill(pgid: u32) {
    forget(pgid);
    kill_group(pgid);
}

/// Forgets group `pgid` without signalling it (its leader is gone and the id may name another process).
pub(crate) fn forget(pgid: u32) {
    if let Ok(mut live) = LIVE.lock() {
        live.remove(&pgid);
    }
}

/// Kills every group still registered, at once.
pub fn kill_all() {
    let groups: Vec<u32> = match LIVE.lock() {
        Ok(mut live) => std::mem::take(&mut *live).into_iter().collect(),
        Err(_) => return,
    };
    for pgid in groups {
        kill_group(pgid);
    }
}

/// SIGKILL to a process group; one it cannot signal is gone. Never group 0 or 1 (our own, init's).
fn kill_group(pgid: u32) {
    let Some(pid) = i32::try_from(pgid).ok().filter(|p| *p > 1).and_then(rustix::process::Pid::from_raw) else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}
