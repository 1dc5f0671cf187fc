//! Navigation: to a URL, back and forward through the tab's history, over DevTools when the
//! browser's socket is open (the page's own events say when it has loaded), else through
//! WebDriver; and the top document's URL and title, with chromedriver's rules for both.

use std::time::Duration;

use serde_json::{json, Value};

use super::session::direct_call;
use super::settle::InputMark;
use super::webdriver::nav_error;
use super::{deadline, BrowserError, Session};

impl Session {
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
    pub(super) async fn load(&self, mark: InputMark, what: &str, limit: Duration) -> Result<(), BrowserError> {
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
}

/// Network errors `Page.navigate` reports that do not fail a navigation, as they do not fail
/// WebDriver's: an HTTP error status is a page like any other.
const NAV_NOT_FAILED: &[&str] = &["net::ERR_HTTP_RESPONSE_CODE_FAILURE"];
