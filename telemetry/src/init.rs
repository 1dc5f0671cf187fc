//! Process-wide tracing setup: a human log on stderr and, only when an OTLP
//! endpoint is configured, an OpenTelemetry layer exporting spans over gRPC.
//!
//! The stderr log follows `RUST_LOG` (default `info`). The export layer has its
//! own filter, independent of `RUST_LOG`, which keeps the project's spans and
//! turns the exporter's own transport (`h2`, `tonic`, `hyper`, `tower`) off so
//! it does not trace itself. Without an endpoint there is no OpenTelemetry
//! layer at all: no trace context, no span export, nothing buffered.
//!
//! Spans are batched by the SDK's batch processor (a background thread) and
//! sent by tonic on the caller's Tokio runtime, so [`init`] must run inside a
//! Tokio runtime when an endpoint is set and that runtime must outlive
//! [`Guard::shutdown`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

use crate::config::{SamplerChoice, TelemetryConfig};
use crate::span_log::SpanLog;
use crate::TelemetryError;

/// Whether chat spans carry prompt and response content (set once by [`init`]).
static CAPTURE_LLM_CONTENT: AtomicBool = AtomicBool::new(false);

pub(crate) fn capture_llm_content() -> bool {
    CAPTURE_LLM_CONTENT.load(Ordering::Relaxed)
}

/// Targets never exported: the exporter's own transport would trace itself.
const SILENCED: [&str; 8] =
    ["h2", "tonic", "tonic_prost", "hyper", "hyper_util", "tower", "opentelemetry", "opentelemetry_sdk"];

/// Keeps the exporter alive; [`Guard::shutdown`] flushes it.
#[must_use = "dropping the guard without shutdown() may lose the last spans"]
pub struct Guard {
    provider: Option<SdkTracerProvider>,
    span_log: SpanLog,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("exporting", &self.provider.is_some()).finish()
    }
}

impl Guard {
    /// True when spans are being exported over OTLP.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Flushes buffered spans and stops the exporter, waiting at most
    /// `deadline`. A collector that does not answer in time costs the spans
    /// still buffered, never a hung shutdown.
    pub async fn shutdown(mut self, deadline: Duration) -> Result<(), TelemetryError> {
        self.span_log.flush();
        let Some(provider) = self.provider.take() else {
            return Ok(());
        };
        // The SDK's shutdown blocks its caller while the export runs on this
        // runtime, so it goes to a blocking thread.
        let flush = skillshift_taskcenter::TaskCenter::new("telemetry")
            .spawn_blocking("flush-spans", move || provider.shutdown_with_timeout(deadline));
        match tokio::time::timeout(deadline + Duration::from_millis(250), flush).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(TelemetryError::Shutdown(e.to_string())),
            Ok(Err(e)) => Err(TelemetryError::Shutdown(e.to_string())),
            Err(_) => Err(TelemetryError::Shutdown(format!("spans not flushed within {} ms", deadline.as_millis()))),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.span_log.flush();
        if let Some(provider) = self.provider.take() {
            // Not shut down explicitly: stop the exporter without waiting on
            // the runtime (which may be the one running this drop). A drop cannot
            // await, so the one detached thread: bounded by the shutdown's timeout.
            #[allow(clippy::disallowed_methods)]
            std::thread::spawn(move || {
                let _ = provider.shutdown_with_timeout(Duration::from_secs(2));
            });
        }
    }
}

/// Installs the global subscriber. Call once per process, inside a Tokio
/// runtime when `config.otlp_endpoint` is set.
pub fn init(config: &TelemetryConfig) -> Result<Guard, TelemetryError> {
    let (subscriber, guard) = subscriber(config)?;
    tracing::subscriber::set_global_default(subscriber)
        .map_err(|e| TelemetryError::Config(format!("tracing already initialised: {e}")))?;
    Ok(guard)
}

/// The subscriber [`init`] installs, not installed (for benchmarks and tests
/// that scope it with `tracing::subscriber::with_default`).
pub fn subscriber(
    config: &TelemetryConfig,
) -> Result<(Box<dyn tracing::Subscriber + Send + Sync + 'static>, Guard), TelemetryError> {
    CAPTURE_LLM_CONTENT.store(config.capture_llm_content, Ordering::Relaxed);
    let log_filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.default_log_filter))
        .map_err(|e| TelemetryError::Config(format!("RUST_LOG: {e}")))?;
    // `SKILLSHIFT_LOG_SPANS=1` logs every span's busy and idle time when it closes: phase timings without Jaeger.
    let span_events = match std::env::var("SKILLSHIFT_LOG_SPANS").as_deref() {
        Ok("1") | Ok("true") => FmtSpan::CLOSE,
        _ => FmtSpan::NONE,
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_span_events(span_events)
        .with_filter(log_filter);
    // `SKILLSHIFT_SPAN_LOG=FILE`: every closed span as a JSON line (crate::span_log); its filter enables
    // nothing without the variable.
    let span_log = SpanLog::from_env()?;
    let spans = span_log.clone().with_filter(span_log.filter());

    // Two subscriber shapes rather than an `Option` layer: a `None` layer
    // still answers "interested" for every callsite, which would make the
    // run's spans live (and cost) without an endpoint.
    match &config.otlp_endpoint {
        None => {
            Ok((Box::new(tracing_subscriber::registry().with(fmt).with(spans)), Guard { provider: None, span_log }))
        }
        Some(endpoint) => {
            let provider = provider(config, endpoint)?;
            let tracer = provider.tracer("skillshift");
            let otel = tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_tracked_inactivity(false)
                .with_threads(false)
                .with_location(false)
                .with_filter(export_filter());
            let subscriber = tracing_subscriber::registry().with(fmt).with(spans).with(otel);
            Ok((Box::new(subscriber), Guard { provider: Some(provider), span_log }))
        }
    }
}

/// What the export layer keeps: INFO and above from everything but the transport.
pub fn export_filter() -> Targets {
    SILENCED
        .iter()
        .fold(Targets::new().with_default(LevelFilter::INFO), |t, target| t.with_target(*target, LevelFilter::OFF))
}

/// Builds the tracer provider with an OTLP gRPC batch exporter.
pub fn provider(config: &TelemetryConfig, endpoint: &str) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| TelemetryError::Config(format!("otlp exporter for `{endpoint}`: {e}")))?;
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(sampler(config.sampler))
        .with_max_links_per_span(crate::spans::MAX_SWEEP_LINKS)
        .with_resource(resource)
        .build())
}

fn sampler(choice: SamplerChoice) -> Sampler {
    match choice {
        SamplerChoice::AlwaysOn => Sampler::AlwaysOn,
        SamplerChoice::AlwaysOff => Sampler::AlwaysOff,
        SamplerChoice::TraceIdRatio(r) => Sampler::TraceIdRatioBased(r),
        SamplerChoice::ParentBasedAlwaysOn => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        SamplerChoice::ParentBasedAlwaysOff => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        SamplerChoice::ParentBasedTraceIdRatio(r) => Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(r))),
    }
}
