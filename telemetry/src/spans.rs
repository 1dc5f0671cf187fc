//! The spans of one run, named and shaped in one place.
//!
//! One trace per unit attempt:
//!
//! ```text
//! attempt            coordinator: uid family site condition treatment rep attempt worker sweep
//! └─ run             worker: parented on the assignment's traceparent
//!    ├─ reset        site reset to its seeded state
//!    ├─ new_context  or `new_browser`: the attempt's clean browser (worker::browser)
//!    ├─ login
//!    ├─ setup        perturbations, tab hooks, geolocation
//!    ├─ start        the start page(s): tabs
//!    ├─ step         one per agent step: step, action, error
//!    │  ├─ observe
//!    │  ├─ chat {model}   the LLM call (GenAI conventions, see `genai`)
//!    │  ├─ screenshot     beside
//!    │  └─ act       or `skill` (skill, result, reason) with its own steps, each `locate` (role,
//!    │               looks) then its input, and `settle` (settled, navigated, probes, events) after an
//!    │               input or a navigation
//!    ├─ score        one event per evaluator, verdicts summarised
//!    ├─ network      the network trace taken from the browser
//!    ├─ dispose_context, spare_context   the browser handed back (worker::browser)
//!    └─ finish       the record and trajectory assembled
//! deliver            DEBUG, a root: the record written to the worker's outbox (uid)
//! ```
//!
//! A `sweep` span lives as long as the sweep runs in this coordinator process;
//! it links to every attempt span it starts (bounded by [`MAX_SWEEP_LINKS`]),
//! and each attempt links back to it, so Jaeger can go both ways.
//!
//! Fields not known when a span opens are declared `Empty` and filled with the
//! `record_*` functions here. All spans are INFO so a `RUST_LOG=warn` log does
//! not pay for them; the export layer keeps INFO regardless of `RUST_LOG`.

use skillshift_common::AttemptSpec;
use tracing::field::Empty;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::context;

/// The most links a sweep span keeps; past it the SDK drops links (counted).
pub const MAX_SWEEP_LINKS: u32 = 8192;

/// The sweep-level span: a new root, one per sweep per coordinator process.
pub fn sweep(sweep: &str, resumed: bool) -> Span {
    tracing::info_span!(parent: None, "sweep", sweep = %sweep, resumed, units = Empty, outcome = Empty)
}

/// The coordinator's span for one attempt, a new trace root, linked to and
/// from `sweep_span`. Put [`context::traceparent`] of it into the assignment.
pub fn attempt(spec: &AttemptSpec, worker: &str, sweep_span: Option<&Span>) -> Span {
    let family = spec.uid.family();
    let span = tracing::info_span!(
        parent: None,
        "attempt",
        uid = %spec.uid,
        family = %family,
        site = %spec.uid.site,
        condition = %spec.condition,
        treatment = %spec.treatment,
        rep = i64::from(spec.rep),
        attempt = i64::from(spec.attempt),
        worker = %worker,
        sweep = %spec.sweep,
        outcome = Empty,
        error = Empty,
    );
    if let Some(sweep_span) = sweep_span {
        if let Some(sweep_cx) = context::span_context(sweep_span) {
            span.add_link(sweep_cx);
        }
        if let Some(attempt_cx) = context::span_context(&span) {
            sweep_span.add_link(attempt_cx);
        }
    }
    span
}

/// The worker's root for one attempt: a child of the coordinator's attempt
/// span when the assignment carries a `traceparent` (a malformed one is
/// logged and the run is traced on its own).
pub fn run(spec: &AttemptSpec, worker: &str) -> Span {
    let span = tracing::info_span!(
        "run",
        uid = %spec.uid,
        condition = %spec.condition,
        rep = i64::from(spec.rep),
        attempt = i64::from(spec.attempt),
        worker = %worker,
        agent = %spec.agent,
        model = spec.model.as_deref().unwrap_or(""),
        outcome = Empty,
        steps = Empty,
        error = Empty,
    );
    if let Some(tp) = spec.traceparent.as_deref() {
        if let Err(e) = context::set_parent(&span, tp) {
            tracing::warn!(uid = %spec.uid, attempt = i64::from(spec.attempt), "assignment trace context ignored: {e}");
        }
    }
    span
}

/// The trace id to write into the record: the run span's, or failing that
/// (this worker exports nothing) the one in the assignment's `traceparent`.
pub fn record_trace_id(run_span: &Span, spec: &AttemptSpec) -> Option<String> {
    context::trace_id(run_span).or_else(|| spec.traceparent.as_deref().and_then(context::trace_id_from_traceparent))
}

/// How an attempt or run ended (`success`, `failure`, `timeout`, `error`).
pub fn record_outcome(span: &Span, outcome: &str, error: Option<&str>) {
    span.record("outcome", outcome);
    if let Some(e) = error {
        span.record("error", e);
        span.set_status(opentelemetry::trace::Status::error(e.to_string()));
    }
}

/// The run's step count, once known.
pub fn record_steps(span: &Span, steps: u32) {
    span.record("steps", i64::from(steps));
}

/// Resetting a site to its seeded state.
pub fn reset(site: &str, version: &str) -> Span {
    tracing::info_span!("reset", site = %site, version = %version, error = Empty)
}

/// Logging in to a site.
pub fn login(site: &str) -> Span {
    tracing::info_span!("login", site = %site, error = Empty)
}

/// Opening the task's start page (and a tab for each further start URL): the first navigation
/// of the attempt's fresh browser context.
pub fn start(tabs: usize) -> Span {
    tracing::info_span!("start", tabs = i64::try_from(tabs).unwrap_or(i64::MAX), error = Empty)
}

/// Making the attempt's page what the condition says before the start page: the perturbations
/// installed, every tab's hooks (network trace, dialogs) and the task's geolocation.
pub fn setup() -> Span {
    tracing::info_span!("setup")
}

/// Waiting for the page to be done with an input or a navigation (`Session::settle`); `settled`
/// is false when the wait ran out first, `navigated` true when it ended on a new document.
pub fn settle() -> Span {
    tracing::info_span!("settle", settled = Empty, navigated = Empty, probes = Empty, events = Empty)
}

/// Whether the page settled within its wait.
pub fn record_settled(span: &Span, settled: bool) {
    span.record("settled", settled);
}

/// How many times the wait asked the page, how many of the tab's DevTools events it read, and
/// whether it ended on a new document (the input navigated).
pub fn record_settle_work(span: &Span, probes: u32, events: u32, navigated: bool) {
    span.record("navigated", navigated);
    span.record("probes", probes);
    span.record("events", events);
}

/// Finding a skill step's target on the page (`skill_runtime::resolve`): `looks` asks of Chrome.
pub fn locate(role: &str) -> Span {
    tracing::info_span!("locate", role = %role, looks = Empty)
}

/// How many times a locator read the page.
pub fn record_looks(span: &Span, looks: u32) {
    span.record("looks", i64::from(looks));
}

/// A trajectory screenshot; `beside` when it was taken while the agent's reply was awaited (the
/// step waited only for what it outlasted the reply).
pub fn screenshot(beside: bool) -> Span {
    tracing::info_span!("screenshot", beside)
}

/// The attempt's network trace taken from the browser once the attempt is over.
pub fn network() -> Span {
    tracing::info_span!("network")
}

/// The record and the trajectory assembled once the attempt is over.
pub fn finish() -> Span {
    tracing::info_span!("finish")
}

/// Writing an attempt's record (and trajectory, compressed) to the worker's outbox, once its slot
/// is free: DEBUG and a root of its own, for the span log (`span_log`) only.
pub fn deliver(uid: &str) -> Span {
    tracing::debug_span!(parent: None, "deliver", uid = %uid, bytes = Empty)
}

/// The size of what was written to the outbox.
pub fn record_delivered(span: &Span, bytes: usize) {
    span.record("bytes", i64::try_from(bytes).unwrap_or(i64::MAX));
}

/// One agent step (0-based `index`); fill with [`record_step`].
pub fn step(index: u32) -> Span {
    tracing::info_span!("step", step = i64::from(index), action = Empty, error = Empty)
}

/// The step's action as the agent wrote it, and the error acting raised.
pub fn record_step(span: &Span, action: &str, error: Option<&str>) {
    span.record("action", action);
    if let Some(e) = error {
        span.record("error", e);
        span.set_status(opentelemetry::trace::Status::error(e.to_string()));
    }
}

/// Reading the page into the agent's observation.
pub fn observe() -> Span {
    tracing::info_span!("observe", elements = Empty, perturbed = Empty)
}

/// What an observation held.
pub fn record_observation(span: &Span, elements: u64, perturbed: bool) {
    span.record("elements", i64::try_from(elements).unwrap_or(i64::MAX));
    span.record("perturbed", perturbed);
}

/// Carrying out one primitive action (`click`, `type`, `goto`, ...).
pub fn act(kind: &str) -> Span {
    tracing::info_span!("act", kind = %kind, error = Empty)
}

/// Marks a phase span (`reset`, `login`, `act`) failed with its error.
pub fn record_error(span: &Span, error: &str) {
    span.record("error", error);
    span.set_status(opentelemetry::trace::Status::error(error.to_string()));
}

/// Running one skill from the library; fill with [`record_skill`].
pub fn skill(name: &str) -> Span {
    tracing::info_span!("skill", skill = %name, result = Empty, reason = Empty)
}

/// `ok` or `failed`, with the failure's reason.
pub fn record_skill(span: &Span, ok: bool, reason: Option<&str>) {
    span.record("result", if ok { "ok" } else { "failed" });
    if let Some(r) = reason {
        span.record("reason", r);
    }
}

/// Scoring the run with the task's evaluators.
pub fn score(evaluators: usize) -> Span {
    tracing::info_span!(
        "score",
        evaluators = i64::try_from(evaluators).unwrap_or(i64::MAX),
        success = Empty,
        verdict = Empty,
        verdicts = Empty
    )
}

/// One evaluator's verdict, as an event on the score span.
pub fn record_verdict(index: usize, kind: &str, passed: bool, detail: &str) {
    tracing::info!(evaluator = i64::try_from(index).unwrap_or(i64::MAX), kind = %kind, passed, detail = %detail, "verdict");
}

/// The verdicts summarised (`string_match=pass,url_match=fail`) and the result.
pub fn record_score(span: &Span, verdicts: &[(String, bool)], success: bool) {
    let summary: Vec<String> =
        verdicts.iter().map(|(kind, ok)| format!("{kind}={}", if *ok { "pass" } else { "fail" })).collect();
    span.record("verdicts", summary.join(",").as_str());
    span.record("success", success);
}

/// The scorer's per-evaluator details (`url_match Pass (...)`), one event
/// each, and the overall verdict (`pass`, `fail`, `invalid`).
pub fn record_score_details(span: &Span, details: &[String], verdict: &str) {
    span.in_scope(|| {
        for (i, d) in details.iter().enumerate() {
            let kind = d.split_whitespace().next().unwrap_or("");
            tracing::info!(evaluator = i64::try_from(i).unwrap_or(i64::MAX), kind = %kind, detail = %d, "verdict");
        }
    });
    span.record("verdicts", details.join("; ").as_str());
    span.record("success", verdict == "pass");
    span.record("verdict", verdict);
}

/// Links `span` to a span of another trace (used by the sweep span).
pub fn link(span: &Span, to: &Span) {
    if let Some(cx) = context::span_context(to) {
        span.add_link(cx);
    }
}
