//! A kept browser handed to the next attempt is as clean as a new one: no
//! cookies, no local or session storage, no history, no injected scripts;
//! and a kept browser that died is replaced by a new one.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::{json, Value};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

const STATEFUL: &str = r#"<!doctype html><title>stateful</title><script>
localStorage.setItem("kept", "1"); sessionStorage.setItem("tab", "1"); document.cookie = "script=1; path=/";
</script><a href="/plain">next</a>"#;

async fn serve() -> String {
    let app = axum::Router::new()
        .route(
            "/stateful",
            get(|| async { ([("set-cookie", "server=1; Path=/; HttpOnly")], Html(STATEFUL)).into_response() }),
        )
        .route("/plain", get(|| async { Html("<!doctype html><title>plain</title><p>plain</p>") }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

/// What a page can see of earlier state.
async fn traces(s: &Session, base: &str) -> Value {
    s.goto(&format!("{base}/plain")).await.unwrap();
    let cookies = s.cdp("Network.getCookies", json!({"urls": [format!("{base}/")]})).await.unwrap();
    let page = s
        .eval(
            "({cookie: document.cookie, local: localStorage.getItem('kept'), session: sessionStorage.getItem('tab'), \
              history: history.length, injected: window.__injected === true})",
        )
        .await
        .unwrap();
    json!({"cookies": cookies["cookies"].as_array().map_or(0, |c| c.len()), "page": page})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_browser_comes_back_clean_and_a_dead_one_is_replaced() {
    let base = serve().await;
    let driver = Driver::new(BrowserConfig::default());

    // A new browser, for reference.
    let fresh = driver.checkout().await.unwrap();
    assert_eq!(fresh.uses(), 0);
    let clean = traces(&fresh, &base).await;
    assert_eq!(clean["cookies"], 0, "{clean}");
    assert_eq!(clean["page"]["local"], Value::Null, "{clean}");

    // Dirty it: cookies from the server and from script, both storages, history, an injected script.
    fresh.goto(&format!("{base}/stateful")).await.unwrap();
    fresh.cdp("Page.addScriptToEvaluateOnNewDocument", json!({"source": "window.__injected = true;"})).await.unwrap();
    let dirty = traces(&fresh, &base).await;
    assert_eq!(dirty["cookies"], 2, "{dirty}");
    assert_eq!(dirty["page"]["local"], "1", "{dirty}");
    assert_eq!(dirty["page"]["session"], "1", "{dirty}");
    assert_eq!(dirty["page"]["injected"], true, "{dirty}");
    let pid = driver.pid().await;
    driver.checkin(fresh).await;

    // Handed out again: the same chromedriver and browser, and nothing of the last attempt.
    let kept = driver.checkout().await.unwrap();
    assert_eq!(kept.uses(), 1, "the kept browser is reused");
    assert_eq!(driver.pid().await, pid);
    assert_eq!(traces(&kept, &base).await, clean, "a reused browser looks new");
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
    let base = serve().await;
    let driver = Driver::new(BrowserConfig { reuse: 1, ..BrowserConfig::default() });
    let a = driver.checkout().await.unwrap();
    a.goto(&format!("{base}/stateful")).await.unwrap();
    driver.checkin(a).await;
    let b = driver.checkout().await.unwrap();
    assert_eq!(b.uses(), 0);
    b.close().await;
    driver.shutdown().await;
}
