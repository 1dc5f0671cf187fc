//! W3C trace context across processes.
//!
//! The coordinator puts its attempt span's `traceparent` into the assignment
//! (`AttemptSpec.traceparent`); the worker parents its run span on it, so both
//! processes' spans form one trace. The record's `trace_id` is that trace's id.
//!
//! When no OpenTelemetry layer is installed (no endpoint configured) spans
//! carry no trace context: [`traceparent`] returns `None` and [`set_parent`]
//! does nothing, so an untraced coordinator sends no context and costs nothing.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::{OpenTelemetrySpanExt, SetParentError};

use crate::TelemetryError;

const TRACEPARENT: &str = "traceparent";

/// The span's W3C `traceparent` header value, or `None` when the span carries
/// no trace context (tracing disabled, span filtered out, not sampled at all).
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// The current span's `traceparent`.
pub fn current_traceparent() -> Option<String> {
    traceparent(&tracing::Span::current())
}

/// Parses a `traceparent` into a remote parent context.
pub fn parent_context(traceparent: &str) -> Result<Context, TelemetryError> {
    let mut carrier: HashMap<String, String> = HashMap::new();
    carrier.insert(TRACEPARENT.to_string(), traceparent.trim().to_string());
    let cx = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        Ok(cx)
    } else {
        Err(TelemetryError::TraceContext(format!("malformed traceparent `{traceparent}`")))
    }
}

/// Makes `span` a child of the remote span `traceparent` names. Call before
/// the span is entered. Without an OpenTelemetry layer this is a no-op.
pub fn set_parent(span: &tracing::Span, traceparent: &str) -> Result<(), TelemetryError> {
    let cx = parent_context(traceparent)?;
    match span.set_parent(cx) {
        Ok(()) | Err(SetParentError::LayerNotFound) | Err(SetParentError::SpanDisabled) => Ok(()),
        Err(SetParentError::AlreadyStarted) => {
            Err(TelemetryError::TraceContext("span already started: set its parent before entering it".into()))
        }
    }
}

/// The span's OpenTelemetry span context, when it has one (for links).
pub fn span_context(span: &tracing::Span) -> Option<SpanContext> {
    let sc = span.context().span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// The span's trace id as 32 lowercase hex digits (the record's `trace_id`).
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    span_context(span).map(|sc| sc.trace_id().to_string())
}

/// The current span's trace id.
pub fn current_trace_id() -> Option<String> {
    trace_id(&tracing::Span::current())
}

/// The trace id inside a `traceparent`, without any tracing installed: a
/// worker that exports nothing still stamps its record with the
/// coordinator's trace id.
pub fn trace_id_from_traceparent(traceparent: &str) -> Option<String> {
    parent_context(traceparent).ok().map(|cx| cx.span().span_context().trace_id().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_round_trips_its_ids() {
        assert_eq!(trace_id_from_traceparent(TP).as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        let cx = parent_context(TP).unwrap();
        assert_eq!(cx.span().span_context().span_id().to_string(), "00f067aa0ba902b7");
        assert!(cx.span().span_context().is_remote());
        assert!(cx.span().span_context().is_sampled());
    }

    #[test]
    fn malformed_traceparent_is_an_error_naming_it() {
        for bad in ["", "00-xyz", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"] {
            let e = parent_context(bad).unwrap_err();
            assert!(e.to_string().contains("malformed traceparent"), "{e}");
            assert_eq!(trace_id_from_traceparent(bad), None);
        }
    }

    #[test]
    fn without_an_otel_layer_spans_carry_no_context() {
        let span = tracing::info_span!("x");
        assert_eq!(traceparent(&span), None);
        assert_eq!(trace_id(&span), None);
        assert!(set_parent(&span, TP).is_ok());
    }
}
