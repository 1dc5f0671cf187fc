//! The HAR shape of what DevTools report: headers as name/value pairs, cookies from their
//! headers, query strings, times, bodies cut to their bound, and an entry's size against the
//! trace's bound.

use serde_json::Value;
use skillshift_common::har::{Entry, NameValue};

use super::MAX_BODY;

pub(super) fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// DevTools' `Headers` object as name/value pairs; a value holding several lines (`Set-Cookie`)
/// becomes one pair per line, as HAR writes them.
pub(super) fn headers_of(v: Option<&Value>) -> Vec<NameValue> {
    let Some(Value::Object(map)) = v else { return Vec::new() };
    let mut out = Vec::with_capacity(map.len());
    for (name, value) in map {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        for line in text.split('\n') {
            out.push(NameValue { name: name.clone(), value: line.to_string() });
        }
    }
    out
}

pub(super) fn header(headers: &[NameValue], name: &str) -> Option<String> {
    headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value.clone())
}

/// The cookies of a request's `Cookie` header.
pub(super) fn request_cookies(headers: &[NameValue]) -> Vec<NameValue> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("cookie"))
        .flat_map(|h| h.value.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .map(|(n, v)| NameValue { name: n.trim().to_string(), value: v.trim().to_string() })
        .collect()
}

/// The cookies a response's `Set-Cookie` headers set (name and value; attributes left out).
pub(super) fn response_cookies(headers: &[NameValue]) -> Vec<NameValue> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|h| h.value.split(';').next()?.trim().split_once('='))
        .map(|(n, v)| NameValue { name: n.trim().to_string(), value: v.trim().to_string() })
        .collect()
}

pub(super) fn query_of(url: &str) -> Vec<NameValue> {
    let Ok(u) = url::Url::parse(url) else { return Vec::new() };
    u.query_pairs().map(|(n, v)| NameValue { name: n.into_owned(), value: v.into_owned() }).collect()
}

pub(super) fn resolve(base: &str, location: &str) -> String {
    url::Url::parse(base).and_then(|b| b.join(location)).map(|u| u.to_string()).unwrap_or_else(|_| location.into())
}

pub(super) fn rfc3339(wall: Option<f64>) -> String {
    let Some(secs) = wall.filter(|s| s.is_finite() && *s > 0.0) else { return String::new() };
    let ms = (secs * 1000.0) as i64;
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// `text` cut to [`MAX_BODY`] bytes (at a character boundary), and whether it was cut.
pub(super) fn clip(text: &str) -> (String, bool) {
    if text.len() <= MAX_BODY {
        return (text.to_string(), false);
    }
    (prefix(text, MAX_BODY).to_string(), true)
}

pub(super) fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

pub(super) fn size_of(e: &Entry) -> usize {
    let pairs = |v: &[NameValue]| v.iter().map(|h| h.name.len() + h.value.len() + 8).sum::<usize>();
    256 + e.request.url.len()
        + pairs(&e.request.headers)
        + pairs(&e.request.query_string)
        + pairs(&e.request.cookies)
        + e.request.post_data.as_ref().map_or(0, |d| d.text.len() + d.mime_type.len())
        + pairs(&e.response.headers)
        + pairs(&e.response.cookies)
        + e.response.redirect_url.len()
        + e.response.content.text.as_ref().map_or(0, String::len)
}
