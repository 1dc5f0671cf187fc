//! WebArena's actions: the parser held to WebArena's own `create_id_based_action`
//! (run from libwebarena in the oracle venv of `scripts/webarena-oracle/setup.sh`),
//! and on real headless Chromium: appending `type` with its enter flag, `press`
//! with Playwright's key names and `Meta` read as `Control` off macOS, the tabs
//! (`new_tab`, `tab_focus`, `close_tab`, tabs a page opens, ` |AND| ` start
//! URLs) with WebArena's tab line, and the early stop after three unparseable
//! actions in a row.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::response::Html;
use axum::routing::get;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use skillshift_common::{Condition, Outcome, Site, Uid, Version};
use skillshift_worker::action::Action;
use skillshift_worker::actions::{webarena_key_comb, ActError};
use skillshift_worker::agent::{Agent, AgentError, Move, Observation, Reply, TaskBrief, Usage};
use skillshift_worker::attempt::{run_attempt, RunContext, TaskSource};
use skillshift_worker::axtree::Snapshot;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::tabs::{self, Tabs};
use skillshift_worker::CancellationToken;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Action strings as agents write them: WebArena's own forms, the action-history
/// form, lenient spellings, and malformed ones.
const ACTIONS: &[&str] = &[
    "click [12]",
    "click [12] where [12] is link 'Issues'",
    "click[7]",
    "  click [3]  ",
    "click [x]",
    "click",
    "click [1",
    "Click [3]",
    "click [12] [13]",
    "hover [3]",
    "hover [3] where [3] is button 'Save'",
    "hover",
    "type [5] [hello world] [0]",
    "type [5] [hello world] [1]",
    "type [5] [hello world]",
    "type [5] [hello] [2]",
    "type [1] [a] [0] where [1] is textbox 'Search'",
    "type [5] [abc] where [5] is textbox 'Search'",
    "type [5] [[bracketed]] [0]",
    "type [5] [] [0]",
    "type[5][x][0]",
    "type [x] [a] [0]",
    "press [Enter]",
    "press [enter]",
    "press [Meta+a]",
    "press [meta+a]",
    "press [Control+a]",
    "press [control+a]",
    "press [f5]",
    "press [ArrowLeft]",
    "press [arrowdown]",
    "press [Shift+Tab]",
    "press",
    "scroll [down]",
    "scroll [up]",
    "scroll down",
    "scroll up",
    "scroll [downward]",
    "scroll [left]",
    "scroll",
    "goto [http://localhost:8023/a?b=1]",
    "goto [http://x/[y]]",
    "goto",
    "go_back",
    "go_back [now]",
    "go_forward",
    "new_tab",
    "new_tab please",
    "tab_focus [0]",
    "tab_focus [2]",
    "tab_focus",
    "tab_focus [one]",
    "close_tab",
    "stop",
    "stop [42]",
    "stop [a] [b]",
    "stop [The answer is [42]]",
    "stop []",
    "stop [ N/A ]",
    "jump [3]",
    "none",
    "",
    "   ",
];

/// Our parse in the oracle's shape.
fn ours(text: &str) -> Value {
    match Action::parse(text) {
        Err(_) => json!({"kind": "invalid"}),
        Ok(a) => match a {
            Action::Click { id } => json!({"kind": "click", "id": id}),
            Action::Hover { id } => json!({"kind": "hover", "id": id}),
            Action::Type { id, text, enter } => {
                json!({"kind": "type", "id": id, "typed": format!("{text}{}", if enter { "\n" } else { "" })})
            }
            Action::Press { keys } => json!({"kind": "press", "keys": webarena_key_comb(&keys)}),
            Action::Scroll { down } => json!({"kind": "scroll", "direction": if down { "down" } else { "up" }}),
            Action::Goto { url } => json!({"kind": "goto", "url": url}),
            Action::TabFocus { index } => json!({"kind": "tab_focus", "index": index}),
            Action::Stop { answer } => json!({"kind": "stop", "answer": answer}),
            Action::NewTab => json!({"kind": "new_tab"}),
            Action::CloseTab => json!({"kind": "close_tab"}),
            Action::GoBack => json!({"kind": "go_back"}),
            Action::GoForward => json!({"kind": "go_forward"}),
            Action::Invalid { .. } | Action::Fill { .. } => json!({"kind": "invalid"}),
        },
    }
}

#[test]
fn the_parser_agrees_with_webarenas_create_id_based_action() {
    let Some((python, _)) = common::webarena_oracle("the action parser conformance") else { return };
    let mut child = Command::new(&python)
        .arg(root().join("scripts/webarena-oracle/actions.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting the action oracle");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(serde_json::to_string(ACTIONS).unwrap().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the action oracle failed");
    let theirs: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the oracle prints JSON");
    assert_eq!(theirs.len(), ACTIONS.len());
    let mut disagreements = Vec::new();
    let mut crashes = 0;
    for (text, theirs) in ACTIONS.iter().zip(&theirs) {
        if theirs["kind"] == "crash" {
            // WebArena's parser raised something other than a parse error (`"".split()[0]`):
            // WebArena's agent would not survive it; here it is an invalid action.
            crashes += 1;
            assert_eq!(ours(text), json!({"kind": "invalid"}), "{text:?}: {theirs}");
            continue;
        }
        let mine = ours(text);
        if &mine != theirs {
            disagreements.push(format!("{text:?}: ours {mine}, WebArena's {theirs}"));
        }
    }
    eprintln!("{} action strings compared with WebArena's parser ({crashes} crash WebArena's)", ACTIONS.len());
    assert!(disagreements.is_empty(), "{} disagreements:\n{}", disagreements.len(), disagreements.join("\n"));
}

const HOME: &str = r#"<!doctype html><html><head><title>Home</title></head><body>
<form action="/search" method="get"><input id="q" name="q" aria-label="Query" value="abc"></form>
<textarea id="notes" aria-label="Notes">line</textarea>
<a href="/other" target="_blank">Open other</a>
<script>
window.keys = [];
addEventListener("keydown", e => keys.push(e.key + (e.ctrlKey ? "+ctrl" : "") + (e.metaKey ? "+meta" : "") + (e.shiftKey ? "+shift" : "")));
</script></body></html>"#;

fn pages() -> axum::Router {
    axum::Router::new()
        .route("/", get(|| async { Html(HOME) }))
        .route("/other", get(|| async { Html("<title>Other</title><main><h1>Other page</h1></main>") }))
        .route("/b", get(|| async { Html("<title>Bee</title><main><h1>B</h1></main>") }))
        .route(
            "/search",
            get(|q: axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                Html(format!(
                    "<title>Results for {}</title><main><h1>Results</h1></main>",
                    q.get("q").cloned().unwrap_or_default()
                ))
            }),
        )
}

/// The printed id of the first line of the observation containing `needle`.
fn id_of(snap: &Snapshot, needle: &str) -> u64 {
    let line =
        snap.text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no '{needle}' in:\n{}", snap.text));
    let l = line.trim_start();
    l[1..l.find(']').unwrap()].parse().unwrap()
}

async fn act(s: &Session, tabs: &Tabs, text: &str) -> Result<Snapshot, String> {
    let snap = tabs::observe(s, tabs).await.unwrap();
    let action = Action::parse_lenient(text);
    match tabs::execute(s, tabs, &action, |i| snap.ids.get(&i).copied()).await {
        Ok(()) => Ok(tabs::observe(s, tabs).await.unwrap()),
        Err(ActError::Failed(m)) => Err(m),
        Err(ActError::Fatal(e)) => panic!("{text}: the browser failed: {e}"),
    }
}

fn header(snap: &Snapshot) -> &str {
    snap.text.lines().next().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_appends_and_press_knows_playwrights_keys_with_meta_as_control() {
    let base = common::serve(pages()).await;
    let driver = Driver::new(BrowserConfig::default());
    let s = Session::open(&driver).await.unwrap();
    s.goto(&format!("{base}/")).await.unwrap();
    let tabs = Tabs::adopt(&s).await.unwrap();
    let snap = tabs::observe(&s, &tabs).await.unwrap();

    // `type` clicks the field and types after what it holds; [0] presses no Enter.
    let q = id_of(&snap, "textbox 'Query'");
    act(&s, &tabs, &format!("type [{q}] [xyz] [0] where [{q}] is textbox 'Query'")).await.unwrap();
    assert_eq!(s.eval("document.querySelector('#q').value").await.unwrap(), json!("abcxyz"));
    let notes = id_of(&snap, "textbox 'Notes'");
    act(&s, &tabs, &format!("type [{notes}] [ more] [0]")).await.unwrap();
    assert_eq!(s.eval("document.querySelector('#notes').value").await.unwrap(), json!("line more"));

    // Meta+a off macOS is Control+a: it selects the field's whole text.
    s.eval("document.querySelector('#q').focus(); keys.length = 0").await.unwrap();
    act(&s, &tabs, "press [Meta+a]").await.unwrap();
    let sel = s
        .eval("[document.querySelector('#q').selectionStart, document.querySelector('#q').selectionEnd, keys]")
        .await
        .unwrap();
    assert_eq!(sel, json!([0, 6, ["Control+ctrl", "a+ctrl"]]), "Meta is pressed as Control on Linux");

    // Playwright's names: codes with Shift give the shifted character, `Backquote` types a backquote.
    s.eval("document.querySelector('#q').value = ''; keys.length = 0").await.unwrap();
    act(&s, &tabs, "press [Shift+KeyA]").await.unwrap();
    act(&s, &tabs, "press [backquote]").await.unwrap();
    act(&s, &tabs, "press [Digit5]").await.unwrap();
    act(&s, &tabs, "press [ArrowLeft]").await.unwrap();
    act(&s, &tabs, "press [%]").await.unwrap();
    assert_eq!(s.eval("document.querySelector('#q').value").await.unwrap(), json!("A`%5"));
    let keys = s.eval("keys").await.unwrap();
    assert_eq!(keys, json!(["Shift+shift", "A+shift", "`", "5", "ArrowLeft", "%"]));
    // WebArena leaves `control` unmapped and Playwright's names are case-sensitive.
    let e = act(&s, &tabs, "press [control+a]").await.unwrap_err();
    assert_eq!(e, "Unknown key: \"control\"");

    // The enter flag (default 1) presses Enter: the form is submitted.
    let snap = tabs::observe(&s, &tabs).await.unwrap();
    let q = id_of(&snap, "textbox 'Query'");
    let after = act(&s, &tabs, &format!("type [{q}] [!]")).await.unwrap();
    assert_eq!(after.title, "Results for A`%5!");
    s.close().await;
    driver.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_open_focus_and_close_as_webarenas_pages_do() {
    let base = common::serve(pages()).await;
    let driver = Driver::new(BrowserConfig::default());
    let s = Session::open(&driver).await.unwrap();
    s.goto(&format!("{base}/")).await.unwrap();
    let tabs = Tabs::adopt(&s).await.unwrap();
    let snap = tabs::observe(&s, &tabs).await.unwrap();
    assert_eq!(header(&snap), "Tab 0 (current): Home");

    // new_tab opens a blank tab and makes it current.
    let snap = act(&s, &tabs, "new_tab").await.unwrap();
    assert_eq!(header(&snap), "Tab 0: Home | Tab 1 (current): ");
    let snap = act(&s, &tabs, &format!("goto [{base}/other]")).await.unwrap();
    assert_eq!(header(&snap), "Tab 0: Home | Tab 1 (current): Other");

    // tab_focus [i] makes tab i current; past the list it is an action error.
    let snap = act(&s, &tabs, "tab_focus [0]").await.unwrap();
    assert_eq!(header(&snap), "Tab 0 (current): Home | Tab 1: Other");
    assert_eq!(s.title().await.unwrap(), "Home", "actions and the scorer read the current tab");
    let e = act(&s, &tabs, "tab_focus [5]").await.unwrap_err();
    assert!(e.contains("no tab 5"), "{e}");

    // A tab the page opens joins the end of the list without becoming current.
    let link = id_of(&snap, "link 'Open other'");
    let snap = act(&s, &tabs, &format!("click [{link}]")).await.unwrap();
    for _ in 0..50 {
        if tabs.sync(&s).await.unwrap().len() == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let snap = tabs::observe(&s, &tabs).await.map(|n| if header(&n).contains("Tab 2") { n } else { snap }).unwrap();
    assert!(header(&snap).starts_with("Tab 0 (current): Home | Tab 1: Other | Tab 2: "), "{}", header(&snap));

    // close_tab closes the current tab; the last one becomes current.
    let snap = act(&s, &tabs, "close_tab").await.unwrap();
    assert_eq!(tabs.sync(&s).await.unwrap().len(), 2);
    assert!(header(&snap).starts_with("Tab 0: Other | Tab 1 (current): "), "{}", header(&snap));
    act(&s, &tabs, "close_tab").await.unwrap();
    let snap = act(&s, &tabs, "close_tab").await.unwrap();
    // Closing the only tab leaves a blank one, and the browser goes on.
    assert_eq!(header(&snap), "Tab 0 (current): ");
    let snap = act(&s, &tabs, &format!("goto [{base}/b]")).await.unwrap();
    assert_eq!(header(&snap), "Tab 0 (current): Bee");
    s.close().await;
    driver.shutdown().await;
}

/// Plays a fixed list of action strings (as a `cmd:` agent sends them) and keeps what it saw.
struct Scripted {
    moves: Vec<&'static str>,
    seen: Arc<Mutex<Vec<Observation>>>,
}

impl Agent for Scripted {
    fn start(&mut self, _brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        let text = self.moves.get(obs.step as usize).copied().unwrap_or("stop [out of moves]");
        self.seen.lock().unwrap().push(obs);
        Box::pin(async move { Ok(Reply { mv: Move::Action(Action::parse_lenient(text)), skill_reports: vec![] }) })
    }
    fn usage(&self) -> Usage {
        Usage::default()
    }
}

async fn run_scripted(start: &str, moves: Vec<&'static str>) -> (skillshift_common::Record, Vec<Observation>) {
    let base = common::serve(pages()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut task = common::answer_task(0, "/", "kiwi");
    task.start_url = start.to_string();
    common::write_tasks(dir.path(), &[task]);
    let ctx = RunContext::new(common::arc(common::TestSites::new(base)), TaskSource::Dir(dir.path().into()), "test");
    let driver = Driver::new(BrowserConfig::default());
    let spec = common::spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src, 1, 60_000, None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent_seen = seen.clone();
    let agent = Box::new(move |_: &skillshift_common::task::Task| -> Result<Box<dyn Agent>, AgentError> {
        Ok(Box::new(Scripted { moves, seen: agent_seen }))
    });
    let r = run_attempt(&ctx, &driver, &spec, agent, None, CancellationToken::new()).await;
    driver.shutdown().await;
    let seen = seen.lock().unwrap().clone();
    (r, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_unparseable_actions_in_a_row_stop_the_attempt_as_webarena_does() {
    let (r, seen) = run_scripted(
        "__GITLAB__/",
        vec![
            "click me",
            "scroll [down]",
            "jump [1]",
            "click [x]",
            "type [5] [abc] where [5] is textbox",
            "stop [kiwi]",
        ],
    )
    .await;
    common::validate(std::slice::from_ref(&r));
    assert_eq!(r.outcome, Some(Outcome::Failure), "{r:?}");
    assert_eq!(r.steps, Some(5), "a parsed action in between restarts the count");
    assert_eq!(r.answer.as_deref(), Some("Early stop: Failed to parse actions for 3 times"));
    let errors: Vec<Option<&str>> = seen.iter().map(|o| o.last_action_error.as_deref()).collect();
    assert_eq!(errors[0], None);
    assert!(errors[1].unwrap().contains("invalid action"), "{errors:?}");
    assert_eq!(errors[2], None, "scroll [down] worked");
    assert!(errors[3].is_some() && errors[4].is_some(), "{errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn and_joined_start_urls_open_a_tab_each_with_the_first_current() {
    let (r, seen) = run_scripted("__GITLAB__/ |AND| __GITLAB__/b", vec!["tab_focus [1]", "stop [kiwi]"]).await;
    assert_eq!(r.outcome, Some(Outcome::Success), "{r:?}");
    assert_eq!(seen[0].axtree.lines().next(), Some("Tab 0 (current): Home | Tab 1: Bee"));
    assert_eq!(seen[0].title, "Home");
    assert_eq!(seen[1].axtree.lines().next(), Some("Tab 0: Home | Tab 1 (current): Bee"));
    assert_eq!(seen[1].last_action_error, None);
}
