//! The browser: a supervised chromedriver per slot and one fresh headless
//! Chromium session per attempt.
//!
//! * [`Driver`] owns one chromedriver process on a free loopback port, in its own
//!   process group (so the Chromium it starts dies with it), and restarts it when
//!   it has died.
//! * [`Session`] is one browser with a clean temporary profile, started by the
//!   worker itself (Debian's headless shell when installed, else the full
//!   Chromium headless) in chromedriver's process group, with one WebDriver
//!   session attached to it (`goog:chromeOptions.debuggerAddress`). An
//!   attempt takes one with [`Driver::checkout`] and gives it back with
//!   [`Driver::checkin`]: the browser is kept for the next attempt (up to
//!   [`BrowserConfig::reuse`] attempts). Each attempt runs in a browser context
//!   of its own (`Target.createBrowserContext`, as Playwright's contexts: own
//!   cookies, storage, cache and service workers), disposed when the attempt
//!   is checked in; the browser's first tab stays blank in the default context
//!   and keeps the browser open. Without the browser's DevTools socket (or with
//!   `SKILLSHIFT_CONTEXTS=0`) an attempt gets a fresh tab instead, with
//!   cookies, cache and the sites' storage cleared. Session
//!   lifecycle and navigation go through WebDriver (fantoccini), switched to the
//!   attempt's tab (chromedriver sees the targets of every context); observation,
//!   input, settling and injection go through Chrome DevTools on the browser's
//!   own WebSocket ([`crate::cdp`], one multiplexed connection per browser, the
//!   address from the session's `goog:chromeOptions.debuggerAddress`), or, when
//!   that socket cannot be opened, through chromedriver's vendor endpoint
//!   `POST /session/{id}/goog/cdp/execute`.
//!
//! Every call has a deadline. Errors say whether the browser is lost
//! ([`BrowserError::is_fatal`]), which ends the attempt as `error` / `browser`,
//! or only the action failed, which the agent sees as `last_action_error`.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::cdp::{Answer, CallError, Connection, Events};

/// The Chromium flags that work as root on a closed network, with what chromedriver would add for
/// automation had it launched the browser (the worker launches it: see [`Session::open`]).
/// `--in-process-gpu` runs the compositor (software, with `--disable-gpu`) on a thread of the
/// browser process instead of a GPU process of its own: every frame crossed a process boundary,
/// and the calibration set took 13-15% less CPU without it (`docs/performance.md`).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--no-sandbox",
    "--disable-gpu",
    "--in-process-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-client-side-phishing-detection",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-features=IgnoreDuplicateNavs,Prewarm",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-sync",
    "--allow-pre-commit-input",
    "--enable-automation",
    "--no-first-run",
    "--no-service-autorun",
    "--password-store=basic",
    "--use-mock-keychain",
    "--test-type=webdriver",
];

/// Debian's headless shell (`chromium-headless-shell`): Chromium's content layer without the
/// browser UI, what Playwright runs for headless by default. Preferred when installed: per
/// attempt it costs a quarter of the full browser's CPU (no window, no top-chrome WebUI).
pub const HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// The full Chromium, run with `--headless=new` when the headless shell is not installed.
pub const FULL_CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// The browser binary: `SKILLSHIFT_CHROMIUM` when set, else the headless shell when installed,
/// else the full Chromium.
fn default_chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("SKILLSHIFT_CHROMIUM").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if std::path::Path::new(HEADLESS_SHELL).exists() {
        return PathBuf::from(HEADLESS_SHELL);
    }
    PathBuf::from(FULL_CHROMIUM)
}

/// True for the headless shell, which is headless by construction (it takes no `--headless`).
fn is_headless_shell(binary: &std::path::Path) -> bool {
    binary
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("headless-shell") || n.contains("headless_shell"))
}

#[derive(Debug, Clone)]
pub struct BrowserConfig {
    pub chromedriver: PathBuf,
    /// The browser binary ([`HEADLESS_SHELL`] when installed, else [`FULL_CHROMIUM`];
    /// `SKILLSHIFT_CHROMIUM` overrides).
    pub chromium: PathBuf,
    /// Deadline of one WebDriver or CDP call that is not a navigation.
    pub call_timeout: Duration,
    /// Deadline of a navigation (goto, back, forward).
    pub nav_timeout: Duration,
    /// Deadline of starting chromedriver or a session.
    pub start_timeout: Duration,
    pub window: (u32, u32),
    /// Flags added after [`CHROMIUM_FLAGS`] (`SKILLSHIFT_CHROMIUM_ARGS`, split on whitespace, by default).
    pub extra_args: Vec<String>,
    /// Attempts one browser serves before it is replaced; 1 starts a new browser for every attempt.
    pub reuse: u32,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            chromedriver: PathBuf::from("/usr/bin/chromedriver"),
            chromium: default_chromium(),
            call_timeout: Duration::from_secs(15),
            nav_timeout: Duration::from_secs(30),
            start_timeout: Duration::from_secs(30),
            window: (1280, 720),
            extra_args: std::env::var("SKILLSHIFT_CHROMIUM_ARGS")
                .map(|v| v.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            reuse: 50,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("chromedriver: {0}")]
    Driver(String),
    #[error("browser session: {0}")]
    Session(String),
    #[error("{what} did not answer within {ms} ms")]
    Timeout { what: String, ms: u128 },
    #[error("browser connection lost: {0}")]
    Lost(String),
    #[error("devtools {cmd}: {message}")]
    Cdp { cmd: String, message: String },
    #[error("webdriver: {0}")]
    WebDriver(String),
    #[error("navigation to {url} failed: {message}")]
    Navigation { url: String, message: String },
}

impl BrowserError {
    /// True when the browser itself is gone or unresponsive: the attempt cannot
    /// go on and is recorded as `error` / `browser`.
    pub fn is_fatal(&self) -> bool {
        match self {
            BrowserError::Driver(_)
            | BrowserError::Session(_)
            | BrowserError::Timeout { .. }
            | BrowserError::Lost(_) => true,
            BrowserError::Cdp { message, .. } | BrowserError::WebDriver(message) => fatal_message(message),
            BrowserError::Navigation { .. } => false,
        }
    }
}

fn fatal_message(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    [
        "invalid session id",
        "chrome not reachable",
        "disconnected",
        "session deleted",
        "target window already closed",
        "session with given id not found",
        "target closed",
    ]
    .iter()
    .any(|s| m.contains(s))
}

fn cmd_error(e: fantoccini::error::CmdError) -> BrowserError {
    use fantoccini::error::CmdError;
    match e {
        CmdError::Standard(wd) => BrowserError::WebDriver(format!("{}: {}", wd.error, wd.message)),
        CmdError::Failed(e) => BrowserError::Lost(e.to_string()),
        CmdError::FailedC(e) => BrowserError::Lost(e.to_string()),
        CmdError::Lost(e) => BrowserError::Lost(e.to_string()),
        other => BrowserError::WebDriver(other.to_string()),
    }
}

/// Runs `fut` under a deadline, naming `what` when it is missed.
pub async fn deadline<T>(
    what: &str,
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, BrowserError>>,
) -> Result<T, BrowserError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(BrowserError::Timeout { what: what.to_string(), ms: limit.as_millis() }),
    }
}

/// A running chromedriver, the leader of a process group of its own that holds every Chromium it
/// starts. Dropping it kills the whole group, so no exit path of a worker leaves browsers behind;
/// its [`warden`] kills the group when the worker itself is killed (`kill -9`), where no drop runs.
struct DriverProc {
    child: tokio::process::Child,
    port: u16,
    pid: u32,
    warden: Option<tokio::process::Child>,
}

impl DriverProc {
    fn new(child: tokio::process::Child, port: u16) -> DriverProc {
        let pid = child.id().unwrap_or(0);
        if let Ok(mut live) = LIVE_GROUPS.lock() {
            live.insert(pid);
        }
        let warden = warden(pid);
        if warden.is_none() {
            tracing::warn!(pid, "no warden for chromedriver: a kill -9 of this worker would leave it running");
        }
        DriverProc { child, port, pid, warden }
    }

    /// Kills the group at once (once: the id may be reused after the leader is reaped). The warden
    /// goes first, so it never signals a group id that is free again.
    fn kill(&mut self) {
        if let Some(mut w) = self.warden.take() {
            let _ = w.start_kill();
        }
        kill_group(self.pid);
        if let Ok(mut live) = LIVE_GROUPS.lock() {
            live.remove(&self.pid);
        }
        self.pid = 0;
    }
}

impl Drop for DriverProc {
    fn drop(&mut self) {
        // The leader itself is reaped by tokio (`kill_on_drop`).
        self.kill();
    }
}

/// A Chromium the worker started for one session, in its chromedriver's process group: whatever
/// kills the driver's group kills it too. Dropping it kills the browser.
struct BrowserProc {
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
    async fn launch(
        cfg: &BrowserConfig,
        profile: &std::path::Path,
        group: u32,
    ) -> Result<(BrowserProc, String, Option<Connection>), BrowserError> {
        let group = i32::try_from(group).map_err(|_| BrowserError::Driver(format!("process group {group}")))?;
        let pipe = devtools_pipe();
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
    async fn stop(mut self, devtools: Option<&Connection>) {
        const GRACE: Duration = Duration::from_secs(2);
        if let Some(conn) = devtools {
            let _ = browser_call(conn, "Browser.close", json!({}), GRACE).await;
        }
        if tokio::time::timeout(GRACE, self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// The process groups of every chromedriver this process runs (see [`kill_all_browsers`]).
static LIVE_GROUPS: std::sync::Mutex<BTreeSet<u32>> = std::sync::Mutex::new(BTreeSet::new());

/// Kills every chromedriver and Chromium this process started, at once: for an exit that skips
/// the orderly shutdown (a second Ctrl-C).
pub fn kill_all_browsers() {
    let groups: Vec<u32> = match LIVE_GROUPS.lock() {
        Ok(live) => live.iter().copied().collect(),
        Err(_) => return,
    };
    for pgid in groups {
        kill_group(pgid);
    }
}

/// A browser kept between attempts.
struct Idle {
    client: Client,
    browser: BrowserProc,
    devtools: Option<Arc<Connection>>,
    profile: tempfile::TempDir,
    uses: u32,
    /// Origins the last attempt touched: their storage is cleared before the next one.
    touched: BTreeSet<String>,
    /// The browser serves each attempt in a browser context of its own (the last one is disposed).
    contexts: bool,
    /// The next attempt's context, made at checkin so its tab is ready by the next checkout.
    spare: Option<Spare>,
}

/// A browser context with its first tab, made ahead of the attempt that will use it.
struct Spare {
    context: String,
    target: String,
}

/// One supervised chromedriver. Cheap to share behind an `Arc`.
pub struct Driver {
    cfg: BrowserConfig,
    // A tokio mutex: (re)starting holds it across awaits, and only one attempt
    // per slot uses the driver, so there is no contention to speak of.
    proc: Mutex<Option<DriverProc>>,
    // A std mutex: it guards a take or a replace, never an await.
    idle: std::sync::Mutex<Option<Idle>>,
}

impl Driver {
    pub fn new(cfg: BrowserConfig) -> Self {
        Driver { cfg, proc: Mutex::new(None), idle: std::sync::Mutex::new(None) }
    }

    /// A session for one attempt: the kept browser in a fresh browser context
    /// of its own (cookies, storage, cache, service workers and history
    /// unseen by any other attempt), or, when the browser's DevTools socket
    /// is not open or `SKILLSHIFT_CONTEXTS=0`, in a fresh tab with cookies,
    /// cache and the storage of the origins the last attempt touched cleared;
    /// a new browser when none is kept or the kept one cannot be made clean.
    pub async fn checkout(&self) -> Result<Session, BrowserError> {
        // An attempt's tabs need no chromedriver, but a kept browser is only handed out with a live
        // one (which ends its session): when it died, the browser goes and both start again.
        self.ensure().await?;
        let idle = self.idle.lock().ok().and_then(|mut i| i.take());
        if let Some(idle) = idle {
            let mut session = Session {
                client: idle.client,
                browser: idle.browser,
                devtools: idle.devtools,
                page: std::sync::Mutex::new(None),
                cfg: self.cfg.clone(),
                profile: idle.profile,
                uses: idle.uses,
                touched: std::sync::Mutex::new(BTreeSet::new()),
                context: None,
                numbering: std::sync::Mutex::new(crate::axtree::Numbering::default()),
                locator_grace_ms: default_locator_grace(),
                attached: std::sync::Mutex::new(HashMap::new()),
            };
            let cleaned = if idle.contexts {
                let span = tracing::info_span!("new_context", spare = idle.spare.is_some());
                let entered = async {
                    match idle.spare {
                        Some(spare) => {
                            session.context = Some(spare.context);
                            session.switch_to(&spare.target).await
                        }
                        None => session.enter_context().await,
                    }
                };
                tracing::Instrument::instrument(entered, span).await
            } else {
                let origins: Vec<String> = idle.touched.into_iter().collect();
                let span = tracing::info_span!("recycle", origins = origins.len());
                tracing::Instrument::instrument(session.recycle(&origins), span).await
            };
            match cleaned {
                Ok(()) => return Ok(session),
                Err(e) => {
                    tracing::warn!(error = %e, "could not clean the kept browser; starting a new one");
                    session.close().await;
                }
            }
        }
        let span = tracing::info_span!("new_browser");
        tracing::Instrument::instrument(Session::open(self), span).await
    }

    /// Takes a session back after an attempt whose browser is healthy: its
    /// browser context is disposed (with every tab, cookie and storage of
    /// the attempt) and the browser kept for the next attempt, or closed once
    /// it has served [`BrowserConfig::reuse`] attempts or when the context
    /// cannot be disposed.
    pub async fn checkin(&self, session: Session) {
        if let Some(conn) = &session.devtools {
            conn.end_tabs();
        }
        let uses = session.uses + 1;
        if uses >= self.cfg.reuse.max(1) {
            session.close().await;
            return;
        }
        let contexts = session.context.is_some();
        let mut spare = None;
        if contexts {
            let span = tracing::info_span!("dispose_context");
            if let Err(e) = tracing::Instrument::instrument(session.leave_context(), span).await {
                tracing::warn!(error = %e, "could not dispose the attempt's browser context; closing the browser");
                session.close().await;
                return;
            }
            // Made now, the next attempt's context and tab are ready by its checkout, where only
            // DevTools attach to the tab.
            let span = tracing::info_span!("spare_context");
            match tracing::Instrument::instrument(session.make_context(), span).await {
                Ok(s) => spare = Some(s),
                Err(e) => tracing::warn!(error = %e, "could not prepare the next browser context"),
            }
        }
        let Session { client, browser, devtools, profile, touched, .. } = session;
        let touched = touched.into_inner().unwrap_or_default();
        let replaced = match self.idle.lock() {
            Ok(mut i) => i.replace(Idle { client, browser, devtools, profile, uses, touched, contexts, spare }),
            Err(_) => None,
        };
        if let Some(old) = replaced {
            end_browser(old.client, old.browser, old.devtools.as_deref()).await;
        }
    }

    pub fn config(&self) -> &BrowserConfig {
        &self.cfg
    }

    /// The chromedriver's URL, starting it or restarting it if it has died.
    pub async fn ensure(&self) -> Result<String, BrowserError> {
        let mut guard = self.proc.lock().await;
        if let Some(p) = guard.as_mut() {
            match p.child.try_wait() {
                Ok(None) => return Ok(format!("http://127.0.0.1:{}", p.port)),
                _ => {
                    tracing::warn!(pid = p.pid, "chromedriver died; restarting");
                    self.forget_idle();
                }
            }
        }
        // Dropping the old one kills what is left of its group.
        *guard = None;
        let mut last = String::new();
        for _ in 0..3 {
            match self.spawn().await {
                Ok(p) => {
                    let url = format!("http://127.0.0.1:{}", p.port);
                    *guard = Some(p);
                    return Ok(url);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(BrowserError::Driver(last))
    }

    /// The process id of the running chromedriver, if any (tests kill it).
    pub async fn pid(&self) -> Option<u32> {
        self.proc.lock().await.as_ref().map(|p| p.pid)
    }

    /// Drops the kept browser without talking to it (its chromedriver is gone or going).
    fn forget_idle(&self) {
        if let Ok(mut i) = self.idle.lock() {
            i.take();
        }
    }

    /// Stops chromedriver and every Chromium it started.
    pub async fn shutdown(&self) {
        self.forget_idle();
        if let Some(mut p) = self.proc.lock().await.take() {
            p.kill();
            // Waits for the leader, so it is gone when this returns.
            let _ = p.child.kill().await;
        }
    }

    async fn spawn(&self) -> Result<DriverProc, BrowserError> {
        let port = free_port().map_err(|e| BrowserError::Driver(format!("no free port: {e}")))?;
        let child = tokio::process::Command::new(&self.cfg.chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BrowserError::Driver(format!("cannot start {}: {e}", self.cfg.chromedriver.display())))?;
        let mut proc = DriverProc::new(child, port);
        let ready = tokio::time::timeout(self.cfg.start_timeout, async {
            loop {
                if let Ok(Some(status)) = proc.child.try_wait() {
                    return Err(BrowserError::Driver(format!("chromedriver exited at start: {status}")));
                }
                if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        match ready {
            Ok(Ok(())) => Ok(proc),
            Ok(Err(e)) => Err(e),
            // Dropping `proc` kills its group.
            Err(_) => Err(BrowserError::Driver(format!("chromedriver did not listen on port {port}"))),
        }
    }
}

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

/// A shell outside the group that waits for its standard input to close, then kills process group
/// `pgid`. Only this process holds the pipe's other end (close-on-exec, so no browser inherits it),
/// and the kernel closes it however the worker ends, `kill -9` included: chromedriver and every
/// Chromium in its group then go with the worker instead of living on under PID 1.
fn warden(pgid: u32) -> Option<tokio::process::Child> {
    if pgid <= 1 {
        return None;
    }
    tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(r#"cat >/dev/null; kill -s KILL -- "-$0" 2>/dev/null"#)
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .ok()
}

/// Kills a process group (chromedriver and the browsers it started); one it cannot signal is gone.
fn kill_group(pgid: u32) {
    let Some(pid) = i32::try_from(pgid).ok().filter(|p| *p > 1).and_then(rustix::process::Pid::from_raw) else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

/// A DevTools command sent through chromedriver's vendor endpoint.
#[derive(Debug)]
struct CdpCommand {
    cmd: String,
    params: Value,
}

impl WebDriverCompatibleCommand for CdpCommand {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/goog/cdp/execute", session_id.unwrap_or("")))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({"cmd": self.cmd, "params": self.params}).to_string()))
    }
}

/// The page target the session drives and its flat DevTools session on the browser's socket.
#[derive(Clone)]
struct Page {
    conn: Arc<Connection>,
    session: String,
    /// The target id, which is also the id of its main frame.
    target: String,
}

/// One browser session with its own profile.
pub struct Session {
    client: Client,
    browser: BrowserProc,
    /// The browser's own DevTools socket; `None` when it could not be opened (chromedriver relays then).
    devtools: Option<Arc<Connection>>,
    // A std mutex: read per call, replaced when a fresh tab is attached, never held across an await.
    page: std::sync::Mutex<Option<Page>>,
    cfg: BrowserConfig,
    // Removed from disk when the session is dropped.
    profile: tempfile::TempDir,
    /// Attempts this browser has served before this one.
    uses: u32,
    // A std mutex: an insert per navigation or observation, never held across an await.
    touched: std::sync::Mutex<BTreeSet<String>>,
    /// The attempt's own browser context (`Target.createBrowserContext`); `None` when it runs in a
    /// tab of the browser's default context.
    context: Option<String>,
    /// The ids the attempt's observations print (new with every attempt).
    numbering: std::sync::Mutex<crate::axtree::Numbering>,
    /// How long a skill's locator looks for an element not there yet, in ms
    /// ([`Session::set_locator_grace`]).
    locator_grace_ms: std::sync::atomic::AtomicU64,
    /// The DevTools session of each tab attached so far, by target id.
    attached: std::sync::Mutex<HashMap<String, String>>,
}

fn default_locator_grace() -> std::sync::atomic::AtomicU64 {
    std::sync::atomic::AtomicU64::new(crate::skill_runtime::LOCATOR_GRACE.as_millis() as u64)
}

/// [`Session::scroll_offsets`]: the window's, then `;index:top,left` for each scrolled element.
const SCROLL_OFFSETS_JS: &str = r#"(() => {
  let k = `${Math.round(scrollX)},${Math.round(scrollY)}`;
  document.querySelectorAll("*").forEach((e, i) => {
    if (e.scrollTop || e.scrollLeft) k += `;${i}:${Math.round(e.scrollTop)},${Math.round(e.scrollLeft)}`;
  });
  return k;
})()"#;

impl Session {
    /// Opens a fresh session (a new Chromium with a clean profile).
    pub async fn open(driver: &Driver) -> Result<Session, BrowserError> {
        let url = driver.ensure().await?;
        let cfg = driver.config().clone();
        let profile = tempfile::Builder::new()
            .prefix("skillshift-profile-")
            .tempdir()
            .map_err(|e| BrowserError::Session(format!("cannot create a profile directory: {e}")))?;
        let group = driver.pid().await.ok_or_else(|| BrowserError::Driver("chromedriver is not running".into()))?;
        let (browser, address, pipe) = BrowserProc::launch(&cfg, profile.path(), group).await?;
        // Chromedriver attaches to the browser the worker started instead of starting one: it
        // passes Chromium no first page, and the headless shell opens none without one.
        let caps = json!({
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            // WebArena's rule for JavaScript dialogs, where chromedriver meets one first: dismissed (the
            // DevTools reader answers them itself, crate::cdp; navigations accept `beforeunload`).
            "unhandledPromptBehavior": "dismiss",
            "timeouts": {"pageLoad": cfg.nav_timeout.as_millis() as u64, "script": cfg.call_timeout.as_millis() as u64, "implicit": 0},
            "goog:chromeOptions": {"debuggerAddress": address},
        });
        let serde_json::Value::Object(caps) = caps else {
            return Err(BrowserError::Session("capabilities are not an object".into()));
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client =
            tokio::time::timeout(cfg.start_timeout, ClientBuilder::new(connector).capabilities(caps).connect(&url))
                .await
                .map_err(|_| BrowserError::Timeout { what: "new session".into(), ms: cfg.start_timeout.as_millis() })?
                .map_err(|e| BrowserError::Session(e.to_string()))?;
        let devtools = match pipe {
            Some(conn) => Some(Arc::new(conn)),
            None => open_devtools(&client, &cfg).await,
        };
        let mut session = Session {
            client,
            browser,
            devtools,
            page: std::sync::Mutex::new(None),
            cfg,
            profile,
            uses: 0,
            touched: std::sync::Mutex::new(BTreeSet::new()),
            context: None,
            numbering: std::sync::Mutex::new(crate::axtree::Numbering::default()),
            locator_grace_ms: default_locator_grace(),
            attached: std::sync::Mutex::new(HashMap::new()),
        };
        if session.devtools.is_some() && contexts_wanted() {
            // The first tab stays in the default context, blank, and keeps the browser open.
            match session.enter_context().await {
                Ok(()) => return Ok(session),
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot open a browser context; this browser serves attempts in tabs");
                    session.leave_context().await.ok();
                    session.context = None;
                    session.switch_to_first_window().await?;
                }
            }
        }
        session.attach().await?;
        Ok(session)
    }

    /// Opens a fresh browser context with one blank tab and attaches DevTools to it; WebDriver's
    /// window stays on the browser's first tab ([`Session::devtools_tabs`]).
    async fn enter_context(&mut self) -> Result<(), BrowserError> {
        let spare = self.make_context().await?;
        self.context = Some(spare.context);
        self.switch_to(&spare.target).await
    }

    /// A new browser context with one blank tab in a window of the configured size.
    async fn make_context(&self) -> Result<Spare, BrowserError> {
        let Some(conn) = &self.devtools else {
            return Err(BrowserError::Session("browser contexts need the browser's devtools socket".into()));
        };
        let limit = self.cfg.call_timeout;
        let made = browser_call(conn, "Target.createBrowserContext", json!({"disposeOnDetach": false}), limit).await?;
        let context = made.get("browserContextId").and_then(Value::as_str).map(str::to_string).ok_or_else(|| {
            BrowserError::Cdp {
                cmd: "Target.createBrowserContext".into(),
                message: "no browserContextId in the answer".into(),
            }
        })?;
        let (w, h) = self.cfg.window;
        let params = json!({"url": "about:blank", "browserContextId": context, "width": w, "height": h});
        match target_id(browser_call(conn, "Target.createTarget", params, limit).await) {
            Ok(target) => Ok(Spare { context, target }),
            Err(e) => {
                let _ = browser_call(conn, "Target.disposeBrowserContext", json!({"browserContextId": context}), limit)
                    .await;
                Err(e)
            }
        }
    }

    /// Disposes the attempt's browser context: its tabs close, its cookies, storage, cache and
    /// service workers are gone. WebDriver, whose window is the browser's first tab, is not
    /// concerned.
    async fn leave_context(&self) -> Result<(), BrowserError> {
        let (Some(conn), Some(id)) = (&self.devtools, &self.context) else { return Ok(()) };
        self.set_page(None);
        if let Ok(mut a) = self.attached.lock() {
            a.clear();
        }
        browser_call(conn, "Target.disposeBrowserContext", json!({"browserContextId": id}), self.cfg.call_timeout)
            .await
            .map(|_| ())
    }

    async fn switch_to_first_window(&self) -> Result<(), BrowserError> {
        deadline("switching to the first window", self.cfg.call_timeout, async {
            let first = self.client.windows().await.map_err(cmd_error)?.into_iter().next();
            let first = first.ok_or_else(|| BrowserError::Session("the browser has no window".into()))?;
            self.client.switch_to_window(first).await.map_err(cmd_error)
        })
        .await
    }

    /// Opens a tab at `url` in the attempt's browser context (the default context when the
    /// attempt has none) without making it current, and returns its window handle (its DevTools
    /// target id). Tabs of an attempt must open here, not with WebDriver's new window, which
    /// opens them in the default context where other attempts' state lives.
    pub async fn create_target(&self, url: &str) -> Result<String, BrowserError> {
        let Some(conn) = &self.devtools else {
            let w = deadline("new window", self.cfg.call_timeout, async {
                self.client.new_window(true).await.map_err(cmd_error)
            })
            .await?;
            return Ok(w.handle.into());
        };
        let mut params = json!({"url": url});
        if let Some(id) = &self.context {
            params["browserContextId"] = json!(id);
        }
        target_id(browser_call(conn, "Target.createTarget", params, self.cfg.call_timeout).await)
    }

    /// The attempt's own browser context, when it has one (`Target.createBrowserContext`'s id).
    pub fn context_id(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// The window handles (DevTools target ids) of the pages in the attempt's browser context;
    /// `None` when the attempt has no context of its own, so every window is the attempt's.
    pub async fn context_pages(&self) -> Result<Option<Vec<String>>, BrowserError> {
        let (Some(conn), Some(context)) = (&self.devtools, &self.context) else { return Ok(None) };
        let all = browser_call(conn, "Target.getTargets", json!({}), self.cfg.call_timeout).await?;
        let pages = all
            .get("targetInfos")
            .and_then(Value::as_array)
            .map(|infos| {
                infos
                    .iter()
                    .filter(|t| t.get("type").and_then(Value::as_str) == Some("page"))
                    .filter(|t| t.get("browserContextId").and_then(Value::as_str) == Some(context.as_str()))
                    .filter_map(|t| t.get("targetId").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(pages))
    }

    /// Makes the tab `handle` current. An attempt in a browser context of its own keeps its tabs
    /// to DevTools ([`Session::devtools_tabs`]): WebDriver is not told, and its window stays on the
    /// browser's first tab. Otherwise WebDriver switches and DevTools follow.
    pub async fn switch_to(&self, handle: &str) -> Result<(), BrowserError> {
        if self.devtools_tabs() {
            return self.attach_target(handle, false).await;
        }
        let h = fantoccini::wd::WindowHandle::try_from(handle.to_string())
            .map_err(|e| BrowserError::Session(format!("window handle '{handle}': {e}")))?;
        deadline("switching window", self.cfg.call_timeout, async {
            self.client.switch_to_window(h).await.map_err(cmd_error)
        })
        .await?;
        self.attach().await
    }

    /// True when the attempt's tabs are DevTools targets of its own browser context, current by
    /// this session's say alone: attaching to one is one DevTools call, where a WebDriver switch
    /// waits for chromedriver to take the tab over (tens of milliseconds per attempt and per tab),
    /// and chromedriver's window list is never needed (`Target.getTargets` names the context's).
    pub fn devtools_tabs(&self) -> bool {
        self.devtools.is_some() && self.context.is_some()
    }

    /// The current tab's handle (its DevTools target id) when [`Session::devtools_tabs`].
    pub fn current_tab(&self) -> Option<String> {
        if !self.devtools_tabs() {
            return None;
        }
        self.page().map(|p| p.target)
    }

    /// Whether the browser's DevTools socket is open (else only WebDriver drives the browser).
    pub fn has_devtools(&self) -> bool {
        self.devtools.is_some()
    }

    /// Closes the tab `handle` over DevTools, without waiting for it to leave the target list.
    pub async fn discard_tab(&self, handle: &str) -> Result<(), BrowserError> {
        let Some(conn) = &self.devtools else {
            return Err(BrowserError::Session("closing a tab over DevTools needs the browser's socket".into()));
        };
        browser_call(conn, "Target.closeTarget", json!({"targetId": handle}), self.cfg.call_timeout).await?;
        if let Ok(mut a) = self.attached.lock() {
            a.remove(handle);
        }
        Ok(())
    }

    /// Closes the tab `handle` of the attempt's context over DevTools.
    pub async fn close_tab(&self, handle: &str) -> Result<(), BrowserError> {
        self.discard_tab(handle).await?;
        // Chrome answers before the tab is gone from its target list; WebDriver's close waits
        // for that, and so does this (bounded by the call deadline).
        let start = Instant::now();
        while self.context_pages().await?.is_some_and(|pages| pages.iter().any(|p| p == handle)) {
            if start.elapsed() >= self.cfg.call_timeout {
                return Err(BrowserError::Timeout {
                    what: format!("closing tab {handle}"),
                    ms: self.cfg.call_timeout.as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    /// Attaches the browser's socket to WebDriver's current tab (when there is a socket).
    async fn attach(&self) -> Result<(), BrowserError> {
        if self.devtools.is_none() {
            return self.enable_page().await;
        }
        let handle =
            deadline("current window", self.cfg.call_timeout, async { self.client.window().await.map_err(cmd_error) })
                .await?;
        let target: String = handle.into();
        self.attach_target(&target, true).await
    }

    /// Makes DevTools talk to the tab `target` (attached once per attempt, then remembered) and
    /// enables what observation and settling listen to: Chrome keeps its accessibility tree alive
    /// between observations instead of rebuilding it per call, and page events tell when a step is
    /// done. With `relay_if_refused`, a tab that cannot be attached is left to chromedriver's relay
    /// (WebDriver's current window is this tab); without it that is an error.
    async fn attach_target(&self, target: &str, relay_if_refused: bool) -> Result<(), BrowserError> {
        let Some(conn) = &self.devtools else { return self.enable_page().await };
        // A tab a page opened: the browser attached it by itself, and the reader set it up on that session.
        let known =
            self.attached.lock().ok().and_then(|a| a.get(target).cloned()).or_else(|| conn.auto_session(target));
        if let Some(id) = known {
            self.set_page(Some(Page { conn: conn.clone(), session: id, target: target.to_string() }));
            return Ok(());
        }
        const CMD: &str = "Target.attachToTarget";
        let params = json!({"targetId": target, "flatten": true});
        let attached = browser_call(conn, CMD, params, self.cfg.call_timeout).await.and_then(|v| {
            let id = v.get("sessionId").and_then(Value::as_str).map(str::to_string);
            id.ok_or_else(|| BrowserError::Cdp { cmd: CMD.into(), message: "no sessionId in the answer".into() })
        });
        match attached {
            Ok(id) => {
                if let Ok(mut a) = self.attached.lock() {
                    a.insert(target.to_string(), id.clone());
                }
                self.set_page(Some(Page { conn: conn.clone(), session: id, target: target.to_string() }));
            }
            Err(e) if relay_if_refused => {
                tracing::warn!(error = %e, "cannot attach to the tab; devtools go through chromedriver");
                self.set_page(None);
            }
            Err(e) => return Err(e),
        }
        self.enable_page().await
    }

    fn set_page(&self, page: Option<Page>) {
        if let Ok(mut p) = self.page.lock() {
            *p = page;
        }
    }

    async fn enable_page(&self) -> Result<(), BrowserError> {
        for cmd in ["Page.enable", "Accessibility.enable"] {
            if let Err(e) = self.cdp(cmd, json!({})).await {
                if e.is_fatal() {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn page(&self) -> Option<Page> {
        self.page.lock().ok().and_then(|p| p.clone())
    }

    /// True when DevTools go over the browser's own socket rather than through chromedriver.
    pub fn is_direct(&self) -> bool {
        self.page().is_some()
    }

    /// What carries the session's DevTools: `pipe` (CBOR, the default for the browsers the
    /// worker starts) or `websocket`; `None` when chromedriver relays them.
    pub fn devtools_transport(&self) -> Option<&'static str> {
        self.devtools.as_ref().map(|c| c.transport())
    }

    /// The browser's DevTools HTTP address (`127.0.0.1:PORT`), as the WebDriver session reports it.
    pub fn debugger_address(&self) -> Option<String> {
        debugger_address(&self.client)
    }

    /// Makes a kept browser as good as new for the next attempt: a new tab
    /// replaces every open one (so history, session storage and injected
    /// scripts are gone), then cookies, cache and the storage of `origins`
    /// are cleared.
    async fn recycle(&self, origins: &[String]) -> Result<(), BrowserError> {
        let old = deadline("opening a fresh tab", self.cfg.start_timeout, async {
            let old = self.client.windows().await.map_err(cmd_error)?;
            let fresh = self.client.new_window(true).await.map_err(cmd_error)?.handle;
            self.client.switch_to_window(fresh).await.map_err(cmd_error)?;
            Ok(old)
        })
        .await?;
        if let Ok(mut p) = self.page.lock() {
            *p = None;
        }
        self.attach().await?;
        // Window handles are DevTools target ids: the new tab closes the old ones.
        for handle in old {
            let id: String = handle.into();
            self.cdp("Target.closeTarget", json!({"targetId": id})).await?;
        }
        self.cdp("Network.clearBrowserCookies", json!({})).await?;
        self.cdp("Network.clearBrowserCache", json!({})).await?;
        for origin in origins {
            self.cdp("Storage.clearDataForOrigin", json!({"origin": origin, "storageTypes": "all"})).await?;
        }
        Ok(())
    }

    /// Notes the origin of a URL this attempt reached, so its storage is
    /// cleared before the browser serves another attempt.
    pub fn touch(&self, url: &str) {
        let Ok(u) = url::Url::parse(url) else { return };
        let origin = u.origin();
        if origin.is_tuple() {
            if let Ok(mut t) = self.touched.lock() {
                t.insert(origin.ascii_serialization());
            }
        }
    }

    /// The JavaScript dialogs this browser's pages opened since the last call, each answered at once by
    /// WebArena's rule ([`crate::cdp`]), and how many more were answered but not noted. None through
    /// chromedriver's relay, which answers them itself (dismissed).
    pub fn take_dialogs(&self) -> (Vec<crate::cdp::Dialog>, u64) {
        self.devtools.as_ref().map(|c| c.take_dialogs()).unwrap_or_default()
    }

    /// Starts the attempt's tabs from the current one, whose perturbation script is installed already:
    /// every later tab, opened by the agent (`new_tab`, set up by [`Session::setup_tab`]) or by a page
    /// (set up by the DevTools reader before it runs, [`crate::cdp`]), gets `script`; with `network`,
    /// every tab's requests join the attempt's network trace ([`crate::network`]), with response
    /// bodies when `bodies`. Nothing through chromedriver's relay, which has no events.
    pub async fn begin_tabs(&self, script: Option<String>, network: bool, bodies: bool) -> Result<(), BrowserError> {
        let (Some(conn), Some(page)) = (&self.devtools, self.page()) else { return Ok(()) };
        let setup = crate::cdp::TabSetup { context: self.context.clone(), script, headers: None, network };
        if conn.begin_tabs(setup, bodies) && self.context.is_some() {
            // Every new page waits for the reader, which sets up the attempt's and lets the rest run.
            let params = json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
                "filter": [{"type": "page", "exclude": false}]});
            browser_call(conn, "Target.setAutoAttach", params, self.cfg.call_timeout).await?;
            conn.auto_attach_on();
        }
        conn.setup_for(&page.target);
        if network {
            conn.with_trace(|t| t.add_session(&page.session));
            self.cdp("Network.enable", json!({})).await?;
        }
        Ok(())
    }

    /// Gives the current tab the attempt's tab setup ([`Session::begin_tabs`]) unless it has it.
    pub async fn setup_tab(&self) -> Result<(), BrowserError> {
        let (Some(conn), Some(page)) = (&self.devtools, self.page()) else { return Ok(()) };
        let Some(setup) = conn.setup_for(&page.target) else { return Ok(()) };
        if let Some(source) = &setup.script {
            self.cdp("Page.addScriptToEvaluateOnNewDocument", json!({"source": source})).await?;
        }
        if setup.network {
            conn.with_trace(|t| t.add_session(&page.session));
        }
        if setup.network || setup.headers.is_some() {
            self.cdp("Network.enable", json!({})).await?;
        }
        if let Some(h) = setup.headers {
            self.cdp("Network.setExtraHTTPHeaders", json!({"headers": h})).await?;
        }
        Ok(())
    }

    /// The extra headers every later tab of the attempt gets.
    pub fn set_tab_headers(&self, headers: &Value) {
        if let Some(conn) = &self.devtools {
            conn.set_tab_headers(headers.clone());
        }
    }

    /// The agent step the attempt's requests are sent in from now on (1-based; 0 before the first).
    pub fn network_step(&self, step: u32) {
        if let Some(conn) = &self.devtools {
            conn.with_trace(|t| t.set_step(step));
        }
    }

    /// No new request joins the trace from now on (the scorer's own requests are not the agent's).
    pub fn network_close(&self) {
        if let Some(conn) = &self.devtools {
            conn.with_trace(|t| t.close());
        }
    }

    /// Reads the post data and response bodies the trace still lacks, each once, while their
    /// tabs are open; what cannot be read is left out. Bounded by the trace's entries.
    pub async fn network_flush(&self) {
        use crate::network::Wanted;
        let Some(conn) = &self.devtools else { return };
        let wanted = conn.with_trace(|t| t.wanted()).unwrap_or_default();
        let limit = self.cfg.call_timeout.min(Duration::from_secs(5));
        for w in wanted {
            let (method, session, request) = match &w {
                Wanted::PostData { session, request, .. } => ("Network.getRequestPostData", session, request),
                Wanted::Body { session, request, .. } => ("Network.getResponseBody", session, request),
            };
            let answer = conn.call(Some(session), method, &json!({"requestId": request}), limit).await;
            let value = match answer.map(|a| a.read::<Value>()) {
                Ok(Ok(v)) => v,
                Ok(Err(e)) => {
                    tracing::debug!(%method, error = %e, "an unreadable answer");
                    continue;
                }
                Err(e) => {
                    tracing::debug!(%method, error = %e, "not read for the network trace");
                    if matches!(e, CallError::Lost(_)) {
                        return;
                    }
                    continue;
                }
            };
            conn.with_trace(|t| t.answered(&w, &value));
        }
    }

    /// The attempt's network trace, completed ([`Session::network_flush`]) and taken; `None` when
    /// none was recorded (chromedriver's relay, or a trace turned off).
    /// Without `flush` (a browser that failed), what was recorded is taken as it stands.
    pub async fn network_take(&self, flush: bool) -> Option<skillshift_common::har::Har> {
        let conn = self.devtools.as_ref()?;
        if !conn.with_trace(|t| t.is_recording()).unwrap_or(false) {
            return None;
        }
        if flush {
            self.network_flush().await;
        }
        conn.with_trace(|t| t.take())
    }

    /// Sends one DevTools command to the browser itself (the `Target` domain), not to a tab; an error
    /// when the browser's DevTools are not open.
    pub async fn browser_cdp(&self, cmd: &str, params: Value) -> Result<Value, BrowserError> {
        let Some(conn) = &self.devtools else {
            return Err(BrowserError::Session(format!("{cmd} needs the browser's devtools socket")));
        };
        browser_call(conn, cmd, params, self.cfg.call_timeout).await
    }

    /// Sends one DevTools command and returns its result object.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Result<Value, BrowserError> {
        self.cdp_within(cmd, params, self.cfg.call_timeout).await
    }

    pub async fn cdp_within(&self, cmd: &str, params: Value, limit: Duration) -> Result<Value, BrowserError> {
        if let Some(page) = self.page() {
            let answer = direct_call(&page, cmd, params, limit).await?;
            return answer
                .read()
                .map_err(|e| BrowserError::Cdp { cmd: cmd.to_string(), message: format!("unreadable answer: {e}") });
        }
        self.relay_call(cmd, params, limit).await
    }

    /// A DevTools command through chromedriver's `goog/cdp/execute`.
    async fn relay_call(&self, cmd: &str, params: Value, limit: Duration) -> Result<Value, BrowserError> {
        let c = CdpCommand { cmd: cmd.to_string(), params };
        deadline(cmd, limit, async {
            self.client.issue_cmd(c).await.map_err(|e| match cmd_error(e) {
                BrowserError::WebDriver(m) => BrowserError::Cdp { cmd: cmd.to_string(), message: m },
                other => other,
            })
        })
        .await
    }

    /// Sends one DevTools command and returns its result unread, for callers that read large
    /// answers (the accessibility tree) into their own types.
    pub async fn cdp_raw_within(&self, cmd: &str, params: Value, limit: Duration) -> Result<Answer, BrowserError> {
        let Some(page) = self.page() else {
            return Ok(Answer::of(&self.relay_call(cmd, params, limit).await?));
        };
        direct_call(&page, cmd, params, limit).await
    }

    /// Evaluates a JavaScript expression in the page and returns its value.
    pub async fn eval(&self, expression: &str) -> Result<Value, BrowserError> {
        let r = self
            .cdp("Runtime.evaluate", json!({"expression": expression, "returnByValue": true, "awaitPromise": true}))
            .await?;
        if let Some(ex) = r.get("exceptionDetails") {
            let text = ex
                .pointer("/exception/description")
                .and_then(Value::as_str)
                .or_else(|| ex.get("text").and_then(Value::as_str))
                .unwrap_or("exception");
            return Err(BrowserError::Cdp { cmd: "Runtime.evaluate".into(), message: first_line(text) });
        }
        Ok(r.pointer("/result/value").cloned().unwrap_or(Value::Null))
    }

    /// Navigates and waits for the load event, within the navigation deadline.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        self.goto_within(url, self.cfg.nav_timeout).await
    }

    /// Navigates and waits for the load event, at most `limit`: over DevTools when the browser's
    /// socket is open (`Page.navigate`, then the page's own events), else through WebDriver. Either
    /// way an HTTP error status is a page like any other, a network error fails the navigation and
    /// a page that has not loaded by `limit` is a timeout.
    pub async fn goto_within(&self, url: &str, limit: Duration) -> Result<(), BrowserError> {
        self.touch(url);
        let what = format!("navigation to {url}");
        if self.is_direct() {
            let navigated = async {
                let mark = self.mark_input().await?;
                let r = self.cdp_within("Page.navigate", json!({"url": url}), limit).await?;
                let error = r.get("errorText").and_then(Value::as_str).unwrap_or("");
                if !error.is_empty() && !NAV_NOT_FAILED.contains(&error) {
                    return Err(BrowserError::Navigation { url: url.to_string(), message: error.to_string() });
                }
                self.load(mark, &what, limit).await
            };
            return deadline(&what, limit, navigated).await;
        }
        deadline(&what, limit, async { self.client.goto(url).await.map_err(|e| nav_error(url, e)) }).await
    }

    /// `Page.navigate` and then the tab's `Page.loadEventFired`, nothing else, at most `limit`: a
    /// navigation's floor (`skillshift bench floors`). Attempts navigate with [`Session::goto`], which
    /// also tells a navigation that failed or never began from one that loaded.
    pub async fn navigate_bare(&self, url: &str, limit: Duration) -> Result<(), BrowserError> {
        let Some(page) = self.page() else {
            return Err(BrowserError::Session("a bare navigation needs the tab's devtools".into()));
        };
        let mut events = page.conn.events(Some(&page.session));
        let what = format!("bare navigation to {url}");
        deadline(&what, limit, async {
            direct_call(&page, "Page.navigate", json!({"url": url}), limit).await?;
            while let Some(e) = events.next_within(limit).await {
                if e.method == "Page.loadEventFired" {
                    return Ok(());
                }
            }
            Err(BrowserError::Timeout { what: what.clone(), ms: limit.as_millis() })
        })
        .await
    }

    pub async fn back(&self) -> Result<(), BrowserError> {
        if self.is_direct() {
            return self.history(-1, "go_back").await;
        }
        deadline("go_back", self.cfg.nav_timeout, async { self.client.back().await.map_err(|e| nav_error("back", e)) })
            .await
    }

    pub async fn forward(&self) -> Result<(), BrowserError> {
        if self.is_direct() {
            return self.history(1, "go_forward").await;
        }
        deadline("go_forward", self.cfg.nav_timeout, async {
            self.client.forward().await.map_err(|e| nav_error("forward", e))
        })
        .await
    }

    /// Moves `delta` entries through the tab's history over DevTools and waits for the page, as
    /// WebDriver's back and forward do: nothing happens at either end of the history.
    async fn history(&self, delta: i64, what: &str) -> Result<(), BrowserError> {
        let limit = self.cfg.nav_timeout;
        deadline(what, limit, async {
            let h = self.cdp("Page.getNavigationHistory", json!({})).await?;
            let at = h.get("currentIndex").and_then(Value::as_i64).unwrap_or(0) + delta;
            let entry = usize::try_from(at).ok().and_then(|i| h.get("entries")?.get(i)?.get("id")?.as_i64());
            let Some(entry) = entry else { return Ok(()) };
            let mark = self.mark_input().await?;
            self.cdp("Page.navigateToHistoryEntry", json!({"entryId": entry})).await?;
            self.load(mark, what, limit).await
        })
        .await
    }

    /// Waits for the navigation begun after `mark` to load; a timeout naming `what` when it has not
    /// by `limit`.
    async fn load(&self, mark: InputMark, what: &str, limit: Duration) -> Result<(), BrowserError> {
        if self.settle_within(mark, limit).await? {
            return Ok(());
        }
        Err(BrowserError::Timeout { what: what.to_string(), ms: limit.as_millis() })
    }

    /// The top document's URL, as WebDriver reports it (an error page reports the URL that failed).
    pub async fn url(&self) -> Result<String, BrowserError> {
        if !self.is_direct() {
            return self.webdriver_url().await;
        }
        Ok(self.url_and_title().await?.0)
    }

    async fn webdriver_url(&self) -> Result<String, BrowserError> {
        deadline("current url", self.cfg.call_timeout, async {
            self.client.current_url().await.map(|u| u.to_string()).map_err(cmd_error)
        })
        .await
    }

    async fn webdriver_title(&self) -> Result<String, BrowserError> {
        deadline("title", self.cfg.call_timeout, async { self.client.title().await.map_err(cmd_error) }).await
    }

    /// The title, as WebDriver reports it: the document's title, or its URL when it has none.
    pub async fn title(&self) -> Result<String, BrowserError> {
        if !self.is_direct() {
            return self.webdriver_title().await;
        }
        Ok(self.url_and_title().await?.1)
    }

    /// URL and title in one DevTools round trip, with chromedriver's rules for both.
    pub async fn url_and_title(&self) -> Result<(String, String), BrowserError> {
        if !self.is_direct() {
            return Ok((self.webdriver_url().await?, self.webdriver_title().await?));
        }
        let v = self.eval("[document.URL, document.title || document.URL]").await?;
        let at = |i: usize| v.get(i).and_then(Value::as_str).unwrap_or("").to_string();
        let (mut url, mut title) = (at(0), at(1));
        if url.starts_with("chrome-error://") {
            // What chromedriver does: the URL of the navigation entry that failed.
            let h = self.cdp("Page.getNavigationHistory", json!({})).await?;
            let entry = h.get("currentIndex").and_then(Value::as_u64).and_then(|i| h.pointer(&format!("/entries/{i}")));
            if let Some(u) = entry.and_then(|e| e.get("url")).and_then(Value::as_str) {
                if title == url {
                    title = u.to_string();
                }
                url = u.to_string();
            }
        }
        Ok((url, title))
    }

    /// Notes the page's state before an input, so [`Session::settle`] can tell whether the input
    /// started a navigation (`beforeunload` fires when one begins; page events say when it ends).
    pub async fn mark_input(&self) -> Result<InputMark, BrowserError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let token = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let page = self.page();
        let events = page.as_ref().map(|p| p.conn.events(Some(&p.session)));
        self.eval(&format!(
            "window.__skillshiftMark = {token}; window.__skillshiftLeaving = false; \
             addEventListener('beforeunload', () => {{ window.__skillshiftLeaving = true; }}, {{once: true}}); true"
        ))
        .await?;
        let requests = self.trace_mark();
        Ok(InputMark { token, events, main_frame: page.map(|p| p.target).unwrap_or_default(), requests })
    }

    /// A mark in the attempt's network trace ([`crate::network::Recorder::mark`]); `None` when no
    /// trace is recorded (chromedriver's relay, or the trace turned off).
    fn trace_mark(&self) -> Option<usize> {
        let conn = self.devtools.as_ref()?;
        conn.with_trace(|t| t.is_recording().then(|| t.mark())).flatten()
    }

    /// The page's own requests (`fetch`, `XMLHttpRequest`) sent since `mark` that are still under way.
    fn fetches_in_flight(&self, mark: Option<usize>) -> usize {
        match (mark, &self.devtools) {
            (Some(since), Some(conn)) => conn.with_trace(|t| t.fetches_in_flight(since)).unwrap_or(0),
            _ => 0,
        }
    }

    /// Waits until the page is done with the input marked by `mark`, at most `limit`: when no
    /// navigation began (checked after one turn of the page's task loop, which orders it after the
    /// input's own effects), once the page's own requests (`fetch`, `XMLHttpRequest`) sent since the
    /// mark have ended, at once when there are none (a save through the REST API is part of the
    /// click that sent it; only with a network trace, which records them); else when the new
    /// document has loaded, or when the navigation ended without one (a 204, a download, a cancel),
    /// whatever the new page then fetches. No fixed sleep: the wait ends on what the page says,
    /// re-checked at most every 100 ms while a navigation or a request is under way.
    pub async fn settle(&self, mark: InputMark, limit: Duration) -> Result<(), BrowserError> {
        self.settle_within(mark, limit).await.map(|_| ())
    }

    /// [`Session::settle`], saying whether the page settled (`false`: `limit` ran out first).
    async fn settle_within(&self, mark: InputMark, limit: Duration) -> Result<bool, BrowserError> {
        let span = skillshift_telemetry::spans::settle();
        let mut work = SettleWork::default();
        let settled = tracing::Instrument::instrument(self.settle_wait(mark, limit, &mut work), span.clone()).await;
        skillshift_telemetry::spans::record_settle_work(&span, work.probes, work.events);
        if let Ok(s) = &settled {
            skillshift_telemetry::spans::record_settled(&span, *s);
        }
        settled
    }

    async fn settle_wait(
        &self,
        mut mark: InputMark,
        limit: Duration,
        work: &mut SettleWork,
    ) -> Result<bool, BrowserError> {
        let start = Instant::now();
        let probe = format!(
            "new Promise(r => setTimeout(() => r([window.__skillshiftMark === {}, document.readyState, \
             window.__skillshiftLeaving === true]), 0))",
            mark.token
        );
        let mut nav = NavState::default();
        loop {
            let probed = self.eval(&probe).await;
            work.probes += 1;
            if let Some(events) = mark.events.as_mut() {
                while let Some(e) = events.try_next() {
                    work.events += 1;
                    nav.note(&e.method, &e.params, &mark.main_frame);
                }
            }
            match probed {
                Ok(v) => {
                    let same = v.get(0).and_then(Value::as_bool).unwrap_or(false);
                    let ready = v.get(1).and_then(Value::as_str) == Some("complete");
                    let leaving = v.get(2).and_then(Value::as_bool).unwrap_or(false);
                    // An input that left the page is done when the new page has loaded (or the
                    // navigation ended without one); one that stayed, when the page's own requests
                    // sent since it began (a save through the REST API, an autosave) have ended.
                    let navigated = !same || (leaving && nav.ended());
                    let stayed = same && !leaving && !nav.pending() && self.fetches_in_flight(mark.requests) == 0;
                    if ready && (navigated || stayed) {
                        return Ok(true);
                    }
                }
                // The context was destroyed by the navigation: look again.
                Err(e) if e.is_fatal() => return Err(e),
                Err(_) => {}
            }
            let left = limit.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(false);
            }
            match mark.events.as_mut() {
                Some(events) => {
                    if let Some(e) = events.next_within(left.min(Duration::from_millis(100))).await {
                        work.events += 1;
                        nav.note(&e.method, &e.params, &mark.main_frame);
                    }
                }
                // Through chromedriver there are no events: poll.
                None => tokio::time::sleep(left.min(Duration::from_millis(10))).await,
            }
        }
    }

    /// A PNG of the current tab's viewport: over the browser's DevTools socket when it is open (PNG
    /// encoding tuned for speed, as screenshots are evidence, not archives), else through WebDriver.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        if self.page().is_some() {
            const CMD: &str = "Page.captureScreenshot";
            let shot = self.cdp(CMD, json!({"format": "png", "optimizeForSpeed": true})).await?;
            let bad = |message: String| BrowserError::Cdp { cmd: CMD.into(), message };
            let data = shot.get("data").and_then(Value::as_str).ok_or_else(|| bad("no data in the answer".into()))?;
            use base64::Engine as _;
            return base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| bad(format!("data: {e}")));
        }
        deadline("screenshot", self.cfg.call_timeout, async { self.client.screenshot().await.map_err(cmd_error) }).await
    }

    /// How long a skill's locator keeps looking for an element that is not there yet: the site
    /// backend's ([`crate::sites::SiteManager::locator_grace`]), set for each attempt.
    pub fn set_locator_grace(&self, grace: Duration) {
        let ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        self.locator_grace_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// [`Session::set_locator_grace`]; [`crate::skill_runtime::LOCATOR_GRACE`] until set.
    pub fn locator_grace(&self) -> Duration {
        Duration::from_millis(self.locator_grace_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The scroll offsets of the window and of every element scrolled away from its origin, as
    /// one string: with the address and the observation, what tells whether the page moved since
    /// an earlier screenshot. `None` when the page cannot say.
    pub async fn scroll_offsets(&self) -> Option<String> {
        self.eval(SCROLL_OFFSETS_JS).await.ok().and_then(|v| v.as_str().map(str::to_string))
    }

    /// Gives the nodes of `tree`, a tree of the document named `document`, the ids this attempt
    /// prints for them ([`crate::axtree::Numbering`]).
    pub fn number(&self, document: &str, tree: &mut crate::axtree::AxTree) {
        if let Ok(mut n) = self.numbering.lock() {
            n.apply(document, tree);
        }
    }

    /// Attempts this browser served before this one (0 for a new browser).
    pub fn uses(&self) -> u32 {
        self.uses
    }

    pub fn call_timeout(&self) -> Duration {
        self.cfg.call_timeout
    }

    /// The WebDriver client, for the attempt's tabs (`crate::tabs`).
    pub(crate) fn webdriver(&self) -> &Client {
        &self.client
    }

    /// Ends the session and its Chromium; bounded, errors ignored.
    pub async fn close(self) {
        end_browser(self.client, self.browser, self.devtools.as_deref()).await;
        drop(self.profile);
    }
}

/// Ends a WebDriver session and the browser it is attached to; bounded, errors ignored.
async fn end_browser(client: Client, browser: BrowserProc, devtools: Option<&Connection>) {
    let _ = tokio::time::timeout(Duration::from_secs(5), client.close()).await;
    browser.stop(devtools).await;
}

/// One DevTools command on the tab's flat session over the browser's socket.
async fn direct_call(page: &Page, cmd: &str, params: Value, limit: Duration) -> Result<Answer, BrowserError> {
    page.conn.call(Some(&page.session), cmd, &params, limit).await.map_err(|e| match e {
        CallError::Protocol(m) => BrowserError::Cdp { cmd: cmd.to_string(), message: m },
        CallError::Lost(m) => BrowserError::Lost(m),
        CallError::Timeout(ms) => BrowserError::Timeout { what: cmd.to_string(), ms },
    })
}

/// One DevTools command to the browser itself (the `Target` domain) over its socket.
async fn browser_call(conn: &Connection, cmd: &str, params: Value, limit: Duration) -> Result<Value, BrowserError> {
    let raw = conn.call(None, cmd, &params, limit).await.map_err(|e| match e {
        CallError::Protocol(m) => BrowserError::Cdp { cmd: cmd.to_string(), message: m },
        CallError::Lost(m) => BrowserError::Lost(m),
        CallError::Timeout(ms) => BrowserError::Timeout { what: cmd.to_string(), ms },
    })?;
    raw.read().map_err(|e| BrowserError::Cdp { cmd: cmd.to_string(), message: format!("unreadable answer: {e}") })
}

/// The `targetId` of a `Target.createTarget` answer.
fn target_id(made: Result<Value, BrowserError>) -> Result<String, BrowserError> {
    made?.get("targetId").and_then(Value::as_str).map(str::to_string).ok_or_else(|| BrowserError::Cdp {
        cmd: "Target.createTarget".into(),
        message: "no targetId in the answer".into(),
    })
}

/// Network errors `Page.navigate` reports that do not fail a navigation, as they do not fail
/// WebDriver's: an HTTP error status is a page like any other.
const NAV_NOT_FAILED: &[&str] = &["net::ERR_HTTP_RESPONSE_CODE_FAILURE"];

/// Attempts run in browser contexts of their own unless `SKILLSHIFT_CONTEXTS=0` (the older
/// fresh-tab path, kept for comparisons).
fn contexts_wanted() -> bool {
    !std::env::var("SKILLSHIFT_CONTEXTS").is_ok_and(|v| v == "0")
}

/// What [`Session::mark_input`] noted; handed to [`Session::settle`].
pub struct InputMark {
    token: u64,
    events: Option<Events>,
    main_frame: String,
    /// The network trace's mark when the input began, if a trace is recorded.
    requests: Option<usize>,
}

/// What one settle cost, for its span: the page asked (one `Runtime.evaluate` each), the tab's
/// DevTools events read.
#[derive(Debug, Default)]
struct SettleWork {
    probes: u32,
    events: u32,
}

/// The main frame's navigation as its events tell it.
#[derive(Debug, Default)]
struct NavState {
    requested: bool,
    stopped: bool,
}

impl NavState {
    fn note(&mut self, method: &str, params: &Value, main_frame: &str) {
        let main = params.get("frameId").and_then(Value::as_str) == Some(main_frame);
        match method {
            "Page.frameRequestedNavigation"
                if main
                    && params.get("disposition").and_then(Value::as_str).unwrap_or("currentTab") == "currentTab" =>
            {
                self.requested = true;
                self.stopped = false;
            }
            "Page.frameStartedLoading" if main => {
                self.requested = true;
                self.stopped = false;
            }
            "Page.frameStoppedLoading" if main => self.stopped = true,
            "Page.loadEventFired" => self.stopped = true,
            _ => {}
        }
    }

    /// A navigation of the main frame began and has not ended.
    fn pending(&self) -> bool {
        self.requested && !self.stopped
    }

    /// The main frame stopped loading after the input.
    fn ended(&self) -> bool {
        self.stopped
    }
}

fn debugger_address(client: &Client) -> Option<String> {
    client
        .capabilities()
        .and_then(|c| c.get("goog:chromeOptions"))
        .and_then(|o| o.get("debuggerAddress"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// True when the worker speaks DevTools to the browsers it starts over their pipe, in CBOR (the
/// default): Chrome then sends every answer in its own binary form instead of converting it to
/// JSON, which was a quarter of an accessibility tree's time (`docs/performance.md`).
/// `SKILLSHIFT_DEVTOOLS=websocket` uses the browser's WebSocket instead, `chromedriver` its relay.
fn devtools_pipe() -> bool {
    !std::env::var("SKILLSHIFT_DEVTOOLS").is_ok_and(|v| v == "chromedriver" || v == "websocket")
}

/// Opens the browser's own DevTools socket from the session's `goog:chromeOptions.debuggerAddress`;
/// `None` (with a warning) when that fails, and chromedriver relays DevTools instead.
/// `SKILLSHIFT_DEVTOOLS=chromedriver` forces the relay (for comparisons).
async fn open_devtools(client: &Client, cfg: &BrowserConfig) -> Option<Arc<Connection>> {
    if std::env::var("SKILLSHIFT_DEVTOOLS").is_ok_and(|v| v == "chromedriver") {
        return None;
    }
    let Some(address) = debugger_address(client) else {
        tracing::warn!("the session reports no debuggerAddress; devtools go through chromedriver");
        return None;
    };
    let opened = async {
        let ws = crate::cdp::browser_ws_url(&address, cfg.call_timeout).await?;
        Connection::connect(&ws, cfg.call_timeout).await
    };
    match opened.await {
        Ok(c) => Some(Arc::new(c)),
        Err(e) => {
            tracing::warn!(error = %e, %address, "cannot open the browser's devtools socket; using chromedriver's relay");
            None
        }
    }
}

fn nav_error(url: &str, e: fantoccini::error::CmdError) -> BrowserError {
    match cmd_error(e) {
        BrowserError::WebDriver(m) if !fatal_message(&m) => {
            BrowserError::Navigation { url: url.to_string(), message: first_line(&m) }
        }
        other => other,
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}
