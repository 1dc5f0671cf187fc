//! skillshift-telemetry: tracing setup, OTLP export, trace context and metrics.
