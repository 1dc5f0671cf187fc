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
//!
//! Then each floor's machine CPU ([`cpu`]): the same work repeated in a block of its own, the
//! machine's busy time (`/proc/stat`, every process: the browser's renderers too) read around the
//! block, less what the machine did idle. An attempt's frame (a fresh context checked out, signed
//! in, its start page loaded, checked in) is one block, as an attempt does it once; the same with
//! no page (`checkout_cycle`) and Chrome's bare context cycle (`context_cycle`) split it. The phase
//! table sums count x CPU into the grid's CPU floor: what Chrome must do for the grid's work, at
//! the least, on this machine.

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
    /// Machine CPU per operation, ms, by key; empty where `/proc/stat` cannot be read.
    pub cpu_ms: BTreeMap<&'static str, f64>,
    /// The machine's busy cores while the browser sat idle, subtracted from every CPU block.
    pub idle_cores: Option<f64>,
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
    ("attempt_frame", "an attempt's frame: a fresh context checked out, signed in, its start page loaded, checked in"),
    ("checkout_cycle", "an attempt's frame with no page: a fresh context checked out, then checked in"),
    ("observe_new", "Accessibility.getFullAXTree just after a navigation (CPU: navigate and observe, less navigate)"),
];

impl Floors {
    fn push(&mut self, key: &'static str, d: Duration) {
        self.samples.entry(key).or_default().push(d);
    }

    /// `{"rounds", "pages", "cores", "idle_cores", "floors": {key: {"what", "n", "p50", "p90",
    /// "cpu_ms"}}}`, milliseconds; `cpu_ms` (machine CPU per operation) only where it was measured.
    pub fn to_json(&self) -> Value {
        let floors: serde_json::Map<String, Value> = WHAT
            .iter()
            .filter_map(|(key, what)| {
                let v = self.samples.get(key)?;
                let mut row = p50_p90(v);
                row["what"] = json!(what);
                row["n"] = json!(v.len());
                if let Some(cpu) = self.cpu_ms.get(key) {
                    row["cpu_ms"] = json!((cpu * 100.0).round() / 100.0);
                }
                Some(((*key).to_string(), row))
            })
            .collect();
        let cores = std::thread::available_parallelism().map(usize::from).unwrap_or(1);
        json!({"rounds": self.rounds, "pages": self.pages, "cores": cores, "idle_cores": self.idle_cores,
            "floors": floors})
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
    cpu(driver, pages, rounds, &mut out).await?;
    Ok(out)
}

/// The machine's busy CPU time so far, s: `/proc/stat`'s user, nice, system, irq and softirq,
/// which Linux counts in 1/100 s whatever the kernel's own tick. `None` where it cannot be read.
fn machine_busy_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).map_while(|t| t.parse().ok()).collect();
    let busy = [0, 1, 2, 5, 6].iter().map(|&i| ticks.get(i).copied()).sum::<Option<u64>>()?;
    Some(busy as f64 / 100.0)
}

/// Machine CPU across a block of operations.
struct Meter {
    busy_s: f64,
    at: Instant,
}

impl Meter {
    fn start() -> Option<Meter> {
        Some(Meter { busy_s: machine_busy_s()?, at: Instant::now() })
    }

    /// The machine's busy cores since the start.
    fn cores(&self) -> Option<f64> {
        Some((machine_busy_s()? - self.busy_s) / self.at.elapsed().as_secs_f64().max(1e-3))
    }

    /// The block's CPU, s, less `idle_cores` over its wall time, once the work its last operation
    /// left behind (a frame after a load, a renderer's exit) has had time to run.
    async fn stop(self, idle_cores: f64) -> Option<f64> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let busy = machine_busy_s()? - self.busy_s;
        Some((busy - idle_cores * self.at.elapsed().as_secs_f64()).max(0.0))
    }
}

/// Each floor's machine CPU per operation into `out.cpu_ms`: the attempt's frame `rounds` times on
/// each page; then, in one signed-in tab, `rounds` navigations between the pages, and on each
/// loaded page `rounds` of each call. Leaves `out` as it is where `/proc/stat` cannot be read.
pub async fn cpu(driver: &Driver, pages: &[FloorPage], rounds: usize, out: &mut Floors) -> Result<(), BrowserError> {
    let Some(idle) = Meter::start() else { return Ok(()) };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let Some(idle_cores) = idle.cores() else { return Ok(()) };
    out.idle_cores = Some((idle_cores * 1e3).round() / 1e3);
    let mut spent: BTreeMap<&'static str, f64> = BTreeMap::new();
    let meter = Meter::start();
    for _ in 0..rounds {
        for page in pages {
            let t = Instant::now();
            fresh(driver, page).await?;
            out.push("attempt_frame", t.elapsed());
        }
    }
    add(&mut spent, "attempt_frame", meter, idle_cores).await;
    let meter = Meter::start();
    for _ in 0..rounds * pages.len() {
        let t = Instant::now();
        let session = driver.checkout().await?;
        driver.checkin(session).await;
        out.push("checkout_cycle", t.elapsed());
    }
    add(&mut spent, "checkout_cycle", meter, idle_cores).await;
    let session = driver.checkout().await?;
    // As in `run`: a tab whose work failed is closed, not handed back.
    match cpu_in_tab(&session, driver.config().window, pages, rounds, idle_cores, &mut spent, out).await {
        Ok(()) => driver.checkin(session).await,
        Err(e) => {
            session.close().await;
            return Err(e);
        }
    }
    let ops = (rounds * pages.len()).max(1) as f64;
    out.cpu_ms = spent.into_iter().map(|(k, s)| (k, s * 1e3 / ops)).collect();
    Ok(())
}

/// The block's CPU, s ([`Meter::stop`]), if it was measured.
async fn block_cpu(meter: Option<Meter>, idle_cores: f64) -> Option<f64> {
    meter?.stop(idle_cores).await
}

async fn add(spent: &mut BTreeMap<&'static str, f64>, key: &'static str, meter: Option<Meter>, idle_cores: f64) {
    if let Some(s) = block_cpu(meter, idle_cores).await {
        *spent.entry(key).or_default() += s;
    }
}

/// A call a floor times on a loaded page, as an attempt makes it.
#[derive(Clone, Copy)]
enum Call<'a> {
    /// `Accessibility.getFullAXTree`, the answer unread.
    Observe,
    /// `Accessibility.queryAXTree` by role under the document handle `object`.
    Query(&'a str),
    /// `Runtime.evaluate 1`.
    RoundTrip,
    /// A click's three input events ([`right_click`]).
    Click,
    /// `Page.captureScreenshot`, PNG optimized for speed.
    Screenshot,
}

impl Call<'_> {
    /// The floor's key.
    fn key(self) -> &'static str {
        match self {
            Call::Observe => "observe",
            Call::Query(_) => "query",
            Call::RoundTrip => "round_trip",
            Call::Click => "click",
            Call::Screenshot => "screenshot",
        }
    }

    /// Makes the call and says how long it took.
    async fn run(self, session: &Session, window: (u32, u32)) -> Result<Duration, BrowserError> {
        let limit = session.call_timeout();
        let took = match self {
            Call::Observe => timed(session.cdp_raw_within("Accessibility.getFullAXTree", json!({}), limit)).await?.1,
            Call::Query(object) => {
                let query = json!({"objectId": object, "role": "button"});
                timed(session.cdp_raw_within("Accessibility.queryAXTree", query, limit)).await?.1
            }
            Call::RoundTrip => timed(session.cdp("Runtime.evaluate", json!({"expression": "1"}))).await?.1,
            Call::Click => right_click(session, window).await?,
            Call::Screenshot => {
                let shot = json!({"format": "png", "optimizeForSpeed": true});
                timed(session.cdp("Page.captureScreenshot", shot)).await?.1
            }
        };
        Ok(took)
    }
}

/// The calls after `Observe` and `Query`, in the order both passes make them.
const LAST_CALLS: [Call<'static>; 3] = [Call::RoundTrip, Call::Click, Call::Screenshot];

/// The loaded page's document handle (in the object group `floors`, which [`release_document`] ends).
async fn document(session: &Session) -> Result<Option<String>, BrowserError> {
    let doc = session.cdp("Runtime.evaluate", json!({"expression": "document", "objectGroup": "floors"})).await?;
    Ok(doc.pointer("/result/objectId").and_then(Value::as_str).map(str::to_string))
}

async fn release_document(session: &Session) -> Result<(), BrowserError> {
    session.cdp("Runtime.releaseObjectGroup", json!({"objectGroup": "floors"})).await.map(|_| ())
}

/// `call` `rounds` times in a block of its own, its CPU into `spent`.
async fn call_block(
    session: &Session,
    window: (u32, u32),
    call: Call<'_>,
    rounds: usize,
    idle_cores: f64,
    spent: &mut BTreeMap<&'static str, f64>,
) -> Result<(), BrowserError> {
    let meter = Meter::start();
    for _ in 0..rounds {
        call.run(session, window).await?;
    }
    add(spent, call.key(), meter, idle_cores).await;
    Ok(())
}

/// [`cpu`]'s blocks in one kept tab, signed in to every page's site.
async fn cpu_in_tab(
    session: &Session,
    window: (u32, u32),
    pages: &[FloorPage],
    rounds: usize,
    idle_cores: f64,
    spent: &mut BTreeMap<&'static str, f64>,
    out: &mut Floors,
) -> Result<(), BrowserError> {
    let limit = session.call_timeout();
    for page in pages {
        set_cookies(session, &page.base, page.cookies.clone()).await?;
    }
    let meter = Meter::start();
    for _ in 0..rounds * pages.len() {
        context_cycle(session, window).await?;
    }
    add(spent, "context_cycle", meter, idle_cores).await;
    let meter = Meter::start();
    for _ in 0..rounds {
        for page in pages {
            session.navigate_bare(&page.url, limit).await?;
        }
    }
    add(spent, "navigate", meter, idle_cores).await;
    // The first observation of a new document: the same navigations, each followed by one, less the navigations'.
    let meter = Meter::start();
    for _ in 0..rounds {
        for page in pages {
            session.navigate_bare(&page.url, limit).await?;
            out.push("observe_new", Call::Observe.run(session, window).await?);
        }
    }
    if let (Some(both), Some(nav)) = (block_cpu(meter, idle_cores).await, spent.get("navigate").copied()) {
        spent.insert("observe_new", (both - nav).max(0.0));
    }
    for page in pages {
        session.navigate_bare(&page.url, limit).await?;
        call_block(session, window, Call::Observe, rounds, idle_cores, spent).await?;
        if let Some(object) = document(session).await? {
            call_block(session, window, Call::Query(&object), rounds, idle_cores, spent).await?;
        }
        release_document(session).await?;
        for call in LAST_CALLS {
            call_block(session, window, call, rounds, idle_cores, spent).await?;
        }
    }
    Ok(())
}

/// A click's three input events, as `actions` sends them; with the right button, which follows no
/// link and presses no button, so the page stays as it is.
async fn right_click(session: &Session, window: (u32, u32)) -> Result<Duration, BrowserError> {
    let (x, y) = (f64::from(window.0) - 1.0, f64::from(window.1) - 1.0);
    let mut took = Duration::ZERO;
    for (kind, clicks) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 1)] {
        let params = json!({"type": kind, "x": x, "y": y, "button": "right", "clickCount": clicks});
        took += timed(session.cdp("Input.dispatchMouseEvent", params)).await?.1;
    }
    Ok(took)
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

/// A browser context and its blank tab made, then disposed: (made, disposed) times.
async fn context_cycle(session: &Session, window: (u32, u32)) -> Result<(Duration, Duration), BrowserError> {
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
    let (_, disposed) =
        timed(session.browser_cdp("Target.disposeBrowserContext", json!({"browserContextId": context}))).await?;
    Ok((took + tab, disposed))
}

async fn one(session: &Session, window: (u32, u32), page: &FloorPage, out: &mut Floors) -> Result<(), BrowserError> {
    let (created, disposed) = context_cycle(session, window).await?;
    out.push("context", created);
    out.push("context_dispose", disposed);
    out.push("context_cycle", created + disposed);

    out.push("login", timed(set_cookies(session, &page.base, page.cookies.clone())).await?.1);
    let limit = session.call_timeout();
    out.push("navigate", timed(session.navigate_bare(&page.url, limit)).await?.1);
    out.push("goto", timed(session.goto(&page.url)).await?.1);
    out.push("observe", Call::Observe.run(session, window).await?);
    if let Some(object) = document(session).await? {
        out.push("query", Call::Query(&object).run(session, window).await?);
    }
    release_document(session).await?;
    for call in LAST_CALLS {
        out.push(call.key(), call.run(session, window).await?);
    }
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
