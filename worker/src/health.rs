//! The worker's health for an orchestrator, served beside `/metrics` on
//! `--metrics-addr`:
//!
//! * `GET /healthz` (liveness): 200 `ok` while the session loop is turning
//!   (it notes the time on every turn, at least once per heartbeat or
//!   reconnection backoff), draining included, so a pod that drains after
//!   SIGTERM is not killed for it; 503 when the loop has not turned for
//!   [`STALE`] (a hung process, worth a restart).
//! * `GET /readyz` (readiness): 200 `ready` while a session with the
//!   coordinator is open and the worker takes work; 503 `not connected`,
//!   `draining`, or `not taking work: browser: ...` (its browser stopped
//!   starting, so it leases nothing until it does again) otherwise.
//!
//! Whoever starts a worker makes its [`Health`] and hands it to both the
//! session loop (`remote::RemoteConfig::health`), which updates it, and
//! [`serve`], which answers the probes from it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use skillshift_telemetry::metrics::Exposition;

/// Liveness fails when the session loop has not turned for this long.
pub const STALE: Duration = Duration::from_secs(120);

/// Why liveness fails: the session loop has not turned for longer than [`STALE`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the session loop has not turned for {} s", .idle.as_secs())]
pub struct NotLive {
    pub idle: Duration,
}

/// Why readiness fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    #[error("draining")]
    Draining,
    #[error("not connected to the coordinator")]
    NotConnected,
    /// The worker takes no new work; the text says why (its browser does not start).
    #[error("not taking work: {0}")]
    Unavailable(String),
}

/// What the probes read.
#[derive(Debug)]
pub struct Health {
    epoch: Instant,
    /// Milliseconds since `epoch` of the loop's last turn (0: not started yet).
    last_turn_ms: AtomicU64,
    connected: AtomicBool,
    draining: AtomicBool,
    // A std mutex: it guards a read or a replace of one string, never an await.
    unavailable: std::sync::Mutex<Option<String>>,
}

impl Health {
    pub fn new() -> Health {
        Health {
            epoch: Instant::now(),
            last_turn_ms: AtomicU64::new(0),
            connected: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            unavailable: std::sync::Mutex::new(None),
        }
    }

    pub fn turned(&self) {
        self.last_turn_ms.store(self.epoch.elapsed().as_millis().max(1) as u64, Ordering::Relaxed);
    }

    pub fn set_connected(&self, connected: bool) {
        self.connected.store(connected, Ordering::Relaxed);
    }

    /// Why the worker takes no new work (its browser does not start), or `None` when it takes work again.
    pub fn set_unavailable(&self, why: Option<String>) {
        if let Ok(mut u) = self.unavailable.lock() {
            *u = why;
        }
    }

    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Liveness at `now`: `Err` says why not.
    pub fn live_at(&self, now: Instant) -> Result<(), NotLive> {
        let last = self.last_turn_ms.load(Ordering::Relaxed);
        if last == 0 {
            // Starting: building the executor (browsers, sites) comes before the first turn.
            return Ok(());
        }
        let idle = now.duration_since(self.epoch).saturating_sub(Duration::from_millis(last));
        if idle > STALE {
            return Err(NotLive { idle });
        }
        Ok(())
    }

    /// Readiness: `Err` says why not.
    pub fn ready(&self) -> Result<(), NotReady> {
        let unavailable = self.unavailable.lock().ok().and_then(|u| u.clone());
        if self.draining.load(Ordering::Relaxed) {
            Err(NotReady::Draining)
        } else if !self.connected.load(Ordering::Relaxed) {
            Err(NotReady::NotConnected)
        } else if let Some(why) = unavailable {
            Err(NotReady::Unavailable(why))
        } else {
            Ok(())
        }
    }
}

impl Default for Health {
    fn default() -> Self {
        Health::new()
    }
}

fn answer(r: Result<(), impl std::fmt::Display>, ok: &'static str) -> axum::response::Response {
    match r {
        Ok(()) => (StatusCode::OK, format!("{ok}\n")).into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}

/// `/metrics`, `/healthz` and `/readyz` of `health`.
pub fn router(exposition: Exposition, health: Arc<Health>) -> Router {
    let ready = health.clone();
    skillshift_telemetry::metrics::router(exposition)
        .route("/healthz", get(move || async move { answer(health.live_at(Instant::now()), "ok") }))
        .route("/readyz", get(move || async move { answer(ready.ready(), "ready") }))
}

/// Serves [`router`] for `health` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    exposition: Exposition,
    health: Arc<Health>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(exposition, health)).with_graceful_shutdown(shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_while_the_loop_turns_ready_while_connected_and_not_draining() {
        let h = Health::new();
        assert!(h.live_at(Instant::now()).is_ok(), "starting counts as alive");
        assert_eq!(h.ready().map_err(|e| e.to_string()), Err("not connected to the coordinator".to_string()));
        h.turned();
        h.set_connected(true);
        assert_eq!(h.ready().map_err(|e| e.to_string()), Ok(()));
        h.set_unavailable(Some("browser: chromedriver: cannot start".into()));
        assert_eq!(
            h.ready().map_err(|e| e.to_string()),
            Err("not taking work: browser: chromedriver: cannot start".to_string())
        );
        h.set_unavailable(None);
        assert_eq!(h.ready().map_err(|e| e.to_string()), Ok(()));
        assert!(h.live_at(Instant::now() + Duration::from_secs(60)).is_ok());
        let stale = h.live_at(Instant::now() + STALE + Duration::from_secs(5)).unwrap_err().to_string();
        assert!(stale.contains("has not turned for 12"), "{stale}");
        h.set_draining();
        assert_eq!(h.ready().map_err(|e| e.to_string()), Err("draining".to_string()));
        assert!(h.live_at(Instant::now()).is_ok(), "a draining worker is alive");
    }

    #[tokio::test]
    async fn the_endpoints_answer_over_http() {
        let (_, exposition) = skillshift_telemetry::metrics::WorkerMetrics::new();
        let health = Arc::new(Health::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = router(exposition, health.clone());
        #[allow(clippy::disallowed_methods)] // a test's own helper task, awaited below
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let get = |path: &'static str| async move {
            let resp = reqwest::get(format!("http://{addr}{path}")).await.unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        };
        assert_eq!(get("/readyz").await, (503, "not connected to the coordinator\n".to_string()));
        health.turned();
        health.set_connected(true);
        assert_eq!(get("/readyz").await, (200, "ready\n".to_string()));
        assert_eq!(get("/healthz").await, (200, "ok\n".to_string()));
        assert_eq!(get("/metrics").await.0, 200);
        server.abort();
    }
}
