//! An attempt's network trace as an HTTP Archive (HAR 1.2): the requests the
//! browser made and what came back, the shape WebArena-Verified's
//! `NetworkEventEvaluator` reads (`NetworkTrace.from_har`) and every browser
//! exports, so a trace recorded here can be scored by its package unchanged
//! and a HAR saved elsewhere can be scored here (docs/formats.md#trajectories,
//! the `network` part).
//!
//! Only the fields the evaluators and the viewer use are typed; the rest of a
//! foreign HAR is ignored when read. Every field a HAR may leave out has a
//! default, so a browser's export loads as-is.

use serde::{Deserialize, Serialize};

/// The `creator.name` of traces this harness records.
pub const CREATOR: &str = "skillshift";

/// A HAR document: `{"log": {...}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Har {
    pub log: Log,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Log {
    #[serde(default = "version")]
    pub version: String,
    #[serde(default)]
    pub creator: Creator,
    #[serde(default)]
    pub entries: Vec<Entry>,
    /// Entries left out because the trace reached its bound (ours only; absent in foreign HARs).
    #[serde(default, rename = "_dropped", skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

impl Default for Log {
    fn default() -> Self {
        Log { version: version(), creator: Creator::default(), entries: Vec::new(), dropped: 0 }
    }
}

fn version() -> String {
    "1.2".to_string()
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Creator {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
}

impl Default for Creator {
    fn default() -> Self {
        Creator { name: CREATOR.to_string(), version: env!("CARGO_PKG_VERSION").to_string() }
    }
}

/// One request and its response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// RFC 3339, when the request started.
    #[serde(default)]
    pub started_date_time: String,
    /// Milliseconds from the request to the response's end (`-1` when unknown).
    #[serde(default)]
    pub time: f64,
    pub request: Request,
    pub response: Response,
    /// The attempt's tab the request came from, 0 for the first (ours only).
    #[serde(default, rename = "_tab", skip_serializing_if = "Option::is_none")]
    pub tab: Option<u32>,
    /// DevTools' resource type (`Document`, `XHR`, `Fetch`, ...; ours only).
    #[serde(default, rename = "_resourceType", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The agent step during which the request was made, 1-based; 0 before step 1 (ours only).
    #[serde(default, rename = "_step", skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub method: String,
    pub url: String,
    #[serde(default = "http_version")]
    pub http_version: String,
    #[serde(default)]
    pub headers: Vec<NameValue>,
    #[serde(default)]
    pub query_string: Vec<NameValue>,
    #[serde(default)]
    pub cookies: Vec<NameValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_data: Option<PostData>,
    #[serde(default = "unknown_size")]
    pub headers_size: i64,
    #[serde(default = "unknown_size")]
    pub body_size: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub status: i64,
    #[serde(default)]
    pub status_text: String,
    #[serde(default = "http_version")]
    pub http_version: String,
    #[serde(default)]
    pub headers: Vec<NameValue>,
    #[serde(default)]
    pub cookies: Vec<NameValue>,
    #[serde(default)]
    pub content: Content,
    #[serde(default, rename = "redirectURL")]
    pub redirect_url: String,
    #[serde(default = "unknown_size")]
    pub headers_size: i64,
    #[serde(default = "unknown_size")]
    pub body_size: i64,
}

fn http_version() -> String {
    "HTTP/1.1".to_string()
}

fn unknown_size() -> i64 {
    -1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameValue {
    pub name: String,
    #[serde(default)]
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostData {
    #[serde(default)]
    pub mime_type: String,
    #[serde(default)]
    pub text: String,
}

/// A response body: `text` only where a task's evaluator reads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_minimal_foreign_har_loads_and_ours_round_trips() {
        let text = r#"{"log": {"entries": [{"request": {"method": "GET", "url": "http://a/x?q=1"},
                      "response": {"status": 302, "redirectURL": "http://a/y"}}]}}"#;
        let har: Har = serde_json::from_str(text).unwrap();
        let e = &har.log.entries[0];
        assert_eq!((e.request.method.as_str(), e.response.status), ("GET", 302));
        assert_eq!(e.response.redirect_url, "http://a/y");
        assert_eq!(e.tab, None);
        let again: Har = serde_json::from_str(&serde_json::to_string(&har).unwrap()).unwrap();
        assert_eq!(again, har);
        let json = serde_json::to_value(&har).unwrap();
        assert_eq!(json["log"]["entries"][0]["response"]["redirectURL"], "http://a/y");
        assert!(json["log"]["entries"][0].get("_tab").is_none());
    }
}
