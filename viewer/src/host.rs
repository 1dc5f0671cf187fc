//! The `Host` check of a viewer listening on loopback (`skillshift view`).
//!
//! A browser on this machine can be made to send requests to 127.0.0.1 under
//! another site's name: a page rebinds its own DNS name to 127.0.0.1 and its
//! script then reads the viewer as if it were that site (DNS rebinding).
//! The browser still sends that name in `Host`; a viewer bound to loopback
//! answers only `localhost`, `*.localhost`, `127.x.x.x` and `[::1]` (with or
//! without a port), and anything else with `421 Misdirected Request`.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Whether `host` (a `Host` header's value) names this machine's loopback.
pub fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[::1]` or `[::1]:8765`
        match rest.split_once(']') {
            Some((ip, port)) if port.is_empty() || port.strip_prefix(':').is_some_and(is_port) => ip,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host,
        }
    };
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix('.').unwrap_or(&name);
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// Middleware: pass the request on only when its `Host` is a loopback name; otherwise `421`.
pub async fn require_loopback_host(req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    if is_loopback_host(host) {
        return next.run(req).await;
    }
    let shown = skillshift_common::text::short(host);
    let body = format!(
        "this viewer listens on loopback and answers only requests for localhost or 127.0.0.1, not for '{shown}'\n"
    );
    (StatusCode::MISDIRECTED_REQUEST, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_pass_and_others_are_refused() {
        for ok in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:8765",
            "127.1.2.3",
            "[::1]:80",
            "[::1]",
            "LOCALHOST.",
            "a.localhost:1",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example:8765",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "10.0.0.1:8765",
            "[::2]:80",
            "localhost:port",
            "[::1]x",
            "0.0.0.0:8765",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }
}
