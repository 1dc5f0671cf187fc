//! The end of an attempt: the score (once, on the site itself, by the task's
//! evaluators or WebArena-Verified's), the screenshot of the page the agent
//! ended on when the policy keeps it, and the record, its identity stamped
//! from the spec by [`Record::for_attempt`], with its trajectory.

use std::time::Instant;

use skillshift_common::blob::Blob;
use skillshift_common::evaluate::Verdict;
use skillshift_common::task::Task;
use skillshift_common::{AttemptSpec, ErrorReason, Outcome, Record};
use skillshift_telemetry::spans;
use tracing::{Instrument, Span};

use super::screenshots::final_screenshot;
use super::source::RunContext;
use super::step::Stage;
use super::{browser_end, err, End, Progress};
use crate::scorer;

/// An attempt's record and its trajectory (with the screenshots it keeps), redacted.
#[derive(Debug, Clone)]
pub struct Finished {
    pub record: Record,
    pub trajectory: Blob,
    /// Screenshots the attempt took from the browser, kept or not (steps that kept the previous one
    /// of an unchanged page took none).
    pub screenshots_taken: u32,
}

/// Scores the attempt once its steps are over: a timeout when the agent never stopped.
pub(super) async fn score(stage: &Stage<'_>, task: &Task, stopped: bool, p: &mut Progress) -> End {
    let session = stage.session;
    // Under `failures`, the page the agent ended on is kept only if the attempt fails. Scoring reads
    // other pages in tabs of its own, so that page is photographed once the verdict says so; only a
    // `last` check's prep actions, which run in it, make it photographed before.
    let shoot_first = !stopped || scorer::changes_the_final_page(task);
    if shoot_first {
        final_screenshot(session, &mut p.journal.capture).await;
    }
    if !stopped {
        return End::Timeout;
    }
    let (score, score_span) = match evaluate(stage, task, p).await {
        Ok(s) => s,
        Err(end) => return end,
    };
    p.journal.scored(&score, &score_span);
    if !shoot_first && score.verdict != Verdict::Pass {
        final_screenshot(session, &mut p.journal.capture).await;
    }
    match score.verdict {
        Verdict::Pass => End::Scored { success: true },
        Verdict::Fail => End::Scored { success: false },
        Verdict::Invalid(m) => err(ErrorReason::Evaluator, m),
    }
}

/// The task's evaluators on the agent's answer and the site as the attempt left it, with the span
/// they ran in.
async fn evaluate(stage: &Stage<'_>, task: &Task, p: &mut Progress) -> Result<(scorer::Score, Span), End> {
    let (session, uid) = (stage.session, stage.spec.uid);
    let final_url = session.url().await.map_err(browser_end)?;
    let answer = p.answer.clone().unwrap_or_default();
    // The scorer's own requests are not the agent's.
    session.network_close();
    match stage.set_up.verified {
        // WebArena-Verified's evaluators read the answer and the trace as the agent's last step left it.
        Some(v) => {
            let score_span = spans::score(v.evaluators.len());
            let har = session.network_take(true).instrument(score_span.clone()).await;
            let bases = stage.ctx.sites.site_bases(uid.site, uid.version);
            let score = score_span.in_scope(|| scorer::score_verified(task, &answer, har.as_ref(), &bases));
            if let Some(har) = har {
                p.journal.capture.network(har);
            }
            Ok((score, score_span))
        }
        None => {
            let score_span = spans::score(task.eval.eval_types.len());
            let perturbed = stage.set_up.script_id.is_some();
            let ending = scorer::Ending { final_url: &final_url, answer: &answer, perturbed };
            let scored = scorer::score_with(session, stage.tabs, task, stage.ph, ending, stage.spec.evaluator)
                .instrument(score_span.clone())
                .await;
            scored.map(|s| (s, score_span)).map_err(browser_end)
        }
    }
}

/// When and how long the attempt ran.
pub(super) struct Times {
    pub started: chrono::DateTime<chrono::Utc>,
    pub clock: Instant,
}

/// The attempt's record and trajectory, however it ended.
pub(super) fn record(
    ctx: &RunContext,
    spec: &AttemptSpec,
    end: &End,
    progress: Progress,
    run_span: &Span,
    times: Times,
) -> Finished {
    let finished = chrono::Utc::now();
    let mut r = Record::for_attempt(spec);
    let (calls, failures) = progress.journal.recorder().counts();
    r.steps = Some(progress.steps);
    r.skill_calls = calls;
    r.skill_failures = failures;
    outcome(&mut r, end);
    r.duration_ms = Some(times.clock.elapsed().as_millis() as u64);
    r.started_at = Some(times.started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    r.finished_at = Some(finished.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    let usage = progress.agent.as_ref().map(|a| a.usage()).unwrap_or_default();
    r.llm_calls = Some(usage.llm_calls);
    r.tokens_in = Some(usage.tokens_in);
    r.tokens_out = Some(usage.tokens_out);
    r.cost_usd = usage.cost_usd;
    r.answer = progress.answer.clone();
    r.worker = Some(ctx.worker.clone());
    r.images = Some(progress.images.clone());
    // The attempt's own trace: its run span's (a child of the coordinator's, or, for `skillshift run`
    // with no coordinator, the trace it started), else the assignment's `traceparent`.
    r.trace_id = spans::record_trace_id(run_span, spec);
    spans::record_steps(run_span, progress.steps);
    spans::record_outcome(run_span, r.outcome.map_or("error", Outcome::as_str), r.error.as_deref());
    let message = match end {
        End::Error { message, .. } => Some(message.as_str()),
        _ => None,
    };
    let capture = progress.journal.capture;
    let screenshots_taken = capture.taken();
    let trajectory = run_span.in_scope(spans::finish).in_scope(|| capture.finish(&mut r, message));
    Finished { record: r, trajectory, screenshots_taken }
}

/// The record's outcome, and what an error measured: nothing.
fn outcome(r: &mut Record, end: &End) {
    match end {
        End::Scored { success } => {
            let success = *success;
            r.success = Some(success);
            r.outcome = Some(if success { Outcome::Success } else { Outcome::Failure });
        }
        End::Timeout => {
            r.success = Some(false);
            r.outcome = Some(Outcome::Timeout);
        }
        End::Error { reason, .. } => {
            // It measured nothing: no counts, as every error record (simulated, or made by the coordinator
            // for a lost worker) has; how far it got is in its trajectory.
            r.success = None;
            r.steps = None;
            r.skill_calls = None;
            r.skill_failures = None;
            r.outcome = Some(Outcome::Error);
            r.error = Some(reason.as_str().to_string());
        }
    }
}

/// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`).
pub fn trace_id(traceparent: &str) -> Option<String> {
    let parts: Vec<&str> = traceparent.trim().split('-').collect();
    match parts.as_slice() {
        [_, id, _, _] if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) => Some(id.to_ascii_lowercase()),
        _ => None,
    }
}
