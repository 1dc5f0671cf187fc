//! The coordinator's Prometheus endpoint, `GET /metrics` on its HTTP port.
//!
//! Counters (records ingested, ingest-to-durable latency, lease expiries,
//! reassignments) are bumped by the engine and the driver as things happen;
//! gauges (units by state and by cell, active leases, connected workers) are
//! read from the engine at scrape time, so they are never stale and cost
//! nothing between scrapes. The metric types live in `skillshift-telemetry`.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use skillshift_telemetry::metrics::{CellState, CoordinatorMetrics, Exposition, CONTENT_TYPE};

use crate::engine::ControlCmd;
use crate::llm_budget::Budget;
use crate::service::Handle;

#[derive(Clone)]
struct Scrape {
    handle: Handle,
    metrics: CoordinatorMetrics,
    exposition: Exposition,
    budget: Budget,
}

/// A router serving `/metrics`; merged into the HTTP page's router.
pub fn router(handle: Handle, metrics: CoordinatorMetrics, exposition: Exposition, budget: Budget) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(Scrape { handle, metrics, exposition, budget })
}

async fn scrape(State(s): State<Scrape>) -> Response {
    let (Ok(sweeps), Ok(workers)) = (s.handle.ask(ControlCmd::List).await, s.handle.ask(ControlCmd::Workers).await)
    else {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    };
    let mut by_state = [("queued", 0i64), ("running", 0), ("done", 0), ("invalid", 0), ("held", 0)];
    let mut cells = Vec::new();
    let mut active = 0i64;
    for sw in &sweeps {
        let u = &sw.units;
        let held = u.total.saturating_sub(u.done + u.running + u.queued + u.invalid);
        for (slot, n) in by_state.iter_mut().zip([u.queued, u.running, u.done, u.invalid, held]) {
            slot.1 += n as i64;
        }
        if !sw.state.is_final() {
            active += 1;
        }
        for c in &sw.cells {
            let rest = c.total.saturating_sub(c.done + c.running + c.invalid);
            for (state, n) in [("done", c.done), ("running", c.running), ("invalid", c.invalid), ("queued", rest)] {
                cells.push((sw.id.as_str(), c.site.as_str(), c.condition.as_str(), state, n as i64));
            }
        }
    }
    s.metrics.set_units(by_state);
    s.metrics.set_cells(cells.into_iter().map(|(sweep, site, condition, state, units)| CellState {
        sweep,
        site,
        condition,
        state,
        units,
    }));
    s.metrics.set_sweeps_active(active);
    s.metrics.set_active_leases(workers.iter().map(|w| i64::from(w.running)).sum());
    s.metrics.set_connected_workers(workers.iter().filter(|w| w.connected).count() as i64);
    match s.exposition.encode() {
        Ok(body) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], with_budget(body, &s.budget)).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// `body` with the budget's families before its `# EOF` line.
fn with_budget(body: String, budget: &Budget) -> String {
    let families = budget.exposition();
    if families.is_empty() {
        return body;
    }
    match body.strip_suffix("# EOF\n") {
        Some(head) => format!("{head}{families}# EOF\n"),
        None => body + &families,
    }
}
