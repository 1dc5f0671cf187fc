//! A tiny HTTP client that walks a fixture site's pages in-process: the
//! embedded sites' sign-in (the session cookie a browser is handed), the
//! sites' bench and the page tests.
//!
//! It calls a site's axum router in-process (`tower::ServiceExt::oneshot`),
//! keeps a cookie jar, follows redirects, parses pages with `scraper`
//! ([`dom::Page`]) and executes steps ([`Browser::step`]; see
//! docs/formats.md#skills) with the two client-side behaviours of the sites
//! contract (disclosures/menus and dialogs).
//!
//! It is not a browser (no JavaScript beyond the two behaviours, no CSS layout,
//! an `innerText` of its own), so it is never a judge of a task: whether a task
//! is solvable is proven in real Chromium (`skillshift tasks audit`).

mod act;
pub mod dom;

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::{header, Method, Request};
use tower::ServiceExt;

pub use dom::{AxNode, InvalidSelector, Page};

/// Why a step or a navigation could not be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("no element with role '{role}' and name '{name}'")]
    NotFound { role: String, name: String },
    #[error("{count} elements with role '{role}' and name '{name}' (no nth given)")]
    Ambiguous { role: String, name: String, count: usize },
    #[error("nth {nth} of role '{role}' and name '{name}' is out of range ({count} matches)")]
    NthOutOfRange { role: String, name: String, nth: u32, count: usize },
    #[error("cannot {action} the {role} '{name}': {reason}")]
    Action { action: &'static str, role: String, name: String, reason: String },
    #[error("navigation to '{url}' failed: {reason}")]
    Navigation { url: String, reason: String },
    #[error("no page is loaded")]
    NoPage,
}

/// The outcome of running a list of steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The literal of `answer`, else the text of the last `read`.
    pub answer: Option<String>,
    /// The index of the first failing step and why; later steps were not run.
    pub error: Option<(usize, SimError)>,
    pub steps_done: usize,
}

/// A headless browser over one site's router.
pub struct Browser {
    router: axum::Router,
    /// `http://host[:port]`, which every site placeholder resolves to.
    origin: String,
    cookies: BTreeMap<String, String>,
    page: Option<Page>,
}

const MAX_REDIRECTS: usize = 10;
const MAX_BODY: usize = 32 << 20;

impl Browser {
    /// A fresh browser (no cookies, no page) on `router`, whose URLs are `origin/...`.
    pub fn new(router: axum::Router, origin: &str) -> Self {
        Browser { router, origin: origin.trim_end_matches('/').to_string(), cookies: BTreeMap::new(), page: None }
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn page(&self) -> Option<&Page> {
        self.page.as_ref()
    }

    /// The `Cookie` header this browser sends, if it holds any cookie.
    pub fn cookie_header(&self) -> Option<String> {
        if self.cookies.is_empty() {
            return None;
        }
        Some(self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; "))
    }

    /// The cookies this browser holds, as (name, value).
    pub fn cookies(&self) -> Vec<(String, String)> {
        self.cookies.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    pub fn url(&self) -> Option<&str> {
        self.page.as_ref().map(|p| p.url.as_str())
    }

    /// Replaces the site placeholders (`__GITLAB__`, ...) with this browser's origin.
    pub fn resolve_placeholders(&self, text: &str) -> String {
        let mut out = text.to_string();
        for site in skillshift_common::Site::ALL {
            out = out.replace(site.placeholder(), &self.origin);
        }
        out
    }

    /// Resolves a link target against the current page.
    fn absolute(&self, href: &str) -> Result<String, SimError> {
        let href = self.resolve_placeholders(href.trim());
        if href.starts_with("http://") || href.starts_with("https://") {
            if href == self.origin
                || href.starts_with(&format!("{}/", self.origin))
                || href.starts_with(&format!("{}?", self.origin))
            {
                return Ok(href);
            }
            return Err(SimError::Navigation { url: href, reason: "another origin".to_string() });
        }
        if href.starts_with('/') {
            return Ok(format!("{}{href}", self.origin));
        }
        let current = self.url().unwrap_or(&self.origin).to_string();
        let without_fragment = current.split('#').next().unwrap_or("").to_string();
        let without_query = without_fragment.split('?').next().unwrap_or("").to_string();
        if href.starts_with('?') {
            return Ok(format!("{without_query}{href}"));
        }
        if href.starts_with('#') || href.is_empty() {
            return Ok(without_fragment);
        }
        let dir = match without_query.rfind('/') {
            Some(i) if i + 1 > self.origin.len() => without_query[..=i].to_string(),
            _ => format!("{}/", self.origin),
        };
        Ok(format!("{dir}{href}"))
    }

    /// `goto`: loads `url` (placeholders allowed) with GET.
    pub async fn goto(&mut self, url: &str) -> Result<(), SimError> {
        let url = self.absolute(url)?;
        let page = self.request(Method::GET, url, None).await?;
        self.page = Some(page);
        Ok(())
    }

    /// Sends a request, following redirects (as GET) and keeping cookies; returns the final page.
    pub(crate) async fn request(
        &mut self,
        method: Method,
        url: String,
        form: Option<String>,
    ) -> Result<Page, SimError> {
        let mut method = method;
        let mut url = url;
        let mut body = form;
        for _ in 0..=MAX_REDIRECTS {
            let path = url.strip_prefix(&self.origin).unwrap_or("/");
            let path = if path.is_empty() { "/" } else { path };
            let host = self.origin.split("://").nth(1).unwrap_or("localhost").to_string();
            let mut builder = Request::builder().method(method.clone()).uri(path).header(header::HOST, host);
            if !self.cookies.is_empty() {
                let jar: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
                builder = builder.header(header::COOKIE, jar.join("; "));
            }
            let request = match &body {
                Some(b) => builder
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(Body::from(b.clone())),
                None => builder.body(Body::empty()),
            }
            .map_err(|e| SimError::Navigation { url: url.clone(), reason: e.to_string() })?;
            let response = match self.router.clone().oneshot(request).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            for cookie in response.headers().get_all(header::SET_COOKIE) {
                self.store_cookie(cookie.to_str().unwrap_or(""));
            }
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .ok_or_else(|| SimError::Navigation {
                        url: url.clone(),
                        reason: "redirect without Location".into(),
                    })?
                    .to_string();
                url = self.absolute_from(&url, &location)?;
                method = Method::GET;
                body = None;
                continue;
            }
            let bytes = axum::body::to_bytes(response.into_body(), MAX_BODY)
                .await
                .map_err(|e| SimError::Navigation { url: url.clone(), reason: e.to_string() })?;
            let html = String::from_utf8_lossy(&bytes);
            return Ok(Page::new(url, status.as_u16(), &html));
        }
        Err(SimError::Navigation { url, reason: format!("more than {MAX_REDIRECTS} redirects") })
    }

    fn absolute_from(&self, current: &str, location: &str) -> Result<String, SimError> {
        if location.starts_with('/') {
            return Ok(format!("{}{location}", self.origin));
        }
        if location.starts_with("http") {
            return self.absolute(location);
        }
        let dir = current.rsplit_once('/').map(|(d, _)| d).unwrap_or(&self.origin);
        Ok(format!("{dir}/{location}"))
    }

    fn store_cookie(&mut self, header: &str) {
        let first = header.split(';').next().unwrap_or("");
        let Some((name, value)) = first.split_once('=') else { return };
        let expired = header.split(';').any(|part| {
            let p = part.trim().to_ascii_lowercase();
            p == "max-age=0" || p.starts_with("expires=thu, 01 jan 1970")
        });
        if expired || value.is_empty() {
            self.cookies.remove(name.trim());
        } else {
            self.cookies.insert(name.trim().to_string(), value.trim().to_string());
        }
    }

    /// Runs `steps` in order, stopping at the first failure.
    pub async fn run(&mut self, steps: &[skillshift_common::skills::Step]) -> RunOutcome {
        let mut answer = None;
        for (i, step) in steps.iter().enumerate() {
            match self.step(step).await {
                Ok(Some(text)) => answer = Some(text),
                Ok(None) => {}
                Err(e) => return RunOutcome { answer, error: Some((i, e)), steps_done: i },
            }
        }
        RunOutcome { answer, error: None, steps_done: steps.len() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::{get, post};
    use skillshift_common::skills::{Step, Target};

    fn t(role: &str, name: &str) -> Target {
        Target { role: role.into(), name: name.into(), nth: None, column: None, row: None, name_pattern: None }
    }

    fn app() -> axum::Router {
        let page = r#"<html><body><button aria-expanded="false" aria-controls="menu" aria-haspopup="menu">Actions</button>
<ul role="menu" id="menu" hidden><li><form method="post" action="/do"><button type="submit" role="menuitem" name="what" value="close">Close</button></form></li></ul>
<form method="get" action="/search"><input type="search" name="q" aria-label="Search"><select name="k" aria-label="Kind"><option value="a">Alpha</option><option value="b">Beta</option></select></form>
<a href="/search?q=x">Go</a><a href="/search?q=y">Go</a></body></html>"#;
        axum::Router::new()
            .route("/", get(move || async move { axum::response::Html(page) }))
            .route(
                "/do",
                post(|body: String| async move {
                    (
                        [("location", format!("/done?{body}")), ("set-cookie", "session=abc; Path=/".to_string())],
                        axum::http::StatusCode::SEE_OTHER,
                    )
                }),
            )
            .route("/done", get(|| async { axum::response::Html("<p id=\"r\">done</p>") }))
            .route(
                "/search",
                get(|uri: axum::http::Uri| async move {
                    axum::response::Html(format!("<output aria-label=\"Query\">{}</output>", uri.query().unwrap_or("")))
                }),
            )
    }

    #[tokio::test]
    async fn menus_forms_enter_and_strict_locators() {
        let mut b = Browser::new(app(), "http://site.test");
        b.goto("/").await.unwrap();
        // The menu item is hidden until its button opens the menu.
        assert!(matches!(
            b.step(&Step::Click { target: t("menuitem", "Close") }).await,
            Err(SimError::NotFound { .. })
        ));
        b.step(&Step::Click { target: t("button", "Actions") }).await.unwrap();
        b.step(&Step::Click { target: t("menuitem", "Close") }).await.unwrap();
        assert_eq!(b.url(), Some("http://site.test/done?what=close"));
        assert_eq!(b.cookie_header().as_deref(), Some("session=abc"));
        b.goto("/").await.unwrap();
        // Two links share a name: strict fails, nth picks.
        assert!(matches!(
            b.step(&Step::Click { target: t("link", "Go") }).await,
            Err(SimError::Ambiguous { count: 2, .. })
        ));
        b.step(&Step::Fill { target: t("searchbox", "Search"), text: "a b&c".into() }).await.unwrap();
        b.step(&Step::Select { target: t("combobox", "Kind"), option: "Beta".into() }).await.unwrap();
        b.step(&Step::Press { target: t("searchbox", "Search"), key: "Enter".into() }).await.unwrap();
        let read = b.step(&Step::Read { target: t("status", "Query"), pattern: None, values: None }).await.unwrap();
        assert_eq!(read.as_deref(), Some("q=a+b%26c&k=b"));
        assert!(b.step(&Step::Fill { target: t("status", "Query"), text: "x".into() }).await.is_err());
    }
}
