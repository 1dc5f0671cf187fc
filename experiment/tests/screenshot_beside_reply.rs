//! A step's trajectory screenshot is taken while the agent thinks: in real headless Chromium on
//! the embedded fixture sites, an agent that takes seconds over each reply (as an LLM does) hides
//! the screenshots of the pages that showed an error, so the worker counts them taken but not
//! waited for; the screenshots are still the steps' own. Alone in its test binary, so the
//! worker's process-wide screenshot counters are this test's.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use skillshift_common::trajectory::ScreenshotPolicy;
use skillshift_common::{Condition, Outcome, Site, Uid, Version};
use skillshift_experiment::embedded::{generated_tasks, Embedded};
use skillshift_telemetry::metrics::WorkerMetrics;
use skillshift_worker::agent::{Agent, AgentError, Observation, Reply, TaskBrief, Usage};
use skillshift_worker::attempt::{run_attempt_traced, AgentFactory, RunContext};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::run_executor::factory_for;
use skillshift_worker::sites::ResetPolicy;
use skillshift_worker::CancellationToken;

mod common;

/// How long the agent thinks over a page that showed an error: far longer than a screenshot.
const THINKING: Duration = Duration::from_secs(3);

/// The deterministic skills agent, slow to answer a page that showed an error.
struct Slow(Box<dyn Agent>);

impl Agent for Slow {
    fn start(&mut self, brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        self.0.start(brief)
    }
    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        Box::pin(async move {
            if obs.last_action_error.is_some() {
                tokio::time::sleep(THINKING).await;
            }
            self.0.next(obs).await
        })
    }
    fn skill_result(&mut self, name: &str, ok: bool, error: Option<&str>) {
        self.0.skill_result(name, ok, error)
    }
    fn skill_answer(&mut self, name: &str, answer: &str) {
        self.0.skill_answer(name, answer)
    }
    fn usage(&self) -> Usage {
        self.0.usage()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_screenshot_is_taken_while_the_agent_thinks() {
    let sites = Arc::new(Embedded::start(ResetPolicy::BeforeEach).await.unwrap());
    let mut ctx = RunContext::new(sites, generated_tasks(), "shot-test");
    ctx.screenshot_policy = ScreenshotPolicy::Failures;
    let driver = Driver::new(BrowserConfig::default());
    // GitLab v2 moved "Milestones": the example library's skill for this task fails on v2, and the
    // agent is shown the error on the next page.
    let uid = Uid::new(Site::Gitlab, Version::V2, 3);
    let spec = common::spec(uid, Condition::TgtExec, 0, 120_000, Some(common::example_library(Site::Gitlab)));
    let inner = factory_for(&spec);
    let slow: AgentFactory = Box::new(move |task| Ok(Box::new(Slow(inner(task)?)) as Box<dyn Agent>));
    let before = WorkerMetrics::global().screenshot_totals();
    let done = run_attempt_traced(&ctx, &driver, &spec, slow, None, CancellationToken::new()).await;
    driver.shutdown().await;
    let after = WorkerMetrics::global().screenshot_totals();

    assert_eq!(done.record.outcome, Some(Outcome::Failure), "the premise: {:?}", done.record);
    let t = &done.trajectory.trajectory;
    let shown_errors: Vec<_> = t.steps.iter().filter(|s| s.last_action_error.is_some()).collect();
    assert!(!shown_errors.is_empty(), "the premise: a page showed an error");
    // Each page that showed an error has its screenshot, stored with the attempt.
    for s in &shown_errors {
        let name = s.screenshot.as_deref().unwrap_or_else(|| panic!("step {} has no screenshot", s.step));
        let digest = name.trim_start_matches("screenshots/").trim_end_matches(".png");
        assert!(done.trajectory.screenshots.get(digest).is_some_and(|png| png.starts_with(b"\x89PNG")));
    }
    let taken = after.taken - before.taken;
    let (took, waited) = (after.seconds - before.seconds, after.wait_seconds - before.wait_seconds);
    println!("{taken} screenshots in {took:.3} s, waited {waited:.3} s; {} pages showed an error", shown_errors.len());
    assert!(taken >= shown_errors.len() as u64);
    // The steps' screenshots were taken beside replies of THINKING each, so part of their time was
    // not waited for (only the last page's, taken after the verdict with nothing beside it, is).
    assert!(
        took - waited > 0.0,
        "no screenshot time was hidden behind the agent's replies: took {took}, waited {waited}"
    );
}
