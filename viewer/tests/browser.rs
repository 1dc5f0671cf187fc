//! The viewer in real headless Chromium: from the index to a failing
//! tgt-exec attempt, checking its steps, its failure category, the failing
//! skill sub-step, the marked perturbation, the screenshot, the escaping of
//! hostile text and the side-by-side view. (The README's picture comes from
//! the root package's `tests/view_browser.rs`, over a real `local` run.)
//!
//! The export is hand-built with the project's types (tests/common); its one
//! screenshot is a real PNG Chromium takes of a small page first.

mod common;
use common::wait_for;

use std::sync::Arc;

use serde_json::Value;
use skillshift_viewer::{router, ExportSource};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

async fn serve(app: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    format!("http://{addr}")
}

async fn text(s: &Session, js: &str) -> String {
    s.eval(js).await.expect("eval").as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_the_index_to_a_failing_tgt_exec_attempt_in_chromium() {
    let cfg = BrowserConfig { window: (1280, 1500), ..BrowserConfig::default() };
    let driver = Driver::new(cfg);
    let s = Session::open(&driver).await.expect("a headless Chromium session");

    // A real screenshot for the export, of a page standing in for the site.
    let site = serve(axum::Router::new().route(
        "/",
        axum::routing::get(|| async {
            axum::response::Html("<h1>Tickets</h1><p>No element named 'New issue' here.</p><button>New ticket</button>")
        }),
    ))
    .await;
    s.goto(&site).await.expect("open the stand-in page");
    let png = s.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");

    let dir = tempfile::tempdir().expect("tempdir");
    let sha = common::write_export(dir.path(), &png);
    let viewer = serve(router(Arc::new(ExportSource::open(dir.path()).expect("open export")), Some("tok"))).await;

    // Index -> treatment ASI.
    s.goto(&format!("{viewer}/?token=tok")).await.expect("open the viewer");
    wait_for(&s, "the sweeps table", "!!document.querySelector('#sweeps .treatment-link')").await;
    assert_eq!(text(&s, "document.querySelector('#sweeps td').textContent").await, common::SWEEP);
    s.eval("[...document.querySelectorAll('.treatment-link')].find(e => e.textContent === 'ASI').click()")
        .await
        .expect("click ASI");

    // The grid -> the gitlab tgt-exec cell.
    wait_for(&s, "the grid", "document.querySelectorAll('#grid td.cell').length === 18").await;
    let cell = "document.querySelector('td.cell[data-site=\"gitlab\"][data-condition=\"tgt-exec\"]')";
    let shown = text(&s, &format!("{cell}.innerText")).await;
    assert!(shown.contains("0.00") && shown.contains("0/2 units, 1 invalid"), "{shown}");
    assert!(shown.contains("skill_failure 1"), "{shown}");
    s.eval(&format!("{cell}.querySelector('a').click()")).await.expect("click the cell");

    // The cell's attempts, filtered to the skill failures.
    wait_for(&s, "the attempts", "document.querySelectorAll('#attempts tr.attempt').length === 3").await;
    s.eval(
        "const c = document.getElementById('category'); c.value = 'skill_failure'; \
         c.dispatchEvent(new Event('change'))",
    )
    .await
    .expect("filter");
    wait_for(&s, "the filtered attempts", "document.querySelectorAll('#attempts tr.attempt').length === 1").await;
    s.eval("document.querySelector('#attempts .attempt-link').click()").await.expect("click the attempt");

    // The attempt: its steps, category, failing sub-step, marked relabel, evidence and screenshot.
    wait_for(&s, "the steps", "document.querySelectorAll('.step').length === 2").await;
    wait_for(
        &s,
        "the screenshot",
        "(() => { const i = document.querySelector('.shot img'); return !!i && i.complete && i.naturalWidth > 0; })()",
    )
    .await;
    assert_eq!(text(&s, "document.querySelector('.category').textContent").await, "skill_failure");
    let failed = text(&s, "document.querySelector('#step-2 .substeps tr.failed').innerText").await;
    assert!(failed.contains("click") && failed.contains("New issue"), "{failed}");
    assert_eq!(text(&s, "document.querySelector('#step-1 .obs .perturbed').textContent").await, "[2] link 'Tickets'");
    let evidence = text(&s, "document.querySelector('.evidence').innerText").await;
    assert!(evidence.contains("program_html") && evidence.contains("no such issue"), "{evidence}");
    let width = s.eval("document.querySelector('.shot img').naturalWidth").await.expect("width");
    assert_eq!(width.as_u64(), Some(1280));
    let src = text(&s, "document.querySelector('.shot img').getAttribute('src')").await;
    assert!(src.contains(&sha) && src.contains("token=tok"), "{src}");
    // The network panel beside each step: its requests with method, status and URL, the POST highlighted;
    // the requests before step 1 above the steps.
    let step1 = text(&s, "document.querySelector('#step-1 .net').innerText").await;
    assert!(
        step1.contains("2 requests") && step1.contains("/project/tickets") && !step1.contains("not GET"),
        "{step1}"
    );
    let write = text(&s, "document.querySelector('#step-2 .net tr.write').innerText").await;
    assert!(write.contains("POST") && write.contains("422") && write.contains("<script>alert(2)</script>"), "{write}");
    assert_eq!(s.eval("document.querySelectorAll('.net tr.write').length").await.expect("count").as_u64(), Some(1));
    let beside = s
        .eval("(() => { const m = document.querySelector('#step-2 .step-main').getBoundingClientRect();                const n = document.querySelector('#step-2 .net').getBoundingClientRect();                return n.left >= m.right && n.top < m.bottom; })()")
        .await
        .expect("layout");
    assert_eq!(beside, Value::Bool(true), "the panel sits beside the step, not below it");
    let before = text(&s, "document.querySelector('.net-before').innerText").await;
    assert!(before.contains("before step 1: 1 request"), "{before}");
    assert!(text(&s, "document.getElementById('network-total').textContent").await.contains("4 requests, 3 more"));
    // Hostile text from the trajectory is shown as text, never run or parsed as HTML.
    assert_eq!(s.eval("document.querySelectorAll('script').length").await.expect("count").as_u64(), Some(1));
    assert!(text(&s, "document.body.innerText").await.contains("Open a new issue titled <b>Bug</b>"));

    let compare = text(&s, "document.querySelector('p.compare').innerText").await;
    assert!(
        compare.contains("side by side: src vs tgt-exec") && compare.contains("side by side with CONTROL"),
        "{compare}"
    );
    // The same unit side by side, src against tgt-exec.
    s.eval("[...document.querySelectorAll('a')].find(a => a.textContent.startsWith('side by side')).click()")
        .await
        .expect("click side by side");
    wait_for(&s, "two sides", "document.querySelectorAll('.pair .side').length === 2").await;
    let sides =
        text(&s, "[...document.querySelectorAll('.pair .side-title')].map(h => h.textContent).join(' | ')").await;
    assert_eq!(sides, "ASI · src | ASI · tgt-exec");
    s.eval("history.back()").await.expect("back");
    wait_for(&s, "the attempt again", "document.querySelectorAll('.step').length === 2").await;
    wait_for(
        &s,
        "the screenshot again",
        "(() => { const i = document.querySelector('.shot img'); return !!i && i.complete && i.naturalWidth > 0; })()",
    )
    .await;

    s.close().await;
    driver.shutdown().await;
}
