//! The Python behaviours WebArena-Verified's normalizers rest on:
//! `NormalizedType._normalize_string` (marks dropped, NFKC, hyphens beside
//! letters to spaces, control characters dropped, `unidecode`, whitespace
//! collapsed, casefold), `is_regexp`, Python regular expressions (with
//! lookarounds, through `fancy_regex`), `str(value)` of a JSON value, and
//! Python's equality between JSON values (`1 == 1.0 == True`).

use fancy_regex::Regex;
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use crate::evaluate::python;

/// `is_regexp`: a string of two or more characters starting with `^` and ending with `$`.
pub fn is_regexp(s: &str) -> bool {
    s.len() >= 2 && s.starts_with('^') && s.ends_with('$')
}

/// A Python pattern compiled as `re.compile(pattern, flags)` would be; `None` where Python raises
/// (or where the pattern uses what `fancy_regex` lacks).
pub fn py_regex(pattern: &str, ignore_case: bool) -> Option<Regex> {
    let translated = translate(pattern);
    let p = if ignore_case { format!("(?i){translated}") } else { translated };
    compile(&p)
}

/// The most patterns kept compiled per thread; the cache is emptied when it is full.
const MAX_CACHED: usize = 4096;

thread_local! {
    /// Compiled patterns by source: tasks compare the same few patterns against every event and item.
    /// Per thread, so no lock is taken; a pattern that does not compile is cached as `None`.
    static CACHE: std::cell::RefCell<std::collections::HashMap<String, Option<Regex>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn compile(src: &str) -> Option<Regex> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(r) = c.get(src) {
            return r.clone();
        }
        if c.len() >= MAX_CACHED {
            c.clear();
        }
        let r = Regex::new(src).ok();
        c.insert(src.to_string(), r.clone());
        r
    })
}

/// Python's syntax where it differs: `\Z` is `\z`; `(?P=name)` back-references stay as they are.
fn translate(p: &str) -> String {
    p.replace("\\Z", "\\z")
}

/// `re.match(pattern, text)`: anchored at the start.
pub fn re_match(re: &Regex, text: &str) -> bool {
    anchored(re, text, false)
}

/// `re.fullmatch(pattern, text)`.
pub fn re_fullmatch(re: &Regex, text: &str) -> bool {
    anchored(re, text, true)
}

/// `re.search(pattern, text)`.
pub fn re_search(re: &Regex, text: &str) -> bool {
    matches!(re.is_match(text), Ok(true))
}

fn anchored(re: &Regex, text: &str, full: bool) -> bool {
    let src = re.as_str();
    let (flags, body) = match src.strip_prefix("(?i)") {
        Some(b) => ("(?i)", b),
        None => ("", src),
    };
    let wrapped = if full { format!("{flags}\\A(?:{body})\\z") } else { format!("{flags}\\A(?:{body})") };
    match compile(&wrapped) {
        Some(r) => matches!(r.is_match(text), Ok(true)),
        None => false,
    }
}

/// Python's `str.isspace` for one character (ASCII and the Unicode spaces).
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `s.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// `re.sub(r"\s+", " ", s)`.
pub fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_space = false;
    for c in s.chars() {
        if py_space(c) {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

const HYPHENS: [char; 9] =
    ['\u{2d}', '\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2014}', '\u{2015}', '\u{2212}', '\u{ad}'];

/// Unicode category C (control, format, surrogate, private use) as Python's `unicodedata` sees it,
/// for the characters text carries; unassigned code points are not tracked.
fn is_category_c(c: char) -> bool {
    let u = c as u32;
    c.is_control()
        || matches!(u, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x180E
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
            | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001
            | 0xE0020..=0xE007F)
        || (0xE000..=0xF8FF).contains(&u)
        || (0xF0000..=0x10FFFF).contains(&u)
}

/// `NormalizedType._normalize_string`, after the URL derendering step (the caller's).
pub fn normalize_string(s: &str) -> String {
    if s.is_empty() || is_regexp(s) {
        return s.to_string();
    }
    let marks: String = s.chars().filter(|c| !matches!(c, '\u{2122}' | '\u{ae}' | '\u{2120}' | '\u{a9}')).collect();
    let nfkc: Vec<char> = marks.nfkc().collect();
    // Hyphen-like characters after or before an ASCII letter become spaces.
    let mut dehyphen = String::with_capacity(nfkc.len());
    for (i, &c) in nfkc.iter().enumerate() {
        let beside_letter =
            (i > 0 && nfkc[i - 1].is_ascii_alphabetic()) || nfkc.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic());
        if HYPHENS.contains(&c) && beside_letter {
            dehyphen.push(' ');
        } else {
            dehyphen.push(c);
        }
    }
    let mut cleaned = String::with_capacity(dehyphen.len());
    for c in dehyphen.chars() {
        if is_category_c(c) {
            if matches!(c, '\t' | '\n' | '\r') {
                cleaned.push(' ');
            }
        } else {
            cleaned.push(c);
        }
    }
    let ascii: String = deunicode::deunicode_with_tofu(&cleaned, "").chars().filter(char::is_ascii).collect();
    collapse_ws(strip(&ascii)).to_lowercase()
}

/// `str(value)` of a JSON value as Python holds it (`True`, `None`, `1.5`, `{'a': 1}`).
pub fn py_str(v: &Value) -> String {
    python::str_of(v)
}

/// Python's `bool(value)`.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A number as Python compares it (`True` is 1).
fn as_num(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// Python's `a == b` for JSON values (lists and tuples alike).
pub fn py_eq(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        if let (Value::Number(n), Value::Number(m)) = (a, b) {
            if let (Some(i), Some(j)) = (n.as_i64(), m.as_i64()) {
                return i == j;
            }
        }
        return x == y;
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn strings_normalize_as_the_package_does() {
        assert_eq!(normalize_string("  Quest Lumaflex\u{2122} Band "), "quest lumaflex band");
        assert_eq!(normalize_string("Buffalo-Niagara  Airport"), "buffalo niagara airport");
        assert_eq!(normalize_string("123-4567"), "123-4567");
        assert_eq!(normalize_string("Café\tNoir"), "cafe noir");
        assert_eq!(normalize_string("^Keep Case$"), "^Keep Case$");
        assert_eq!(normalize_string("ｆｕｌｌ"), "full");
    }

    #[test]
    fn python_patterns_with_lookarounds_compile_and_anchor() {
        let re = py_regex(r"^(?!.*_osm_directions_engine=fossgis_osrm_(?:bicycle|foot)).*$", true).unwrap();
        assert!(re_fullmatch(&re, "a=b; c=d"));
        assert!(!re_fullmatch(&re, "_osm_directions_engine=fossgis_osrm_foot"));
        let p = py_regex("page", false).unwrap();
        assert!(re_search(&p, "per_page") && !re_match(&p, "per_page"));
    }

    #[test]
    fn python_equality_mixes_ints_floats_and_bools() {
        assert!(py_eq(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert!(py_eq(&serde_json::json!(true), &serde_json::json!(1)));
        assert!(!py_eq(&serde_json::json!("1"), &serde_json::json!(1)));
    }
}
