//! The attempt's tabs as the browser sees them: DevTools targets of its browser context, opened,
//! listed, made current and closed here (the tab list WebArena keeps is kept above, by the attempt's tabs), and the
//! setup every tab of the attempt gets (the perturbation script, extra headers, the network trace).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::session::browser_call;
use super::webdriver::cmd_error;
use super::{deadline, BrowserError, Session};

impl Session {
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
}

/// The `targetId` of a `Target.createTarget` answer.
pub(super) fn target_id(made: Result<Value, BrowserError>) -> Result<String, BrowserError> {
    made?
        .get("targetId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| BrowserError::cdp("Target.createTarget", "no targetId in the answer"))
}
