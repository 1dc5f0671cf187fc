//! One attempt, start to record: reset the site (per policy), take a clean
//! browser (a kept one in a fresh tab, or a new one), log in, install the
//! condition's perturbations, go to the start URL, then observe and act up to
//! `max_steps`, score with the task's evaluators and write the record
//! (`docs/formats.md`, records), its identity stamped from the spec by
//! [`Record::for_attempt`]. A WebArena-Verified task under `--evaluator
//! webarena-verified` is scored on the agent's answer and the attempt's
//! network trace as its last step left it ([`crate::scorer::score_verified`]);
//! the trace (and the response bodies its evaluators read) is then recorded
//! whatever [`NetworkTrace`] says.
//!
//! Faults never escape: each ends the attempt as `error` with an
//! [`ErrorReason`]. The wall-clock ceiling (`task_timeout`, enforced by a
//! tokio timeout around everything, so a browser that never answers cannot
//! hold the attempt) gives `task_timeout`; a lost browser gives `browser` and
//! the slot's chromedriver is restarted so the next attempt works; a failed
//! reset `site_reset`; a failed login `site_login`; an agent fault `agent`; an
//! undecidable evaluator `evaluator`.
//!
//! The rooms, in the order an attempt walks through them:
//! * `source`: where tasks come from and what every attempt of a worker shares ([`RunContext`]).
//! * `prepare`: the task and its site, the reset, the login, the perturbations, the start URLs, the
//!   agent told its task.
//! * `step`: observe, ask the agent, act; `skill_call`: a skill the agent calls; `screenshots`: the
//!   trajectory's screenshots.
//! * `finish`: the score and the record ([`Finished`]).
//! * `journal`: every attempt event told once and fanned out to the caller's [`EventSink`], the
//!   trajectory, the skill recorder and the spans.
//!
//! This module runs them in order ([`run_attempt`]) under the attempt's deadline.

mod finish;
mod journal;
mod prepare;
mod screenshots;
mod skill_call;
mod source;
mod step;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use skillshift_common::task::Task;
use skillshift_common::{AttemptSpec, ErrorReason, Record};
use skillshift_telemetry::metrics::WorkerMetrics;
use skillshift_telemetry::spans;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use finish::{trace_id, Finished};
pub use journal::{Event, EventSink};
pub(crate) use prepare::set_cookies;
pub use source::{BadNetworkTrace, NetworkTrace, NoTask, RunContext, TaskFn, TaskSource};

use crate::agent::{Agent, AgentError};
use crate::browser::{BrowserError, Driver, Session};
use crate::capture::Capture;
use crate::recorder::Recorder;
use crate::skill_runtime::Placeholders;
use journal::Journal;

/// WebArena's `--parsing_failure_th`: consecutive unparseable actions that end an attempt.
pub const EARLY_STOP_UNPARSED: u32 = 3;

/// Builds the attempt's agent once its task is known.
pub type AgentFactory = Box<dyn FnOnce(&Task) -> Result<Box<dyn Agent>, AgentError> + Send>;

/// What an attempt accumulated, kept outside the timed future so a timeout loses nothing.
struct Progress {
    steps: u32,
    answer: Option<String>,
    images: BTreeMap<String, String>,
    agent: Option<Box<dyn Agent>>,
    /// Where the attempt's events go: the caller's sink, the trajectory, the skill counts, the spans.
    journal: Journal,
}

/// How the attempt body ended.
enum End {
    Scored { success: bool },
    Timeout,
    Error { reason: ErrorReason, message: String },
}

fn err(reason: ErrorReason, message: impl Into<String>) -> End {
    End::Error { reason, message: message.into() }
}

fn browser_end(e: BrowserError) -> End {
    err(ErrorReason::Browser, e.to_string())
}

/// Whether an attempt that ended this way may have left its browser session wedged.
fn wedges_the_browser(reason: ErrorReason) -> bool {
    matches!(reason, ErrorReason::TaskTimeout | ErrorReason::Browser | ErrorReason::Cancelled)
}

/// Runs one attempt to its record.
pub async fn run_attempt(
    ctx: &RunContext,
    driver: &Driver,
    spec: &AttemptSpec,
    make_agent: AgentFactory,
    sink: Option<EventSink>,
    cancel: CancellationToken,
) -> Record {
    run_attempt_traced(ctx, driver, spec, make_agent, sink, cancel).await.record
}

/// Runs one attempt to its record and its trajectory.
pub async fn run_attempt_traced(
    ctx: &RunContext,
    driver: &Driver,
    spec: &AttemptSpec,
    make_agent: AgentFactory,
    sink: Option<EventSink>,
    cancel: CancellationToken,
) -> Finished {
    // The site-version is this attempt's alone from its reset to its score; the wait is not part
    // of the attempt's time.
    let turn = tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        t = ctx.sites.turn(spec.uid.site, spec.uid.version) => Some(t),
    };
    let times = finish::Times { started: chrono::Utc::now(), clock: Instant::now() };
    let mut progress = Progress {
        steps: 0,
        answer: None,
        images: BTreeMap::new(),
        agent: None,
        journal: Journal::new(sink, Capture::new(spec, ctx.screenshot_policy), Recorder::new(spec.skills.is_some())),
    };
    let limit = Duration::from_millis(spec.task_timeout_ms.max(1));
    // Telemetry: the worker's root span, a child of the coordinator's attempt span.
    let run_span = spans::run(spec, &ctx.worker);
    let end = if let Some(_turn) = turn {
        let body = attempt_body(ctx, driver, spec, make_agent, &mut progress).instrument(run_span.clone());
        tokio::select! {
            r = tokio::time::timeout(limit, body) => r.unwrap_or_else(|_| err(ErrorReason::TaskTimeout, format!("the attempt exceeded its {} ms ceiling", limit.as_millis()))),
            _ = cancel.cancelled() => err(ErrorReason::Cancelled, "the attempt was cancelled"),
        }
    } else {
        err(ErrorReason::Cancelled, "the attempt was cancelled")
    };
    if let End::Error { reason, message } = &end {
        progress.journal.note(format!("error ({reason}): {message}"));
        if wedges_the_browser(*reason) {
            // The session may be wedged: restart chromedriver (and its browsers) for the next attempt.
            driver.shutdown().await;
            WorkerMetrics::global().browser_restarted();
        }
    }
    finish::record(ctx, spec, &end, progress, &run_span, times)
}

/// The attempt up to its end: the task and its site, the reset, the agent, a browser session
/// (handed back after, unless it failed), the attempt in it, and its network trace.
async fn attempt_body(
    ctx: &RunContext,
    driver: &Driver,
    spec: &AttemptSpec,
    make_agent: AgentFactory,
    p: &mut Progress,
) -> End {
    let (task, ph, image) = match prepare::task_and_site(ctx, spec, p) {
        Ok(t) => t,
        Err(end) => return end,
    };
    if let Err(end) = prepare::reset(ctx.sites.as_ref(), spec.uid, &image, &mut p.journal).await {
        return end;
    }
    match make_agent(&task) {
        Ok(a) => p.agent = Some(a),
        Err(e) => return err(ErrorReason::Agent, e.to_string()),
    }
    let session = match driver.checkout().await {
        Ok(s) => s,
        Err(e) => return browser_end(e),
    };
    let end = drive(ctx, &session, spec, &task, &ph, p).await.unwrap_or_else(|end| end);
    // The trace of every attempt that reached the browser, however it ended; a browser that failed is
    // not asked for what it still owes.
    let healthy = !matches!(&end, End::Error { reason: ErrorReason::Browser, .. });
    if let Some(har) = session.network_take(healthy).instrument(spans::network()).await {
        p.journal.capture.network(har);
    }
    match &end {
        // A browser that failed is not handed to the next attempt.
        End::Error { reason: ErrorReason::Browser, .. } => session.close().await,
        _ => driver.checkin(session).await,
    }
    end
}

/// The attempt in its browser session: signed in, set up, started, its steps walked and scored.
async fn drive(
    ctx: &RunContext,
    session: &Session,
    spec: &AttemptSpec,
    task: &Task,
    ph: &Placeholders,
    p: &mut Progress,
) -> Result<End, End> {
    let sites = ctx.sites.as_ref();
    prepare::sign_in(sites, session, spec.uid, task, ph, &mut p.journal.capture).await?;
    let set_up = prepare::set_up(ctx, session, spec, task).await?;
    let modal_title = set_up.perturbation.profile.execution.interstitial.as_ref().map(|m| m.title.clone());
    let (tabs, start_url) = prepare::open(sites, session, spec.uid, task, ph, &mut p.journal.capture).await?;
    let Some(agent) = p.agent.as_mut() else { return Err(err(ErrorReason::Agent, "no agent")) };
    prepare::start_agent(agent.as_mut(), spec, task, &start_url).await?;
    let stage =
        step::Stage { ctx, session, spec, ph, tabs: &tabs, set_up: &set_up, modal_title: modal_title.as_deref() };
    let stopped = step::walk(&stage, p).await?;
    Ok(finish::score(&stage, task, stopped, p).await)
}
