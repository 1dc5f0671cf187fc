//! An `http://` address is loaded over HTTP and nothing else, as Playwright's Chromium loads it for
//! WebArena and BrowserGym (`HttpsUpgrades` off): the full Chromium would first try HTTPS on port
//! 443 of the same host ("HTTPS Upgrades", for any name that looks public), so a site served over
//! HTTP on a host whose port 443 answers could come from another server. The headless shell has no
//! such upgrade; both browsers a worker may run are held to it. The host name is mapped to this
//! test's two listeners with `--host-resolver-rules`, so no DNS, root or port 80 is needed.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::response::Html;
use axum::routing::get;
use skillshift_worker::browser::{BrowserConfig, Driver, Session, FULL_CHROMIUM, HEADLESS_SHELL};

/// A name that is not local, reserved or single-label: one Chromium would upgrade.
const HOST: &str = "gitlab.skillshift-lab.com";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_address_is_never_tried_over_https() {
    let app =
        axum::Router::new().route("/", get(|| async { Html("<!doctype html><title>over http</title><p>plain</p>") }));
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_port = http.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(http, app).await.unwrap() });
    // Port 443's stand-in: it only counts the connections it is offered.
    let tls = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tls_port = tls.local_addr().unwrap().port();
    let offered = Arc::new(AtomicUsize::new(0));
    let count = offered.clone();
    tokio::spawn(async move {
        while let Ok((conn, _)) = tls.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            drop(conn);
        }
    });

    for chromium in [HEADLESS_SHELL, FULL_CHROMIUM] {
        assert!(std::path::Path::new(chromium).exists(), "{chromium} is not installed: run scripts/install-deps.sh");
        let rules =
            format!("--host-resolver-rules=MAP {HOST}:80 127.0.0.1:{http_port}, MAP {HOST}:443 127.0.0.1:{tls_port}");
        let cfg = BrowserConfig { chromium: chromium.into(), extra_args: vec![rules], ..BrowserConfig::default() };
        let driver = Driver::new(cfg);
        let session = Session::open(&driver).await.unwrap();
        let url = format!("http://{HOST}/");
        session.goto(&url).await.unwrap();
        let (at, title) = (session.url().await.unwrap(), session.title().await.unwrap());
        session.close().await;
        driver.shutdown().await;
        assert_eq!((at.as_str(), title.as_str()), (url.as_str(), "over http"), "{chromium}: the page over HTTP");
        assert_eq!(offered.load(Ordering::SeqCst), 0, "{chromium} tried HTTPS first");
    }
}
