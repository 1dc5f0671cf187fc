//! The network panel's rows: an attempt's network trace (the trajectory's `network`, HAR 1.2) cut
//! into the requests of each step, each reduced to what the panel shows (method, URL, status, tab,
//! resource type). The HAR itself never goes to the page: a trace may hold megabytes of headers and
//! bodies, and the panel needs a line per request.
//!
//! Bounded: at most [`MAX_ROWS_PER_STEP`] requests of one step are listed (the rest counted in
//! `more`), each URL cut at [`MAX_URL_BYTES`].

use serde_json::{json, Value};
use skillshift_common::har::{Entry, Har};

/// Requests of one step listed; the rest are counted.
pub const MAX_ROWS_PER_STEP: usize = 200;
/// Bytes of one URL shown.
pub const MAX_URL_BYTES: usize = 1024;

fn row(e: &Entry) -> Value {
    let mut url = e.request.url.clone();
    if url.len() > MAX_URL_BYTES {
        let mut end = MAX_URL_BYTES;
        while !url.is_char_boundary(end) {
            end -= 1;
        }
        url.truncate(end);
        url.push('…');
    }
    json!({
        "method": e.request.method, "url": url, "status": e.response.status,
        "status_text": e.response.status_text, "tab": e.tab, "type": e.resource_type,
        "redirect": (!e.response.redirect_url.is_empty()).then_some(&e.response.redirect_url),
    })
}

/// The requests made during step `step` (1-based; 0: before the first step), in order:
/// `{"requests": [...], "more": N, "writes": M}` (`writes`: requests other than GET, HEAD and OPTIONS).
pub fn step_rows(har: &Har, step: u32) -> Value {
    let of_step: Vec<&Entry> = har.log.entries.iter().filter(|e| e.step.unwrap_or(0) == step).collect();
    let writes = of_step.iter().filter(|e| is_write(&e.request.method)).count();
    let requests: Vec<Value> = of_step.iter().take(MAX_ROWS_PER_STEP).map(|e| row(e)).collect();
    json!({"requests": requests, "more": of_step.len().saturating_sub(MAX_ROWS_PER_STEP), "writes": writes})
}

/// A request that may change the site's state (what the panel highlights).
pub fn is_write(method: &str) -> bool {
    !matches!(method.to_ascii_uppercase().as_str(), "GET" | "HEAD" | "OPTIONS")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_cut_by_step_counted_and_bounded() {
        let entry = |method: &str, step: u32, url: &str| serde_json::json!({"request": {"method": method, "url": url}, "response": {"status": 200}, "_step": step});
        let mut entries = vec![entry("GET", 0, "http://a/"), entry("POST", 1, "http://a/save")];
        entries.extend((0..MAX_ROWS_PER_STEP + 3).map(|_| entry("GET", 2, &format!("http://a/{}", "x".repeat(2000)))));
        let har: Har = serde_json::from_value(json!({"log": {"entries": entries}})).expect("har");
        assert_eq!(step_rows(&har, 0)["requests"][0]["url"], "http://a/");
        let one = step_rows(&har, 1);
        assert_eq!((one["writes"].as_u64(), one["requests"][0]["method"].as_str()), (Some(1), Some("POST")));
        let two = step_rows(&har, 2);
        assert_eq!(two["requests"].as_array().map(Vec::len), Some(MAX_ROWS_PER_STEP));
        assert_eq!(two["more"], 3);
        assert!(two["requests"][0]["url"].as_str().is_some_and(|u| u.len() <= MAX_URL_BYTES + 3));
        assert!(step_rows(&har, 9)["requests"].as_array().is_some_and(Vec::is_empty));
    }
}
