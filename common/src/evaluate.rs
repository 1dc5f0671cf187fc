//! Pure evaluator logic of formats §2, with WebArena's semantics, shared by
//! the fixture sites' HTTP-level checker and the worker's scorer:
//!
//! * [`string_match`]: `exact_match` / `must_include` on the agent's answer,
//!   normalised for case, surrounding whitespace and quotes; `fuzzy_match`
//!   needs an LLM judge and is reported as [`Verdict::Invalid`].
//! * [`url_match`]: host and path equal (trailing `/` ignored), every query
//!   parameter of the reference present, ` |OR| ` separating alternatives.
//! * [`contents_match`]: the `required_contents` of a `program_html` check.
//! * [`parse_locator`]: the only JavaScript a `program_html` locator may hold.
//!
//! Text normalisation also collapses inner runs of whitespace, so a browser's
//! `innerText` and an HTML-level text extraction compare alike.

use crate::task::{Eval, EvalType, ReferenceAnswers, RequiredContents};

/// The outcome of one evaluator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The evaluator cannot decide (e.g. `fuzzy_match` without a judge): the task is invalid, never passed.
    Invalid(String),
}

impl Verdict {
    pub fn from_bool(ok: bool) -> Self {
        if ok {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    /// Combines evaluators: any invalid makes the whole invalid, else all must pass.
    pub fn all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut out = Verdict::Pass;
        for v in verdicts {
            match v {
                Verdict::Invalid(_) => return v,
                Verdict::Fail => out = Verdict::Fail,
                Verdict::Pass => {}
            }
        }
        out
    }
}

/// The separator of alternatives in `reference_url` and `must_include` items.
pub const OR: &str = " |OR| ";

/// Lowercase, trimmed, without one pair of surrounding quotes, inner whitespace collapsed.
pub fn normalise(text: &str) -> String {
    let t = text.trim();
    let t = ['"', '\'']
        .iter()
        .find_map(|&q| t.strip_prefix(q).and_then(|r| r.strip_suffix(q)).filter(|_| t.len() >= 2))
        .unwrap_or(t);
    t.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// `string_match` of formats §2 on the agent's final answer.
pub fn string_match(reference: &ReferenceAnswers, answer: &str) -> Verdict {
    if let Some(exact) = &reference.exact_match {
        return Verdict::from_bool(normalise(exact) == normalise(answer));
    }
    if let Some(items) = &reference.must_include {
        return Verdict::from_bool(must_include(items, answer));
    }
    if reference.fuzzy_match.is_some() {
        return Verdict::Invalid("fuzzy_match needs an LLM judge, and none is configured".to_string());
    }
    Verdict::Invalid("reference_answers sets none of exact_match, must_include, fuzzy_match".to_string())
}

fn must_include(items: &[String], text: &str) -> bool {
    let haystack = normalise(text);
    items.iter().all(|item| item.split(OR).any(|alt| haystack.contains(&normalise(alt))))
}

/// `required_contents` of a `program_html` check against the located text.
pub fn contents_match(required: &RequiredContents, text: &str) -> Verdict {
    if let Some(exact) = &required.exact_match {
        return Verdict::from_bool(normalise(exact) == normalise(text));
    }
    if let Some(items) = &required.must_include {
        return Verdict::from_bool(must_include(items, text));
    }
    Verdict::Invalid("required_contents sets neither exact_match nor must_include".to_string())
}

/// The parts of a URL that `url_match` compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    /// `host[:port]/path`, without a trailing `/`.
    pub base: String,
    /// Decoded query parameters in order.
    pub query: Vec<(String, String)>,
}

/// Splits a URL into host+path and decoded query pairs (the fragment is dropped).
pub fn url_parts(url: &str) -> UrlParts {
    let url = url.trim();
    let url = url.split('#').next().unwrap_or("");
    let without_scheme = match url.find("://") {
        Some(i) => &url[i + 3..],
        None => url,
    };
    let (base, query) = match without_scheme.split_once('?') {
        Some((b, q)) => (b, q),
        None => (without_scheme, ""),
    };
    let query = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    UrlParts { base: percent_decode(base.trim_end_matches('/')), query }
}

/// Decodes `%XX` escapes and `+` (as space), as query strings are encoded.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex_value(bytes[i + 1]), hex_value(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(hi * 16 + lo);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// `url_match` of formats §2: does `actual` match any alternative of `reference`?
pub fn url_match(reference: &str, actual: &str) -> bool {
    let got = url_parts(actual);
    reference.split(OR).any(|alt| {
        let want = url_parts(alt);
        want.base == got.base && want.query.iter().all(|pair| got.query.contains(pair))
    })
}

/// What a `program_html` locator reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    /// `''`: the whole page's text.
    PageText,
    /// `document.querySelector("<css>").innerText` or `.value`.
    Query { selector: String, property: Property },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    InnerText,
    Value,
}

/// A locator outside the supported JavaScript subset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("locator '{locator}' is not in the supported subset ('' or document.querySelector(\"<css>\").innerText|.value): {reason}")]
pub struct LocatorError {
    pub locator: String,
    pub reason: &'static str,
}

/// Parses a locator of the supported subset.
pub fn parse_locator(locator: &str) -> Result<Locator, LocatorError> {
    let err = |reason| LocatorError { locator: locator.to_string(), reason };
    let text = locator.trim();
    if text.is_empty() || text == "''" || text == "\"\"" {
        return Ok(Locator::PageText);
    }
    let rest = text.strip_prefix("document.querySelector(").ok_or_else(|| err("expected document.querySelector("))?;
    let quote =
        rest.chars().next().filter(|c| *c == '"' || *c == '\'').ok_or_else(|| err("expected a quoted selector"))?;
    let rest = &rest[1..];
    let end = rest.find(quote).ok_or_else(|| err("unterminated selector string"))?;
    let selector = &rest[..end];
    if selector.trim().is_empty() {
        return Err(err("empty selector"));
    }
    let property = match &rest[end + 1..] {
        ").innerText" => Property::InnerText,
        ").value" => Property::Value,
        _ => return Err(err("expected ).innerText or ).value after the selector")),
    };
    Ok(Locator::Query { selector: selector.to_string(), property })
}

/// Checks that an `eval` block is complete and decidable without a judge; the message names the field.
pub fn check_eval(eval: &Eval) -> Result<(), String> {
    if eval.eval_types.is_empty() {
        return Err("eval.eval_types is empty".to_string());
    }
    for kind in &eval.eval_types {
        match kind {
            EvalType::StringMatch => {
                let r = eval.reference_answers.as_ref().ok_or("eval.reference_answers is null for string_match")?;
                let set = [r.exact_match.is_some(), r.must_include.is_some(), r.fuzzy_match.is_some()];
                if set.iter().filter(|b| **b).count() != 1 {
                    return Err(
                        "eval.reference_answers must set exactly one of exact_match, must_include, fuzzy_match"
                            .to_string(),
                    );
                }
                if r.exact_match.as_deref().is_some_and(|s| s.trim().is_empty())
                    || r.must_include.as_ref().is_some_and(|v| v.is_empty() || v.iter().any(|s| s.trim().is_empty()))
                {
                    return Err("eval.reference_answers holds an empty answer".to_string());
                }
            }
            EvalType::UrlMatch => {
                let url = eval.reference_url.as_deref().unwrap_or("");
                if url.trim().is_empty() {
                    return Err("eval.reference_url is empty for url_match".to_string());
                }
            }
            EvalType::ProgramHtml => {
                if eval.program_html.is_empty() {
                    return Err("eval.program_html is empty for program_html".to_string());
                }
                for (i, check) in eval.program_html.iter().enumerate() {
                    if check.url.trim().is_empty() {
                        return Err(format!("eval.program_html[{i}].url is empty"));
                    }
                    parse_locator(&check.locator).map_err(|e| format!("eval.program_html[{i}].locator: {e}"))?;
                    let c = &check.required_contents;
                    if c.exact_match.is_some() == c.must_include.is_some() {
                        return Err(format!(
                            "eval.program_html[{i}].required_contents must set exactly one of exact_match, must_include"
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(s: &str) -> ReferenceAnswers {
        ReferenceAnswers { exact_match: Some(s.into()), must_include: None, fuzzy_match: None }
    }

    #[test]
    fn string_match_normalises_case_space_and_quotes() {
        assert_eq!(string_match(&exact("Ann Lee"), "  ann lee \n"), Verdict::Pass);
        assert_eq!(string_match(&exact("12"), "\"12\""), Verdict::Pass);
        assert_eq!(string_match(&exact("12"), "120"), Verdict::Fail);
        assert_eq!(string_match(&exact("12"), ""), Verdict::Fail);
        let inc = ReferenceAnswers {
            exact_match: None,
            must_include: Some(vec!["foo".into(), "bar |OR| baz".into()]),
            fuzzy_match: None,
        };
        assert_eq!(string_match(&inc, "FOO and Baz"), Verdict::Pass);
        assert_eq!(string_match(&inc, "foo only"), Verdict::Fail);
        let fuzzy = ReferenceAnswers { exact_match: None, must_include: None, fuzzy_match: Some(vec!["x".into()]) };
        assert!(matches!(string_match(&fuzzy, "x"), Verdict::Invalid(m) if m.contains("LLM judge")));
    }

    #[test]
    fn url_match_compares_host_path_and_required_query() {
        assert!(url_match(
            "http://h:1/a/b/-/issues?label_name=bug",
            "http://h:1/a/b/-/issues/?state=opened&label_name=bug&x=1"
        ));
        assert!(!url_match("http://h:1/a/b/-/issues?label_name=bug", "http://h:1/a/b/-/issues?label_name=feature"));
        assert!(!url_match("http://h:1/a/b/-/issues", "http://h:2/a/b/-/issues"));
        assert!(!url_match("http://h:1/a/b/-/issues", "http://h:1/a/b/-/issues/1"));
        assert!(url_match("http://h/x |OR| http://h/y/", "http://h/y"));
        assert!(url_match("http://h/search?search=big%20bug", "http://h/search?search=big+bug"));
    }

    #[test]
    fn locators_parse_only_the_subset() {
        assert_eq!(parse_locator(""), Ok(Locator::PageText));
        assert_eq!(
            parse_locator("document.querySelector('#state').innerText"),
            Ok(Locator::Query { selector: "#state".into(), property: Property::InnerText })
        );
        assert_eq!(
            parse_locator("document.querySelector(\"input[name=title]\").value"),
            Ok(Locator::Query { selector: "input[name=title]".into(), property: Property::Value })
        );
        for bad in [
            "document.querySelectorAll('a')",
            "func:get_query_text(__page__)",
            "document.querySelector('#x').textContent",
            "document.querySelector('#x",
        ] {
            assert!(parse_locator(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn contents_match_and_eval_checks() {
        let c = RequiredContents { exact_match: None, must_include: Some(vec!["Closed".into()]) };
        assert_eq!(contents_match(&c, "Issue  closed by you"), Verdict::Pass);
        assert_eq!(contents_match(&c, "Open"), Verdict::Fail);
        let eval = Eval {
            eval_types: vec![EvalType::UrlMatch],
            reference_answers: None,
            reference_url: None,
            program_html: vec![],
        };
        assert!(check_eval(&eval).unwrap_err().contains("reference_url"));
        assert_eq!(Verdict::all([Verdict::Pass, Verdict::Fail]), Verdict::Fail);
        assert!(matches!(Verdict::all([Verdict::Fail, Verdict::Invalid("x".into())]), Verdict::Invalid(_)));
    }
}
