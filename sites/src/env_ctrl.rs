//! The control surface every served site-version carries, shaped like
//! WebArena-Verified's `env-ctrl`: `GET /env-ctrl/status` and
//! `POST /env-ctrl/reset` (both answer the status JSON), plus the one static
//! script of client-side behaviours, `GET /static/behaviors.js`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use skillshift_common::{Site, Version};

use crate::App;

/// The client-side behaviours script (sites contract: disclosures, menus, dialogs).
pub const BEHAVIORS_JS: &str = include_str!("../static/behaviors.js");

/// What `/env-ctrl/*` needs to answer.
#[derive(Clone)]
pub struct Control {
    pub site: Site,
    pub version: Version,
    pub digest: Arc<str>,
    pub app: Arc<dyn App>,
}

#[derive(serde::Serialize)]
struct Status<'a> {
    site: &'a str,
    version: &'a str,
    digest: &'a str,
    ok: bool,
}

impl Control {
    fn status(&self) -> Json<serde_json::Value> {
        let status =
            Status { site: self.site.as_str(), version: self.version.as_str(), digest: &self.digest, ok: true };
        Json(serde_json::to_value(status).unwrap_or_default())
    }
}

async fn status(State(ctl): State<Control>) -> impl IntoResponse {
    ctl.status()
}

async fn reset(State(ctl): State<Control>) -> impl IntoResponse {
    ctl.app.reset();
    ctl.status()
}

async fn behaviors() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "max-age=3600")], BEHAVIORS_JS)
}

/// The site's own router with the control surface and the static script merged in.
pub fn wrap(ctl: Control) -> Router {
    let site = ctl.app.clone().router();
    let control = Router::new()
        .route("/env-ctrl/status", get(status))
        .route("/env-ctrl/reset", post(reset))
        .route("/static/behaviors.js", get(behaviors))
        .with_state(ctl);
    control.merge(site)
}
