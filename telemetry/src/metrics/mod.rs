//! Prometheus metrics: the coordinator's and the worker's, and the `/metrics`
//! endpoint that serves them.
//!
//! Each process builds one metrics struct ([`CoordinatorMetrics`],
//! [`WorkerMetrics`]); its handles are cheap clones of atomics, so the hot path
//! only bumps a counter. [`Exposition`] renders the registry as text in the
//! OpenMetrics format, which Prometheus scrapes natively; [`router`] is the
//! axum route for the coordinator's HTTP port, [`serve`] a standalone listener
//! for a worker's `--metrics-addr`.

mod coordinator;
mod worker;

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::registry::Registry;

pub use coordinator::{CellState, CoordinatorMetrics};
pub use worker::{ScreenshotTotals, WorkerMetrics};

/// The content type of the exposition (OpenMetrics text 1.0.0).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A finished registry, shareable with the HTTP handler.
#[derive(Clone)]
pub struct Exposition {
    registry: Arc<Registry>,
}

impl std::fmt::Debug for Exposition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exposition")
    }
}

impl Exposition {
    pub fn new(registry: Registry) -> Self {
        Exposition { registry: Arc::new(registry) }
    }

    /// The registry as OpenMetrics text.
    pub fn encode(&self) -> Result<String, crate::TelemetryError> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .map_err(|e| crate::TelemetryError::Metrics(format!("encoding /metrics: {e}")))?;
        Ok(out)
    }
}

/// The `GET /metrics` handler.
pub async fn handler(State(exposition): State<Exposition>) -> Response {
    match exposition.encode() {
        Ok(body) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// A router serving `/metrics`; merge it into the coordinator's HTTP app.
pub fn router(exposition: Exposition) -> Router {
    Router::new().route("/metrics", get(handler)).with_state(exposition)
}

/// Serves `/metrics` on `listener` until `shutdown` completes (a worker's
/// `--metrics-addr`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    exposition: Exposition,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(exposition)).with_graceful_shutdown(shutdown).await
}

/// Seconds from a duration, for histograms.
pub(crate) fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}
