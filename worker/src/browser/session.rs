//! [`Session`]: one browser with its own profile, a WebDriver session attached to it and, when it
//! can be reached, the browser's own DevTools connection; opening one, attaching DevTools to the
//! tab it drives, and every DevTools call, over the browser's connection or chromedriver's relay.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};

use super::pool::end_browser;
use super::process::BrowserProc;
use super::webdriver::{debugger_address, first_line};
use super::{deadline, BrowserConfig, BrowserError, Devtools, Driver};
use crate::cdp::{Answer, CallError, Connection};

/// The page target the session drives and its flat DevTools session on the browser's socket.
#[derive(Clone)]
pub(super) struct Page {
    pub(super) conn: Arc<Connection>,
    pub(super) session: String,
    /// The target id, which is also the id of its main frame.
    pub(super) target: String,
}

/// One browser session with its own profile.
pub struct Session {
    pub(super) client: Client,
    pub(super) browser: BrowserProc,
    /// The browser's own DevTools socket; `None` when it could not be opened (chromedriver relays then).
    pub(super) devtools: Option<Arc<Connection>>,
    // A std mutex: read per call, replaced when a fresh tab is attached, never held across an await.
    pub(super) page: std::sync::Mutex<Option<Page>>,
    pub(super) cfg: BrowserConfig,
    // Removed from disk when the session is dropped.
    pub(super) profile: tempfile::TempDir,
    /// Attempts this browser has served before this one.
    pub(super) uses: u32,
    // A std mutex: an insert per navigation or observation, never held across an await.
    pub(super) touched: std::sync::Mutex<BTreeSet<String>>,
    /// The attempt's own browser context (`Target.createBrowserContext`); `None` when it runs in a
    /// tab of the browser's default context.
    pub(super) context: Option<String>,
    /// The DevTools session of each tab attached so far, by target id.
    pub(super) attached: std::sync::Mutex<HashMap<String, String>>,
}

impl Session {
    /// A session of the browser `browser` with WebDriver's `client` and DevTools' `devtools`, not
    /// yet in a context or attached to a tab; `uses` attempts served before.
    pub(super) fn assemble(
        client: Client,
        browser: BrowserProc,
        devtools: Option<Arc<Connection>>,
        cfg: BrowserConfig,
        profile: tempfile::TempDir,
        uses: u32,
    ) -> Session {
        Session {
            client,
            browser,
            devtools,
            page: std::sync::Mutex::new(None),
            cfg,
            profile,
            uses,
            touched: std::sync::Mutex::new(BTreeSet::new()),
            context: None,
            attached: std::sync::Mutex::new(HashMap::new()),
        }
    }

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
        let mut session = Session::assemble(client, browser, devtools, cfg, profile, 0);
        if session.devtools.is_some() && session.cfg.contexts {
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

    /// Attaches the browser's socket to WebDriver's current tab (when there is a socket).
    pub(super) async fn attach(&self) -> Result<(), BrowserError> {
        if self.devtools.is_none() {
            return self.enable_page().await;
        }
        let target = deadline("current window", self.cfg.call_timeout, self.webdriver_window()).await?;
        self.attach_target(&target, true).await
    }

    /// Makes DevTools talk to the tab `target` (attached once per attempt, then remembered) and
    /// enables what observation and settling listen to: Chrome keeps its accessibility tree alive
    /// between observations instead of rebuilding it per call, and page events tell when a step is
    /// done. With `relay_if_refused`, a tab that cannot be attached is left to chromedriver's relay
    /// (WebDriver's current window is this tab); without it that is an error.
    pub(super) async fn attach_target(&self, target: &str, relay_if_refused: bool) -> Result<(), BrowserError> {
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
            id.ok_or_else(|| BrowserError::cdp(CMD, "no sessionId in the answer"))
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

    pub(super) fn set_page(&self, page: Option<Page>) {
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

    pub(super) fn page(&self) -> Option<Page> {
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
            return answer.read().map_err(|e| BrowserError::cdp(cmd, format!("unreadable answer: {e}")));
        }
        self.relay_call(cmd, params, limit).await
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
            return Err(BrowserError::cdp("Runtime.evaluate", first_line(text)));
        }
        Ok(r.pointer("/result/value").cloned().unwrap_or(Value::Null))
    }

    /// Attempts this browser served before this one (0 for a new browser).
    pub fn uses(&self) -> u32 {
        self.uses
    }

    pub fn call_timeout(&self) -> Duration {
        self.cfg.call_timeout
    }

    /// Ends the session and its Chromium; bounded, errors ignored.
    pub async fn close(self) {
        end_browser(self.client, self.browser, self.devtools.as_deref()).await;
        drop(self.profile);
    }
}

/// One DevTools command on the tab's flat session over the browser's socket.
pub(super) async fn direct_call(
    page: &Page,
    cmd: &str,
    params: Value,
    limit: Duration,
) -> Result<Answer, BrowserError> {
    page.conn.call(Some(&page.session), cmd, &params, limit).await.map_err(|e| match e {
        CallError::Protocol(m) => BrowserError::cdp(cmd, m),
        CallError::Lost(m) => BrowserError::Lost(m),
        CallError::Timeout(ms) => BrowserError::Timeout { what: cmd.to_string(), ms },
    })
}

/// One DevTools command to the browser itself (the `Target` domain) over its socket.
pub(super) async fn browser_call(
    conn: &Connection,
    cmd: &str,
    params: Value,
    limit: Duration,
) -> Result<Value, BrowserError> {
    let raw = conn.call(None, cmd, &params, limit).await.map_err(|e| match e {
        CallError::Protocol(m) => BrowserError::cdp(cmd, m),
        CallError::Lost(m) => BrowserError::Lost(m),
        CallError::Timeout(ms) => BrowserError::Timeout { what: cmd.to_string(), ms },
    })?;
    raw.read().map_err(|e| BrowserError::cdp(cmd, format!("unreadable answer: {e}")))
}

/// Opens the browser's own DevTools socket from the session's `goog:chromeOptions.debuggerAddress`;
/// `None` (with a warning) when that fails, and chromedriver relays DevTools instead.
/// [`Devtools::Chromedriver`] (`SKILLSHIFT_DEVTOOLS=chromedriver`) forces the relay (for comparisons).
async fn open_devtools(client: &Client, cfg: &BrowserConfig) -> Option<Arc<Connection>> {
    if cfg.devtools == Devtools::Chromedriver {
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
