//! Requests and responses.
//!
//! * The axum-level helpers every site uses: [`session_cookie`],
//!   [`redirect`], [`with_cookie`] and [`page`] (GitLab answers with these
//!   directly).
//! * For a site written as a pure function of a request (Magento,
//!   WordPress): one axum fallback handler turns each HTTP request into a
//!   [`Req`] (method, decoded path, query and form, session cookie) and the
//!   site's [`Handler::handle`] answers it with a [`Resp`]. Every `Handler` is
//!   an [`App`] served by [`router`]. Keeping such a site a plain function of
//!   a request makes its pages easy to unit-test.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use skillshift_common::skills::Step;

use super::url::{decode_path, field, parse_urlencoded};
use crate::App;

/// The value of the first non-empty `session` cookie, if any.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, v)| *k == "session" && !v.is_empty())
        .map(|(_, v)| v.to_string())
}

/// `303 See Other` to `location`.
pub fn redirect(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

/// Adds a `Set-Cookie` header.
pub fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

/// A full HTML page response with a status.
pub fn page(status: StatusCode, html: String) -> Response {
    (status, Html(html)).into_response()
}

/// One decoded request.
#[derive(Debug, Clone, Default)]
pub struct Req {
    pub post: bool,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub form: Vec<(String, String)>,
    pub session: Option<String>,
}

impl Req {
    /// A GET of `target` (path with optional query), for tests.
    pub fn get(target: &str, session: Option<&str>) -> Req {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Req {
            post: false,
            path: path.to_string(),
            query: parse_urlencoded(query),
            form: vec![],
            session: session.map(str::to_string),
        }
    }

    /// A POST of `form` to `target`, for tests.
    pub fn post(target: &str, form: &[(&str, &str)], session: Option<&str>) -> Req {
        let mut r = Req::get(target, session);
        r.post = true;
        r.form = form.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        r
    }

    /// The first query value of `key`.
    pub fn q(&self, key: &str) -> Option<&str> {
        field(&self.query, key)
    }

    /// The first form value of `key`.
    pub fn f(&self, key: &str) -> Option<&str> {
        field(&self.form, key)
    }

    /// Every form value of `key` (checkbox groups).
    pub fn f_all(&self, key: &str) -> Vec<&str> {
        self.form.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect()
    }

    /// The page number of `?page=N` or `?paged=N` (1-based, at least 1).
    pub fn page(&self) -> usize {
        self.q("page").or_else(|| self.q("paged")).and_then(|p| p.parse().ok()).filter(|p| *p >= 1).unwrap_or(1)
    }
}

/// What a site answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Resp {
    Page(String),
    NotFound(String),
    /// 303 See Other to `to`; `cookie` sets (Some(token)) or clears (Some("")) the session.
    Redirect {
        to: String,
        cookie: Option<String>,
    },
}

impl Resp {
    pub fn redirect(to: impl Into<String>) -> Resp {
        Resp::Redirect { to: to.into(), cookie: None }
    }
}

/// A site as a pure request handler, with what the framework needs besides its pages.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request (the whole site as a function).
    fn handle(&self, req: &Req) -> Resp;
    /// Restores the seeded state and drops the sessions.
    fn reset(&self);
    /// The steps that sign in from a fresh browser (see [`App::login_steps`]).
    fn login_steps(&self) -> Vec<Step>;
}

impl<H: Handler> App for H {
    fn router(self: Arc<Self>) -> axum::Router {
        router(self)
    }

    fn reset(&self) {
        Handler::reset(self)
    }

    fn login_steps(&self) -> Vec<Step> {
        Handler::login_steps(self)
    }
}

/// An axum router answering every path through `h`.
pub fn router<H: Handler>(h: Arc<H>) -> axum::Router {
    axum::Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let h = h.clone();
        async move {
            let req = decode(&method, &uri, &headers, &body);
            into_response(h.handle(&req))
        }
    })
}

fn decode(method: &Method, uri: &Uri, headers: &HeaderMap, body: &Bytes) -> Req {
    let form = if *method == Method::POST { parse_urlencoded(&String::from_utf8_lossy(body)) } else { vec![] };
    Req {
        post: *method == Method::POST,
        path: decode_path(uri.path()),
        query: parse_urlencoded(uri.query().unwrap_or("")),
        form,
        session: session_cookie(headers),
    }
}

fn into_response(resp: Resp) -> Response {
    let html = [(header::CONTENT_TYPE, "text/html; charset=utf-8")];
    match resp {
        Resp::Page(body) => (StatusCode::OK, html, body).into_response(),
        Resp::NotFound(body) => (StatusCode::NOT_FOUND, html, body).into_response(),
        Resp::Redirect { to, cookie } => {
            let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
            if let Some(token) = cookie {
                let value = if token.is_empty() {
                    "session=; Path=/; Max-Age=0".to_string()
                } else {
                    format!("session={token}; Path=/; HttpOnly; SameSite=Lax")
                };
                if let Ok(v) = value.parse() {
                    r.headers_mut().insert(header::SET_COOKIE, v);
                }
            }
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_the_first_non_empty_one() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("theme=dark; session="));
        assert_eq!(session_cookie(&headers), None);
        headers.append(header::COOKIE, HeaderValue::from_static("session=abc; other=1"));
        assert_eq!(session_cookie(&headers).as_deref(), Some("abc"));
    }

    #[test]
    fn requests_decode_their_query_form_and_page() {
        let r = Req::post("/wp-admin/edit.php?s=a+b&paged=3", &[("tag", "x"), ("tag", "y")], Some("t"));
        assert_eq!((r.q("s"), r.page(), r.f("tag"), r.f_all("tag")), (Some("a b"), 3, Some("x"), vec!["x", "y"]));
        assert_eq!(Req::get("/x?page=0", None).page(), 1);
    }
}
