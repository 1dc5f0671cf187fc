//! What the page looks like: a screenshot of the current tab, and its scroll offsets (which tell
//! whether the page moved since an earlier screenshot).

use serde_json::{json, Value};

use super::webdriver::cmd_error;
use super::{deadline, BrowserError, Session};

impl Session {
    /// A PNG of the current tab's viewport: over the browser's DevTools socket when it is open (PNG
    /// encoding tuned for speed, as screenshots are evidence, not archives), else through WebDriver.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        if self.page().is_some() {
            const CMD: &str = "Page.captureScreenshot";
            let shot = self.cdp(CMD, json!({"format": "png", "optimizeForSpeed": true})).await?;
            let bad = |message: String| BrowserError::cdp(CMD, message);
            let data = shot.get("data").and_then(Value::as_str).ok_or_else(|| bad("no data in the answer".into()))?;
            use base64::Engine as _;
            return base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| bad(format!("data: {e}")));
        }
        deadline("screenshot", self.cfg.call_timeout, async { self.client.screenshot().await.map_err(cmd_error) }).await
    }

    /// The scroll offsets of the window and of every element scrolled away from its origin, as
    /// one string: with the address and the observation, what tells whether the page moved since
    /// an earlier screenshot. `None` when the page cannot say.
    pub async fn scroll_offsets(&self) -> Option<String> {
        self.eval(SCROLL_OFFSETS_JS).await.ok().and_then(|v| v.as_str().map(str::to_string))
    }
}

/// [`Session::scroll_offsets`]: the window's, then `;index:top,left` for each scrolled element.
const SCROLL_OFFSETS_JS: &str = r#"(() => {
  let k = `${Math.round(scrollX)},${Math.round(scrollY)}`;
  document.querySelectorAll("*").forEach((e, i) => {
    if (e.scrollTop || e.scrollLeft) k += `;${i}:${Math.round(e.scrollTop)},${Math.round(e.scrollLeft)}`;
  });
  return k;
})()"#;
