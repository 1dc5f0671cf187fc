//! The tabs of one attempt, as WebArena keeps the pages of its browser
//! context: an ordered list (tab 0 first), one of them current. `new_tab`
//! opens a blank tab and makes it current; `tab_focus [i]` makes tab `i`
//! current; `close_tab` closes the current tab and makes the last one current
//! (opening a blank one when none is left). Tabs the page opens itself
//! (`target=_blank`, `window.open`) join the end of the list when next seen,
//! as they join WebArena's `context.pages`, without becoming current.
//!
//! The observation starts with the tab list WebArena prints
//! (`Tab 0 (current): Title | Tab 1: Other`); the scorer reads the current tab.
//! A tab is named by its DevTools target id (which is also its WebDriver window handle). An
//! attempt in a browser context of its own lists and switches its tabs over DevTools alone; one
//! in the browser's default context, through WebDriver's windows.

use std::time::Duration;

use serde_json::json;

use crate::action::Action;
use crate::actions::{self, ActError};
use crate::axtree::{Observer, Snapshot};
use crate::browser::{deadline, BrowserError, Session};

/// How long one window operation may take.
const WINDOW_LIMIT: Duration = Duration::from_secs(10);

/// The attempt's tabs, in WebArena's order.
// A std mutex: held to read or edit the list, never across an await.
pub struct Tabs {
    order: std::sync::Mutex<Vec<String>>,
    /// Headers every tab's requests carry (auto-login), as Playwright's context-wide `extra_http_headers`.
    headers: std::sync::Mutex<Option<serde_json::Value>>,
    /// The attempt's observer, which keeps the ids its observations print.
    observer: Observer,
}

impl Tabs {
    /// The session's current window as tab 0 (and its other windows after it).
    pub async fn adopt(session: &Session) -> Result<Tabs, BrowserError> {
        let current = current(session).await?;
        let tabs = Tabs {
            order: std::sync::Mutex::new(vec![current]),
            headers: std::sync::Mutex::new(None),
            observer: Observer::default(),
        };
        tabs.sync(session).await?;
        Ok(tabs)
    }

    /// Makes every tab, the current one and those opened later, send `headers` with each request.
    pub async fn set_headers(&self, session: &Session, headers: &[(String, String)]) -> Result<(), BrowserError> {
        let map: serde_json::Map<String, serde_json::Value> =
            headers.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        let value = serde_json::Value::Object(map);
        if let Ok(mut h) = self.headers.lock() {
            *h = Some(value.clone());
        }
        // The tabs a page opens get them from the DevTools reader before their first request.
        session.set_tab_headers(&value);
        send_headers(session, &value).await
    }

    async fn apply_headers(&self, session: &Session) -> Result<(), BrowserError> {
        let headers = self.headers.lock().ok().and_then(|h| h.clone());
        match headers {
            Some(h) => send_headers(session, &h).await,
            None => Ok(()),
        }
    }

    fn order(&self) -> Vec<String> {
        self.order.lock().map(|o| o.clone()).unwrap_or_default()
    }

    fn set_order(&self, order: Vec<String>) {
        if let Ok(mut o) = self.order.lock() {
            *o = order;
        }
    }

    /// Brings the list up to date: closed windows leave it, windows the page
    /// opened join its end. Returns the list.
    pub async fn sync(&self, session: &Session) -> Result<Vec<String>, BrowserError> {
        // The attempt's tabs are its own browser context's pages. Without a context of its own,
        // they are chromedriver's windows.
        let open = match session.context_pages().await? {
            Some(own) => own,
            None => deadline("window handles", WINDOW_LIMIT, session.webdriver_windows()).await?,
        };
        let mut order: Vec<String> = self.order().into_iter().filter(|h| open.contains(h)).collect();
        for h in open {
            if !order.contains(&h) {
                order.push(h);
            }
        }
        self.set_order(order.clone());
        Ok(order)
    }

    /// Opens a blank tab at the end of the list and makes it current.
    pub async fn new_tab(&self, session: &Session) -> Result<(), BrowserError> {
        // In the attempt's own browser context (its cookies and storage), never WebDriver's new window,
        // which opens in the default context.
        let id = session.create_target("about:blank").await?;
        session.switch_to(&id).await?;
        let mut order = self.sync(session).await?;
        order.retain(|h| *h != id);
        order.push(id);
        self.set_order(order);
        enable(session).await?;
        self.apply_headers(session).await?;
        // The condition's perturbations and the network trace reach this tab as every other.
        session.setup_tab().await
    }

    /// Makes tab `index` current; an index past the list is an action error.
    pub async fn focus(&self, session: &Session, index: usize) -> Result<(), ActError> {
        let order = self.sync(session).await?;
        let Some(handle) = order.get(index).cloned() else {
            return Err(ActError::Failed(format!("there is no tab {index} ({} open)", order.len())));
        };
        switch(session, &handle).await?;
        Ok(())
    }

    /// Closes the current tab; the last tab left becomes current, or a new
    /// blank one when it was the only tab.
    pub async fn close_current(&self, session: &Session) -> Result<(), BrowserError> {
        let closing = current(session).await?;
        if self.sync(session).await?.len() <= 1 {
            // Closing a session's last window would end the browser: open the replacement first.
            self.new_tab(session).await?;
            switch(session, &closing).await?;
        }
        if session.devtools_tabs() {
            session.close_tab(&closing).await?;
        } else {
            deadline("close tab", WINDOW_LIMIT, session.webdriver_close_window()).await?;
        }
        let mut order = self.order();
        order.retain(|h| *h != closing);
        self.set_order(order);
        let order = self.sync(session).await?;
        let last = order.last().cloned().ok_or_else(|| BrowserError::Session("no tab is left open".into()))?;
        switch(session, &last).await
    }

    /// The current tab's handle.
    pub async fn current(&self, session: &Session) -> Result<String, BrowserError> {
        current(session).await
    }

    /// A page of the scorer's own, as WebArena's evaluator opens one per check with
    /// `context.new_page()`: a new tab in the attempt's browser context (its cookies, the
    /// attempt's headers), made current. It is never one of the attempt's tabs: the scorer
    /// closes it ([`Tabs::close_page`]) before the attempt ends.
    pub async fn open_page(&self, session: &Session) -> Result<String, BrowserError> {
        let id = session.create_target("about:blank").await?;
        if let Err(e) = session.switch_to(&id).await {
            if session.has_devtools() {
                let _ = session.discard_tab(&id).await;
            }
            return Err(e);
        }
        self.apply_headers(session).await?;
        Ok(id)
    }

    /// Closes the scorer's page `page`, the current tab, and makes `back` current again.
    pub async fn close_page(&self, session: &Session, page: &str, back: &str) -> Result<(), BrowserError> {
        if session.has_devtools() {
            session.discard_tab(page).await?;
        } else {
            deadline("close tab", WINDOW_LIMIT, session.webdriver_close_window()).await?;
        }
        session.switch_to(back).await
    }

    /// WebArena's tab line: `Tab 0 (current): Title | Tab 1: Title`, each
    /// title the tab's `document.title` (read by visiting the tab, since
    /// DevTools' target titles fall back to the URL).
    pub async fn header(&self, session: &Session) -> Result<String, BrowserError> {
        let order = self.sync(session).await?;
        if order.len() == 1 {
            return Ok(format!("Tab 0 (current): {}", page_title(session).await?));
        }
        let current = current(session).await?;
        let mut parts = Vec::with_capacity(order.len());
        for (i, h) in order.iter().enumerate() {
            if *h == current {
                parts.push(format!("Tab {i} (current): {}", page_title(session).await?));
            } else {
                // DevTools follow the switch, so the title read is that tab's.
                session.switch_to(h).await?;
                let title = page_title(session).await;
                session.switch_to(&current).await?;
                parts.push(format!("Tab {i}: {}", title?));
            }
        }
        Ok(parts.join(" | "))
    }

    /// Opens a start URL of ` |AND| `-joined start URLs in a tab of its own, as
    /// WebArena does; the first tab stays current.
    pub async fn open_start_urls(&self, session: &Session, urls: &[String]) -> Result<(), BrowserError> {
        let first = current(session).await?;
        for url in urls.iter().skip(1) {
            self.new_tab(session).await?;
            session.goto(url).await?;
        }
        if urls.len() > 1 {
            switch(session, &first).await?;
        }
        Ok(())
    }
}

/// The current window's handle.
async fn current(session: &Session) -> Result<String, BrowserError> {
    if let Some(tab) = session.current_tab() {
        return Ok(tab);
    }
    deadline("current window", WINDOW_LIMIT, session.webdriver_window()).await
}

/// The current tab's `document.title`, as WebArena's `page.title()` reads it: empty for an
/// untitled page (WebDriver's and DevTools' titles fall back to the URL).
async fn page_title(session: &Session) -> Result<String, BrowserError> {
    Ok(session.eval("document.title").await?.as_str().unwrap_or_default().to_string())
}

/// Makes a tab current for WebDriver and DevTools (observation, input and settling follow it).
async fn switch(session: &Session, handle: &str) -> Result<(), BrowserError> {
    session.switch_to(handle).await?;
    // WebArena's bring_to_front; a tab that cannot be raised is still current for WebDriver.
    let _ = session.cdp("Target.activateTarget", json!({"targetId": handle})).await;
    enable(session).await?;
    // A tab no one set up yet (one the page opened, seen without the browser's auto-attach).
    session.setup_tab().await
}

async fn send_headers(session: &Session, headers: &serde_json::Value) -> Result<(), BrowserError> {
    session.cdp("Network.enable", json!({})).await?;
    session.cdp("Network.setExtraHTTPHeaders", json!({"headers": headers})).await.map(|_| ())
}

/// Keeps Chrome's accessibility tree alive in the current tab, as every tab of a session does.
async fn enable(session: &Session) -> Result<(), BrowserError> {
    match session.cdp("Accessibility.enable", json!({})).await {
        Err(e) if e.is_fatal() => Err(e),
        _ => Ok(()),
    }
}

/// One observation of the current tab, headed by the tab list.
pub async fn observe(session: &Session, tabs: &Tabs) -> Result<Snapshot, BrowserError> {
    let mut snap = tabs.observer.observe(session).await?;
    let header = tabs.header(session).await?;
    let body = snap.text.split_once("\n\n").map_or("", |(_, b)| b).to_string();
    snap.text = format!("{header}\n\n{body}");
    Ok(snap)
}

/// Executes one action with the attempt's tabs: tab actions here, the rest by
/// [`actions::execute`] on the current tab.
pub async fn execute(
    session: &Session,
    tabs: &Tabs,
    action: &Action,
    resolve: impl Fn(u64) -> Option<i64>,
) -> Result<(), ActError> {
    match action {
        Action::NewTab => Ok(tabs.new_tab(session).await?),
        Action::TabFocus { index } => tabs.focus(session, *index).await,
        Action::CloseTab => Ok(tabs.close_current(session).await?),
        other => actions::execute(session, other, resolve).await,
    }
}
