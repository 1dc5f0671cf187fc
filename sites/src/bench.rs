//! Measuring the fixture sites: page latency (p50/p90 per site-version over
//! the distinct pages its tasks visit) and reset time. Pages are timed
//! in-process through the full axum router (routing, handlers, rendering,
//! body), after logging in with the site's own login steps; one figure per
//! site-version is also taken over a loopback socket, to show the transport's
//! share. Used by `skillshift sites bench`.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request};
use skillshift_common::{Site, Version};
use tower::ServiceExt;

/// The figures of one site-version.
#[derive(Debug, Clone)]
pub struct BenchRow {
    pub image: String,
    pub pages: usize,
    pub requests: usize,
    /// Responses that were not 200 (a redirect to the login page would show here).
    pub not_ok: usize,
    pub page_p50_ms: f64,
    pub page_p90_ms: f64,
    pub socket_p50_ms: f64,
    pub reset_p50_ms: f64,
    pub reset_max_ms: f64,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1].as_secs_f64() * 1000.0
}

/// The distinct page URLs (placeholder-relative paths) the tasks of a site-version start on or check,
/// at most 40 (also the pages of `skillshift bench floors --pages tasks`).
pub fn pages(site: Site, version: Version) -> Vec<String> {
    let mut out = Vec::new();
    for g in crate::tasks(site, version) {
        let mut urls = vec![g.task.start_url.clone()];
        urls.extend(g.task.eval.program_html.iter().map(|c| c.url.to_string()).filter(|u| u != "last"));
        for u in urls {
            let path = u.replace(site.placeholder(), "");
            let path = if path.is_empty() { "/".to_string() } else { path };
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out.truncate(40);
    out
}

/// Benchmarks one site-version with `rounds` passes over its pages and `resets` resets.
pub async fn bench(site: Site, version: Version, rounds: usize, resets: usize) -> BenchRow {
    let (router, app, _) = crate::site_router(site, version);
    let mut browser = crate::sim::Browser::new(router.clone(), "http://bench.test");
    let _ = browser.run(&app.login_steps()).await;
    let cookie = browser.cookie_header().unwrap_or_default();
    let pages = pages(site, version);
    let mut times = Vec::new();
    let mut not_ok = 0;
    for _ in 0..rounds {
        for path in &pages {
            let request = Request::builder()
                .uri(path.as_str())
                .header(header::HOST, "bench.test")
                .header(header::COOKIE, cookie.as_str())
                .body(Body::empty());
            let Ok(request) = request else { continue };
            let start = Instant::now();
            let Ok(response) = router.clone().oneshot(request).await;
            if response.status() != axum::http::StatusCode::OK {
                not_ok += 1;
            }
            let _ = axum::body::to_bytes(response.into_body(), 64 << 20).await;
            times.push(start.elapsed());
        }
    }
    times.sort();
    let mut socket = Vec::new();
    if let Ok(handle) = crate::serve(site, version, "127.0.0.1:0".parse().unwrap_or(([127, 0, 0, 1], 0).into())).await {
        for _ in 0..rounds.max(1) * 5 {
            let start = Instant::now();
            if get_over_socket(handle.addr, "/env-ctrl/status").await.is_ok() {
                socket.push(start.elapsed());
            }
        }
        handle.shutdown().await;
    }
    socket.sort();
    let mut reset_times = Vec::new();
    for _ in 0..resets {
        let start = Instant::now();
        app.reset();
        reset_times.push(start.elapsed());
    }
    reset_times.sort();
    BenchRow {
        image: site.image(version),
        pages: pages.len(),
        requests: times.len(),
        not_ok,
        page_p50_ms: percentile(&times, 50.0),
        page_p90_ms: percentile(&times, 90.0),
        socket_p50_ms: percentile(&socket, 50.0),
        reset_p50_ms: percentile(&reset_times, 50.0),
        reset_max_ms: reset_times.last().map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0),
    }
}

async fn get_over_socket(addr: std::net::SocketAddr, path: &str) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let work = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
            .await?;
        let mut sink = Vec::new();
        stream.read_to_end(&mut sink).await?;
        Ok(())
    };
    tokio::time::timeout(Duration::from_secs(5), work)
        .await
        .unwrap_or_else(|_| Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer within 5 s")))
}
