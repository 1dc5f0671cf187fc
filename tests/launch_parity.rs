//! Pages held to WebArena's own browser where Chromium's launch flags would let them differ: each
//! page is opened by our run loop's path (`tabs::execute` with WebArena's action text, then
//! `tabs::observe`, in real headless Chromium) and by WebArena's `ScriptBrowserEnv` on Playwright
//! (`scripts/webarena-oracle/observe.py`, libwebarena's own actions), and the two observations must
//! say the same of how the page came to be. Both browsers a worker may run are held to it: the
//! headless shell (the default) and the full Chromium (`--headless=new`, when the shell is not
//! installed or `SKILLSHIFT_CHROMIUM` names it).
//! * `go_back`: Playwright launches Chromium without the back-forward cache, so WebArena's `go_back`
//!   loads the page anew: its scripts run again and what the agent did to it is gone. With the
//!   cache, the full Chromium thaws the page as it was left (the headless shell never caches). The
//!   page says which happened (`pageshow`'s `persisted`).
//! * A lazy frame (`<iframe loading=lazy>`) 20,000 px below the fold, past any distance at which
//!   Chromium loads one early: WebArena's page leaves it unloaded (Playwright's `LazyFrameLoading`
//!   off does not change that on this Chromium), and so must ours. The page says whether the frame
//!   has loaded, so a difference of viewport or of loading rule between the two browsers shows.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test crate: a failed unwrap is a failed test

#[path = "support/oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use skillshift_worker::action::Action;
use skillshift_worker::browser::{BrowserConfig, Driver, Session, FULL_CHROMIUM, HEADLESS_SHELL};
use skillshift_worker::tabs::{self, Tabs};

/// Serves `/a?side=S`, which says how it was shown and how many times it was sent to side S, `/b`,
/// `/lazy` (a frame far below the fold, which says when the frame has loaded) and `/inner` (the
/// frame). Returns the base URL.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sent: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let sent = sent.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).map(|n| n == 0).unwrap_or(true) || h == "\r\n" {
                        break;
                    }
                }
                let body = match target.split_once('?') {
                    Some(("/a", query)) => {
                        let n = {
                            let mut sent = sent.lock().unwrap();
                            let n = sent.entry(query.to_string()).or_default();
                            *n += 1;
                            *n
                        };
                        format!(
                            "<!doctype html><title>Page A</title><main><h1>Page A</h1>\
                             <p>sent {n} times</p><p id=shown>not shown yet</p><a href=/b>to B</a></main>\
                             <script>addEventListener('pageshow', e => {{ \
                             document.getElementById('shown').textContent = \
                             e.persisted ? 'thawed from the back-forward cache' : 'loaded anew'; }});</script>"
                        )
                    }
                    _ if target.starts_with("/lazy") => "<!doctype html><title>Lazy</title><main>\
                         <p id=frame>frame not loaded</p><div style='height: 20000px'></div>\
                         <iframe loading=lazy src=/inner \
                         onload=\"document.getElementById('frame').textContent = 'frame loaded'\"></iframe></main>"
                        .to_string(),
                    _ if target.starts_with("/inner") => "<!doctype html><title>Inner</title><p>inner</p>".to_string(),
                    _ => "<!doctype html><title>Page B</title><main><h1>Page B</h1></main>".to_string(),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    format!("http://{addr}")
}

/// The text lines of an observation (its `StaticText` nodes), ids left out: what the pages here
/// say. WebArena's InlineTextBox lines, which we do not print, are a counted departure
/// (tests/observation_parity.rs).
fn shown(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start_matches('\t').split_once(' ').map(|(_, rest)| rest))
        .filter(|l| l.starts_with("StaticText '"))
        .map(str::to_string)
        .collect()
}

/// Our run loop's path on browser `chromium`: each of WebArena's `actions`, observed after each.
async fn ours(chromium: &str, actions: &[String]) -> Vec<String> {
    let driver = Driver::new(BrowserConfig { chromium: chromium.into(), ..BrowserConfig::default() });
    let session = Session::open(&driver).await.expect("opening a browser session");
    let tabs = Tabs::adopt(&session).await.expect("adopting the tab");
    let mut texts = Vec::new();
    for step in actions {
        let action = Action::parse(step).expect("a WebArena action");
        tabs::execute(&session, &tabs, &action, |_| None).await.unwrap_or_else(|e| panic!("{step}: {e}"));
        texts.push(tabs::observe(&session, &tabs).await.expect("observing").text);
    }
    session.close().await;
    driver.shutdown().await;
    texts
}

fn oracle_python() -> Option<PathBuf> {
    oracle::venv_python("webarena-oracle", "SKILLSHIFT_ORACLE_DIR", "launch_parity", "WebArena's browser_env")
}

/// WebArena's observations of `pages` (observe.py's page list: one group, one browser).
async fn theirs(python: PathBuf, pages: Value) -> Vec<String> {
    let request = json!({"groups": [{"pages": pages}]});
    let out = tokio::task::spawn_blocking(move || oracle::observe(&python, &request)).await.unwrap();
    out.iter()
        .map(|o| o["text"].as_str().unwrap_or_else(|| panic!("WebArena could not observe a page: {o}")).to_string())
        .collect()
}

/// Ours on both browsers, each visit's text lines against WebArena's (`theirs`).
async fn assert_ours_say_the_same(base: &str, actions: impl Fn(&str) -> Vec<String>, theirs: &[String]) {
    for chromium in [HEADLESS_SHELL, FULL_CHROMIUM] {
        assert!(Path::new(chromium).exists(), "{chromium} is not installed: run scripts/install-deps.sh");
        let side = chromium.rsplit('/').next().unwrap_or(chromium);
        let ours = ours(chromium, &actions(side)).await;
        assert_eq!(ours.len(), theirs.len(), "one observation per action");
        for (i, (o, w)) in ours.iter().zip(theirs).enumerate() {
            assert_eq!(shown(o), shown(w), "{chromium} on {base}, observation {i}: ours\n{o}\nWebArena's\n{w}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_back_loads_the_page_anew_as_webarenas_does() {
    let Some(python) = oracle_python() else { return };
    let base = serve();
    let pages = json!([
        {"key": "a", "url": format!("{base}/a?side=webarena")},
        {"key": "b", "url": format!("{base}/b")},
        {"key": "back", "action": "go_back"},
    ]);
    let theirs = theirs(python, pages).await;
    // The peer itself, first: its go_back loads page A again (from the HTTP cache: the server sends
    // it once either way, so only the page's own `pageshow` tells the two apart).
    assert!(shown(&theirs[2]).contains(&"StaticText 'loaded anew'".to_string()), "WebArena's go_back:\n{}", theirs[2]);
    let actions =
        |side: &str| vec![format!("goto [{base}/a?side={side}]"), format!("goto [{base}/b]"), "go_back".to_string()];
    assert_ours_say_the_same(&base, actions, &theirs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_frame_below_the_fold_waits_as_in_webarena() {
    let Some(python) = oracle_python() else { return };
    let base = serve();
    // The first page is WebArena's start page (a reset): the lazy page is opened by its goto, as ours is.
    let pages = json!([{"key": "b", "url": format!("{base}/b")}, {"key": "lazy", "url": format!("{base}/lazy")}]);
    let theirs = theirs(python, pages).await;
    let lazy = shown(&theirs[1]);
    assert!(lazy.contains(&"StaticText 'frame not loaded'".to_string()), "WebArena's page:\n{}", theirs[1]);
    let actions = |_: &str| vec![format!("goto [{base}/b]"), format!("goto [{base}/lazy]")];
    assert_ours_say_the_same(&base, actions, &theirs).await;
}
