//! The GitLab fixture site, in v1 (15.x layout) and v2 (16.x layout).
//!
//! * [`data`]: the seeded instance (users, projects, issues, merge requests, ...).
//! * [`layout`]: the page shell and navigation of each version.
//! * [`pages`]: dashboard, search, profile and the read-only project pages.
//! * [`work`]: issues and merge requests, and every form that changes state.
//! * [`tasks`]: the 162 task families, their reference solutions and the example skills.
//!
//! Requests go through one dispatcher ([`Gitlab::handle`]) that parses the
//! path like GitLab does (`/<namespace>/<project>/-/<feature>/...`).

pub mod data;
pub mod layout;
mod pages;
pub mod tasks;
mod work;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use skillshift_common::skills::Step;
use skillshift_common::Version;

use self::data::{Seed, ME, PASSWORD};
use self::layout::Ctx;
use crate::kit::tasks::sign_in;
use crate::kit::text::esc;
use crate::kit::url::{field, parse_urlencoded};
use crate::kit::web::{page, redirect, session_cookie, with_cookie};
use crate::App;

/// The application of `version`.
pub fn app(version: Version) -> Arc<dyn App> {
    Arc::new(Gitlab::new(version))
}

/// Mutable state: the data, sessions and pending flash messages.
pub(crate) struct World {
    pub data: Seed,
    sessions: HashMap<String, String>,
    flashes: HashMap<String, String>,
    next_session: u64,
}

pub struct Gitlab {
    version: Version,
    seed: Seed,
    // A std Mutex: every request holds it for a short, non-async critical section.
    world: Mutex<World>,
}

/// One request, as the handlers see it.
pub(crate) struct Req<'a> {
    pub version: Version,
    pub method: &'a Method,
    pub segments: Vec<String>,
    pub query: Vec<(String, String)>,
    pub form: Vec<(String, String)>,
    pub session: String,
}

impl Req<'_> {
    pub fn q(&self, key: &str) -> Option<&str> {
        field(&self.query, key)
    }

    pub fn page_number(&self) -> usize {
        self.q("page").and_then(|p| p.parse().ok()).unwrap_or(1)
    }
}

impl Gitlab {
    pub fn new(version: Version) -> Self {
        let seed = Seed::generate();
        let world = World { data: seed.clone(), sessions: HashMap::new(), flashes: HashMap::new(), next_session: 1 };
        Gitlab { version, seed, world: Mutex::new(world) }
    }

    fn world(&self) -> MutexGuard<'_, World> {
        // A poisoned lock only means a handler panicked mid-request; the data is still usable.
        self.world.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn handle(
        State(app): State<Arc<Gitlab>>,
        method: Method,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let path = uri.path().to_string();
        let query = parse_urlencoded(uri.query().unwrap_or(""));
        let form = parse_urlencoded(&String::from_utf8_lossy(&body));
        let segments: Vec<String> =
            path.split('/').filter(|s| !s.is_empty()).map(skillshift_common::evaluate::percent_decode).collect();
        let mut world = app.world();
        if path == "/users/sign_in" {
            return login(&mut world, &method, &form, app.version);
        }
        let session = session_cookie(&headers).filter(|s| world.sessions.contains_key(s));
        let Some(session) = session else {
            return redirect("/users/sign_in");
        };
        if path == "/users/sign_out" && method == Method::POST {
            world.sessions.remove(&session);
            return with_cookie(redirect("/users/sign_in"), "session=; Path=/; Max-Age=0");
        }
        let req = Req { version: app.version, method: &method, segments, query, form, session };
        let flash = world.flashes.remove(&req.session);
        match pages::route(&mut world, &req, flash) {
            Some(response) => response,
            None => not_found(app.version),
        }
    }
}

impl World {
    /// Queues a flash message for the session's next page (`!` prefix: an alert).
    pub fn flash(&mut self, session: &str, text: &str) {
        self.flashes.insert(session.to_string(), text.to_string());
    }
}

fn not_found(version: Version) -> Response {
    let ctx = Ctx { version, project: None, active: "", flash: None };
    let body = r#"<h1>404: Page not found</h1><p>Make sure the address is correct and the page has not moved.</p><p><a href="/">Go to the dashboard</a></p>"#;
    page(StatusCode::NOT_FOUND, layout::shell(&ctx, "Not found", body))
}

fn login(world: &mut World, method: &Method, form: &[(String, String)], version: Version) -> Response {
    let mut error = String::new();
    if method == Method::POST {
        let user = field(form, "username").unwrap_or("");
        let password = field(form, "password").unwrap_or("");
        if (user == ME || user == "byteblaze@example.com") && password == PASSWORD {
            let token = format!("s{:08x}", world.next_session.wrapping_mul(0x9E37_79B9) ^ 0x5A5A);
            world.next_session += 1;
            world.sessions.insert(token.clone(), ME.to_string());
            return with_cookie(redirect("/"), &format!("session={token}; Path=/; HttpOnly; SameSite=Lax"));
        }
        error = r#"<div class="flash alert" role="alert">Invalid login or password.</div>"#.to_string();
    }
    let heading = match version {
        Version::V1 => "GitLab Community Edition",
        Version::V2 => "GitLab",
    };
    let html = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · GitLab</title><script src="/static/behaviors.js" defer></script>
<style>body{{font:14px system-ui,sans-serif;background:#fafafa;display:flex;justify-content:center;padding-top:80px}}main{{background:#fff;border:1px solid #dcdcde;border-radius:8px;padding:24px 32px;width:380px}}label{{display:block;font-weight:600;margin:12px 0 4px}}input{{width:100%;padding:8px;font:inherit}}button{{margin-top:16px;width:100%;padding:8px;background:#1f75cb;color:#fff;border:0;border-radius:4px;font:inherit}}</style></head>
<body><main><h1>{heading}</h1>{error}<form method="post" action="/users/sign_in"><label for="user_login">Username or primary email</label><input type="text" id="user_login" name="username" autocomplete="username"><label for="user_password">Password</label><input type="password" id="user_password" name="password"><button type="submit">Sign in</button></form></main></body></html>"#
    );
    page(if error.is_empty() { StatusCode::OK } else { StatusCode::UNAUTHORIZED }, html)
}

impl App for Gitlab {
    fn router(self: Arc<Self>) -> axum::Router {
        axum::Router::new().fallback(Gitlab::handle).with_state(self)
    }

    fn reset(&self) {
        let mut world = self.world();
        world.data = self.seed.clone();
        world.sessions.clear();
        world.flashes.clear();
    }

    fn login_steps(&self) -> Vec<Step> {
        login_steps()
    }
}

/// Logging in from a fresh browser (the same in both versions).
pub fn login_steps() -> Vec<Step> {
    sign_in("__GITLAB__/users/sign_in", "Username or primary email", ME, PASSWORD, "Sign in")
}

/// Escaped display name of a username.
pub(crate) fn who(world: &World, username: &str) -> String {
    esc(&world.data.display(username))
}
