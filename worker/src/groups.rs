//! The process groups this process started and still runs: every chromedriver with the Chromium it
//! started, every external (`cmd:`) agent with what it started. Each is a [`Group`], killed when
//! its owner drops it; [`kill_all`] is for an exit that skips destructors (a second Ctrl-C), and
//! each group's warden for a death that runs no code at all (`kill -9`, the OOM killer), so neither
//! browsers nor agents outlive this process.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Mutex;

/// The groups [`kill_all`] kills. A std mutex: held only to insert, remove or take, never across an await.
static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// A process group this process started (its leader spawned with `process_group(0)`) and owns:
/// registered for [`kill_all`] while it runs, watched by a [`warden`], killed when dropped.
pub(crate) struct Group {
    /// The leader's pid; 0 once the group is killed.
    pgid: u32,
    warden: Option<tokio::process::Child>,
}

impl Group {
    /// Takes charge of group `pgid`. Must be called inside a tokio runtime (the warden is a child
    /// process); without a warden, logged with `what`, the group is still killed on every exit
    /// path but a `kill -9` of this process.
    pub(crate) fn adopt(pgid: u32, what: &str) -> Group {
        register(pgid);
        let warden = warden(pgid);
        if warden.is_none() {
            tracing::warn!(pid = pgid, what, "no warden: a kill -9 of this process would leave this group running");
        }
        Group { pgid, warden }
    }

    /// The group's id (its leader's pid); 0 once killed.
    pub(crate) fn id(&self) -> u32 {
        self.pgid
    }

    /// Kills the whole group at once, also once its leader is reaped: what is left of it then (an
    /// id stays taken while any process is in its group). Only the first call signals; the warden
    /// goes first, so it never signals the id later.
    pub(crate) fn kill(&mut self) {
        self.stop_warden();
        if self.pgid != 0 {
            kill(self.pgid);
            self.pgid = 0;
        }
    }

    fn stop_warden(&mut self) {
        if let Some(mut w) = self.warden.take() {
            let _ = w.start_kill();
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A shell outside the group that waits for its standard input to close, then kills process group
/// `pgid`. Only this process holds the pipe's other end (close-on-exec, so no child inherits it),
/// and the kernel closes it however this process ends, `kill -9` included: the group then goes with
/// it instead of living on under PID 1. `read` and `kill` are the shell's own, so it starts no
/// process that killing it would orphan.
fn warden(pgid: u32) -> Option<tokio::process::Child> {
    if pgid <= 1 {
        return None;
    }
    tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(r#"read -r _; kill -s KILL -- "-$0" 2>/dev/null"#)
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .ok()
}

/// Notes a running group by its leader's pid (the group id).
fn register(pgid: u32) {
    if let Ok(mut live) = LIVE.lock() {
        live.insert(pgid);
    }
}

/// Forgets group `pgid` and kills it at once (once per group: see [`Group::kill`]).
fn kill(pgid: u32) {
    if let Ok(mut live) = LIVE.lock() {
        live.remove(&pgid);
    }
    kill_group(pgid);
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
