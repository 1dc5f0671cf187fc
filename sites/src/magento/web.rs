//! Request and response plumbing shared by the Magento and WordPress fixture
//! sites: one axum fallback handler per site turns each HTTP request into a
//! [`Req`] (method, path, decoded query and form, session cookie) and the
//! site's pure `handle(&Req) -> Resp` function answers it. Keeping the sites
//! as plain functions of a request makes their pages easy to unit-test.
//! Also: HTML escaping, URL encoding and a small deterministic PRNG.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

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
        self.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The first form value of `key`.
    pub fn f(&self, key: &str) -> Option<&str> {
        self.form.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every form value of `key` (checkbox groups).
    pub fn f_all(&self, key: &str) -> Vec<&str> {
        self.form.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect()
    }

    /// The page number of `?page=N` (1-based, at least 1).
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

/// A site as a pure request handler.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, req: &Req) -> Resp;
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
    let session = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, v)| *k == "session" && !v.is_empty())
        .map(|(_, v)| v.to_string());
    let form = if *method == Method::POST { parse_urlencoded(&String::from_utf8_lossy(body)) } else { vec![] };
    Req {
        post: *method == Method::POST,
        path: percent_decode(uri.path()),
        query: parse_urlencoded(uri.query().unwrap_or("")),
        form,
        session,
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

/// Decodes `application/x-www-form-urlencoded` pairs.
pub fn parse_urlencoded(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(&k.replace('+', " ")), percent_decode(&v.replace('+', " ")))
        })
        .collect()
}

/// Decodes `%XX` escapes (invalid ones are kept as they are).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(byte) = hex {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes a query value (space as `+`).
pub fn urlenc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for byte in s.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

pub use crate::html::esc;

/// A lowercase, dash-separated slug of `s` (WordPress slugs, Magento URL keys).
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Whether `hay` contains `needle`, ignoring ASCII case (grid keyword search).
pub fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.trim().to_lowercase())
}

/// A small xorshift64* generator: fixed seeds give the same data on every
/// platform and every `rand` version.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
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

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// True with probability `pct`%.
    pub fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
}

/// `YYYY-MM-DD` of a day count since 1970-01-01 (civil calendar).
pub fn date_of(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Pages of `per` items: the slice for 1-based `page` and the number of pages.
pub fn paginate<T>(items: &[T], page: usize, per: usize) -> (&[T], usize) {
    let pages = items.len().div_ceil(per).max(1);
    let page = page.clamp(1, pages);
    let start = (page - 1) * per;
    (&items[start.min(items.len())..(start + per).min(items.len())], pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_coding_round_trips() {
        let s = "Ann O'Neil & co/ü";
        assert_eq!(parse_urlencoded(&format!("q={}", urlenc(s))), vec![("q".to_string(), s.to_string())]);
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(slug("Hello, World!  Again"), "hello-world-again");
    }

    #[test]
    fn dates_and_rng_are_stable() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(19_358), "2023-01-01");
        let a: Vec<u64> = (0..3)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::new(7);
        assert_eq!(a, vec![r.next_u64(), r.next_u64(), r.next_u64()]);
    }
}
