//! Every tab of an attempt in real headless Chromium: a tab the page opens itself (`target=_blank`,
//! `window.open`) or the agent opens (`new_tab`) gets the condition's perturbations (the modal of
//! an `-exec` condition appears there at its step) and joins the attempt's network trace, which
//! holds each request with its method, URL, status, headers, cookies, post data and redirect.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use axum::routing::{get, post};
use serde_json::json;
use skillshift_common::har::{Entry, Har};
use skillshift_common::ids::Family;
use skillshift_common::{Condition, Site};
use skillshift_worker::action::Action;
use skillshift_worker::axtree::Snapshot;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::perturb::{Perturbation, Profile};
use skillshift_worker::tabs::{self, Tabs};

const HOME: &str = r#"<!doctype html><title>Home</title><main><h1>Home</h1>
<a href="/second" target="_blank">Open second</a>
<button onclick="window.open('/third')">Open third</button>
<form method="post" action="/save"><input name="title" aria-label="Title" value="kiwi pie"><button>Save</button></form>
</main>"#;

/// The fixture server, and whether it has served `/third` (the page's `window.open`).
async fn base() -> (String, Arc<AtomicBool>) {
    let third = Arc::new(AtomicBool::new(false));
    let served = third.clone();
    let url = common::serve(
        axum::Router::new()
            .route("/", get(|| async { Html(HOME) }))
            .route("/second", get(|| async { Html("<title>Second</title><main><h1>Second tab</h1></main>") }))
            .route(
                "/third",
                get(move || {
                    served.store(true, Ordering::SeqCst);
                    async { Html("<title>Third</title><main><h1>Third tab</h1></main>") }
                }),
            )
            .route("/fourth", get(|| async { Html("<title>Fourth</title><main><h1>Fourth tab</h1></main>") }))
            .route(
                "/save",
                post(|body: String| async move {
                    // The form's field arrives as posted; the answer redirects and sets the session cookie.
                    let status = if body == "title=kiwi+pie" { StatusCode::SEE_OTHER } else { StatusCode::BAD_REQUEST };
                    (status, [(LOCATION, "/saved"), (SET_COOKIE, "sid=s3cr3tcookie; Path=/; HttpOnly")]).into_response()
                }),
            )
            .route("/saved", get(|| async { Html("<title>Saved</title><main><h1>Saved</h1></main>") })),
    )
    .await;
    (url, third)
}

fn id_of(s: &Snapshot, needle: &str) -> u64 {
    let line = s.text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in\n{}", s.text));
    line.trim_start()[1..line.trim_start().find(']').unwrap()].parse().unwrap()
}

/// A `-exec` perturbation whose modal appears at step 1, and nothing else.
fn modal_at_step_1() -> Perturbation {
    let mut v: serde_json::Value = serde_json::from_str(skillshift_worker::perturb::DEFAULT_PROFILE).unwrap();
    v["execution"]["interstitial"]["first_step"] = json!(1);
    v["execution"]["interstitial"]["last_step"] = json!(1);
    v["execution"]["swallow_clicks"]["share"] = json!(0.0);
    v["execution"]["late_render"]["share"] = json!(0.0);
    let profile = Profile::from_value(&v, "test profile").unwrap();
    Perturbation::for_attempt(profile, 1, Family { site: Site::Gitlab, task_id: 0 }, Condition::SrcExec, 0)
}

async fn act(s: &Session, t: &Tabs, snap: &Snapshot, action: Action) {
    tabs::execute(s, t, &action, |i| snap.ids.get(&i).copied()).await.unwrap();
}

/// The modal is shown in the current tab at step 1 (and not at step 0).
async fn modal_in_current_tab(s: &Session, t: &Tabs, p: &Perturbation, what: &str) {
    p.set_step(s, 0).await.unwrap();
    let before = tabs::observe(s, t).await.unwrap().text;
    assert!(!before.contains("modal: True"), "{what}: no modal before its step:\n{before}");
    p.set_step(s, 1).await.unwrap();
    let after = tabs::observe(s, t).await.unwrap().text;
    assert!(after.contains("dialog 'Your session is about to expire' modal: True"), "{what}:\n{after}");
}

fn find<'a>(har: &'a Har, method: &str, path: &str) -> &'a Entry {
    har.log
        .entries
        .iter()
        .find(|e| e.request.method == method && e.request.url.ends_with(path))
        .unwrap_or_else(|| panic!("no {method} {path} in {:#?}", har.log.entries))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tab_gets_the_perturbations_and_joins_the_network_trace() {
    let (base, third_served) = base().await;
    let driver = Driver::new(BrowserConfig::default());
    let s = driver.checkout().await.unwrap();
    assert!(s.context_id().is_some(), "the attempt runs in a browser context of its own");
    let p = modal_at_step_1();
    p.install(&s).await.unwrap();
    s.begin_tabs(p.script(), true, true).await.unwrap();
    s.goto(&format!("{base}/")).await.unwrap();
    let t = Tabs::adopt(&s).await.unwrap();

    // Step 1: a form's POST, redirected, setting a cookie.
    s.network_step(1);
    let snap = tabs::observe(&s, &t).await.unwrap();
    act(&s, &t, &snap, Action::Click { id: id_of(&snap, "button 'Save'") }).await;
    assert_eq!(s.title().await.unwrap(), "Saved");
    s.back().await.unwrap();

    // Step 2: a link with target=_blank and a window.open each open a tab of the page's own.
    s.network_step(2);
    let snap = tabs::observe(&s, &t).await.unwrap();
    act(&s, &t, &snap, Action::Click { id: id_of(&snap, "link 'Open second'") }).await;
    act(&s, &t, &snap, Action::Click { id: id_of(&snap, "button 'Open third'") }).await;
    // The popups join the tab list when next seen; wait (bounded) for both to be listed.
    let mut listed = 0;
    for _ in 0..100 {
        listed = t.sync(&s).await.unwrap().len();
        if listed == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(listed, 3, "the page opened two tabs");
    act(&s, &t, &snap, Action::TabFocus { index: 1 }).await;
    modal_in_current_tab(&s, &t, &p, "a tab the page opened").await;
    let header = tabs::observe(&s, &t).await.unwrap().text;
    assert!(header.starts_with("Tab 0: Home | Tab 1 (current): "), "{header}");

    // Step 2's requests are all in the trace before step 3 begins: the popup's `/third` was served, and the
    // browser sent its request's event before the request itself; an observation's answer comes after it on
    // the same connection, whose reader folds the trace in order.
    for _ in 0..200 {
        if third_served.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(third_served.load(Ordering::SeqCst), "the page's window.open loaded /third");
    tabs::observe(&s, &t).await.unwrap();

    // Step 3: the agent's own new tab.
    s.network_step(3);
    act(&s, &t, &snap, Action::NewTab).await;
    s.goto(&format!("{base}/fourth")).await.unwrap();
    modal_in_current_tab(&s, &t, &p, "a tab the agent opened").await;

    let har = s.network_take(true).await.expect("a network trace");
    driver.checkin(s).await;
    driver.shutdown().await;

    let save = find(&har, "POST", "/save");
    assert_eq!((save.response.status, save.step, save.tab), (303, Some(1), Some(0)));
    assert_eq!(save.response.redirect_url, format!("{base}/saved"));
    let posted = save.request.post_data.as_ref().expect("post data");
    assert_eq!(
        (posted.text.as_str(), posted.mime_type.as_str()),
        ("title=kiwi+pie", "application/x-www-form-urlencoded")
    );
    assert!(save.response.cookies.iter().any(|c| c.name == "sid" && c.value == "s3cr3tcookie"), "{save:#?}");
    let header =
        |e: &Entry, n: &str| e.request.headers.iter().find(|h| h.name.eq_ignore_ascii_case(n)).map(|h| h.value.clone());
    assert_eq!(header(save, "sec-fetch-mode").as_deref(), Some("navigate"));
    assert_eq!(header(save, "referer").as_deref(), Some(format!("{base}/").as_str()));
    let saved = find(&har, "GET", "/saved");
    assert_eq!((saved.response.status, saved.resource_type.as_deref()), (200, Some("Document")));
    assert!(saved.request.cookies.iter().any(|c| c.name == "sid"), "the cookie is sent back: {saved:#?}");
    assert!(saved.response.content.text.as_deref().is_some_and(|b| b.contains("<h1>Saved</h1>")), "{saved:#?}");
    let second = find(&har, "GET", "/second");
    let third = find(&har, "GET", "/third");
    let fourth = find(&har, "GET", "/fourth");
    assert_eq!((second.step, third.step, fourth.step), (Some(2), Some(2), Some(3)));
    let tabs_seen: std::collections::BTreeSet<u32> = [second, third, fourth].iter().filter_map(|e| e.tab).collect();
    assert_eq!(tabs_seen.len(), 3, "three tabs of their own: {:?}", [second.tab, third.tab, fourth.tab]);
    assert!(!tabs_seen.contains(&0));
}

/// An input that stays on its page is done when the requests the page sent for it have ended (a
/// save through a REST API): with the trace recording, the click waits out a `fetch` answered 400 ms
/// later, and a click that sends nothing ends without waiting for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_that_stays_waits_for_the_fetch_it_sent() {
    const PAGE: &str = r#"<!doctype html><title>Editor</title><main>
<button onclick="fetch('/store', {method: 'POST', body: 'x'}).then(r => r.text()).then(t => { document.title = t; })">Store</button>
<button onclick="document.title = 'Touched'">Touch</button>
<img src="/a.png"><img src="/b.png"><img src="/c.png"></main>"#;
    let base = common::serve(
        axum::Router::new()
            .route("/", get(|| async { Html(PAGE) }))
            .route("/{img}", get(|| async { StatusCode::NOT_FOUND }))
            .route(
                "/store",
                post(|| async {
                    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
                    "Stored"
                }),
            ),
    )
    .await;
    let driver = Driver::new(BrowserConfig::default());
    let s = driver.checkout().await.unwrap();
    s.begin_tabs(None, true, false).await.unwrap();
    s.goto(&format!("{base}/")).await.unwrap();
    assert_eq!(s.eval("document.readyState").await.unwrap(), "complete", "the load was waited for");
    let t = Tabs::adopt(&s).await.unwrap();

    s.network_step(1);
    let snap = tabs::observe(&s, &t).await.unwrap();
    let start = std::time::Instant::now();
    act(&s, &t, &snap, Action::Click { id: id_of(&snap, "button 'Store'") }).await;
    let waited = start.elapsed();
    assert!(waited >= std::time::Duration::from_millis(350), "the click returned before its fetch ended ({waited:?})");

    s.network_step(2);
    let snap = tabs::observe(&s, &t).await.unwrap();
    act(&s, &t, &snap, Action::Click { id: id_of(&snap, "button 'Touch'") }).await;
    assert_eq!(s.title().await.unwrap(), "Touched");

    let har = s.network_take(true).await.expect("a network trace");
    driver.checkin(s).await;
    driver.shutdown().await;
    let store = find(&har, "POST", "/store");
    assert_eq!((store.response.status, store.step, store.resource_type.as_deref()), (200, Some(1), Some("Fetch")));
    assert_eq!(har.log.entries.iter().filter(|e| e.request.url.ends_with(".png")).count(), 3, "the page's images");
}
