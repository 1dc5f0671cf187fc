//! The engine's telemetry spans: one per running attempt, which opens a new
//! trace linked to its sweep's span and ends with the attempt's record, and
//! one per sweep running in this process, which ends once nothing in the
//! sweep is queued or running. The attempt span's W3C context rides in the
//! assignment, so the worker's spans are its children (guarantee 7 in
//! `docs/design.md`).

use std::collections::HashMap;

use skillshift_common::ids::{AttemptKey, SweepId};
use skillshift_common::AttemptSpec;
use skillshift_telemetry::{context as trace_context, spans};
use tracing::Span;

#[derive(Default)]
pub(super) struct Spans {
    attempts: HashMap<AttemptKey, Span>,
    sweeps: HashMap<SweepId, Span>,
}

impl Spans {
    /// Opens the attempt's span and returns its `traceparent` for the assignment.
    pub(super) fn open_attempt(&mut self, key: &AttemptKey, spec: &AttemptSpec, worker: &str) -> Option<String> {
        let sweep_span =
            self.sweeps.entry(key.sweep.clone()).or_insert_with(|| spans::sweep(key.sweep.as_str(), false));
        let span = spans::attempt(spec, worker, Some(sweep_span));
        let traceparent = trace_context::traceparent(&span);
        self.attempts.insert(key.clone(), span);
        traceparent
    }

    /// Ends the attempt's span with its outcome; returns the span, if one was open.
    pub(super) fn end_attempt(&mut self, key: &AttemptKey, outcome: &str, error: Option<&str>) -> Option<Span> {
        let span = self.attempts.remove(key)?;
        spans::record_outcome(&span, outcome, error);
        Some(span)
    }

    /// Ends the span of every sweep that `idle` says has nothing queued or running.
    pub(super) fn end_idle_sweeps(&mut self, idle: impl Fn(&SweepId) -> bool) {
        let done: Vec<SweepId> = self.sweeps.keys().filter(|id| idle(id)).cloned().collect();
        for id in done {
            if let Some(span) = self.sweeps.remove(&id) {
                spans::record_outcome(&span, "idle", None);
            }
        }
    }
}
