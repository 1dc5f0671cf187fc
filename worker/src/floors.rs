//! Each attempt phase's floor: the same work done bare, one DevTools call or one navigation with
//! nothing of the harness around it, on the browser a worker starts (`skillshift bench floors`;
//! `scripts/bench/phases.sh` sets them beside the phase table of a real sweep, docs/performance.md).
//!
//! A round, for each page: a browser context and its blank tab made (`Target.createBrowserContext`
//! and `Target.createTarget`) and disposed (`Target.disposeBrowserContext`); in the harness's own
//! tab, the page's cookies set (`Network.setCookie`, a login's floor), the page loaded
//! (`Page.navigate` to its load event), its accessibility tree taken unread
//! (`Accessibility.getFullAXTree`), one role query (`Accessibility.queryAXTree`, a locator's
//! floor), a DevTools round trip (`Runtime.evaluate 1`, a settle's floor: it must ask the page
//! once), a click's three input events (`Input.dispatchMouseEvent`, with the right button) and a
//! viewport PNG (`Page.captureScreenshot`). Then, for each page, the first navigation of a fresh
//! context's tab, as an attempt's start page is (a new renderer process), the context checked out
//! and signed in untimed. A navigation's floor waits for the load event alone; the harness's own
//! (`goto`, which also tells a failed navigation from a loaded one) is timed beside it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::attempt::set_cookies;
use crate::bench::p50_p90;
use crate::browser::{BrowserError, Driver, Session};

/// A page to measure on, with the cookies that sign its site in (the fixture sites' login).
#[derive(Debug, Clone)]
pub struct FloorPage {
    pub url: String,
    /// The site's base URL, which the cookies are set for (as an attempt's login sets them).
    pub base: String,
    pub cookies: Vec<(String, String)>,
}

/// Every floor's samples, by key (the keys `scripts/bench/phases.py` maps its rows to).
#[derive(Debug, Default)]
pub struct Floors {
    pub samples: BTreeMap<&'static str, Vec<Duration>>,
    pub pages: Vec<String>,
    pub rounds: usize,
}

/// What each key times, for the JSON and the table.
pub const WHAT: &[(&str, &str)] = &[
    ("context", "Target.createBrowserContext + Target.createTarget about:blank"),
    ("context_dispose", "Target.disposeBrowserContext"),
    ("context_cycle", "Target.disposeBrowserContext, then a new context and its blank tab (a checkin's work)"),
    ("login", "Network.setCookie, once per cookie of the site's login"),
    ("navigate", "Page.navigate to Page.loadEventFired"),
    ("goto", "the harness's navigation (Session::goto: Page.navigate, then settle to the load)"),
    ("navigate_fresh", "Page.navigate to Page.loadEventFired, a fresh context's first (checkout untimed)"),
    ("observe", "Accessibility.getFullAXTree, answer unread"),
    ("query", "Accessibility.queryAXTree by role (document handle made beforehand)"),
    ("round_trip", "Runtime.evaluate 1"),
    ("click", "Input.dispatchMouseEvent x3 (move, press, release; right button, bottom-right corner)"),
    ("screenshot", "Page.captureScreenshot png, optimized for speed"),
];

impl Floors {
    fn push(&mut self, key: &'static str, d: Duration) {
        self.samples.entry(key).or_default().push(d);
    }

    /// `{"rounds", "pages", "floors": {key: {"what", "n", "p50", "p90"}}}`, milliseconds.
    pub fn to_json(&self) -> Value {
        let floors: serde_json::Map<String, Value> = WHAT
            .iter()
            .filter_map(|(key, what)| {
                let v = self.samples.get(key)?;
                let mut row = p50_p90(v);
                row["what"] = json!(what);
                row["n"] = json!(v.len());
                Some(((*key).to_string(), row))
            })
            .collect();
        json!({"rounds": self.rounds, "pages": self.pages, "floors": floors})
    }
}

async fn timed<T>(
    f: impl std::future::Future<Output = Result<T, BrowserError>>,
) -> Result<(T, Duration), BrowserError> {
    let t = Instant::now();
    let v = f.await?;
    Ok((v, t.elapsed()))
}

/// Measures every floor `rounds` times on each page (after one untimed round that warms the
/// browser and the sites' caches up).
pub async fn run(driver: &Driver, pages: &[FloorPage], rounds: usize) -> Result<Floors, BrowserError> {
    let mut out = Floors { pages: pages.iter().map(|p| p.url.clone()).collect(), rounds, ..Floors::default() };
    let window = driver.config().window;
    let session = driver.checkout().await?;
    let mut scratch = Floors::default();
    for page in pages {
        one(&session, window, page, &mut scratch).await?;
    }
    for _ in 0..rounds {
        for page in pages {
            if let Err(e) = one(&session, window, page, &mut out).await {
                session.close().await;
                return Err(e);
            }
        }
    }
    driver.checkin(session).await;
    for _ in 0..rounds {
        for page in pages {
            out.push("navigate_fresh", fresh(driver, page).await?);
        }
    }
    Ok(out)
}

/// The first navigation of an attempt's fresh context: checked out and signed in untimed, then `page` loaded.
async fn fresh(driver: &Driver, page: &FloorPage) -> Result<Duration, BrowserError> {
    let session = driver.checkout().await?;
    let loaded = async {
        set_cookies(&session, &page.base, page.cookies.clone()).await?;
        Ok::<_, BrowserError>(timed(session.navigate_bare(&page.url, session.call_timeout())).await?.1)
    }
    .await;
    match loaded {
        Ok(took) => {
            driver.checkin(session).await;
            Ok(took)
        }
        Err(e) => {
            session.close().await;
            Err(e)
        }
    }
}

async fn one(session: &Session, window: (u32, u32), page: &FloorPage, out: &mut Floors) -> Result<(), BrowserError> {
    let (made, took) =
        timed(session.browser_cdp("Target.createBrowserContext", json!({"disposeOnDetach": false}))).await?;
    let context = made
        .get("browserContextId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| BrowserError::cdp("Target.createBrowserContext", "no browserContextId in the answer"))?;
    let (w, h) = window;
    let target = json!({"url": "about:blank", "browserContextId": context, "width": w, "height": h});
    let (_, tab) = timed(session.browser_cdp("Target.createTarget", target)).await?;
    let created = took + tab;
    out.push("context", created);
    let (_, took) =
        timed(session.browser_cdp("Target.disposeBrowserContext", json!({"browserContextId": context}))).await?;
    out.push("context_dispose", took);
    out.push("context_cycle", took + created);

    out.push("login", timed(set_cookies(session, &page.base, page.cookies.clone())).await?.1);
    let limit = session.call_timeout();
    out.push("navigate", timed(session.navigate_bare(&page.url, limit)).await?.1);
    out.push("goto", timed(session.goto(&page.url)).await?.1);
    out.push("observe", timed(session.cdp_raw_within("Accessibility.getFullAXTree", json!({}), limit)).await?.1);
    let doc = session.cdp("Runtime.evaluate", json!({"expression": "document", "objectGroup": "floors"})).await?;
    if let Some(object) = doc.pointer("/result/objectId").and_then(Value::as_str) {
        let query = json!({"objectId": object, "role": "button"});
        out.push("query", timed(session.cdp_raw_within("Accessibility.queryAXTree", query, limit)).await?.1);
    }
    session.cdp("Runtime.releaseObjectGroup", json!({"objectGroup": "floors"})).await?;
    out.push("round_trip", timed(session.cdp("Runtime.evaluate", json!({"expression": "1"}))).await?.1);
    // A click's three input events, as `actions` sends them; with the right button, which follows no
    // link and presses no button, so the page stays as it is.
    let (x, y) = (f64::from(window.0) - 1.0, f64::from(window.1) - 1.0);
    let mut click = Duration::ZERO;
    for (kind, clicks) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 1)] {
        let params = json!({"type": kind, "x": x, "y": y, "button": "right", "clickCount": clicks});
        click += timed(session.cdp("Input.dispatchMouseEvent", params)).await?.1;
    }
    out.push("click", click);
    let shot = json!({"format": "png", "optimizeForSpeed": true});
    out.push("screenshot", timed(session.cdp("Page.captureScreenshot", shot)).await?.1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_names_every_measured_floor_with_its_percentiles() {
        let mut f = Floors { rounds: 2, pages: vec!["http://x/".into()], ..Floors::default() };
        f.push("navigate", Duration::from_millis(30));
        f.push("navigate", Duration::from_millis(10));
        f.push("observe", Duration::from_millis(4));
        let j = f.to_json();
        assert_eq!(j["floors"]["navigate"]["n"], 2);
        assert_eq!(j["floors"]["navigate"]["p50"], 10.0);
        assert_eq!(j["floors"]["navigate"]["p90"], 30.0);
        assert_eq!(j["floors"]["observe"]["what"], "Accessibility.getFullAXTree, answer unread");
        assert!(j["floors"].get("context").is_none(), "a floor with no samples is left out");
    }
}
