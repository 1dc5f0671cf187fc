//! Per-step harness overhead, no LLM: observation (Chrome's accessibility tree
//! over DevTools, rendered in WebArena's form) and a click (hit test plus
//! trusted mouse events plus settling), on a page of about 400 elements.
//!
//! `cargo run --release -p skillshift-worker --example bench_step [-- ROUNDS [URL]]`
//! (URL: any page instead of the built-in one; the click then goes to its first button)
//! prints median and p90 of each; figures go to docs/performance.md.

use std::time::{Duration, Instant};

use axum::response::Html;
use axum::routing::get;
use skillshift_worker::action::Action;
use skillshift_worker::axtree::{fetch_tree, observe};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

fn page() -> String {
    let mut s = String::from("<!doctype html><title>Bench</title><nav aria-label=\"Main\"><ul>");
    for i in 0..20 {
        s.push_str(&format!("<li><a href=\"/p/{i}\">Section {i}</a></li>"));
    }
    s.push_str(
        "</ul></nav><main><h1>Items</h1><table><tr><th>Name</th><th>Owner</th><th>Status</th><th>Actions</th></tr>",
    );
    for i in 0..60 {
        s.push_str(&format!(
            "<tr><td><a href=\"/item/{i}\">Item {i}</a></td><td>owner{i}</td><td>open</td>\
             <td><button onclick=\"this.dataset.n=(+this.dataset.n||0)+1\">Edit {i}</button></td></tr>"
        ));
    }
    s.push_str("</table></main>");
    s
}

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let q = |p: f64| v[((v.len() as f64 * p).ceil() as usize).saturating_sub(1).min(v.len() - 1)];
    println!(
        "{name:<34} n={:<4} median {:>7.1} ms   p90 {:>7.1} ms",
        v.len(),
        q(0.5).as_secs_f64() * 1e3,
        q(0.9).as_secs_f64() * 1e3
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(60);
    let html = page();
    let app = axum::Router::new().route("/", get(move || async move { Html(html) }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", l.local_addr()?);
    let tasks = skillshift_taskcenter::TaskCenter::new("bench-step");
    tasks.spawn("page-server", |token| async move {
        axum::serve(l, app).with_graceful_shutdown(token.cancelled_owned()).await
    });

    let driver = Driver::new(BrowserConfig::default());
    let t = Instant::now();
    let session = Session::open(&driver).await?;
    println!("new session (first, starts chromedriver): {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let second = Session::open(&driver).await?;
    println!("new session (second): {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    second.close().await;
    let url = std::env::args().nth(2).unwrap_or(format!("{base}/"));
    session.goto(&url).await?;
    let snap = observe(&session).await?;
    let nodes = snap.tree.nodes.len();
    let lines = snap.text.lines().count();
    println!("page: {nodes} AX nodes, {lines} observation lines, {} printed ids", snap.ids.len());

    let mut rtt = Vec::new();
    let mut raw = Vec::new();
    let mut wire = Vec::new();
    let mut parse = Vec::new();
    let mut obs = Vec::new();
    let mut clicks = Vec::new();
    let button = snap
        .text
        .lines()
        .find(|l| l.contains("button 'Edit 30'"))
        .or_else(|| snap.text.lines().find(|l| l.contains("] button '")))
        .and_then(|l| l.trim_start().strip_prefix('[')?.split(']').next()?.parse::<u64>().ok())
        .ok_or("no button in the observation")?;
    for _ in 0..rounds {
        let t = Instant::now();
        session.cdp("Runtime.evaluate", serde_json::json!({"expression": "1"})).await?;
        rtt.push(t.elapsed());
        let t = Instant::now();
        fetch_tree(&session).await?;
        raw.push(t.elapsed());
        let t = Instant::now();
        let text = session
            .cdp_raw_within("Accessibility.getFullAXTree", serde_json::json!({}), session.call_timeout())
            .await?;
        wire.push(t.elapsed());
        let t = Instant::now();
        let tree = skillshift_worker::axtree::AxTree::from_answer(&text)?;
        let _ = tree.render();
        parse.push(t.elapsed());
        let t = Instant::now();
        let s = observe(&session).await?;
        obs.push(t.elapsed());
        let t = Instant::now();
        skillshift_worker::actions::execute(&session, &Action::Click { id: button }, |i| s.ids.get(&i).copied())
            .await
            .map_err(|e| e.to_string())?;
        clicks.push(t.elapsed());
    }
    let mut shots = Vec::new();
    for _ in 0..rounds.min(20) {
        let t = Instant::now();
        session.screenshot().await?;
        shots.push(t.elapsed());
    }
    stats("devtools round trip (evaluate 1)", rtt);
    stats("screenshot (trajectory PNG)", shots);
    stats("getFullAXTree only", raw);
    stats("getFullAXTree, answer unparsed", wire);
    stats("parse + render (no browser)", parse);
    stats("observe (tree + render + url/title)", obs);
    stats("click (hit test + input + settle)", clicks);
    let clicked = session.eval("document.querySelectorAll('button')[30].dataset.n").await?;
    println!("clicks registered by the page: {clicked}");
    let t = Instant::now();
    session.close().await;
    println!("session close: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    driver.shutdown().await;
    Ok(())
}
