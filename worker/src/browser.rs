//! The browser: a supervised chromedriver per slot and one fresh headless
//! Chromium session per attempt.
//!
//! * [`Driver`] owns one chromedriver process on a free loopback port, in its own
//!   process group (so the Chromium it starts dies with it), and restarts it when
//!   it has died.
//! * [`Session`] is one WebDriver session with a clean temporary profile. An
//!   attempt takes one with [`Driver::checkout`] and gives it back with
//!   [`Driver::checkin`]: the browser is kept for the next attempt (up to
//!   [`BrowserConfig::reuse`] attempts) and handed out again in a fresh tab, with
//!   cookies, cache and the sites' storage cleared, which costs about a tenth of
//!   a new browser. Session
//!   lifecycle and navigation go through WebDriver (fantoccini); observation and
//!   input go through Chrome DevTools via chromedriver's vendor endpoint
//!   `POST /session/{id}/goog/cdp/execute`, which is several times faster.
//!
//! Every call has a deadline. Errors say whether the browser is lost
//! ([`BrowserError::is_fatal`]), which ends the attempt as `error` / `browser`,
//! or only the action failed, which the agent sees as `last_action_error`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};
use tokio::sync::Mutex;

/// The Chromium flags that work as root on a closed network.
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
];

#[derive(Debug, Clone)]
pub struct BrowserConfig {
    pub chromedriver: PathBuf,
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
            chromium: PathBuf::from("/usr/lib/chromium/chromium"),
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
    ["invalid session id", "chrome not reachable", "disconnected", "session deleted", "target window already closed"]
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

struct DriverProc {
    child: tokio::process::Child,
    port: u16,
    pid: u32,
}

/// A browser kept between attempts.
struct Idle {
    client: Client,
    profile: tempfile::TempDir,
    uses: u32,
    /// Origins the last attempt touched: their storage is cleared before the next one.
    touched: BTreeSet<String>,
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

    /// A session for one attempt: the kept browser in a fresh tab (no history,
    /// no cookies, no cache, the storage of the origins the last attempt
    /// touched cleared), or a new browser when none is kept or the kept one
    /// cannot be cleaned.
    pub async fn checkout(&self) -> Result<Session, BrowserError> {
        let idle = self.idle.lock().ok().and_then(|mut i| i.take());
        if let Some(idle) = idle {
            let session = Session {
                client: idle.client,
                cfg: self.cfg.clone(),
                profile: idle.profile,
                uses: idle.uses,
                touched: std::sync::Mutex::new(BTreeSet::new()),
            };
            let origins: Vec<String> = idle.touched.into_iter().collect();
            let span = tracing::info_span!("recycle", origins = origins.len());
            match tracing::Instrument::instrument(session.recycle(&origins), span).await {
                Ok(()) => return Ok(session),
                Err(e) => {
                    tracing::warn!(error = %e, "could not clean the kept browser; starting a new one");
                    session.close().await;
                }
            }
        }
        Session::open(self).await
    }

    /// Takes a session back after an attempt whose browser is healthy: it is
    /// kept for the next attempt, or closed once it has served
    /// [`BrowserConfig::reuse`] attempts.
    pub async fn checkin(&self, session: Session) {
        let uses = session.uses + 1;
        if uses >= self.cfg.reuse.max(1) {
            session.close().await;
            return;
        }
        let Session { client, profile, touched, .. } = session;
        let touched = touched.into_inner().unwrap_or_default();
        let replaced = match self.idle.lock() {
            Ok(mut i) => i.replace(Idle { client, profile, uses, touched }),
            Err(_) => None,
        };
        if let Some(old) = replaced {
            let _ = tokio::time::timeout(Duration::from_secs(5), old.client.close()).await;
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
                    kill_group(p.pid).await;
                    self.forget_idle();
                }
            }
        }
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
            kill_group(p.pid).await;
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
        let pid = child.id().unwrap_or(0);
        let mut proc = DriverProc { child, port, pid };
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
            Err(_) => {
                kill_group(pid).await;
                let _ = proc.child.kill().await;
                Err(BrowserError::Driver(format!("chromedriver did not listen on port {port}")))
            }
        }
    }
}

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

/// Kills a process group (chromedriver and the browsers it started).
async fn kill_group(pgid: u32) {
    if pgid == 0 {
        return;
    }
    let _ = tokio::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
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

/// One browser session with its own profile.
pub struct Session {
    client: Client,
    cfg: BrowserConfig,
    // Removed from disk when the session is dropped.
    profile: tempfile::TempDir,
    /// Attempts this browser has served before this one.
    uses: u32,
    // A std mutex: an insert per navigation or observation, never held across an await.
    touched: std::sync::Mutex<BTreeSet<String>>,
}

impl Session {
    /// Opens a fresh session (a new Chromium with a clean profile).
    pub async fn open(driver: &Driver) -> Result<Session, BrowserError> {
        let url = driver.ensure().await?;
        let cfg = driver.config().clone();
        let profile = tempfile::Builder::new()
            .prefix("skillshift-profile-")
            .tempdir()
            .map_err(|e| BrowserError::Session(format!("cannot create a profile directory: {e}")))?;
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        args.push(format!("--window-size={},{}", cfg.window.0, cfg.window.1));
        args.extend(cfg.extra_args.iter().cloned());
        let caps = json!({
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            "unhandledPromptBehavior": "accept",
            "timeouts": {"pageLoad": cfg.nav_timeout.as_millis() as u64, "script": cfg.call_timeout.as_millis() as u64, "implicit": 0},
            "goog:chromeOptions": {"binary": cfg.chromium.display().to_string(), "args": args},
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
        let session = Session { client, cfg, profile, uses: 0, touched: std::sync::Mutex::new(BTreeSet::new()) };
        // Keep Chrome's accessibility tree alive between observations instead of rebuilding it per call.
        if let Err(e) = session.cdp("Accessibility.enable", json!({})).await {
            if e.is_fatal() {
                return Err(e);
            }
        }
        Ok(session)
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
        self.cdp("Accessibility.enable", json!({})).await?;
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

    /// Sends one DevTools command and returns its result object.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Result<Value, BrowserError> {
        self.cdp_within(cmd, params, self.cfg.call_timeout).await
    }

    pub async fn cdp_within(&self, cmd: &str, params: Value, limit: Duration) -> Result<Value, BrowserError> {
        let c = CdpCommand { cmd: cmd.to_string(), params };
        deadline(cmd, limit, async {
            self.client.issue_cmd(c).await.map_err(|e| match cmd_error(e) {
                BrowserError::WebDriver(m) => BrowserError::Cdp { cmd: cmd.to_string(), message: m },
                other => other,
            })
        })
        .await
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

    pub async fn goto_within(&self, url: &str, limit: Duration) -> Result<(), BrowserError> {
        self.touch(url);
        deadline(&format!("navigation to {url}"), limit, async {
            self.client.goto(url).await.map_err(|e| nav_error(url, e))
        })
        .await
    }

    pub async fn back(&self) -> Result<(), BrowserError> {
        deadline("go_back", self.cfg.nav_timeout, async { self.client.back().await.map_err(|e| nav_error("back", e)) })
            .await
    }

    pub async fn forward(&self) -> Result<(), BrowserError> {
        deadline("go_forward", self.cfg.nav_timeout, async {
            self.client.forward().await.map_err(|e| nav_error("forward", e))
        })
        .await
    }

    pub async fn url(&self) -> Result<String, BrowserError> {
        deadline("current url", self.cfg.call_timeout, async {
            self.client.current_url().await.map(|u| u.to_string()).map_err(cmd_error)
        })
        .await
    }

    pub async fn title(&self) -> Result<String, BrowserError> {
        deadline("title", self.cfg.call_timeout, async { self.client.title().await.map_err(cmd_error) }).await
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        deadline("screenshot", self.cfg.call_timeout, async { self.client.screenshot().await.map_err(cmd_error) }).await
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

    /// Ends the session (and its Chromium); bounded, errors ignored.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.close()).await;
        drop(self.profile);
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
