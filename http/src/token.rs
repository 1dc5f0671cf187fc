//! The token check of every HTTP page (the coordinator's `--http` port and the
//! viewer's): with a token configured, a request must carry it as
//! `Authorization: Bearer <token>` or, for a browser (links, images,
//! server-sent events, a page's refresh), as `?token=<token>` in the URL;
//! otherwise the answer is `401`. Tokens are compared in constant time
//! ([`same`]), which the coordinator's gRPC check uses too.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Compares without leaking where the first difference is.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `%XX` escapes decoded; anything else kept as it is.
fn percent_decoded(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Whether the request carries `token`, in its `Authorization` header or its query.
pub fn presents(req: &Request, token: &str) -> bool {
    let header = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    if header.and_then(|v| v.strip_prefix("Bearer ")).is_some_and(|t| same(t.as_bytes(), token.as_bytes())) {
        return true;
    }
    let query = req.uri().query().unwrap_or("");
    query.split('&').filter_map(|kv| kv.strip_prefix("token=")).any(|t| same(&percent_decoded(t), token.as_bytes()))
}

/// Middleware: pass the request on only when it carries the token; otherwise `401`.
pub async fn require_token(State(token): State<Arc<str>>, req: Request, next: Next) -> Response {
    if presents(&req, &token) {
        return next.run(req).await;
    }
    let body = "missing or wrong token: send `Authorization: Bearer <token>` or add `?token=<token>` to the URL\n";
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], body).into_response()
}
