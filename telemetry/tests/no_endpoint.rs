//! With no endpoint there is no exporter: spans carry no trace context, no
//! traceparent goes into an assignment, and shutdown has nothing to flush.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

use std::time::Duration;

use skillshift_telemetry::{context, spans, TelemetryArgs};

#[tokio::test]
async fn no_endpoint_means_no_trace_context() {
    let args = TelemetryArgs::default();
    let config = args.config("t").unwrap();
    if config.otlp_endpoint.is_some() {
        return; // OTEL_EXPORTER_OTLP_ENDPOINT set in this environment: nothing to check.
    }
    let guard = skillshift_telemetry::init(&config).unwrap();
    assert!(!guard.exporting());
    let sweep = spans::sweep("s", false);
    assert_eq!(context::traceparent(&sweep), None);
    assert_eq!(context::current_trace_id(), None);
    guard.shutdown(Duration::from_millis(100)).await.unwrap();
}
