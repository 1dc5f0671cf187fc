//! DevTools over the browser's own socket: the session uses it, reports URL and
//! title as WebDriver does, and a step settles on what the page says: a form
//! post answered late is waited for, a 204 and a click that navigates nowhere
//! end at once, and a scroll has moved the page when it returns. Navigation over DevTools
//! (`Page.navigate`, `Page.navigateToHistoryEntry`) behaves as WebDriver's: the same test passes
//! with `SKILLSHIFT_DEVTOOLS=chromedriver`, where navigation goes through chromedriver.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::{get, post};
use skillshift_worker::action::Action;
use skillshift_worker::axtree::observe;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

const HOME: &str = r#"<!doctype html><title>Home</title>
<form action="/slow" method="post"><input name="q" value="x"><button type="submit">Send</button></form>
<a href="/nothing">Nothing</a> <button onclick="this.dataset.n = 1">Inert</button>
<div style="height:4000px"></div>"#;

/// A long page with a scrollable box of its own.
const SCROLLER: &str = r#"<!doctype html><title>S</title>
<div id="box" style="height:100px;overflow:auto"><div style="height:1000px">inner</div></div>
<div style="height:4000px"></div>"#;

async fn serve() -> String {
    let app = axum::Router::new()
        .route("/", get(|| async { Html(HOME) }))
        .route("/untitled", get(|| async { Html("<!doctype html><p>no title here</p>") }))
        .route("/scroller", get(|| async { Html(SCROLLER) }))
        .route(
            "/slow",
            post(|| async {
                tokio::time::sleep(Duration::from_millis(400)).await;
                Html("<!doctype html><title>Done</title><p>posted</p>")
            }),
        )
        .route("/nothing", get(|| async { StatusCode::NO_CONTENT }))
        .route("/gone", get(|| async { (StatusCode::NOT_FOUND, Html("<!doctype html><title>Gone</title><p>404</p>")) }))
        .route("/a", get(|| async { Html("<!doctype html><title>A</title><p id=x>a</p>") }))
        .route("/b", get(|| async { Html(r#"<!doctype html><title>B</title><img src="/late.png">"#) }))
        .route(
            "/late.png",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(600)).await;
                StatusCode::NOT_FOUND
            }),
        )
        .route(
            "/hang",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(20)).await;
                Html("late")
            }),
        );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

fn id_of(text: &str, needle: &str) -> u64 {
    let line = text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{text}"));
    let l = line.trim_start();
    l[1..l.find(']').unwrap()].parse().unwrap()
}

async fn act(s: &Session, action: Action) -> Duration {
    let snap = observe(s).await.unwrap();
    let t = Instant::now();
    skillshift_worker::actions::execute(s, &action, |i| snap.ids.get(&i).copied()).await.unwrap();
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_devtools_report_like_webdriver_and_settle_on_events() {
    let base = serve().await;
    let driver = Driver::new(BrowserConfig::default());
    let s = Session::open(&driver).await.unwrap();
    assert!(s.is_direct(), "the browser's own devtools socket is used");

    // URL and title as chromedriver reports them: a page without a title is titled by its URL.
    s.goto(&format!("{base}/untitled")).await.unwrap();
    assert_eq!(s.url().await.unwrap(), format!("{base}/untitled"));
    assert_eq!(s.title().await.unwrap(), format!("{base}/untitled"));

    s.goto(&format!("{base}/")).await.unwrap();
    let snap = observe(&s).await.unwrap();
    assert!(snap.text.starts_with("Tab 0 (current): Home\n\n"), "{}", snap.text);

    // A click that changes nothing but the page's own state ends without waiting for anything.
    let inert = id_of(&snap.text, "button 'Inert'");
    act(&s, Action::Click { id: inert }).await;
    assert_eq!(s.eval("document.querySelectorAll('button')[1].dataset.n").await.unwrap(), "1");
    assert_eq!(s.title().await.unwrap(), "Home");

    // A scroll has moved the page when it returns.
    act(&s, Action::Scroll { down: true }).await;
    assert!(s.eval("scrollY").await.unwrap().as_f64().unwrap() > 0.0, "the wheel scrolled the page");

    // A link answered with 204 starts a navigation that never commits: the step still ends soon.
    let snap = observe(&s).await.unwrap();
    let took = act(&s, Action::Click { id: id_of(&snap.text, "link 'Nothing'") }).await;
    assert!(took < Duration::from_secs(8), "a 204 does not wait out the settle deadline ({took:?})");
    assert_eq!(s.title().await.unwrap(), "Home");

    // A form post answered 400 ms later is waited for: the next observation is the new page.
    let snap = observe(&s).await.unwrap();
    act(&s, Action::Click { id: id_of(&snap.text, "button 'Send'") }).await;
    let after = observe(&s).await.unwrap();
    assert!(after.text.starts_with("Tab 0 (current): Done\n\n"), "{}", after.text);
    assert_eq!(after.url, format!("{base}/slow"));

    s.close().await;
    driver.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_waits_for_the_load_and_fails_like_webdriver() {
    let base = serve().await;
    let driver = Driver::new(BrowserConfig::default());
    let s = Session::open(&driver).await.unwrap();
    async fn state(s: &Session) -> serde_json::Value {
        s.eval("[document.title, document.readyState]").await.unwrap()
    }

    // The load event is waited for: an image answered 600 ms later holds it.
    let t = Instant::now();
    s.goto(&format!("{base}/b")).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(550), "goto returned before the load event ({:?})", t.elapsed());
    assert_eq!(state(&s).await, serde_json::json!(["B", "complete"]));

    // An HTTP error status is a page like any other.
    s.goto(&format!("{base}/gone")).await.unwrap();
    assert_eq!(s.url_and_title().await.unwrap(), (format!("{base}/gone"), "Gone".to_string()));

    // A same-document navigation ends at once and keeps the document.
    s.goto(&format!("{base}/a")).await.unwrap();
    s.eval("window.kept = 1").await.unwrap();
    s.goto(&format!("{base}/a#x")).await.unwrap();
    assert_eq!(s.url().await.unwrap(), format!("{base}/a#x"));
    assert_eq!(s.eval("window.kept").await.unwrap(), 1);

    // Back and forward walk the history and wait for the page; at the end of the history they do nothing.
    s.back().await.unwrap();
    assert_eq!(s.url().await.unwrap(), format!("{base}/a"));
    s.back().await.unwrap();
    assert_eq!(s.url().await.unwrap(), format!("{base}/gone"));
    assert_eq!(state(&s).await, serde_json::json!(["Gone", "complete"]));
    s.forward().await.unwrap();
    s.forward().await.unwrap();
    assert_eq!(s.url().await.unwrap(), format!("{base}/a#x"));
    s.forward().await.unwrap();
    assert_eq!(s.url().await.unwrap(), format!("{base}/a#x"), "forward at the newest entry does nothing");

    // A refused connection fails the navigation, not the browser.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = s.goto(&format!("http://127.0.0.1:{closed}/")).await.unwrap_err();
    assert!(!e.is_fatal(), "{e}");
    assert!(e.to_string().contains("ERR_CONNECTION_REFUSED"), "{e}");
    s.goto(&format!("{base}/a")).await.unwrap();
    assert_eq!(state(&s).await, serde_json::json!(["A", "complete"]));

    // A page that does not load within the deadline is a timeout.
    let e = s.goto_within(&format!("{base}/hang"), Duration::from_millis(800)).await.unwrap_err();
    assert!(matches!(e, skillshift_worker::browser::BrowserError::Timeout { .. }), "{e}");

    s.close().await;
    driver.shutdown().await;
}

/// What tells a trajectory's steps whether the page moved since the last screenshot: the window's
/// scroll and any element's, the same string again once both are back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scroll_offsets_tell_a_scrolled_page_from_the_same_page_unmoved() {
    let base = serve().await;
    let driver = Driver::new(BrowserConfig::default());
    let s = Session::open(&driver).await.unwrap();
    s.goto(&format!("{base}/scroller")).await.unwrap();
    let top = s.scroll_offsets().await.expect("offsets");
    assert_eq!(s.scroll_offsets().await.as_deref(), Some(top.as_str()), "an unmoved page reads the same");

    act(&s, Action::Scroll { down: true }).await;
    let down = s.scroll_offsets().await.expect("offsets");
    assert_ne!(down, top, "the window scrolled");
    s.eval("document.getElementById('box').scrollTop = 50").await.unwrap();
    let inner = s.scroll_offsets().await.expect("offsets");
    assert_ne!(inner, down, "the box scrolled, the window did not");
    s.eval("document.getElementById('box').scrollTop = 0; scrollTo(0, 0)").await.unwrap();
    assert_eq!(s.scroll_offsets().await, Some(top), "both back where they were");

    s.close().await;
    driver.shutdown().await;
}

/// A page whose tree holds text that is not ASCII (sent by Chrome as UTF-16 over the pipe),
/// numbers, booleans and nested lists.
const MIXED: &str = r#"<!doctype html><title>Grüße — 東京 😀</title>
<h1>Café «crème»</h1><p>Ünïcödé and "quotes" and \back\slash</p>
<label>Qty <input type="number" value="3" min="1" max="9"></label>
<label><input type="checkbox" checked> Agree</label>
<select><option>α</option><option selected>β</option></select>
<details open><summary>More</summary><ul><li>one</li><li>two</li></ul></details>
<table><tr><th>k</th><th>v</th></tr><tr><td>π</td><td>3.14159</td></tr></table>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pipe_speaks_cbor_and_answers_as_the_websocket_does() {
    if std::env::var("SKILLSHIFT_DEVTOOLS").is_ok() {
        eprintln!("skipped: SKILLSHIFT_DEVTOOLS chooses another transport");
        return;
    }
    let app = axum::Router::new().route("/", get(|| async { Html(MIXED) }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    let driver = Driver::new(BrowserConfig::default());
    let s = Session::open(&driver).await.unwrap();
    assert_eq!(s.devtools_transport(), Some("pipe"), "the worker's own browser is spoken to over its pipe");
    s.goto(&format!("{base}/")).await.unwrap();

    // The same page read over the browser's WebSocket, from a second client attached to the same tab.
    let address = s.debugger_address().unwrap();
    let limit = Duration::from_secs(10);
    let ws = skillshift_worker::cdp::Connection::connect(
        &skillshift_worker::cdp::browser_ws_url(&address, limit).await.unwrap(),
        limit,
    )
    .await
    .unwrap();
    assert_eq!(ws.transport(), "websocket");
    let target = s.cdp("Target.getTargetInfo", serde_json::json!({})).await.unwrap()["targetInfo"]["targetId"].clone();
    let attached = ws
        .call(None, "Target.attachToTarget", &serde_json::json!({"targetId": target, "flatten": true}), limit)
        .await
        .unwrap();
    let ws_session = attached.read::<serde_json::Value>().unwrap()["sessionId"].as_str().unwrap().to_string();
    let over_ws = |method: &'static str, params: serde_json::Value| {
        let (ws, ws_session) = (&ws, ws_session.clone());
        async move { ws.call(Some(&ws_session), method, &params, limit).await.unwrap().read::<serde_json::Value>().unwrap() }
    };

    // Every answer the harness reads, equal to the letter: the tree (names, values, properties,
    // child lists), a script's value with every JSON type, and the document's text.
    let tree = s.cdp("Accessibility.getFullAXTree", serde_json::json!({})).await.unwrap();
    assert!(tree["nodes"].as_array().unwrap().len() > 30, "{tree}");
    assert_eq!(tree, over_ws("Accessibility.getFullAXTree", serde_json::json!({})).await);
    // The observation reads its nodes straight from the pipe's CBOR: the same nodes as from the
    // WebSocket's JSON text.
    let typed = skillshift_worker::axtree::fetch_tree(&s).await.unwrap();
    let text = ws.call(Some(&ws_session), "Accessibility.getFullAXTree", &serde_json::json!({}), limit).await.unwrap();
    assert_eq!(typed.nodes, skillshift_worker::axtree::AxTree::from_answer(&text).unwrap().nodes);
    assert!(typed.nodes.iter().any(|n| n.name.contains("東京")), "text that is not ASCII is in the tree");
    let expr = serde_json::json!({"expression": "[document.title, 1, -2, 2.5, 2 ** 40, true, null, {a: [document.querySelector('p').textContent]}]", "returnByValue": true});
    let value = s.cdp("Runtime.evaluate", expr.clone()).await.unwrap();
    assert_eq!(value, over_ws("Runtime.evaluate", expr).await);
    assert_eq!(value["result"]["value"][0], "Grüße — 東京 😀");
    // A command carrying text that is not ASCII reaches the page intact.
    s.eval("document.title = 'Ωmega \"q\" \\\\ 😀'").await.unwrap();
    assert_eq!(s.title().await.unwrap(), "Ωmega \"q\" \\ 😀");
    // Binary data (a screenshot) arrives as the bytes of a PNG.
    assert!(s.screenshot().await.unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));

    drop(ws);
    s.close().await;
    driver.shutdown().await;
}
