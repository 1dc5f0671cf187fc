//! Small helpers for server-rendered HTML shared by the sites: escaping,
//! form-body parsing, redirects with flash messages, the session cookie and
//! pagination.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};

/// Escapes text for HTML content and attribute values (the report's escaper: one implementation).
pub use skillshift_common::html::escape as esc;

/// Percent-encodes a query or path component.
pub fn enc(text: &str) -> String {
    crate::sim::form_encode(text)
}

/// Parses an `application/x-www-form-urlencoded` body or query string.
pub fn parse_form(body: &str) -> Vec<(String, String)> {
    skillshift_common::evaluate::url_parts(&format!("x?{body}")).query
}

/// The first value of `key` in parsed form data.
pub fn field<'a>(form: &'a [(String, String)], key: &str) -> Option<&'a str> {
    form.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The value of the `session` cookie, if any.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    for value in headers.get_all(header::COOKIE) {
        for part in value.to_str().unwrap_or("").split(';') {
            if let Some((k, v)) = part.trim().split_once('=') {
                if k == "session" {
                    return Some(v.to_string());
                }
            }
        }
    }
    None
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

/// Pagination: the items of page `page` (1-based) of `per`, and the number of pages.
pub fn paginate<T>(items: &[T], page: usize, per: usize) -> (&[T], usize) {
    let pages = items.len().div_ceil(per).max(1);
    let page = page.clamp(1, pages);
    let start = (page - 1) * per;
    (&items[start.min(items.len())..(start + per).min(items.len())], pages)
}

/// A pagination `<nav>` linking `base` with `page=N` appended (base carries its other query).
pub fn pager(base: &str, page: usize, pages: usize) -> String {
    if pages <= 1 {
        return String::new();
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    let mut out = String::from(r#"<nav aria-label="Pagination" class="pagination"><ul>"#);
    if page > 1 {
        out.push_str(&format!(r#"<li><a href="{}{sep}page={}">Previous</a></li>"#, esc(base), page - 1));
    }
    for p in 1..=pages {
        if p == page {
            out.push_str(&format!(r#"<li><span aria-current="page">{p}</span></li>"#));
        } else {
            out.push_str(&format!(
                r#"<li><a href="{}{sep}page={p}" aria-label="Go to page {p}">{p}</a></li>"#,
                esc(base)
            ));
        }
    }
    if page < pages {
        out.push_str(&format!(r#"<li><a href="{}{sep}page={}">Next</a></li>"#, esc(base), page + 1));
    }
    out.push_str("</ul></nav>");
    out
}

/// A small deterministic PRNG (xorshift64*), so seeded data never drifts with a crate version.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}
