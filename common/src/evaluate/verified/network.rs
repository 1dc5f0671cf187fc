//! `NetworkEventEvaluator` (`core/evaluation/evaluators/network_event_evaluator.py`)
//! over a HAR trace.
//!
//! 1. The trace's evaluation events are its entries that are not static
//!    assets (`.css`, `.js`, images, fonts by the path's ending).
//! 2. The candidates: for a navigate task expecting a `GET`, the last
//!    navigation (a `GET` whose `Accept` starts with `text/html`, or with the
//!    `Sec-Fetch-*` headers of a user navigation); otherwise every event with
//!    the expected method (case ignored) whose base URL matches an expected
//!    alternative, and whose `Referer`, when one is expected and sent, does.
//! 3. The last candidate (or each, with `last_event_only: false`) is read:
//!    URL, expected headers (names case-insensitive), post data (form, JSON
//!    or multipart; JSONPath keys extracted), response content, response
//!    cookies (URL-decoded), status and method; then normalized like the
//!    expected block and compared with it, extra keys allowed.
//! 4. No candidate fails (or, with `should_not_exist`, passes).

use serde_json::{Map, Value};

use super::compare::{self, Opts};
use super::config::{NetworkEventCfg, OneOrMany};
use super::error::VerifiedError;
use super::jsonpath;
use super::normalize::{self, Norm};
use super::pytext;
use super::types::{Ctx, Kind, Typed};
use super::urlnorm::{self, Sites, UrlOpts};
use super::{EvalStatus, EvaluatorOutcome};
use crate::har::{Entry, Har};

const STATIC: [&str; 12] =
    [".css", ".js", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".woff", ".woff2", ".ttf", ".ico", ".webp"];

fn url_path(url: &str) -> String {
    urlnorm::urlsplit(url).map(|s| s.path).unwrap_or_default()
}

fn is_evaluation_event(e: &Entry) -> bool {
    let p = url_path(&e.request.url);
    !STATIC.iter().any(|ext| p.ends_with(ext))
}

/// Request headers, names and values lower-cased (`NetworkEvent.request_headers`).
fn request_headers(e: &Entry) -> Vec<(String, String)> {
    e.request.headers.iter().map(|h| (h.name.to_lowercase(), h.value.to_lowercase())).collect()
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    hs.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn is_navigation_event(e: &Entry) -> bool {
    if e.request.method != "GET" {
        return false;
    }
    let hs = request_headers(e);
    let accept = header(&hs, "accept").unwrap_or("");
    if header(&hs, "sec-fetch-user").is_some() {
        return header(&hs, "sec-fetch-dest") == Some("document")
            && header(&hs, "sec-fetch-mode") == Some("navigate")
            && header(&hs, "sec-fetch-user") == Some("?1")
            && accept.contains("text/html");
    }
    accept.starts_with("text/html")
}

/// `parse_har_content`: form fields (first value each), a JSON object, or multipart fields.
fn parse_content(mime: &str, text: &str) -> Option<Map<String, Value>> {
    if text.is_empty() {
        return None;
    }
    if mime.contains("application/x-www-form-urlencoded") {
        let mut out = Map::new();
        for (k, v) in urlnorm::parse_qsl_blank(text) {
            out.entry(k).or_insert(Value::String(v));
        }
        return Some(out);
    }
    if mime.contains("application/json") {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) {
            return Some(m);
        }
    }
    if mime.contains("multipart/form-data") {
        let boundary = mime.split("boundary=").nth(1)?.split([';', ' ', '\t', '\n', '\r']).next()?.to_string();
        if boundary.is_empty() {
            return None;
        }
        let mut out = Map::new();
        for part in text.split(&format!("--{boundary}")) {
            let part = pytext::strip(part);
            if part.is_empty() || part == "--" {
                continue;
            }
            let Some((headers, body)) = part.split_once("\r\n\r\n").or_else(|| part.split_once("\n\n")) else {
                continue;
            };
            for line in headers.split("\r\n") {
                if line.to_lowercase().starts_with("content-disposition:") {
                    if let Some(name) = line.split("name=\"").nth(1).and_then(|r| r.split('"').next()) {
                        if !name.is_empty() {
                            out.insert(
                                name.to_string(),
                                Value::String(body.trim_end_matches(['\r', '\n']).to_string()),
                            );
                        }
                    }
                    break;
                }
            }
        }
        return Some(out);
    }
    None
}

/// What one evaluation needs besides the config.
pub struct Cx<'a> {
    pub sites: &'a Sites,
    pub navigate_task: bool,
}

/// Runs the evaluator over the trace.
pub fn evaluate(cfg: &NetworkEventCfg, har: &Har, cx: &Cx) -> EvaluatorOutcome {
    let expected_json = serde_json::to_value(&cfg.expected).unwrap_or(Value::Null);
    match run(cfg, har, cx) {
        Ok((failures, actual)) => EvaluatorOutcome {
            evaluator: "NetworkEventEvaluator",
            status: if failures.is_empty() { EvalStatus::Success } else { EvalStatus::Failure },
            expected: expected_json,
            actual,
            messages: failures,
        },
        Err(e) => EvaluatorOutcome {
            evaluator: "NetworkEventEvaluator",
            status: EvalStatus::Error(e.to_string()),
            expected: expected_json,
            actual: Value::Null,
            messages: vec![e.to_string()],
        },
    }
}

fn url_opts(cfg: &NetworkEventCfg, strict: bool, query_params: Option<Map<String, Value>>) -> UrlOpts {
    UrlOpts {
        strict,
        render: true,
        decode_base64_query: cfg.decode_base64_query,
        ignored: cfg.ignored_query_params.clone().unwrap_or_default(),
        ignored_patterns: cfg.ignored_query_params_patterns.clone().unwrap_or_default(),
        query_schema: cfg.query_params_schema.clone(),
        query_params,
    }
}

/// `_normalized_url`: one URL or a list of alternatives.
fn normalized_url(
    v: &Value,
    cfg: &NetworkEventCfg,
    sites: &Sites,
    strict: bool,
    q: Option<Map<String, Value>>,
) -> Result<Typed, VerifiedError> {
    let opts = url_opts(cfg, strict, q);
    let raw = match v {
        Value::String(s) => Value::String(pytext::strip(s).to_string()),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| i.as_str().map_or(i.clone(), |s| Value::String(pytext::strip(s).to_string())))
                .collect(),
        ),
        other => other.clone(),
    };
    Typed::new(Kind::Url, &raw, &Ctx { sites, derender: true, url: &opts })
}

/// `URL.compare_path`: some alternative of each side has a matching base URL.
fn compare_path(expected: &Typed, actual: &Typed, sites: &Sites) -> bool {
    expected.alts.iter().any(|a| {
        actual.alts.iter().any(|b| match (a, b) {
            (super::types::Atom::Url(x), super::types::Atom::Url(y)) => x.matches_base_path(y, Some(sites)),
            _ => false,
        })
    })
}

fn url_value(u: &OneOrMany) -> Value {
    match u {
        OneOrMany::One(s) => Value::String(s.clone()),
        OneOrMany::Many(v) => Value::from(v.clone()),
    }
}

fn run(cfg: &NetworkEventCfg, har: &Har, cx: &Cx) -> Result<(Vec<String>, Value), VerifiedError> {
    let sites = cx.sites;
    let exp = &cfg.expected;
    // Step 1: the candidates.
    let events: Vec<&Entry> = har.log.entries.iter().filter(|e| is_evaluation_event(e)).collect();
    let matching: Vec<&Entry> = if events.is_empty() {
        Vec::new()
    } else if cx.navigate_task && exp.http_method == "GET" {
        events.iter().rev().find(|e| is_navigation_event(e)).map(|e| vec![*e]).unwrap_or_default()
    } else {
        let expected_url = normalized_url(&url_value(&exp.url), cfg, sites, true, None)?;
        let expected_referer = match exp.headers.as_ref().and_then(|h| h.get("referer")) {
            Some(r) => Some(normalized_url(r, cfg, sites, true, None)?),
            None => None,
        };
        let mut out = Vec::new();
        for e in &events {
            if !exp.http_method.is_empty() && e.request.method.to_lowercase() != exp.http_method.to_lowercase() {
                continue;
            }
            let event_url = normalized_url(&Value::String(e.request.url.clone()), cfg, sites, false, None)?;
            if !compare_path(&expected_url, &event_url, sites) {
                continue;
            }
            let hs = request_headers(e);
            if let (Some(er), Some(referer)) = (&expected_referer, header(&hs, "referer")) {
                let r = normalized_url(&Value::String(referer.to_string()), cfg, sites, false, None)?;
                if !compare_path(er, &r, sites) {
                    continue;
                }
            }
            out.push(*e);
        }
        out
    };
    // Step 2: the expected block, normalized strictly.
    let expected = normalize_event(&expected_raw(cfg), cfg, sites, true, None)?;
    let post_keys: Option<Vec<String>> = match expected.get("post_data") {
        Some(Norm::Map(m)) if !m.is_empty() => Some(m.iter().map(|(k, _)| pytext::strip(k).to_string()).collect()),
        _ => None,
    };
    let content_keys: Option<Vec<String>> = exp
        .response_content
        .as_ref()
        .filter(|m| !m.is_empty())
        .map(|m| m.keys().map(|k| pytext::strip(k).to_string()).collect());
    let keys = Keys { post: post_keys, content: content_keys };
    // Step 3: the actual events.
    let selected: Vec<&Entry> = match (cfg.last_event_only, matching.last()) {
        (true, Some(last)) => vec![*last],
        (true, None) => Vec::new(),
        (false, _) => matching,
    };
    let mut actual = Vec::new();
    for e in &selected {
        actual.push(normalize_event(&extract(e, cfg), cfg, sites, false, Some(&keys))?);
    }
    let actual_json = Value::Array(actual.iter().map(Norm::to_json).collect());
    // Step 4: compare.
    if cfg.should_not_exist {
        return Ok(if actual.is_empty() {
            (Vec::new(), actual_json)
        } else {
            (
                vec![format!("found {} matching event(s) when none were expected (should_not_exist)", actual.len())],
                actual_json,
            )
        });
    }
    if actual.is_empty() {
        return Ok((
            vec!["no matching network event found that satisfies all expected criteria".to_string()],
            actual_json,
        ));
    }
    let opts = Opts { ordered: false, ignored_values_keys: &[], ignore_extra_keys: true, sites };
    let mut last_failures = Vec::new();
    for a in &actual {
        let f = compare::compare(a, &expected, "network_event", &opts)?;
        if f.is_empty() {
            return Ok((Vec::new(), actual_json));
        }
        last_failures = f;
    }
    let mut msgs = vec![format!(
        "no matching network event found: checked {} event(s), none matched all expected criteria",
        actual.len()
    )];
    msgs.extend(last_failures);
    Ok((msgs, actual_json))
}

/// The expected block as `model_dump(mode="json", exclude_none=True)` gives it.
fn expected_raw(cfg: &NetworkEventCfg) -> Map<String, Value> {
    match serde_json::to_value(&cfg.expected) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// `_extract_event_data`, dumped without its `None` fields.
fn extract(e: &Entry, cfg: &NetworkEventCfg) -> Map<String, Value> {
    let exp = &cfg.expected;
    let mut m = Map::new();
    m.insert("url".into(), Value::String(e.request.url.clone()));
    if let Some(want) = &exp.headers {
        if !want.is_empty() {
            let mut got = Map::new();
            for name in want.keys() {
                let lower = name.to_lowercase();
                if let Some(h) = e.request.headers.iter().rev().find(|h| h.name.to_lowercase() == lower) {
                    got.insert(name.clone(), Value::String(h.value.clone()));
                }
            }
            if !got.is_empty() {
                m.insert("headers".into(), Value::Object(got));
            }
        }
    }
    m.insert("response_status".into(), Value::from(e.response.status));
    if exp.post_data.as_ref().is_some_and(|p| !p.is_empty()) {
        if let Some(p) = &e.request.post_data {
            if let Some(parsed) = parse_content(&p.mime_type, &p.text) {
                m.insert("post_data".into(), Value::Object(parsed));
            }
        }
    }
    m.insert("http_method".into(), Value::String(e.request.method.clone()));
    if exp.response_content.as_ref().is_some_and(|p| !p.is_empty()) {
        let c = &e.response.content;
        if let Some(parsed) = c.text.as_deref().and_then(|t| parse_content(&c.mime_type, t)) {
            m.insert("response_content".into(), Value::Object(parsed));
        }
    }
    if let Some(want) = exp.response_cookies.as_ref().filter(|w| !w.is_empty()) {
        let mut got = Map::new();
        for name in want.keys() {
            if let Some(c) = e.response.cookies.iter().rev().find(|c| &c.name == name) {
                got.insert(name.clone(), Value::String(urlnorm::unquote(&c.value)));
            }
        }
        if !got.is_empty() {
            m.insert("response_cookies".into(), Value::Object(got));
        }
    }
    m
}

/// The expected block's post-data and response-content keys (stripped), for the actual side.
struct Keys {
    post: Option<Vec<String>>,
    content: Option<Vec<String>>,
}

/// `_normalize_value` of one event dict.
fn normalize_event(
    raw: &Map<String, Value>,
    cfg: &NetworkEventCfg,
    sites: &Sites,
    strict: bool,
    keys: Option<&Keys>,
) -> Result<Norm, VerifiedError> {
    let mut out: Vec<(String, Norm)> = Vec::new();
    let q = raw.get("query_params").and_then(Value::as_object).cloned();
    let url = raw.get("url").cloned().unwrap_or(Value::Null);
    out.push(("url".into(), Norm::Typed(normalized_url(&url, cfg, sites, strict, q)?)));
    if let Some(Value::Object(headers)) = raw.get("headers") {
        let mut hs = Vec::new();
        for (name, value) in headers {
            let n = if (name == "redirect_url" || name == "referer") && pytext::truthy(value) {
                Norm::Typed(normalized_url(value, cfg, sites, strict, None)?)
            } else {
                let derendered = match value {
                    Value::String(s) => Value::String(sites.derender(s, false).unwrap_or_else(|_| s.clone())),
                    other => other.clone(),
                };
                let opts = UrlOpts::default();
                match Typed::new(Kind::Str, &derendered, &Ctx { sites, derender: false, url: &opts }) {
                    Ok(t) => Norm::Typed(t),
                    Err(e) if strict => return Err(e),
                    Err(_) => Norm::Raw(derendered),
                }
            };
            hs.push((name.clone(), n));
        }
        out.push(("headers".into(), Norm::Map(hs)));
    }
    for (k, v) in raw {
        if matches!(k.as_str(), "response_status" | "http_method") {
            out.push((k.clone(), Norm::Raw(v.clone())));
        }
    }
    // post_data
    let post = match raw.get("post_data") {
        Some(Value::Object(p)) if !p.is_empty() => {
            let mut p = p.clone();
            if let Some(patterns) = &cfg.ignored_post_data_params_patterns {
                let res: Vec<_> = patterns.iter().filter_map(|pat| pytext::py_regex(pat, false)).collect();
                p.retain(|k, _| !res.iter().any(|re| pytext::re_search(re, k)));
            }
            if let Some(pk) = keys.and_then(|k| k.post.as_ref()) {
                let data = Value::Object(p.clone());
                let mut flat = Map::new();
                for k in pk.iter().filter(|k| !jsonpath::is_jsonpath_key(k)) {
                    flat.insert(k.clone(), p.get(k).cloned().unwrap_or(Value::Null));
                }
                for k in pk.iter().filter(|k| jsonpath::is_jsonpath_key(k)) {
                    flat.insert(k.clone(), jsonpath::extract(&data, k));
                }
                p = flat;
            }
            if p.is_empty() {
                Norm::Raw(Value::Object(p))
            } else {
                let schema =
                    cfg.post_data_schema.clone().map(Value::Object).unwrap_or_else(|| Value::Object(Map::new()));
                let opts = UrlOpts { strict, ..UrlOpts::default() };
                normalize::normalize(&Value::Object(p), &schema, strict, &Ctx { sites, derender: true, url: &opts })?
            }
        }
        _ => Norm::NONE,
    };
    out.push(("post_data".into(), post));
    let content = match raw.get("response_content") {
        Some(Value::Object(c)) if !c.is_empty() => match keys.and_then(|k| k.content.as_ref()) {
            Some(ck) => {
                let data = Value::Object(c.clone());
                let mut flat = Vec::new();
                for k in ck.iter().filter(|k| !jsonpath::is_jsonpath_key(k)) {
                    if let Some(v) = c.get(k) {
                        flat.push((k.clone(), Norm::Raw(v.clone())));
                    }
                }
                for k in ck.iter().filter(|k| jsonpath::is_jsonpath_key(k)) {
                    flat.push((k.clone(), Norm::Raw(jsonpath::extract(&data, k))));
                }
                Norm::Map(flat)
            }
            None => Norm::Map(c.iter().map(|(k, v)| (k.clone(), Norm::Raw(v.clone()))).collect()),
        },
        _ => Norm::NONE,
    };
    out.push(("response_content".into(), content));
    let cookies = match raw.get("response_cookies") {
        Some(Value::Object(c)) if !c.is_empty() => {
            let mut cs = Vec::new();
            let opts = UrlOpts::default();
            for (name, v) in c {
                match Typed::new(Kind::Str, v, &Ctx { sites, derender: false, url: &opts }) {
                    Ok(t) => cs.push((name.clone(), Norm::Typed(t))),
                    Err(e) if strict => return Err(e),
                    Err(_) => cs.push((name.clone(), Norm::Raw(v.clone()))),
                }
            }
            Norm::Map(cs)
        }
        _ => Norm::NONE,
    };
    out.push(("response_cookies".into(), cookies));
    Ok(Norm::Map(out))
}
