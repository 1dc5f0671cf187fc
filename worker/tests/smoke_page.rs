//! Real headless Chromium against a small page of this test's own: the
//! observation, a click through DevTools, typing, and a skill's locators.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::sync::Arc;

use axum::response::Html;
use axum::routing::get;
use skillshift_common::skills::{Step, Target};
use skillshift_worker::action::Action;
use skillshift_worker::axtree::observe;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::skill_runtime::{run_steps, Placeholders, LOCATOR_GRACE};

const PAGE: &str = r#"<!doctype html><html><head><title>Fixture home</title></head><body>
<nav aria-label="Main"><ul><li><a href="/issues">Issues</a></li><li><a href="/mrs">Merge requests</a></li></ul></nav>
<main><h1>Welcome</h1><form action="/search" method="get"><label for="q">Search</label><input id="q" name="q" type="text">
<button type="submit">Go</button></form><button>Save</button><button>Save</button></main></body></html>"#;

/// A page whose script adds a button one second after it loads.
const LATER: &str = r#"<!doctype html><title>Later</title><main><h1>Wait</h1></main>
<script>setTimeout(() => document.querySelector("main").append(Object.assign(
  document.createElement("button"), {textContent: "Late"})), 1000)</script>"#;

async fn serve() -> String {
    let app = axum::Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route("/issues", get(|| async { Html("<title>Issues</title><main><h1>All issues</h1></main>") }))
        .route("/later", get(|| async { Html(LATER) }))
        .route(
            "/search",
            get(|q: axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                Html(format!(
                    "<title>Results</title><main><h1>Results for {}</h1></main>",
                    q.get("q").cloned().unwrap_or_default()
                ))
            }),
        );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_click_type_and_locate_on_a_real_page() {
    let base = serve().await;
    let driver = Arc::new(Driver::new(BrowserConfig::default()));
    let s = Session::open(&driver).await.unwrap();
    s.goto(&format!("{base}/")).await.unwrap();
    let snap = observe(&s).await.unwrap();
    println!("{}", snap.text);
    assert!(snap.text.starts_with("Tab 0 (current): Fixture home\n\n["), "{}", snap.text);
    assert!(snap.text.contains("link 'Issues'"), "{}", snap.text);
    assert!(snap.text.contains("textbox 'Search'"), "{}", snap.text);

    // Click the Issues link by its printed id.
    let id = snap
        .text
        .lines()
        .find(|l| l.contains("link 'Issues'"))
        .and_then(|l| {
            let l = l.trim_start();
            l[1..l.find(']')?].parse::<u64>().ok()
        })
        .unwrap();
    skillshift_worker::actions::execute(&s, &Action::Click { id }, |i| snap.ids.get(&i).copied()).await.unwrap();
    assert_eq!(s.title().await.unwrap(), "Issues");
    s.back().await.unwrap();

    // Type with Enter submits the form.
    let snap = observe(&s).await.unwrap();
    let id = snap
        .text
        .lines()
        .find(|l| l.contains("textbox 'Search'"))
        .and_then(|l| {
            let l = l.trim_start();
            l[1..l.find(']')?].parse::<u64>().ok()
        })
        .unwrap();
    skillshift_worker::actions::execute(&s, &Action::Type { id, text: "kiwi".into(), enter: true }, |i| {
        snap.ids.get(&i).copied()
    })
    .await
    .unwrap();
    assert_eq!(s.title().await.unwrap(), "Results");
    let snap = observe(&s).await.unwrap();
    assert!(snap.text.contains("heading 'Results for kiwi'"), "{}", snap.text);

    // Skill steps: an ambiguous locator fails, an exact one works.
    let ph = Placeholders(vec![("__SITE__".into(), base.clone())]);
    let t = |role: &str, name: &str| Target {
        role: role.into(),
        name: name.into(),
        nth: None,
        column: None,
        row: None,
        name_pattern: None,
    };
    let out = run_steps(
        &s,
        &[Step::Goto { url: "__SITE__/".into() }, Step::Click { target: t("button", "Save") }],
        &ph,
        LOCATOR_GRACE,
    )
    .await
    .unwrap();
    assert!(!out.ok);
    assert!(out.error.as_deref().unwrap_or("").contains("ambiguous"), "{:?}", out.error);
    let out = run_steps(
        &s,
        &[
            Step::Fill { target: t("textbox", "Search"), text: "plum".into() },
            Step::Click { target: t("button", "Go") },
            Step::Read { target: t("heading", "Results for plum"), pattern: None, values: None },
        ],
        &ph,
        LOCATOR_GRACE,
    )
    .await
    .unwrap();
    assert!(out.ok, "{:?}", out.error);
    assert_eq!(out.answer.as_deref(), Some("Results for plum"));
    s.close().await;
    driver.shutdown().await;
}

/// A locator waits for an element the page renders later within the grace it is given, and with
/// no grace the first look decides (it would have found the button had it waited the second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locator_waits_out_its_grace_and_with_none_decides_at_the_first_look() {
    let base = serve().await;
    let driver = Driver::new(BrowserConfig::default());
    let s = Session::open(&driver).await.unwrap();
    let ph = Placeholders(vec![("__SITE__".into(), base.clone())]);
    let steps = [
        Step::Goto { url: "__SITE__/later".into() },
        Step::Click {
            target: Target {
                role: "button".into(),
                name: "Late".into(),
                nth: None,
                column: None,
                row: None,
                name_pattern: None,
            },
        },
    ];
    let out = run_steps(&s, &steps, &ph, std::time::Duration::ZERO).await.unwrap();
    assert!(!out.ok && out.steps_done == 1, "{out:?}");
    assert!(out.error.as_deref().unwrap_or("").contains("no element matches button 'Late'"), "{:?}", out.error);
    let out = run_steps(&s, &steps, &ph, std::time::Duration::from_secs(2)).await.unwrap();
    assert!(out.ok, "found once rendered: {:?}", out.error);
    s.close().await;
    driver.shutdown().await;
}
