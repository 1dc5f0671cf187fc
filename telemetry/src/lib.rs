//! skillshift-telemetry: how a run is seen from outside.
//!
//! * [`config`]: `TelemetryArgs` (flags backed by the standard `OTEL_*`
//!   variables) validated into a [`TelemetryConfig`].
//! * [`init`](mod@init): the process's tracing subscriber: a log on stderr
//!   (`RUST_LOG`) and, only when an endpoint is set, an OTLP gRPC exporter;
//!   [`Guard::shutdown`] flushes it with a deadline.
//! * [`context`]: W3C `traceparent` in and out, and trace ids for records.
//! * [`spans`]: the spans of one attempt (sweep, attempt, run, reset, login,
//!   step, observe, act, skill, score) with their fields.
//! * [`span_log`]: `SKILLSHIFT_SPAN_LOG=FILE`, every closed span as a JSON line,
//!   for measuring an attempt's phases (`scripts/bench/phases.sh`).
//! * [`genai`]: LLM calls as `chat {model}` spans under the GenAI conventions.
//! * [`metrics`]: the coordinator's and the worker's Prometheus metrics and
//!   the `/metrics` endpoint.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod config;
pub mod context;
pub mod genai;
pub mod init;
pub mod metrics;
pub mod span_log;
pub mod spans;

pub use config::{SamplerChoice, TelemetryArgs, TelemetryConfig};
pub use init::{init, Guard};

/// Errors at the telemetry boundary.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A flag, variable or setup step was not usable.
    #[error("{0}")]
    Config(String),
    /// A `traceparent` could not be used.
    #[error("trace context: {0}")]
    TraceContext(String),
    /// Spans could not be flushed at shutdown.
    #[error("telemetry shutdown: {0}")]
    Shutdown(String),
    /// The metrics could not be rendered.
    #[error("{0}")]
    Metrics(String),
    /// `SKILLSHIFT_SPAN_LOG` names a file that cannot be created.
    #[error(transparent)]
    SpanLog(#[from] span_log::SpanLogError),
}
