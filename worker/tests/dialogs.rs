//! JavaScript dialogs in real headless Chromium: a page that calls `alert()`
//! on load, or `confirm()`, `prompt()` or `beforeunload` on the agent's
//! click, ends its attempt normally. Each dialog is answered as WebArena's
//! Playwright environment answers it (`beforeunload` accepted, the rest
//! dismissed) and noted in the step's `dialogs`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::response::Html;
use axum::routing::get;
use futures::future::BoxFuture;
use skillshift_common::trajectory::DialogNote;
use skillshift_common::{Condition, Outcome, Site, Uid, Version};
use skillshift_worker::action::Action;
use skillshift_worker::agent::{Agent, AgentError, Move, Observation, Reply, TaskBrief, Usage};
use skillshift_worker::attempt::{run_attempt_traced, RunContext, TaskSource};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::CancellationToken;

fn pages() -> axum::Router {
    axum::Router::new()
        .route(
            "/alert",
            get(|| async {
                Html("<title>Alert</title><main><h1>Alerting page</h1></main><script>alert('Welcome, kiwi')</script>")
            }),
        )
        .route(
            "/confirm",
            get(|| async {
                Html(
                    "<title>Confirm</title><main><h1>Confirming page</h1>\
                     <button onclick=\"document.querySelector('#out').textContent = \
                     (confirm('Delete the kiwi?') ? 'deleted' : 'kept') + ' ' + prompt('Its name?')\">Delete</button>\
                     <p id=out>untouched</p></main>",
                )
            }),
        )
        .route(
            "/leave",
            get(|| async {
                Html(
                    "<title>Leave</title><main><h1>Unsaved page</h1><a href=/gone>Leave</a></main>\
                     <script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = 'unsaved'; })</script>",
                )
            }),
        )
        .route("/gone", get(|| async { Html("<title>Gone</title><main><h1>Left the page</h1></main>") }))
}

/// Clicks the element `click` (role and name as the observation prints them, `link 'Leave'`) at step 0
/// when given, then stops with `kiwi`.
struct Clicker {
    click: Option<&'static str>,
    seen: Arc<Mutex<Vec<Observation>>>,
}

impl Agent for Clicker {
    fn start(&mut self, _brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        let target = self.click.filter(|_| obs.step == 0).and_then(|name| {
            let line = obs.axtree.lines().find(|l| l.contains(name))?;
            let id = line.trim().strip_prefix('[')?.split(']').next()?.to_string();
            Some(id)
        });
        let text = match target {
            Some(id) => format!("click [{id}]"),
            None => "stop [kiwi]".to_string(),
        };
        self.seen.lock().unwrap().push(obs);
        Box::pin(async move { Ok(Reply { mv: Move::Action(Action::parse_lenient(&text)), skill_reports: vec![] }) })
    }
    fn usage(&self) -> Usage {
        Usage::default()
    }
}

struct Ran {
    record: skillshift_common::Record,
    steps: Vec<skillshift_common::trajectory::Step>,
    seen: Vec<Observation>,
    took: Duration,
}

async fn run(start: &str, click: Option<&'static str>) -> Ran {
    let base = common::serve(pages()).await;
    let dir = tempfile::tempdir().unwrap();
    common::write_tasks(dir.path(), &[common::answer_task(0, start, "kiwi")]);
    let ctx = RunContext::new(common::arc(common::TestSites::new(base)), TaskSource::Dir(dir.path().into()), "test");
    let driver = Driver::new(BrowserConfig::default());
    let spec = common::spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src, 1, 60_000, None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent_seen = seen.clone();
    let agent = Box::new(move |_: &skillshift_common::task::Task| -> Result<Box<dyn Agent>, AgentError> {
        Ok(Box::new(Clicker { click, seen: agent_seen }))
    });
    let t0 = Instant::now();
    let done = run_attempt_traced(&ctx, &driver, &spec, agent, None, CancellationToken::new()).await;
    let took = t0.elapsed();
    driver.shutdown().await;
    eprintln!("{start}: {:?} in {took:?}", done.record.outcome);
    let seen = seen.lock().unwrap().clone();
    Ran { record: done.record, steps: done.trajectory.trajectory.steps, seen, took }
}

fn note(kind: &str, message: &str, action: &str) -> DialogNote {
    DialogNote { kind: kind.into(), message: message.into(), action: action.into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_calling_alert_on_load_ends_its_attempt_normally() {
    let r = run("/alert", None).await;
    assert_eq!(r.record.outcome, Some(Outcome::Success), "{:?}", r.record);
    assert_eq!(r.record.error, None);
    assert!(r.seen[0].axtree.contains("Alerting page"), "the page loaded past its alert: {}", r.seen[0].axtree);
    assert_eq!(r.steps[0].dialogs, vec![note("alert", "Welcome, kiwi", "dismissed")]);
    common::validate(std::slice::from_ref(&r.record));
    eprintln!("alert attempt: {:?} in {} ms", r.record.outcome, r.took.as_millis());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_and_prompt_are_dismissed_as_webarena_does() {
    let r = run("/confirm", Some("button 'Delete'")).await;
    assert_eq!(r.record.outcome, Some(Outcome::Success), "{:?}", r.record);
    assert_eq!(r.steps.len(), 2);
    assert_eq!(
        r.steps[0].dialogs,
        vec![note("confirm", "Delete the kiwi?", "dismissed"), note("prompt", "Its name?", "dismissed")]
    );
    assert!(r.steps[1].dialogs.is_empty());
    // Dismissed: confirm() returned false and prompt() null, as under Playwright with no dialog listener.
    assert!(r.seen[1].axtree.contains("kept null"), "{}", r.seen[1].axtree);
    assert_eq!(r.steps[0].last_action_error, None);
    assert_eq!(r.steps[1].last_action_error, None, "the click was not an error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beforeunload_is_accepted_and_the_navigation_goes_on() {
    let r = run("/leave", Some("link 'Leave'")).await;
    assert_eq!(r.record.outcome, Some(Outcome::Success), "{:?}", r.record);
    assert!(r.seen[1].axtree.contains("Left the page"), "{}", r.seen[1].axtree);
    let kinds: Vec<(&str, &str)> = r.steps[0].dialogs.iter().map(|d| (d.kind.as_str(), d.action.as_str())).collect();
    assert_eq!(kinds, vec![("beforeunload", "accepted")]);
}
