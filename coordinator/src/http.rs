//! The coordinator's HTTP port: `/healthz`, a JSON status at `/api/status`
//! and a small HTML page at `/` listing sweeps and workers; other pages (the
//! trajectory viewer) can be merged in behind the same token. [`router`]
//! returns a plain axum `Router` so other parts (metrics) can merge into it.
//!
//! With a token configured, every page but `/healthz` (and `/metrics`, merged
//! in by the server) needs it, as `Authorization: Bearer <token>` or, for a
//! browser, `?token=<token>` in the URL (the page's refresh keeps it);
//! without it the answer is `401` (`skillshift_http::token`, the check the
//! viewer's own pages use too).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::{Json, Router};
use skillshift_http::require_token;

use crate::engine::ControlCmd;
use crate::service::Handle;
use crate::status::{SweepStatus, WorkerInfo};

pub fn router(handle: Handle, token: Option<&str>) -> Router {
    router_with(handle, token, None)
}

/// As [`router`], with `extra` pages (which must not claim `/` or
/// `/api/status`) behind the same token check.
pub fn router_with(handle: Handle, token: Option<&str>, extra: Option<Router>) -> Router {
    let pages = Router::new().route("/api/status", get(api_status)).route("/", get(page)).with_state(handle);
    let pages = match extra {
        Some(extra) => pages.merge(extra),
        None => pages,
    };
    let pages = match token {
        Some(t) => pages.layer(middleware::from_fn_with_state(Arc::<str>::from(t), require_token)),
        None => pages,
    };
    Router::new().route("/healthz", get(|| async { "ok\n" })).merge(pages)
}

async fn snapshot(h: &Handle) -> Option<(Vec<SweepStatus>, Vec<WorkerInfo>)> {
    let sweeps = h.ask(ControlCmd::List).await.ok()?;
    let workers = h.ask(ControlCmd::Workers).await.ok()?;
    Some((sweeps, workers))
}
async fn api_status(State(h): State<Handle>) -> impl IntoResponse {
    match snapshot(&h).await {
        Some((sweeps, workers)) => Json(serde_json::json!({"sweeps": sweeps, "workers": workers})).into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response(),
    }
}

/// What the page says of when a sweep ends: that some queued units have no worker, else its ETA.
fn eta_cell(s: &SweepStatus) -> String {
    match (s.unrunnable_line(), s.eta_ms) {
        (Some(line), _) => line,
        (None, Some(ms)) => format!("{} s", ms / 1000),
        (None, None) => "-".into(),
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

async fn page(State(h): State<Handle>) -> impl IntoResponse {
    let Some((sweeps, workers)) = snapshot(&h).await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    };
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=utf-8><meta http-equiv=refresh content=5>\
         <title>skillshift coordinator</title><style>body{font-family:sans-serif;margin:2em}\
         table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
         th{background:#f4f4f4}</style></head><body><h1>skillshift coordinator</h1><h2>Sweeps</h2>\
         <table><tr><th>id</th><th>state</th><th>units</th><th>done</th><th>running</th><th>queued</th>\
         <th>invalid</th><th>attempts</th><th>errors</th><th>ETA</th></tr>",
    );
    for s in &sweeps {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(s.id.as_str()),
            s.state.as_str(),
            s.units.total,
            s.units.done,
            s.units.running,
            s.units.queued,
            s.units.invalid,
            s.attempts.total,
            s.attempts.error,
            esc(&eta_cell(s))
        ));
    }
    html.push_str("</table><h2>Workers</h2><table><tr><th>id</th><th>name</th><th>connected</th><th>slots</th><th>running</th><th>last seen</th></tr>");
    for w in &workers {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ms ago</td></tr>",
            esc(&w.id),
            esc(&w.name),
            if w.connected { "yes" } else { "no" },
            w.slots,
            w.running,
            w.last_seen_ms_ago
        ));
    }
    html.push_str("</table></body></html>");
    Html(html).into_response()
}
