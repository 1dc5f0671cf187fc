//! Supervision of the processes the worker starts for its browsers: a chromedriver per slot,
//! leader of a process group of its own that holds every Chromium started for it, owned as a
//! [`crate::groups::Group`]: killed when dropped, when the worker is killed (its warden), and on an
//! exit that skips the orderly shutdown.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use super::launch::{is_headless_shell, CHROMIUM_FLAGS};
use super::session::browser_call;
use super::{BrowserConfig, BrowserError};
use crate::cdp::Connection;
use crate::groups::Group;

/// A running chromedriver, the leader of a process group of its own that holds every Chromium it
/// starts. Dropping it kills the whole group, so no exit path of a worker leaves browsers behind;
/// the group's warden ([`crate::groups::Group`]) kills it when the worker itself is killed
/// (`kill -9`), where no drop runs.
pub(super) struct DriverProc {
    // Dropped first (fields drop in order): the group is killed before tokio kills and reaps the
    // leader (`kill_on_drop`), so its id is still chromedriver's when it is signalled.
    group: Group,
    pub(super) child: tokio::process::Child,
    pub(super) port: u16,
}

impl DriverProc {
    pub(super) fn new(child: tokio::process::Child, port: u16) -> DriverProc {
        let group = Group::adopt(child.id().unwrap_or(0), "chromedriver");
        DriverProc { group, child, port }
    }

    /// The group's id (chromedriver's pid); 0 once killed.
    pub(super) fn pid(&self) -> u32 {
        self.group.id()
    }

    /// Kills the group at once ([`Group::kill`]).
    pub(super) fn kill(&mut self) {
        self.group.kill();
    }
}

/// A Chromium the worker started for one session, in its chromedriver's process group: whatever
/// kills the driver's group kills it too. Dropping it kills the browser.
pub(super) struct BrowserProc {
    child: tokio::process::Child,
}

impl BrowserProc {
    /// Starts the browser on a DevTools port of its choosing, with one blank tab, and returns it
    /// with its debugger address (`127.0.0.1:PORT`, read from the profile's `DevToolsActivePort`)
    /// once it listens, within the start deadline; with [`devtools_pipe`], also the connection
    /// over its DevTools pipe.
    ///
    /// The pipe is the browser's fds 3 and 4 (`--remote-debugging-pipe=cbor`). They are placed
    /// by a shell that `exec`s the browser with its standard input and output moved there, so
    /// no other process the worker starts inherits them (and no `unsafe` pre-exec hook is needed).
    pub(super) async fn launch(
        cfg: &BrowserConfig,
        profile: &std::path::Path,
        group: u32,
    ) -> Result<(BrowserProc, String, Option<Connection>), BrowserError> {
        let group = i32::try_from(group).map_err(|_| BrowserError::Driver(format!("process group {group}")))?;
        let pipe = cfg.devtools_pipe();
        let mut cmd = if pipe {
            let mut sh = tokio::process::Command::new("/bin/sh");
            sh.arg("-c").arg(r#"exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null"#).arg(&cfg.chromium);
            sh.stdin(Stdio::piped()).stdout(Stdio::piped());
            sh
        } else {
            let mut direct = tokio::process::Command::new(&cfg.chromium);
            direct.stdin(Stdio::null()).stdout(Stdio::null());
            direct
        };
        if !is_headless_shell(&cfg.chromium) {
            cmd.arg("--headless=new");
        }
        if pipe {
            cmd.arg("--remote-debugging-pipe=cbor");
        }
        cmd.args(CHROMIUM_FLAGS)
            .arg("--remote-debugging-port=0")
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--window-size={},{}", cfg.window.0, cfg.window.1))
            .args(&cfg.extra_args)
            .arg("about:blank")
            .stderr(Stdio::null())
            .process_group(group)
            .kill_on_drop(true);
        let mut child =
            cmd.spawn().map_err(|e| BrowserError::Session(format!("cannot start {}: {e}", cfg.chromium.display())))?;
        let conn = match (child.stdout.take(), child.stdin.take()) {
            (Some(from_browser), Some(to_browser)) => Some(Connection::over_pipe(from_browser, to_browser)),
            _ => None,
        };
        let mut browser = BrowserProc { child };
        let port_file = profile.join("DevToolsActivePort");
        let listening = tokio::time::timeout(cfg.start_timeout, async {
            loop {
                if let Ok(Some(status)) = browser.child.try_wait() {
                    return Err(BrowserError::Session(format!("{} exited at start: {status}", cfg.chromium.display())));
                }
                // The file is written whole once the port is bound; a partial read is retried.
                if let Ok(text) = tokio::fs::read_to_string(&port_file).await {
                    if let Some(port) = text.lines().next().and_then(|l| l.trim().parse::<u16>().ok()) {
                        if text.lines().count() >= 2 {
                            return Ok(format!("127.0.0.1:{port}"));
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        match listening {
            Ok(Ok(address)) => Ok((browser, address, conn)),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                let _ = browser.child.kill().await;
                Err(BrowserError::Timeout { what: "browser start".into(), ms: cfg.start_timeout.as_millis() })
            }
        }
    }

    /// Closes the browser: `Browser.close` over its socket, then a kill if it has not exited
    /// within 2 s. Bounded; errors ignored (a browser that cannot be reached is killed).
    pub(super) async fn stop(mut self, devtools: Option<&Connection>) {
        const GRACE: Duration = Duration::from_secs(2);
        if let Some(conn) = devtools {
            let _ = browser_call(conn, "Browser.close", json!({}), GRACE).await;
        }
        if tokio::time::timeout(GRACE, self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

pub(super) fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}
