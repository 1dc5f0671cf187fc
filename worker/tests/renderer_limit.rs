//! The worker's renderer limit: an attempt's second tab of its site (the scorer's page, a tab the
//! agent opens) runs in the attempt's renderer instead of starting one, while the next attempt,
//! in a browser context of its own, never runs in a renderer of the last one's. Chromium's
//! processes are counted under this test's process: it is alone in its binary, so no other
//! test's browser is among them.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use axum::response::Html;
use axum::routing::get;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

/// A page server; its base URL.
async fn serve() -> String {
    let app =
        axum::Router::new().route("/plain", get(|| async { Html("<!doctype html><title>plain</title><p>plain</p>") }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

/// The live renderer processes under `root` (this test's process, whose worker code starts the browser), by pid.
fn renderers(root: u32) -> std::collections::BTreeSet<u32> {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: the command may hold spaces and parentheses.
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let under_root = |mut pid: u32| {
        while let Some(p) = parent(pid) {
            if p == root {
                return true;
            }
            if p <= 1 {
                return false;
            }
            pid = p;
        }
        false
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--type=renderer"))
        })
        .filter(|pid| under_root(*pid))
        .collect()
}

/// The renderers started by opening a second tab of the attempt's site (the page loaded).
async fn renderers_for_a_second_tab(s: &Session, base: &str) -> usize {
    s.goto(&format!("{base}/plain")).await.unwrap();
    let root = std::process::id();
    let before = renderers(root);
    let tab = s.create_target(&format!("{base}/plain")).await.unwrap();
    s.switch_to(&tab).await.unwrap();
    assert_eq!(
        s.eval("document.readyState === 'complete' || new Promise(r => onload = () => r(true))").await.unwrap(),
        true
    );
    renderers(root).difference(&before).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempts_tabs_share_its_renderer_and_the_next_attempt_gets_its_own() {
    let base = serve().await;

    // The worker's flags: a second tab of the attempt's site (the scorer's page, an agent's new
    // tab) runs in the attempt's renderer ...
    let driver = Driver::new(BrowserConfig::default());
    let a = driver.checkout().await.unwrap();
    assert_eq!(renderers_for_a_second_tab(&a, &base).await, 0, "the second tab started a renderer");
    let root = std::process::id();
    let first = renderers(root);
    assert!(!first.is_empty(), "no renderer found under this process ({root})");
    driver.checkin(a).await;

    // ... and the next attempt's pages, in a context of their own, never run in a renderer of the last one's.
    let b = driver.checkout().await.unwrap();
    b.goto(&format!("{base}/plain")).await.unwrap();
    let next = renderers(root);
    assert!(
        next.difference(&first).count() > 0,
        "the next attempt's page runs in a renderer of the last attempt's: {first:?} then {next:?}"
    );
    b.close().await;
    driver.shutdown().await;

    // Without the limit (a later flag overrides it) Chromium starts a renderer per tab.
    let unlimited =
        BrowserConfig { extra_args: vec!["--renderer-process-limit=1000".into()], ..BrowserConfig::default() };
    let driver = Driver::new(unlimited);
    let a = driver.checkout().await.unwrap();
    assert_eq!(renderers_for_a_second_tab(&a, &base).await, 1, "without the limit a tab has its own renderer");
    a.close().await;
    driver.shutdown().await;
}
