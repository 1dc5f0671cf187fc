//! What a trajectory costs per attempt, no LLM: a screenshot of a page of
//! about 400 elements (what `--screenshots failures` takes about once per
//! attempt), an observation for scale, and encoding a trajectory file (zstd
//! and the outbox's fsync) given on the command line.
//!
//! `cargo run -p skillshift-worker --example bench_capture -- ROUNDS [TRAJECTORY.json]`
//! prints median and p90 of each; figures go to docs/performance.md.

use std::time::{Duration, Instant};

use axum::response::Html;
use axum::routing::get;
use skillshift_common::blob::Blob;
use skillshift_common::trajectory::Trajectory;
use skillshift_worker::axtree::observe;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

fn page() -> String {
    let mut s = String::from("<!doctype html><title>Bench</title><nav aria-label=\"Main\"><ul>");
    for i in 0..20 {
        s.push_str(&format!("<li><a href=\"/p/{i}\">Section {i}</a></li>"));
    }
    s.push_str("</ul></nav><main><h1>Items</h1><table>");
    for i in 0..60 {
        s.push_str(&format!(
            "<tr><td><a href=\"/item/{i}\">Item {i}</a></td><td>owner{i}</td><td><button>Edit {i}</button></td></tr>"
        ));
    }
    s.push_str("</table></main>");
    s
}

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let q = |p: f64| v[((v.len() as f64 * p).ceil() as usize).saturating_sub(1).min(v.len() - 1)];
    println!(
        "{name:<28} n={:<4} median {:>7.1} ms   p90 {:>7.1} ms",
        v.len(),
        q(0.5).as_secs_f64() * 1e3,
        q(0.9).as_secs_f64() * 1e3
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    let html = page();
    let app = axum::Router::new().route("/", get(move || async move { Html(html) }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", l.local_addr()?);
    let tasks = skillshift_taskcenter::TaskCenter::new("bench-capture");
    tasks.spawn("page-server", |token| async move {
        axum::serve(l, app).with_graceful_shutdown(token.cancelled_owned()).await
    });
    let driver = Driver::new(BrowserConfig::default());
    let session = Session::open(&driver).await?;
    session.goto(&format!("{base}/")).await?;
    let (mut shots, mut obs, mut size) = (Vec::new(), Vec::new(), 0);
    for _ in 0..rounds {
        let t = Instant::now();
        size = session.screenshot().await?.len();
        shots.push(t.elapsed());
        let t = Instant::now();
        observe(&session).await?;
        obs.push(t.elapsed());
    }
    stats("screenshot", shots);
    println!("screenshot bytes: {size}");
    stats("observation", obs);
    if let Some(path) = std::env::args().nth(2) {
        let t: Trajectory = serde_json::from_slice(&std::fs::read(&path)?)?;
        let blob = Blob { trajectory: t, screenshots: Default::default() };
        let dir = tempfile::tempdir()?;
        let mut enc = Vec::new();
        let mut bytes = 0;
        for i in 0..rounds {
            let t = Instant::now();
            let b = blob.encode()?;
            bytes = b.len();
            let p = dir.path().join(format!("{i}.traj"));
            std::fs::write(&p, &b)?;
            std::fs::File::open(&p)?.sync_all()?;
            enc.push(t.elapsed());
        }
        stats("encode + write + fsync", enc);
        println!("trajectory: {} bytes of JSON, {bytes} compressed", std::fs::metadata(&path)?.len());
    }
    session.close().await;
    driver.shutdown().await;
    tasks.shutdown(Duration::from_secs(2)).await;
    Ok(())
}
