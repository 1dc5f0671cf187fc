//! Faults end attempts as `error` records with their reason, within the
//! ceiling, and the worker recovers: a page that never finishes loading gives
//! `task_timeout`; chromedriver killed mid-attempt gives `browser`, and the
//! next attempt on the same driver succeeds.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Html;
use axum::routing::get;
use futures::future::BoxFuture;
use skillshift_common::{Condition, Outcome, Site, Uid, Version};
use skillshift_worker::action::Action;
use skillshift_worker::agent::{Agent, AgentError, Move, Observation, Reply, TaskBrief, Usage};
use skillshift_worker::attempt::{run_attempt, RunContext, TaskSource};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::CancellationToken;
use tokio::sync::Notify;

fn pages() -> axum::Router {
    axum::Router::new()
        .route("/ok", get(|| async { Html("<title>Ok</title><main><h1>Fine page</h1><p>secret: kiwi</p></main>") }))
        .route(
            "/never",
            get(|| async {
                // Headers and a first chunk, then nothing, forever: the load event never fires.
                let stream = futures::stream::once(async { Ok::<_, std::io::Error>("<title>Slow</title><p>loading") })
                    .chain(futures::stream::pending());
                axum::response::Response::builder()
                    .header("content-type", "text/html")
                    .body(Body::from_stream(stream))
                    .expect("response")
            }),
        )
}

use futures::StreamExt;

/// Waits a little at each step, then answers `kiwi` at step `stop_at`; from step 1 on, notifies
/// `stepped` (so a test knows the attempt is under way, its browser open).
struct SlowAgent {
    stop_at: u32,
    delay: Duration,
    stepped: Option<Arc<Notify>>,
}

impl Agent for SlowAgent {
    fn start(&mut self, _brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        let mv = if obs.step >= self.stop_at {
            Move::Action(Action::Stop { answer: "kiwi".into() })
        } else {
            Move::Action(Action::Scroll { down: true })
        };
        if obs.step >= 1 {
            if let Some(n) = &self.stepped {
                n.notify_one();
            }
        }
        let delay = self.delay;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(Reply { mv, skill_reports: vec![] })
        })
    }
    fn usage(&self) -> Usage {
        Usage::default()
    }
}

async fn context() -> (RunContext, tempfile::TempDir) {
    let base = common::serve(pages()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    common::write_tasks(dir.path(), &[common::answer_task(0, "/never", "kiwi"), common::answer_task(1, "/ok", "kiwi")]);
    let ctx = RunContext::new(common::arc(common::TestSites::new(base)), TaskSource::Dir(dir.path().into()), "test");
    (ctx, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_loads_ends_as_task_timeout_within_the_ceiling() {
    let (ctx, _dir) = context().await;
    let driver = Driver::new(BrowserConfig::default());
    let spec = common::spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src, 1, 4_000, None);
    let t = Instant::now();
    let agent = Box::new(|_: &skillshift_common::task::Task| -> Result<Box<dyn Agent>, AgentError> {
        Ok(Box::new(SlowAgent { stop_at: 0, delay: Duration::ZERO, stepped: None }))
    });
    let r = run_attempt(&ctx, &driver, &spec, agent, None, CancellationToken::new()).await;
    let took = t.elapsed();
    assert_eq!(r.outcome, Some(Outcome::Error), "{r:?}");
    assert_eq!(r.error.as_deref(), Some("task_timeout"));
    assert_eq!(r.success, None);
    assert!(took < Duration::from_secs(15), "the 4 s ceiling held the attempt for {took:?}");
    common::validate(&[r]);
    driver.shutdown().await;
}

/// Waits until the attempt's agent is at its first step (so its browser is open, whatever the
/// machine's speed), then sends SIGKILL to chromedriver alone, or with `group` to its process group
/// (chromedriver and the browsers the worker started in it). Returns the pid killed.
async fn kill_mid_attempt(driver: Arc<Driver>, stepped: Arc<Notify>, group: bool) -> u32 {
    tokio::time::timeout(Duration::from_secs(60), stepped.notified()).await.expect("the attempt reached step 1");
    let pid = driver.pid().await.expect("chromedriver started");
    let target = if group { format!("-{pid}") } else { pid.to_string() };
    let status = std::process::Command::new("kill").args(["-KILL", "--", &target]).status().expect("kill");
    assert!(status.success());
    pid
}

fn slow_agent(stepped: &Arc<Notify>) -> skillshift_worker::attempt::AgentFactory {
    let stepped = stepped.clone();
    Box::new(move |_: &skillshift_common::task::Task| -> Result<Box<dyn Agent>, AgentError> {
        Ok(Box::new(SlowAgent { stop_at: 6, delay: Duration::from_millis(400), stepped: Some(stepped.clone()) }))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_killed_mid_attempt_is_a_browser_error_and_the_next_attempt_succeeds() {
    let (ctx, _dir) = context().await;
    let driver = Arc::new(Driver::new(BrowserConfig::default()));
    let stepped = Arc::new(Notify::new());
    let spec = common::spec(Uid::new(Site::Gitlab, Version::V1, 1), Condition::Src, 1, 60_000, None);
    let (r, _) = tokio::join!(
        run_attempt(&ctx, &driver, &spec, slow_agent(&stepped), None, CancellationToken::new()),
        kill_mid_attempt(driver.clone(), stepped.clone(), true)
    );
    assert_eq!(r.outcome, Some(Outcome::Error), "{r:?}");
    assert_eq!(r.error.as_deref(), Some("browser"));
    common::validate(std::slice::from_ref(&r));

    let r2 = run_attempt(&ctx, &driver, &spec, slow_agent(&stepped), None, CancellationToken::new()).await;
    assert_eq!(r2.outcome, Some(Outcome::Success), "{r2:?}");
    assert_eq!(r2.answer.as_deref(), Some("kiwi"));
    driver.shutdown().await;
}

/// An attempt's tabs are DevTools' alone: chromedriver dying under it costs no measurement, and
/// the browser it leaves is not handed out again (both start anew for the next attempt).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromedriver_killed_mid_attempt_leaves_the_attempt_measured_and_is_replaced_with_its_browser() {
    let (ctx, _dir) = context().await;
    let driver = Arc::new(Driver::new(BrowserConfig::default()));
    let stepped = Arc::new(Notify::new());
    let spec = common::spec(Uid::new(Site::Gitlab, Version::V1, 1), Condition::Src, 1, 60_000, None);
    let (r, killed) = tokio::join!(
        run_attempt(&ctx, &driver, &spec, slow_agent(&stepped), None, CancellationToken::new()),
        kill_mid_attempt(driver.clone(), stepped.clone(), false)
    );
    assert_eq!(r.outcome, Some(Outcome::Success), "{r:?}");
    assert_eq!(r.answer.as_deref(), Some("kiwi"));
    common::validate(std::slice::from_ref(&r));

    let session = driver.checkout().await.expect("a new browser");
    assert_eq!(session.uses(), 0, "the browser of a dead chromedriver is not reused");
    assert_ne!(driver.pid().await, Some(killed), "chromedriver was restarted");
    driver.checkin(session).await;
    let r2 = run_attempt(&ctx, &driver, &spec, slow_agent(&stepped), None, CancellationToken::new()).await;
    assert_eq!(r2.outcome, Some(Outcome::Success), "{r2:?}");
    driver.shutdown().await;
}
