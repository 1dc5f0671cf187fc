//! `program_html` on real pages, against WebArena's own code: each case's page
//! is served by this test, read by the worker's scorer in headless Chromium,
//! and read by WebArena's `HTMLContentEvaluator` (libwebarena, in the venv of
//! `scripts/webarena-oracle/setup.sh`) through Playwright on the same Chromium
//! build. The verdicts must agree: page source (`''`), values of every type a
//! locator returns, throws, hidden and block text, `prep_actions`.
//!
//! Skipped, loudly, only when the package registry cannot be reached; under
//! CI (`CI` set) that is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use axum::extract::Path as UrlPath;
use axum::response::Html;
use axum::routing::get;
use serde_json::{json, Value};
use skillshift_common::evaluate::Verdict;
use skillshift_common::task::{Eval, Task};
use skillshift_common::Site;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::scorer;
use skillshift_worker::skill_runtime::Placeholders;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

const ISSUE: &str = r#"<!DOCTYPE html><html><head><title>Issue 7</title></head><body>
<h1 id="t">Fix the   login</h1><div id="state" class="badge">Closed</div>
<p id="desc">Tom &amp; Jerry<br>second line</p><input id="title" value="Hello &quot;world&quot;">
<input id="c" type="checkbox" checked><ul><li>a</li><li>b</li></ul><dl><dt>Milestone</dt><dd>v4.0</dd></dl>
<button id="go" onclick="document.querySelector('#state').textContent='Reopened'">Reopen</button>
<div id="hidden" style="display:none">secret</div><span id="num">42</span><span id="price">2.50</span>
<table><tr><td>x</td><td>y</td></tr></table></body></html>"#;

const TINY: &str = "<!DOCTYPE html><p>x</p>";

/// (page, locator, required_contents[, prep_actions])
fn cases() -> Vec<(&'static str, &'static str, Value, Vec<&'static str>)> {
    let ex = |s: &str| json!({"exact_match": s});
    let mi = |v: &[&str]| json!({"must_include": v});
    vec![
        ("issue", "", mi(&["Tom & Jerry"]), vec![]),
        ("issue", "", mi(&["<dt>Milestone</dt><dd>v4.0</dd>"]), vec![]),
        ("issue", "", mi(&["Milestone v4.0"]), vec![]),
        ("issue", "", mi(&["value=\"Hello \"world\"\""]), vec![]),
        ("tiny", "", ex("<!DOCTYPE html><html><head></head><body><p>x</p></body></html>"), vec![]),
        ("tiny", "", ex("<html><head></head><body><p>x</p></body></html>"), vec![]),
        ("issue", "document.querySelector('#state').outerText", ex("closed"), vec![]),
        ("issue", "document.querySelector('#desc').innerText", mi(&["Tom & Jerry\nsecond line"]), vec![]),
        ("issue", "document.querySelector('#desc').innerText", mi(&["Tom & Jerry second line"]), vec![]),
        ("issue", "document.querySelector('#t').innerText", ex("fix the login"), vec![]),
        ("issue", "document.querySelector('#t').textContent", ex("fix the   login"), vec![]),
        ("issue", "document.querySelector('#title').value", ex("hello \"world\""), vec![]),
        ("issue", "document.querySelector('#c').checked", ex("true"), vec![]),
        ("issue", "document.querySelectorAll('li').length", ex("2"), vec![]),
        ("issue", "[...document.querySelectorAll('li')].map(e => e.innerText)", ex("['a', 'b']"), vec![]),
        ("issue", "[...document.querySelectorAll('td')].map(e => e.innerText).join('|')", ex("x|y"), vec![]),
        ("issue", "document.querySelector('#missing').innerText", ex(""), vec![]),
        ("issue", "document.querySelector('#missing')", ex("none"), vec![]),
        ("issue", "document.querySelector('#state').dataset.nothing", ex("none"), vec![]),
        ("issue", "document.querySelector('#hidden').innerText", mi(&["secret"]), vec![]),
        ("issue", "document.querySelector('#price').innerText * 1", ex("2.5"), vec![]),
        ("issue", "document.querySelector('#num').innerText * 1", ex("42"), vec![]),
        (
            "issue",
            "document.title && ({a: 1, b: [true, null], c: undefined})",
            ex("{'a': 1, 'b': [true, none], 'c': none}"),
            vec![],
        ),
        (
            "issue",
            "document.querySelector('#state').outerText",
            ex("reopened"),
            vec!["document.querySelector('#go').click()"],
        ),
        (
            "issue",
            "document.querySelector('#state').outerText",
            ex("closed"),
            vec!["document.querySelector('#nope').click()", "document.querySelector('#go').click()"],
        ),
        ("issue", "document.title", mi(&["issue 7 |OR| nothing"]), vec![]),
        ("issue", "document.querySelector('#state')", ex("{}"), vec![]),
        ("issue", "document.querySelector('#state').outerText", ex("{}"), vec![]),
        ("issue", "[...document.querySelectorAll('li')]", ex("['ref: <node>', 'ref: <node>']"), vec![]),
        ("issue", "document.title * 1", ex("nan"), vec![]),
        ("issue", "document.title.length / 0", ex("inf"), vec![]),
        ("issue", "document.title && [1 / 0, -0, undefined]", ex("[inf, -0.0, none]"), vec![]),
        ("issue", "document.title && new Date(0)", ex("1970-01-01 00:00:00+00:00"), vec![]),
        ("issue", "document.title && new Date(1500)", ex("1970-01-01 00:00:01.500000+00:00"), vec![]),
        ("issue", "document.title.length", ex("7"), vec![]),
        ("issue", "document.nosuchthing.length", ex(""), vec![]),
        ("issue", "window.location.href", ex(""), vec![]),
    ]
}

async fn serve() -> String {
    let app = axum::Router::new().route(
        "/{page}",
        get(|UrlPath(page): UrlPath<String>| async move {
            Html(match page.as_str() {
                "issue" => ISSUE,
                _ => TINY,
            })
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

fn task(eval: Eval, url: &str) -> Task {
    Task {
        task_id: 0,
        sites: vec![Site::Gitlab.into()],
        require_login: false,
        storage_state: None,
        start_url: url.into(),
        geolocation: None,
        intent_template: String::new(),
        instantiation_dict: BTreeMap::new(),
        intent: String::new(),
        intent_template_id: 0,
        require_reset: false,
        eval,
        string_note: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn program_html_on_real_pages_agrees_with_webarena() {
    let Some((python, dir)) = common::webarena_oracle("webarena_browser_conformance") else { return };
    let base = serve().await;
    let cases: Vec<(String, String, Value)> = cases()
        .into_iter()
        .enumerate()
        .map(|(i, (page, locator, rc, prep))| {
            let mut check = json!({"url": "last", "locator": locator, "required_contents": rc});
            if !prep.is_empty() {
                check["prep_actions"] = json!(prep);
            }
            let eval = json!({"eval_types": ["program_html"], "reference_answers": null, "reference_url": "",
                              "program_html": [check]});
            (format!("browser-{i}"), format!("{base}/{page}"), eval)
        })
        .collect();
    let input = json!({"browser_cases": cases.iter().map(|(id, url, eval)| json!({"id": id, "url": url, "eval": eval})).collect::<Vec<_>>()});
    let oracle_out = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = Command::new(&python)
            .arg(root().join("scripts/webarena-oracle/oracle.py"))
            .env("NLTK_DATA", dir.join("nltk_data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the oracle");
        child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(oracle_out.status.success(), "the oracle failed");
    let theirs: Value = serde_json::from_slice(&oracle_out.stdout).unwrap();

    let driver = Arc::new(Driver::new(BrowserConfig::default()));
    let session = Session::open(&driver).await.unwrap();
    let mut disagreements = Vec::new();
    for ((id, url, eval), their) in cases.iter().zip(theirs["browser_cases"].as_array().unwrap()) {
        session.goto(url).await.unwrap();
        let t = task(serde_json::from_value(eval.clone()).unwrap(), url);
        let score = scorer::score(&session, &t, &Placeholders(vec![]), url, "", false).await.unwrap();
        let ours = match score.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Invalid(_) => "invalid",
        };
        if ours != their["verdict"].as_str().unwrap_or("?") {
            disagreements.push(format!(
                "{id} {}: ours {ours} ({:?}) / webarena {} {}",
                eval["program_html"][0]["locator"],
                score.details,
                their["verdict"],
                their["error"].as_str().unwrap_or("")
            ));
        }
    }
    session.close().await;
    let passing = theirs["browser_cases"].as_array().unwrap().iter().filter(|c| c["verdict"] == "pass").count();
    eprintln!(
        "webarena browser conformance: {}/{} cases agree ({passing} pass in WebArena)",
        cases.len() - disagreements.len(),
        cases.len()
    );
    assert!(passing >= 20, "too few passing cases to mean much: {passing}");
    assert!(disagreements.is_empty(), "{} disagreements:\n{}", disagreements.len(), disagreements.join("\n"));
}
