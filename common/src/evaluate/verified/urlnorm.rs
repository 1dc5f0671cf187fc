//! WebArena-Verified's `URL` type (`data_types/url.py`) with what it rests
//! on: Python's `urlsplit`/`urlunsplit`/`quote`/`unquote`/`parse_qs`, the
//! `url-normalize` package (scheme added, percent-encoding made canonical,
//! dot segments resolved, default ports dropped, `k=` becoming `k`), and the
//! rendering of site placeholders (`__GITLAB__` → its base URL) and back.
//!
//! A URL normalizes to a base URL (scheme, host and path, derendered, so
//! `__GITLAB__/a/b`) and its query parameters (ignored ones dropped, values
//! lower-cased and sorted, optionally normalized by a schema). A `^...$` URL
//! is a regular expression over the rendered base URL. Two URLs are equal
//! when their base URLs are (case and trailing `/` ignored, or the pattern
//! matches) and every query key of either side has the same first value
//! (missing reads `""`; a `^...$` value of the expected side matches).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Map, Value};
use unicode_normalization::UnicodeNormalization;

use super::error::VerifiedError;
use super::pytext::{self, is_regexp};
use super::types::{Kind, Typed};
use crate::task::SiteKey;

/// The task's sites and their base URLs, in the task's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sites(pub Vec<(SiteKey, String)>);

impl Sites {
    /// `config.render_url(url, sites, strict)`: the first site whose placeholder starts `url`.
    pub fn render(&self, url: &str, strict: bool) -> Result<String, VerifiedError> {
        for (key, base) in &self.0 {
            if url.starts_with(key.placeholder()) {
                return Ok(url.replace(key.placeholder(), base));
            }
        }
        if strict {
            Err(VerifiedError::NoSiteForTemplate(url.to_string()))
        } else {
            Ok(url.to_string())
        }
    }

    /// `config.derender_url(url, sites, strict)`: the longest base URL found in `url` becomes its placeholder.
    pub fn derender(&self, url: &str, strict: bool) -> Result<String, VerifiedError> {
        let mut by_length: Vec<&(SiteKey, String)> = self.0.iter().collect();
        by_length.sort_by_key(|(_, b)| std::cmp::Reverse(b.len()));
        for (key, base) in by_length {
            if !base.is_empty() && url.contains(base.as_str()) {
                return Ok(url.replace(base.trim_end_matches('/'), key.placeholder()));
            }
        }
        if strict {
            Err(VerifiedError::OffSites(url.to_string()))
        } else {
            Ok(url.to_string())
        }
    }
}

/// The keyword arguments a `URL` is built with.
#[derive(Debug, Clone, Default)]
pub struct UrlOpts {
    /// The rendering and derendering are strict (the expected side).
    pub strict: bool,
    /// A `render_url_fct` was given (the network evaluator's URLs); else placeholders stay.
    pub render: bool,
    pub decode_base64_query: bool,
    pub ignored: Vec<String>,
    pub ignored_patterns: Vec<String>,
    /// `query_params_schema`.
    pub query_schema: Option<Map<String, Value>>,
    /// Query parameters given beside the URL (they replace its own).
    pub query_params: Option<Map<String, Value>>,
}

/// One value of a query parameter after normalization.
#[derive(Debug, Clone, PartialEq)]
pub enum QItem {
    Text(String),
    Typed(Typed),
    Raw(Value),
}

/// `_NormalizedUrlValues`.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlValue {
    pub base_url: String,
    pub query: BTreeMap<String, Vec<QItem>>,
    pub is_regex: bool,
}

impl std::fmt::Display for UrlValue {
    /// `str()`: the base URL with the query rebuilt, keys sorted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        for (k, vs) in &self.query {
            for v in vs {
                let text = match v {
                    QItem::Text(s) => s.clone(),
                    QItem::Typed(t) => t.str(),
                    QItem::Raw(r) => pytext::py_str(r),
                };
                parts.push(format!("{k}={text}"));
            }
        }
        let p = urlsplit(&self.base_url).unwrap_or_default();
        f.write_str(&urlunparse(&p.scheme, &p.netloc, &p.path, &p.params, &parts.join("&"), &p.fragment))
    }
}

impl UrlValue {
    /// `matches_base_path`; `sites` renders placeholders first when the URL was built with a renderer.
    pub fn matches_base_path(&self, other: &UrlValue, sites: Option<&Sites>) -> bool {
        let render = |u: &str| -> String {
            match sites {
                Some(s) if u.starts_with("__") => s.render(u, false).unwrap_or_else(|_| u.to_string()),
                _ => u.to_string(),
            }
        };
        for (pat, text) in [(self, other), (other, self)] {
            if !pat.is_regex {
                continue;
            }
            let pattern = if is_regexp(&pat.base_url) {
                format!("^{}$", render(&pat.base_url[1..pat.base_url.len() - 1]))
            } else {
                render(&pat.base_url)
            };
            if let Some(re) = pytext::py_regex(&pattern, false) {
                if pytext::re_match(&re, &render(&text.base_url)) {
                    return true;
                }
            }
        }
        if !self.is_regex && !other.is_regex {
            return self.base_url.to_lowercase().trim_end_matches('/')
                == other.base_url.to_lowercase().trim_end_matches('/');
        }
        false
    }

    /// `_compare_query_params`, `self` the expected side.
    pub fn query_params_equal(&self, other: &UrlValue) -> bool {
        let keys: std::collections::BTreeSet<&String> = self.query.keys().chain(other.query.keys()).collect();
        let first = |q: &BTreeMap<String, Vec<QItem>>, k: &str| -> QItem {
            q.get(k).and_then(|v| v.first().cloned()).unwrap_or(QItem::Text(String::new()))
        };
        let text = |q: &QItem| match q {
            QItem::Text(s) => s.clone(),
            QItem::Typed(t) => t.str(),
            QItem::Raw(Value::Null) => String::new(),
            QItem::Raw(r) => pytext::py_str(r),
        };
        for k in keys {
            let (mine, theirs) = (first(&self.query, k), first(&other.query, k));
            let is_regex = match &mine {
                QItem::Typed(t) => t.is_regexp(),
                QItem::Text(s) => is_regexp(s),
                QItem::Raw(_) => false,
            };
            if is_regex {
                match pytext::py_regex(&text(&mine), false) {
                    Some(re) if pytext::re_match(&re, &text(&theirs)) => continue,
                    _ => return false,
                }
            }
            let equal = match (&mine, &theirs) {
                (QItem::Text(a), QItem::Text(b)) => a == b,
                (QItem::Typed(a), QItem::Typed(b)) => a.eq(b, &Sites::default()),
                (QItem::Raw(a), QItem::Raw(b)) => pytext::py_eq(a, b),
                (QItem::Text(a), QItem::Raw(Value::Null)) | (QItem::Raw(Value::Null), QItem::Text(a)) => a.is_empty(),
                _ => false,
            };
            if !equal {
                return false;
            }
        }
        true
    }
}

/// `URL._type_normalize(value)` (the value already stripped).
pub fn normalize(value: &str, sites: &Sites, opts: &UrlOpts) -> Result<UrlValue, VerifiedError> {
    if value.is_empty() {
        return Err(VerifiedError::EmptyUrl);
    }
    if is_regexp(value) {
        let query = match &opts.query_params {
            Some(q) => normalize_query_params(given_query(q), opts, sites)?,
            None => BTreeMap::new(),
        };
        return Ok(UrlValue { base_url: value.trim_end_matches('/').to_string(), query, is_regex: true });
    }
    let mut value = value.trim_end_matches('/').to_string();
    if value.starts_with("__") && opts.render {
        value = sites.render(&value, opts.strict)?;
    }
    if is_ssh(&value) {
        return ssh(&value);
    }
    let normalized = url_normalize(&value).ok_or_else(|| VerifiedError::InvalidUrl(value.clone()))?;
    let derendered = sites.derender(&normalized, opts.strict)?;
    let p = urlsplit(&derendered)?;
    let scheme = p.scheme.to_lowercase();
    let mut netloc = p.netloc.to_lowercase();
    let mut path = p.path.clone();
    if !p.params.is_empty() {
        path = format!("{path};{}", p.params);
    }
    if !netloc.is_empty() {
        if let Some(port) = port_of(&p.netloc) {
            if (scheme == "http" && port == 80) || (scheme == "https" && port == 443) {
                netloc = hostname_of(&p.netloc);
            }
        }
    }
    let query = match &opts.query_params {
        Some(q) => given_query(q),
        None => {
            let mut parts = Vec::new();
            if opts.decode_base64_query {
                let (cleaned, decoded) = extract_base64_query(&path);
                path = cleaned;
                parts.extend(decoded);
            }
            if !p.query.is_empty() {
                parts.push(pytext::strip(&p.query).to_string());
            }
            normalize_query(&parts.join("&"))
        }
    };
    let query = normalize_query_params(query, opts, sites)?;
    Ok(UrlValue { base_url: urlunparse(&scheme, &netloc, &path, "", "", &p.fragment), query, is_regex: false })
}

/// Query parameters as the spec gives them: each name with a list of values (a string is its characters).
fn given_query(q: &Map<String, Value>) -> Vec<(String, Vec<Value>)> {
    q.iter()
        .map(|(k, v)| {
            let vals = match v {
                Value::Array(items) => items.clone(),
                Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
                other => vec![other.clone()],
            };
            (k.clone(), vals)
        })
        .collect()
}

/// `_normalize_query_params`: ignored names dropped, values lower-cased, stripped and sorted, then the schema.
fn normalize_query_params(
    q: Vec<(String, Vec<Value>)>,
    opts: &UrlOpts,
    sites: &Sites,
) -> Result<BTreeMap<String, Vec<QItem>>, VerifiedError> {
    let ignored = |k: &str| {
        opts.ignored.iter().any(|i| i == k)
            || opts
                .ignored_patterns
                .iter()
                .any(|p| pytext::py_regex(p, true).is_some_and(|re| pytext::re_search(&re, k)))
    };
    let mut kept: Vec<(String, Vec<Value>)> = Vec::new();
    for (k, vals) in q {
        if ignored(&k) {
            continue;
        }
        let mut vals: Vec<Value> = vals
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Value::String(pytext::strip(&s.to_lowercase()).to_string()),
                other => other,
            })
            .collect();
        vals.sort_by_key(pytext::py_str);
        kept.push((k, vals));
    }
    let Some(schema) = &opts.query_schema else {
        return Ok(kept
            .into_iter()
            .map(|(k, vs)| {
                let items = vs
                    .into_iter()
                    .map(|v| match v {
                        Value::String(s) => QItem::Text(s),
                        other => QItem::Raw(other),
                    })
                    .collect();
                (k, items)
            })
            .collect());
    };
    if kept.is_empty() {
        return Ok(BTreeMap::new());
    }
    let dict: Map<String, Value> = kept.into_iter().map(|(k, v)| (k, Value::Array(v))).collect();
    let cx = super::types::Ctx { sites, derender: false, url: &UrlOpts { strict: opts.strict, ..UrlOpts::default() } };
    let n = super::normalize::normalize(&Value::Object(dict), &Value::Object(schema.clone()), opts.strict, &cx)?;
    let mut out = BTreeMap::new();
    if let super::normalize::Norm::Map(entries) = n {
        for (k, v) in entries {
            let items = match v {
                super::normalize::Norm::Seq(items) => items
                    .into_iter()
                    .map(|i| match i {
                        super::normalize::Norm::Typed(t) => QItem::Typed(t),
                        super::normalize::Norm::Raw(r) => QItem::Raw(r),
                        other => QItem::Raw(other.to_json()),
                    })
                    .collect(),
                super::normalize::Norm::Typed(t) => vec![QItem::Typed(t)],
                super::normalize::Norm::Raw(Value::Array(items)) => items.into_iter().map(QItem::Raw).collect(),
                super::normalize::Norm::Raw(Value::Null) => Vec::new(),
                other => vec![QItem::Raw(other.to_json())],
            };
            out.insert(k, items);
        }
    }
    let _ = Kind::Str;
    Ok(out)
}

/// `normalize_query` (`url_utils`): `parse_qs` keeping blanks, then names and values unquoted once more.
pub fn normalize_query(query: &str) -> Vec<(String, Vec<Value>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (k, v) in parse_qsl_blank(query) {
        match out.iter_mut().find(|(name, _)| *name == k) {
            Some((_, vs)) => vs.push(v),
            None => out.push((k, vec![v])),
        }
    }
    out.into_iter()
        .map(|(k, vs)| {
            let mut vs: Vec<String> = vs.iter().map(|v| unquote(v)).collect();
            vs.sort();
            (unquote(&k), vs.into_iter().map(Value::String).collect())
        })
        .collect()
}

/// `parse_qsl(query, keep_blank_values=True)`.
pub fn parse_qsl_blank(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|f| !f.is_empty())
        .map(|f| {
            let (k, v) = f.split_once('=').unwrap_or((f, ""));
            (unquote(&k.replace('+', " ")), unquote(&v.replace('+', " ")))
        })
        .collect()
}

/// `extract_base64_query`: path segments that decode (URL-safe base64) to text holding `=`.
fn extract_base64_query(path: &str) -> (String, Vec<String>) {
    if path.is_empty() {
        return (String::new(), Vec::new());
    }
    let mut segments: Vec<String> = path.split('/').map(str::to_string).collect();
    let mut decoded = Vec::new();
    for seg in segments.iter_mut() {
        let body = seg.trim_end_matches('=');
        let pad = seg.len() - body.len();
        if seg.is_empty()
            || body.len() < 4
            || pad > 2
            || !body.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            continue;
        }
        let padded = format!("{body}{}", "=".repeat((4 - body.len() % 4) % 4));
        let Ok(bytes) = base64::engine::general_purpose::URL_SAFE.decode(padded.as_bytes()) else { continue };
        let Ok(text) = String::from_utf8(bytes) else { continue };
        if !text.contains('=') {
            continue;
        }
        let q = pytext::strip(&unquote(&text)).to_string();
        if !q.is_empty() {
            decoded.push(q.trim_start_matches(['?', '&']).to_string());
            seg.clear();
        }
    }
    let kept: Vec<&String> = segments.iter().filter(|s| !s.is_empty()).collect();
    let cleaned = if kept.is_empty() {
        if path.starts_with('/') {
            "/".to_string()
        } else {
            String::new()
        }
    } else {
        let mut c = kept.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("/");
        if path.starts_with('/') {
            c = format!("/{c}");
        }
        if path.ends_with('/') && !c.ends_with('/') {
            c.push('/');
        }
        c
    };
    (cleaned, decoded)
}

fn is_ssh(url: &str) -> bool {
    let lower = url.to_lowercase();
    lower.starts_with("ssh://") || (lower.starts_with("git@") && url.contains(':') && !url.contains("://"))
}

/// `_normalize_ssh_url`: `user@__SSH_HOST__:path`, lower case.
fn ssh(value: &str) -> Result<UrlValue, VerifiedError> {
    let (user, path) = if value.to_lowercase().starts_with("ssh://") {
        let p = urlsplit(value)?;
        let user = match p.netloc.split_once('@') {
            Some((u, _)) => u.to_lowercase(),
            None => "git".to_string(),
        };
        (user, p.path.trim_start_matches('/').to_lowercase())
    } else {
        let scp = || VerifiedError::InvalidScpUrl(value.to_string());
        let (user, host_path) = value.split_once('@').ok_or_else(scp)?;
        let (_, path) = host_path.split_once(':').ok_or_else(scp)?;
        (user.to_lowercase(), path.trim_start_matches('/').to_lowercase())
    };
    Ok(UrlValue { base_url: format!("{user}@__SSH_HOST__:{path}"), query: BTreeMap::new(), is_regex: false })
}

/// What `urlsplit` (and `urlparse`'s params) yields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Split {
    pub scheme: String,
    pub netloc: String,
    pub path: String,
    pub params: String,
    pub query: String,
    pub fragment: String,
}

const USES_PARAMS: [&str; 16] = [
    "", "ftp", "hdl", "prospero", "http", "imap", "https", "shttp", "rtsp", "rtsps", "rtspu", "sip", "sips", "mms",
    "sftp", "tel",
];
const USES_NETLOC: [&str; 25] = [
    "", "ftp", "http", "gopher", "nntp", "telnet", "imap", "wais", "file", "mms", "https", "shttp", "snews",
    "prospero", "rtsp", "rtsps", "rtspu", "rsync", "svn", "svn+ssh", "sftp", "nfs", "git", "git+ssh", "ws",
];

/// `urlparse(url)` (with `;params` split off); `Err` for an unbalanced bracket in the host.
pub fn urlsplit(url: &str) -> Result<Split, VerifiedError> {
    let url: String =
        url.trim_start_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\r' | '\n')).collect();
    let mut rest = url.as_str();
    let mut s = Split::default();
    if let Some(i) = rest.find(':') {
        let head = &rest[..i];
        if i > 0
            && head.starts_with(|c: char| c.is_ascii_alphabetic())
            && head.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            s.scheme = head.to_ascii_lowercase();
            rest = &rest[i + 1..];
        }
    }
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        s.netloc = after[..end].to_string();
        rest = &after[end..];
        if s.netloc.contains('[') != s.netloc.contains(']') {
            return Err(VerifiedError::InvalidIpv6Url(url));
        }
    }
    if let Some((before, frag)) = rest.split_once('#') {
        s.fragment = frag.to_string();
        rest = before;
    }
    if let Some((before, q)) = rest.split_once('?') {
        s.query = q.to_string();
        rest = before;
    }
    let mut path = rest.to_string();
    if USES_PARAMS.contains(&s.scheme.as_str()) && path.contains(';') {
        let i = match path.rfind('/') {
            Some(slash) => path[slash..].find(';').map(|j| slash + j),
            None => path.find(';'),
        };
        if let Some(i) = i {
            s.params = path[i + 1..].to_string();
            path.truncate(i);
        }
    }
    s.path = path;
    Ok(s)
}

/// `urlunsplit((scheme, netloc, path, query, fragment))`.
pub fn urlunsplit(scheme: &str, netloc: &str, path: &str, query: &str, fragment: &str) -> String {
    let mut url = path.to_string();
    if !netloc.is_empty() || (!scheme.is_empty() && USES_NETLOC.contains(&scheme) && !url.starts_with("//")) {
        if !url.is_empty() && !url.starts_with('/') {
            url = format!("/{url}");
        }
        url = format!("//{netloc}{url}");
    }
    if !scheme.is_empty() {
        url = format!("{scheme}:{url}");
    }
    if !query.is_empty() {
        url = format!("{url}?{query}");
    }
    if !fragment.is_empty() {
        url = format!("{url}#{fragment}");
    }
    url
}

/// `urlunparse((scheme, netloc, path, params, query, fragment))`.
pub fn urlunparse(scheme: &str, netloc: &str, path: &str, params: &str, query: &str, fragment: &str) -> String {
    let path = if params.is_empty() { path.to_string() } else { format!("{path};{params}") };
    urlunsplit(scheme, netloc, &path, query, fragment)
}

/// `SplitResult.port` (`None` when absent or not a number).
fn port_of(netloc: &str) -> Option<u16> {
    let host_port = netloc.rsplit_once('@').map_or(netloc, |(_, h)| h);
    let after = match host_port.rfind(']') {
        Some(i) => &host_port[i + 1..],
        None => host_port,
    };
    let (_, port) = after.split_once(':')?;
    port.parse().ok()
}

/// `SplitResult.hostname`: no user, no port, lower case.
fn hostname_of(netloc: &str) -> String {
    let host_port = netloc.rsplit_once('@').map_or(netloc, |(_, h)| h);
    if let Some(rest) = host_port.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_lowercase();
    }
    host_port.split(':').next().unwrap_or("").to_lowercase()
}

/// Python's `quote(s, safe)`: UTF-8 bytes outside letters, digits, `_.-~` and `safe` as `%XX`.
pub fn quote(s: &str, safe: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || "_.-~".contains(c) || (c.is_ascii() && safe.contains(c)) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// Python's `unquote`.
pub fn unquote(s: &str) -> String {
    crate::evaluate::url::unquote(s)
}

/// `url_normalize`'s unquote: Python's, then NFC.
fn unquote_nfc(s: &str) -> String {
    unquote(s).nfc().collect()
}

/// The `url-normalize` package's `url_normalize(url)`; `None` for an empty URL.
pub fn url_normalize(url: &str) -> Option<String> {
    if url.is_empty() {
        return None;
    }
    // provide_url_scheme
    let head: String = url.chars().take(7).collect();
    let has_scheme = head.contains(':');
    let universal = url.starts_with("//");
    let file_path = url == "-" || (url.starts_with('/') && !universal);
    let mut u = if file_path {
        url.to_string()
    } else if !has_scheme {
        format!("https://{}", url.trim_start_matches('/'))
    } else {
        let (scheme, rest) = url.split_once(':').unwrap_or((url, ""));
        if ["http", "https", "ftp", "ftps"].contains(&scheme.to_lowercase().as_str()) {
            format!("{scheme}://{}", rest.trim_start_matches('/'))
        } else {
            url.to_string()
        }
    };
    // generic_url_cleanup
    u = u.replace("#!", "?_escaped_fragment_=");
    let u = u.trim_end_matches(['&', '?', ' ']).to_string();
    // deconstruct_url
    let p = urlsplit(pytext::strip(&u)).ok()?;
    let (userinfo, host, port) = {
        let auth = p.netloc.as_str();
        let (userinfo, rest) = match auth.find('@') {
            Some(i) => (&auth[..=i], &auth[i + 1..]),
            None => ("", auth),
        };
        let (host, port) = rest.split_once(':').unwrap_or((rest, ""));
        (userinfo.to_string(), host.to_string(), port.to_string())
    };
    let scheme = p.scheme.to_lowercase();
    let userinfo = if userinfo == "@" || userinfo == ":@" { String::new() } else { userinfo };
    let host = normalize_host(&host);
    let query = normalize_query_string(&p.query);
    let fragment = quote(&unquote_nfc(&p.fragment), "~=");
    let port = normalize_port(&port, &scheme);
    let path = normalize_path(&p.path, &scheme);
    let mut auth = format!("{userinfo}{host}");
    if !port.is_empty() {
        auth = format!("{auth}:{port}");
    }
    Some(urlunsplit(&scheme, &auth, &path, &query, &fragment))
}

fn normalize_host(host: &str) -> String {
    let h = host.to_lowercase();
    let h = h.trim_matches('.');
    if h.is_ascii() && h.split('.').all(|l| l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')) {
        h.split('.').filter(|l| !l.is_empty()).collect::<Vec<_>>().join(".")
    } else {
        h.to_string()
    }
}

fn normalize_port(port: &str, scheme: &str) -> String {
    if port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()) {
        return port.to_string();
    }
    let p = port.trim_start_matches('0');
    let p = if p.is_empty() { "0" } else { p };
    let default = match scheme {
        "ftp" => "21",
        "gopher" => "70",
        "http" | "ws" => "80",
        "https" | "wss" => "443",
        "news" | "nntp" => "119",
        "snews" | "snntp" => "563",
        "telnet" => "23",
        _ => "",
    };
    if p == default {
        String::new()
    } else {
        p.to_string()
    }
}

fn normalize_path(path: &str, scheme: &str) -> String {
    let mut path = quote(&unquote_nfc(path), "~:/#[]@!$&'()*+,;=");
    if ["", "http", "https", "ftp", "file"].contains(&scheme) {
        let mut output: Vec<&str> = Vec::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts {
            match *part {
                "" => {
                    if output.is_empty() {
                        output.push("");
                    }
                }
                "." => {}
                ".." => {
                    if output.len() > 1 {
                        output.pop();
                    }
                }
                other => output.push(other),
            }
        }
        if matches!(parts.last().copied(), Some("" | "." | "..")) {
            output.push("");
        }
        path = output.join("/");
    }
    if path.is_empty() && ["http", "https", "ftp", "file"].contains(&scheme) {
        path = "/".to_string();
    }
    path
}

fn normalize_query_string(query: &str) -> String {
    const SAFE: &str = "~:/?[]@!$'()*+,;";
    let mut out = Vec::new();
    for param in query.split('&') {
        if param.is_empty() {
            continue;
        }
        let (k, v) = param.split_once('=').unwrap_or((param, ""));
        let k = if k.is_empty() { String::new() } else { quote(&unquote_nfc(k), SAFE) };
        let v = if v.is_empty() { String::new() } else { quote(&unquote_nfc(v), SAFE) };
        out.push(if v.is_empty() { k } else { format!("{k}={v}") });
    }
    out.join("&")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sites() -> Sites {
        Sites(vec![(SiteKey::Gitlab, "http://localhost:8023".into())])
    }

    #[test]
    fn url_normalize_makes_encoding_canonical() {
        assert_eq!(url_normalize("http://H.com:80/a/./b/../c?x=1&y=&z=a b").unwrap(), "http://h.com/a/c?x=1&y&z=a%20b");
        assert_eq!(url_normalize("localhost:8023/x").unwrap(), "https://localhost:8023/x");
    }

    #[test]
    fn urls_derender_and_compare_with_their_queries() {
        let o = UrlOpts { strict: true, render: true, ..UrlOpts::default() };
        let e = normalize("__GITLAB__/dashboard/todos?state=pending", &sites(), &o).unwrap();
        assert_eq!(e.base_url, "__GITLAB__/dashboard/todos");
        let a = normalize(
            "http://localhost:8023/dashboard/todos/?state=Pending",
            &sites(),
            &UrlOpts { render: true, ..o.clone() },
        )
        .unwrap();
        assert!(e.matches_base_path(&a, Some(&sites())) && e.query_params_equal(&a));
        let b = normalize("http://localhost:8023/dashboard/todos?state=pending&sort=x", &sites(), &o).unwrap();
        assert!(!e.query_params_equal(&b));
        let re = normalize(r"^__GITLAB__/byteblaze/.*$", &sites(), &o).unwrap();
        let c = normalize("http://localhost:8023/byteblaze/a11y", &sites(), &o).unwrap();
        assert!(re.matches_base_path(&c, Some(&sites())));
    }
}
