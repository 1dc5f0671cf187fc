//! The trajectory viewer (docs/formats.md#viewer): one web page that shows why
//! attempts failed, over an export directory (`skillshift view DIR`) or a
//! coordinator's live store (its `--http` port).
//!
//! * [`source`]: the [`Source`] trait, what the viewer reads.
//! * [`export`]: [`ExportSource`], the trait over an export directory.
//! * [`live`]: [`LiveSource`], the source over a running coordinator, which it
//!   reads through the `skillshift_live::LiveCoordinator` trait the
//!   coordinator implements; [`live::hook`] mounts it on the coordinator's port.
//! * [`api`]: the JSON under `/api/*` the page renders.
//! * [`marks`]: which observation lines a step's perturbations touched.
//! * [`auth`]: the token check, the one the coordinator's port uses (`skillshift_http`).
//!
//! The front end is three small hand-written files embedded in the binary
//! (`assets/`): no CDN, no build step, so the page works with no internet. It
//! renders every text with `textContent`, never as HTML. [`pages`] is the
//! viewer without a token check, for a server that has its own (the
//! coordinator's `--http` port); [`router`] adds `/healthz` and the check,
//! and [`router_on`] adds, for a viewer listening on loopback, a check of the
//! `Host` header ([`host`]): a page of another site that rebinds its name to
//! 127.0.0.1 (DNS rebinding) sends its own name and is answered `421`.
//! [`serve`] is the bounded server the coordinator's port runs on too
//! (`skillshift_http`: a connection cap, header and idle timeouts).
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod api;
pub mod auth;
pub mod export;
pub mod host;
pub mod live;
pub mod marks;
pub mod network;
pub mod source;

use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{middleware, Router};

pub use export::ExportSource;
pub use live::LiveSource;
pub use source::{Source, SourceError, SweepInfo};

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

fn asset(kind: &'static str, body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")], body)
}

/// The page, its script and style links carrying the request's token (a
/// browser sends none of its own to them), escaped as an attribute.
async fn index(uri: axum::http::Uri) -> impl IntoResponse {
    let token = uri.query().unwrap_or("").split('&').find_map(|kv| kv.strip_prefix("token="));
    let html = match token {
        Some(t) => {
            let q = skillshift_common::html::escape(&format!("?token={t}"));
            INDEX_HTML
                .replace("href=\"app.css\"", &format!("href=\"app.css{q}\""))
                .replace("src=\"app.js\"", &format!("src=\"app.js{q}\""))
        }
        None => INDEX_HTML.to_string(),
    };
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], html)
}

/// The page and its `/api/*`, over `source`, with no token check.
pub fn pages(source: Arc<dyn Source>) -> Router {
    pages_at("/", source)
}

/// Where a coordinator's `--http` port serves the viewer's page (its own status page keeps `/`).
pub const LIVE_PATH: &str = "/view";

/// As [`pages`], with the page itself at `index_path` (its script, style and
/// `/api/*` stay at the root; the page links them so).
pub fn pages_at(index_path: &str, source: Arc<dyn Source>) -> Router {
    Router::new()
        .route(index_path, get(index))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/api/sweeps", get(api::sweeps))
        .route("/api/grid", get(api::grid))
        .route("/api/attempts", get(api::attempts))
        .route("/api/attempt", get(api::attempt))
        .route("/api/pair", get(api::pair))
        .route("/api/screenshot", get(api::screenshot))
        .route("/api/events", get(api::events))
        .layer(axum::Extension(Arc::new(api::EventStreams::default())))
        .with_state(source)
}

/// The whole viewer: [`pages`] behind the token when one is given, and an open `/healthz`.
pub fn router(source: Arc<dyn Source>, token: Option<&str>) -> Router {
    let pages = pages(source);
    let pages = match token {
        Some(t) => pages.layer(middleware::from_fn_with_state(Arc::<str>::from(t), auth::require_token)),
        None => pages,
    };
    Router::new().route("/healthz", get(|| async { "ok\n" })).merge(pages)
}

/// As [`router`], for a viewer listening on `listen`: on a loopback address, a
/// request whose `Host` is not a loopback name is refused ([`host::require_loopback_host`]).
pub fn router_on(source: Arc<dyn Source>, token: Option<&str>, listen: std::net::SocketAddr) -> Router {
    let r = router(source, token);
    if listen.ip().is_loopback() {
        r.layer(middleware::from_fn(host::require_loopback_host))
    } else {
        r
    }
}

/// The URL a browser opens for a viewer listening on `addr`, with the token when there is one.
pub fn url(addr: std::net::SocketAddr, token: Option<&str>) -> String {
    url_at(addr, "/", token)
}

/// As [`url`], for a page at `path` (a coordinator's [`LIVE_PATH`]).
pub fn url_at(addr: std::net::SocketAddr, path: &str, token: Option<&str>) -> String {
    match token {
        Some(t) => format!("http://{addr}{path}?token={}", percent_encoded(t)),
        None => format!("http://{addr}{path}"),
    }
}

fn percent_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Serves `router` on `listener` within `limits` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: skillshift_http::HttpLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    skillshift_http::serve(listener, router, limits, shutdown).await
}
