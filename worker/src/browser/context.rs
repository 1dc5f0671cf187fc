//! The attempt's browser context (`Target.createBrowserContext`, as Playwright's contexts: its own
//! cookies, storage, cache and service workers), made for it and disposed after it; and, for a
//! browser without one, the older way of making a kept browser clean: a fresh tab, cookies, cache
//! and the touched origins' storage cleared.

use serde_json::{json, Value};

use super::session::browser_call;
use super::targets::target_id;
use super::webdriver::cmd_error;
use super::{deadline, BrowserError, Session};

/// A browser context with its first tab, made ahead of the attempt that will use it.
pub(super) struct Spare {
    pub(super) context: String,
    pub(super) target: String,
}

impl Session {
    /// Opens a fresh browser context with one blank tab and attaches DevTools to it; WebDriver's
    /// window stays on the browser's first tab ([`Session::devtools_tabs`]).
    pub(super) async fn enter_context(&mut self) -> Result<(), BrowserError> {
        let spare = self.make_context().await?;
        self.context = Some(spare.context);
        self.switch_to(&spare.target).await
    }

    /// A new browser context with one blank tab in a window of the configured size.
    pub(super) async fn make_context(&self) -> Result<Spare, BrowserError> {
        let Some(conn) = &self.devtools else {
            return Err(BrowserError::Session("browser contexts need the browser's devtools socket".into()));
        };
        let limit = self.cfg.call_timeout;
        let made = browser_call(conn, "Target.createBrowserContext", json!({"disposeOnDetach": false}), limit).await?;
        let context = made
            .get("browserContextId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| BrowserError::cdp("Target.createBrowserContext", "no browserContextId in the answer"))?;
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
    pub(super) async fn leave_context(&self) -> Result<(), BrowserError> {
        let (Some(conn), Some(id)) = (&self.devtools, &self.context) else { return Ok(()) };
        self.set_page(None);
        if let Ok(mut a) = self.attached.lock() {
            a.clear();
        }
        browser_call(conn, "Target.disposeBrowserContext", json!({"browserContextId": id}), self.cfg.call_timeout)
            .await
            .map(|_| ())
    }

    pub(super) async fn switch_to_first_window(&self) -> Result<(), BrowserError> {
        deadline("switching to the first window", self.cfg.call_timeout, async {
            let first = self.client.windows().await.map_err(cmd_error)?.into_iter().next();
            let first = first.ok_or_else(|| BrowserError::Session("the browser has no window".into()))?;
            self.client.switch_to_window(first).await.map_err(cmd_error)
        })
        .await
    }

    /// Makes a kept browser as good as new for the next attempt: a new tab
    /// replaces every open one (so history, session storage and injected
    /// scripts are gone), then cookies, cache and the storage of `origins`
    /// are cleared.
    pub(super) async fn recycle(&self, origins: &[String]) -> Result<(), BrowserError> {
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
}
