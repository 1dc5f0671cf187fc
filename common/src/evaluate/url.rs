//! `url_match`: WebArena's `URLEvaluator`, with Python's `urlparse` and
//! `parse_qs` reproduced.
//!
//! Both URLs lose every trailing `/` (as whole strings, query included); the
//! reference splits on ` |OR| `. Each URL becomes `netloc + path` (not
//! percent-decoded, `;params` dropped as `urlparse` drops them) and its query
//! (`parse_qs`: `+` and `%XX` decoded, fields without `=` or with an empty
//! value dropped). WebArena's rule ("GOLD in PRED") passes when some
//! reference `netloc + path` is a substring of the final URL's, and every
//! query key of any alternative (merged across alternatives) has one of its
//! values among the final URL's values for that key.
//!
//! [`Mode::Strict`] fixes the plain bugs: `netloc` equal (ASCII case
//! ignored) and path equal after percent-decoding, instead of a substring;
//! and each alternative is matched with its own query, not the merge.

use std::collections::{BTreeMap, BTreeSet};

use super::Mode;

/// The separator of alternatives in `reference_url` and in `program_html` `must_include` items.
pub const OR: &str = " |OR| ";

pub use crate::task::GOLD_IN_PRED;

/// What `urlparse` yields that `url_match` uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// Lowercased, `""` when the URL has none.
    pub scheme: String,
    pub netloc: String,
    pub path: String,
    /// `parse_qs`: each key with its values, in order.
    pub query: BTreeMap<String, Vec<String>>,
}

impl ParsedUrl {
    /// `netloc + path`, what WebArena compares.
    pub fn base_path(&self) -> String {
        format!("{}{}", self.netloc, self.path)
    }
}

const USES_PARAMS: [&str; 16] = [
    "", "ftp", "hdl", "prospero", "http", "imap", "https", "shttp", "rtsp", "rtsps", "rtspu", "sip", "sips", "mms",
    "sftp", "tel",
];

/// Why Python's `urlparse` raises on a URL (given whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlParseError {
    /// A `[` without its `]` in the host, or the reverse.
    #[error("invalid IPv6 URL: {0}")]
    UnbalancedBrackets(String),
    /// A bracketed host that is neither an IPv6 address nor `v<hex>.<text>`.
    #[error("invalid bracketed host in {0}")]
    BracketedHost(String),
}

/// Python's `urlparse(url)`; `Err` where Python raises (brackets in the host).
pub fn urlparse(url: &str) -> Result<ParsedUrl, UrlParseError> {
    let url: String =
        url.trim_start_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\r' | '\n')).collect();
    let mut rest = url.as_str();
    let mut scheme = String::new();
    if let Some(i) = rest.find(':') {
        let head = &rest[..i];
        let valid = i > 0
            && head.starts_with(|c: char| c.is_ascii_alphabetic())
            && head.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if valid {
            scheme = head.to_ascii_lowercase();
            rest = &rest[i + 1..];
        }
    }
    let mut netloc = "";
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        netloc = &after[..end];
        rest = &after[end..];
        if netloc.contains('[') != netloc.contains(']') {
            return Err(UrlParseError::UnbalancedBrackets(url));
        }
        if let Some((_, tail)) = netloc.split_once('[') {
            let host = tail.split(']').next().unwrap_or("");
            let ok = if let Some(v) = host.strip_prefix('v') {
                v.split_once('.').is_some_and(|(hex, more)| {
                    !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) && !more.is_empty()
                })
            } else {
                host.parse::<std::net::Ipv6Addr>().is_ok()
            };
            if !ok {
                return Err(UrlParseError::BracketedHost(url));
            }
        }
    }
    if let Some((before, _fragment)) = rest.split_once('#') {
        rest = before;
    }
    let mut query = "";
    if let Some((before, q)) = rest.split_once('?') {
        rest = before;
        query = q;
    }
    let mut path = rest;
    if USES_PARAMS.contains(&scheme.as_str()) && path.contains(';') {
        let i = match path.rfind('/') {
            Some(slash) => path[slash..].find(';').map(|j| slash + j),
            None => path.find(';'),
        };
        if let Some(i) = i {
            path = &path[..i];
        }
    }
    Ok(ParsedUrl { scheme, netloc: netloc.to_string(), path: path.to_string(), query: parse_qs(query) })
}

/// Python's `parse_qs(query)` (blank values dropped, `&` the only separator).
pub fn parse_qs(query: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for field in query.split('&') {
        let Some((name, value)) = field.split_once('=') else { continue };
        if value.is_empty() {
            continue;
        }
        out.entry(unquote_plus(name)).or_default().push(unquote_plus(value));
    }
    out
}

/// `unquote(s.replace('+', ' '))`, invalid UTF-8 replaced.
pub fn unquote_plus(s: &str) -> String {
    unquote(&s.replace('+', " "))
}

/// Python's `unquote`: in each run of ASCII characters, `%XX` is decoded to
/// bytes and the run read as UTF-8 with replacement; other characters stay.
pub fn unquote(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut run: Vec<u8> = Vec::new();
    let flush = |run: &mut Vec<u8>, out: &mut String| {
        let mut bytes = Vec::with_capacity(run.len());
        let mut i = 0;
        while i < run.len() {
            if run[i] == b'%' {
                if let (Some(hi), Some(lo)) =
                    (run.get(i + 1).and_then(|b| hex(*b)), run.get(i + 2).and_then(|b| hex(*b)))
                {
                    bytes.push(hi * 16 + lo);
                    i += 3;
                    continue;
                }
            }
            bytes.push(run[i]);
            i += 1;
        }
        out.push_str(&String::from_utf8_lossy(&bytes));
        run.clear();
    };
    for c in s.chars() {
        if c.is_ascii() {
            run.push(c as u8);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// WebArena's `clean_url`: every trailing `/` removed.
pub fn clean_url(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// Why a `url_match` could not be decided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("unknown url_note '{0}' (WebArena knows only \"GOLD in PRED\")")]
    UnknownRule(String),
    #[error(transparent)]
    Parse(UrlParseError),
}

/// `url_match` of `pred` (the final page's URL) against `reference` (placeholders resolved).
/// The rule a verdict was reached by, for the evaluator's `detail`: WebArena's "GOLD in PRED", or under
/// `--evaluator strict` the rule that replaces it (never the name of the rule it does not apply).
pub fn rule_detail(url_note: Option<&str>, mode: Mode) -> String {
    match mode {
        Mode::WebArena | Mode::WebArenaVerified => format!("{} ({mode})", url_note.unwrap_or(GOLD_IN_PRED)),
        Mode::Strict => format!("host and path equal, each alternative with its own query ({mode})"),
    }
}

pub fn url_match(reference: &str, pred: &str, url_note: Option<&str>, mode: Mode) -> Result<bool, UrlError> {
    if let Some(rule) = url_note {
        if rule != GOLD_IN_PRED {
            return Err(UrlError::UnknownRule(rule.to_string()));
        }
    }
    let refs: Vec<ParsedUrl> =
        reference.split(OR).map(|r| urlparse(clean_url(r))).collect::<Result<_, _>>().map_err(UrlError::Parse)?;
    let got = urlparse(clean_url(pred)).map_err(UrlError::Parse)?;
    let query_ok = |wanted: &BTreeMap<String, BTreeSet<String>>| {
        wanted.iter().all(|(k, values)| got.query.get(k).is_some_and(|have| values.iter().any(|v| have.contains(v))))
    };
    Ok(match mode {
        Mode::WebArena | Mode::WebArenaVerified => {
            let base = got.base_path();
            let base_ok = refs.iter().any(|r| base.contains(&r.base_path()));
            let mut merged: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for r in &refs {
                for (k, vs) in &r.query {
                    merged.entry(k.clone()).or_default().extend(vs.iter().cloned());
                }
            }
            base_ok && query_ok(&merged)
        }
        Mode::Strict => refs.iter().any(|r| {
            let own: BTreeMap<String, BTreeSet<String>> =
                r.query.iter().map(|(k, vs)| (k.clone(), vs.iter().cloned().collect())).collect();
            r.netloc.eq_ignore_ascii_case(&got.netloc) && unquote(&r.path) == unquote(&got.path) && query_ok(&own)
        }),
    })
}

/// Splits a query string (or a form body) into decoded pairs, in order, keeping
/// blank values: for the fixture sites' own form handling, not for scoring.
pub fn form_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (unquote_plus(k), unquote_plus(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(r: &str, p: &str) -> bool {
        url_match(r, p, None, Mode::WebArena).unwrap()
    }

    #[test]
    fn gold_in_pred_is_a_substring_of_host_and_path() {
        assert!(m("http://h:1/a/b/-/issues", "http://h:1/a/b/-/issues/3"));
        assert!(m("http://localhost:1/a", "http://evil-localhost:1/a"));
        assert!(!m("http://h:1/a/b", "http://h:2/a/b"));
        assert!(!url_match("http://h:1/a/b", "http://h:1/a/b/3", None, Mode::Strict).unwrap());
        assert!(url_match("http://H:1/a%20b/", "http://h:1/a b", None, Mode::Strict).unwrap());
        // The detail names the rule that decided: strict is not "GOLD in PRED".
        assert_eq!(rule_detail(None, Mode::WebArena), "GOLD in PRED (webarena)");
        assert_eq!(
            rule_detail(None, Mode::Strict),
            "host and path equal, each alternative with its own query (strict)"
        );
    }

    #[test]
    fn queries_merge_across_alternatives_and_drop_blanks() {
        assert!(m("http://h/s?q=a&x= |OR| http://h/t?q=b", "http://h/s?q=b"));
        assert!(!m("http://h/s?q=a |OR| http://h/t?r=b", "http://h/s?q=a"));
        assert!(url_match("http://h/s?q=a |OR| http://h/t?r=b", "http://h/s?q=a", None, Mode::Strict).unwrap());
        assert!(m("http://h/s?search=big%20bug", "http://h/s?search=big+bug&x=1"));
        assert!(!m("http://h/s?k=1", "http://h/s?k=2"));
    }

    #[test]
    fn urlparse_matches_python() {
        let p = urlparse("HTTP://u@h:8/a/b;p?x=1&y&z=&x=2#f").unwrap();
        assert_eq!((p.netloc.as_str(), p.path.as_str()), ("u@h:8", "/a/b"));
        assert_eq!(p.query.get("x"), Some(&vec!["1".to_string(), "2".to_string()]));
        assert_eq!(p.query.len(), 1);
        assert_eq!(unquote("%E2%82%AC%zz%4"), "\u{20ac}%zz%4");
        assert!(urlparse("http://[::1/x").is_err());
        assert_eq!(url_match("a", "b", Some("EXACT"), Mode::WebArena), Err(UrlError::UnknownRule("EXACT".into())));
    }
}
