//! `program_html` on real pages, against WebArena's own code: each case's page
//! is served by this test, read by the worker's scorer in headless Chromium,
//! and read by WebArena's `HTMLContentEvaluator` (libwebarena, in the venv of
//! `scripts/webarena-oracle/setup.sh`) through Playwright on the same Chromium
//! build. The verdicts must agree: page source (`''`), values of every type a
//! locator returns, throws, hidden and block text, `prep_actions`, and checks
//! across pages on an agent's page with state of its own (a check's URL read in
//! a page of its own, `last` in the agent's, which scoring leaves as it was).
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
use skillshift_worker::tabs::Tabs;

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

/// Checks across pages, on an agent's page with state of its own (a value typed, not saved):
/// (the agent's setup, the checks). WebArena reads a check's URL in a new page and `last` in the
/// agent's, whatever came before it.
fn page_cases(base: &str) -> Vec<(Vec<&'static str>, Value)> {
    let typed = vec!["document.querySelector('#title').value = 'typed by the agent'"];
    let tiny = format!("{base}/tiny");
    let last = |locator: &str, rc: Value| json!({"url": "last", "locator": locator, "required_contents": rc});
    let at = |url: &str, locator: &str, rc: Value| json!({"url": url, "locator": locator, "required_contents": rc});
    let title = "document.querySelector('#title').value";
    vec![
        (
            typed.clone(),
            json!([
                at(&tiny, "", json!({"must_include": ["<p>x</p>"]})),
                last(title, json!({"exact_match": "typed by the agent"}))
            ]),
        ),
        (
            typed.clone(),
            json!([
                last(title, json!({"exact_match": "typed by the agent"})),
                at(&tiny, "document.title", json!({"exact_match": ""}))
            ]),
        ),
        (
            typed.clone(),
            json!([
                at(&tiny, "", json!({"must_include": ["<p>x</p>"]})),
                at(&format!("{base}/issue"), title, json!({"exact_match": "hello \"world\""})),
                last("document.title", json!({"must_include": ["Issue 7"]}))
            ]),
        ),
        (
            typed.clone(),
            json!([
                at(&tiny, "", json!({"must_include": ["<p>x</p>"]})),
                last(title, json!({"exact_match": "hello \"world\""}))
            ]),
        ),
        (
            vec![],
            json!([
                at(&tiny, "document.querySelector('#title').value", json!({"exact_match": ""})),
                last("document.querySelector('#state').outerText", json!({"exact_match": "closed"}))
            ]),
        ),
    ]
}

/// The context's pages once Chrome's list has caught up with a close (it answers before the tab is gone).
async fn open_tabs(session: &Session, tabs: &Tabs) -> usize {
    let mut n = 0;
    for _ in 0..100 {
        n = tabs.sync(session).await.unwrap().len();
        if n == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn program_html_on_real_pages_agrees_with_webarena() {
    let Some((python, dir)) = common::webarena_oracle("webarena_browser_conformance") else { return };
    let base = serve().await;
    let mut cases: Vec<(String, String, Vec<String>, Value)> = cases()
        .into_iter()
        .enumerate()
        .map(|(i, (page, locator, rc, prep))| {
            let mut check = json!({"url": "last", "locator": locator, "required_contents": rc});
            if !prep.is_empty() {
                check["prep_actions"] = json!(prep);
            }
            let eval = json!({"eval_types": ["program_html"], "reference_answers": null, "reference_url": "",
                              "program_html": [check]});
            (format!("browser-{i}"), format!("{base}/{page}"), Vec::new(), eval)
        })
        .collect();
    for (i, (setup, checks)) in page_cases(&base).into_iter().enumerate() {
        let eval = json!({"eval_types": ["program_html"], "reference_answers": null, "reference_url": "",
                          "program_html": checks});
        let setup = setup.into_iter().map(str::to_string).collect();
        cases.push((format!("pages-{i}"), format!("{base}/issue"), setup, eval));
    }
    let input = json!({"browser_cases": cases.iter().map(|(id, url, setup, eval)| json!({"id": id, "url": url, "setup": setup, "eval": eval})).collect::<Vec<_>>()});
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
    for ((id, url, setup, eval), their) in cases.iter().zip(theirs["browser_cases"].as_array().unwrap()) {
        session.goto(url).await.unwrap();
        for js in setup {
            session.eval(js).await.unwrap();
        }
        let t = task(serde_json::from_value(eval.clone()).unwrap(), url);
        let tabs = Tabs::adopt(&session).await.unwrap();
        let ending = scorer::Ending { final_url: url, answer: "", perturbed: false };
        let score = scorer::score(&session, &tabs, &t, &Placeholders(vec![]), ending).await.unwrap();
        // Scoring leaves the agent's page current and as it was, and no page of its own open.
        assert_eq!(&session.url().await.unwrap(), url, "{id}: the agent's tab was navigated");
        if !setup.is_empty() {
            let title = session.eval("document.querySelector('#title').value").await.unwrap();
            assert_eq!(title, json!("typed by the agent"), "{id}: the agent's page was reloaded");
        }
        assert_eq!(open_tabs(&session, &tabs).await, 1, "{id}: a page of the scorer's was left open");
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

/// A perturbed attempt's `last` check reads the final URL loaded afresh (the site itself, not
/// the page as the agent's perturbed tab shows it), in a page of the scorer's own: the agent's
/// page keeps what was done in it, for its screenshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_perturbed_attempts_last_page_is_read_afresh_and_left_as_it_was() {
    let base = serve().await;
    let url = format!("{base}/issue");
    let driver = Arc::new(Driver::new(BrowserConfig::default()));
    let session = Session::open(&driver).await.unwrap();
    session.goto(&url).await.unwrap();
    session.eval("document.querySelector('#state').textContent = 'Perturbed'").await.unwrap();
    let check = |rc: &str| {
        json!({"eval_types": ["program_html"], "reference_answers": null, "reference_url": "", "program_html": [
            {"url": "last", "locator": "document.querySelector('#state').outerText", "required_contents": {"exact_match": rc}}]})
    };
    let tabs = Tabs::adopt(&session).await.unwrap();
    let mut verdicts = Vec::new();
    for (perturbed, rc) in [(true, "closed"), (true, "perturbed"), (false, "perturbed")] {
        let t = task(serde_json::from_value(check(rc)).unwrap(), &url);
        let ending = scorer::Ending { final_url: &url, answer: "", perturbed };
        verdicts.push(scorer::score(&session, &tabs, &t, &Placeholders(vec![]), ending).await.unwrap().verdict);
        assert_eq!(session.url().await.unwrap(), url);
        assert_eq!(session.eval("document.querySelector('#state').textContent").await.unwrap(), json!("Perturbed"));
        assert_eq!(open_tabs(&session, &tabs).await, 1);
    }
    session.close().await;
    assert_eq!(verdicts, [Verdict::Pass, Verdict::Fail, Verdict::Pass]);
}
