//! A kept browser handed to the next attempt is as clean as a new one: each
//! attempt runs in a browser context of its own, so no cookies, no local or
//! session storage, no cache, no service workers, no history and no injected
//! scripts of one attempt are seen by the next; tabs the attempt opens share
//! its context; and a kept browser that died is replaced by a new one.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::{json, Value};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

const STATEFUL: &str = r#"<!doctype html><title>stateful</title><script>
localStorage.setItem("kept", "1"); sessionStorage.setItem("tab", "1"); document.cookie = "script=1; path=/";
</script><a href="/plain">next</a>"#;

/// A page whose script is cacheable for an hour: a second load within one context is served from cache.
const CACHED: &str = r#"<!doctype html><title>cached</title><script src="/cached.js"></script>"#;

/// A page that registers a service worker for the whole origin and waits until it is active.
const WORKER: &str = r#"<!doctype html><title>worker</title><script>
window.registered = navigator.serviceWorker.register("/sw.js").then(() => navigator.serviceWorker.ready).then(() => true);
</script>"#;

/// The test server and how often `/cached.js` was fetched from it.
async fn serve() -> (String, Arc<AtomicUsize>) {
    let fetched = Arc::new(AtomicUsize::new(0));
    let counter = fetched.clone();
    let app = axum::Router::new()
        .route(
            "/stateful",
            get(|| async { ([("set-cookie", "server=1; Path=/; HttpOnly")], Html(STATEFUL)).into_response() }),
        )
        .route("/plain", get(|| async { Html("<!doctype html><title>plain</title><p>plain</p>") }))
        .route("/cached", get(|| async { Html(CACHED) }))
        .route(
            "/cached.js",
            get(move || {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    ([("content-type", "text/javascript"), ("cache-control", "max-age=3600")], "window.cached = 1;")
                        .into_response()
                }
            }),
        )
        .route("/worker", get(|| async { Html(WORKER) }))
        .route(
            "/sw.js",
            get(|| async { ([("content-type", "text/javascript")], "self.addEventListener('fetch', () => {});") }),
        );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (format!("http://{addr}"), fetched)
}

/// What a page can see of earlier state.
async fn traces(s: &Session, base: &str) -> Value {
    s.goto(&format!("{base}/plain")).await.unwrap();
    let cookies = s.cdp("Network.getCookies", json!({"urls": [format!("{base}/")]})).await.unwrap();
    let page = s
        .eval(
            "(async () => ({cookie: document.cookie, local: localStorage.getItem('kept'), \
              session: sessionStorage.getItem('tab'), history: history.length, injected: window.__injected === true, \
              workers: (await navigator.serviceWorker.getRegistrations()).length, \
              viewport: [innerWidth, innerHeight]}))()",
        )
        .await
        .unwrap();
    json!({"cookies": cookies["cookies"].as_array().map_or(0, |c| c.len()), "page": page})
}

/// Loads the cached page and returns how often the server has served its script so far.
async fn load_cached(s: &Session, base: &str, fetched: &AtomicUsize) -> usize {
    s.goto(&format!("{base}/cached")).await.unwrap();
    assert_eq!(s.eval("window.cached").await.unwrap(), 1);
    fetched.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_browser_comes_back_clean_and_a_dead_one_is_replaced() {
    let (base, fetched) = serve().await;
    let driver = Driver::new(BrowserConfig::default());

    // A new browser, for reference.
    let fresh = driver.checkout().await.unwrap();
    assert_eq!(fresh.uses(), 0);
    let clean = traces(&fresh, &base).await;
    assert_eq!(clean["cookies"], 0, "{clean}");
    assert_eq!(clean["page"]["local"], Value::Null, "{clean}");
    assert_eq!(clean["page"]["workers"], 0, "{clean}");
    let (w, h) = BrowserConfig::default().window;
    // The window's size less the frame headless Chromium draws around the page (1280x577 for 1280x720, as in
    // the default context's first tab).
    let viewport = &clean["page"]["viewport"];
    assert_eq!(viewport[0], w, "the attempt's tab has the configured width: {clean}");
    let height = viewport[1].as_u64().unwrap();
    assert!(
        height <= u64::from(h) && height > u64::from(h) / 2,
        "the attempt's tab has the configured height: {clean}"
    );

    // Dirty it: cookies from the server and from script, both storages, history, an injected
    // script, a cached script and a service worker.
    fresh.goto(&format!("{base}/stateful")).await.unwrap();
    fresh.cdp("Page.addScriptToEvaluateOnNewDocument", json!({"source": "window.__injected = true;"})).await.unwrap();
    let first = load_cached(&fresh, &base, &fetched).await;
    assert_eq!(load_cached(&fresh, &base, &fetched).await, first, "within an attempt the script comes from cache");
    fresh.goto(&format!("{base}/worker")).await.unwrap();
    assert_eq!(fresh.eval("window.registered").await.unwrap(), true);
    let dirty = traces(&fresh, &base).await;
    assert_eq!(dirty["cookies"], 2, "{dirty}");
    assert_eq!(dirty["page"]["local"], "1", "{dirty}");
    assert_eq!(dirty["page"]["session"], "1", "{dirty}");
    assert_eq!(dirty["page"]["injected"], true, "{dirty}");
    assert_eq!(dirty["page"]["workers"], 1, "{dirty}");
    assert!(dirty["page"]["history"].as_u64().unwrap() > 1, "{dirty}");

    // A tab the attempt opens shares its cookies and storage.
    let tab = fresh.create_target(&format!("{base}/plain")).await.unwrap();
    fresh.switch_to(&tab).await.unwrap();
    let seen = fresh.eval("[document.cookie, localStorage.getItem('kept')]").await.unwrap();
    assert_eq!(seen, json!(["script=1", "1"]), "a tab of the attempt is in the attempt's context");
    let pid = driver.pid().await;
    driver.checkin(fresh).await;

    // Handed out again: the same chromedriver and browser, and nothing of the last attempt.
    let kept = driver.checkout().await.unwrap();
    assert_eq!(kept.uses(), 1, "the kept browser is reused");
    assert_eq!(driver.pid().await, pid);
    assert_eq!(traces(&kept, &base).await, clean, "a reused browser looks new");
    assert_eq!(load_cached(&kept, &base, &fetched).await, first + 1, "the last attempt's cache is gone");
    driver.checkin(kept).await;

    // The kept browser dies while idle: the next checkout starts a new one.
    let pid = driver.pid().await.unwrap();
    let killed = std::process::Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status().unwrap();
    assert!(killed.success());
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let replaced = driver.checkout().await.unwrap();
    assert_eq!(replaced.uses(), 0, "a dead browser is not reused");
    assert_eq!(traces(&replaced, &base).await, clean);
    replaced.close().await;
    driver.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reuse_1_starts_a_new_browser_every_time() {
    let (base, _) = serve().await;
    let driver = Driver::new(BrowserConfig { reuse: 1, ..BrowserConfig::default() });
    let a = driver.checkout().await.unwrap();
    a.goto(&format!("{base}/stateful")).await.unwrap();
    driver.checkin(a).await;
    let b = driver.checkout().await.unwrap();
    assert_eq!(b.uses(), 0);
    b.close().await;
    driver.shutdown().await;
}
