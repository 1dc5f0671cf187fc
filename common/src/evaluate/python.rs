//! The few Python behaviours WebArena's evaluators rest on, reproduced:
//!
//! * [`strip`]: `str.strip()` (Python's idea of whitespace);
//! * [`str_of`]: `str(value)` of a value `page.evaluate` returned through
//!   Playwright (JSON here: `null` reads `None`, `true` reads `True`, lists
//!   and objects print as Python's `repr` prints them; an object
//!   `{"$py": text}` is a value JSON cannot carry, such as NaN or a date,
//!   already printed by the page reader);
//! * [`html_unescape`]: `html.unescape`, the HTML5 named references
//!   included, with Python's rules for references without `;` and for
//!   invalid numeric references.
//!
//! Python's notion of a printable character needs the Unicode category
//! tables; [`str_of`] escapes control, format, private-use and separator
//! characters and treats everything else as printable.

use serde_json::Value;

use super::tokenize::py_isspace;

/// `s.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// The key of a Python literal the page reader printed itself (`{"$py": "nan"}`).
pub const PY_LITERAL: &str = "$py";

fn literal(v: &Value) -> Option<&str> {
    match v {
        Value::Object(map) if map.len() == 1 => map.get(PY_LITERAL).and_then(Value::as_str),
        _ => None,
    }
}

/// `str(v)` for a value Playwright returned from `page.evaluate`.
pub fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr(other),
    }
}

/// `repr(v)`.
pub fn repr(v: &Value) -> String {
    if let Some(text) = literal(v) {
        return text.to_string();
    }
    match v {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => float_repr(f),
            _ => n.to_string(),
        },
        Value::String(s) => str_repr(s),
        Value::Array(items) => format!("[{}]", items.iter().map(repr).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter().map(|(k, v)| format!("{}: {}", str_repr(k), repr(v))).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `repr(f)` for a float: the shortest round-trip digits, in scientific
/// notation when the decimal exponent is below -4 or at least 16.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1;
    if point <= 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-point) as usize));
    }
    let point = point as usize;
    if digits.len() <= point {
        format!("{sign}{digits}{}.0", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

fn printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let cp = c as u32;
    let format = matches!(cp, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x8E2 | 0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD
        | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F);
    let private = matches!(cp, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    !format && !private
}

/// `repr(s)` for a string.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// Windows-1252 readings of the C1 range, and the other references HTML maps.
fn invalid_charref(n: u64) -> Option<&'static str> {
    Some(match n {
        0x00 => "\u{fffd}",
        0x0d => "\r",
        0x80 => "\u{20ac}",
        0x81 => "\u{81}",
        0x82 => "\u{201a}",
        0x83 => "\u{192}",
        0x84 => "\u{201e}",
        0x85 => "\u{2026}",
        0x86 => "\u{2020}",
        0x87 => "\u{2021}",
        0x88 => "\u{2c6}",
        0x89 => "\u{2030}",
        0x8a => "\u{160}",
        0x8b => "\u{2039}",
        0x8c => "\u{152}",
        0x8d => "\u{8d}",
        0x8e => "\u{17d}",
        0x8f => "\u{8f}",
        0x90 => "\u{90}",
        0x91 => "\u{2018}",
        0x92 => "\u{2019}",
        0x93 => "\u{201c}",
        0x94 => "\u{201d}",
        0x95 => "\u{2022}",
        0x96 => "\u{2013}",
        0x97 => "\u{2014}",
        0x98 => "\u{2dc}",
        0x99 => "\u{2122}",
        0x9a => "\u{161}",
        0x9b => "\u{203a}",
        0x9c => "\u{153}",
        0x9d => "\u{9d}",
        0x9e => "\u{17e}",
        0x9f => "\u{178}",
        _ => return None,
    })
}

fn invalid_codepoint(n: u64) -> bool {
    matches!(n, 0x1..=0x8 | 0xB | 0xE..=0x1F | 0x7F..=0x9F | 0xFDD0..=0xFDEF) || (n & 0xFFFE) == 0xFFFE
}

fn named(name: &str) -> Option<String> {
    let &(a, b) = markup5ever::data::NAMED_ENTITIES.get(name)?;
    if a == 0 {
        return None; // a prefix of a longer name, not a name
    }
    let mut s = String::new();
    s.extend(char::from_u32(a));
    if b != 0 {
        s.extend(char::from_u32(b));
    }
    Some(s)
}

/// `html.unescape(s)`.
pub fn html_unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '&' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        match charref(&chars[i + 1..]) {
            Some((text, used)) => {
                out.push_str(&text);
                i += 1 + used;
            }
            None => {
                out.push('&');
                i += 1;
            }
        }
    }
    out
}

/// One match of `&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)` after the `&`: (replacement, chars used).
fn charref(rest: &[char]) -> Option<(String, usize)> {
    if rest.first() == Some(&'#') {
        let hex = matches!(rest.get(1), Some('x' | 'X'));
        let start = if hex { 2 } else { 1 };
        let radix = if hex { 16 } else { 10 };
        let n = rest[start..].iter().take_while(|c| c.is_digit(radix)).count();
        if n == 0 {
            return None;
        }
        let mut used = start + n;
        if rest.get(used) == Some(&';') {
            used += 1;
        }
        let num = rest[start..start + n].iter().fold(0u64, |acc, c| {
            acc.saturating_mul(radix as u64).saturating_add(c.to_digit(radix).unwrap_or(0) as u64)
        });
        let text = if let Some(t) = invalid_charref(num) {
            t.to_string()
        } else if (0xD800..=0xDFFF).contains(&num) || num > 0x10FFFF {
            "\u{fffd}".to_string()
        } else if invalid_codepoint(num) {
            String::new()
        } else {
            char::from_u32(num as u32).map(String::from).unwrap_or_default()
        };
        return Some((text, used));
    }
    let n =
        rest.iter().take(32).take_while(|c| !matches!(c, '\t' | '\n' | '\x0c' | ' ' | '<' | '&' | '#' | ';')).count();
    if n == 0 {
        return None;
    }
    let used = if rest.get(n) == Some(&';') { n + 1 } else { n };
    let name: String = rest[..used].iter().collect();
    if let Some(t) = named(&name) {
        return Some((t, used));
    }
    for x in (2..used).rev() {
        let prefix: String = rest[..x].iter().collect();
        if let Some(t) = named(&prefix) {
            let tail: String = rest[x..used].iter().collect();
            return Some((t + &tail, used));
        }
    }
    // No name matched: the text stands as it was.
    Some((format!("&{name}"), used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn str_of_prints_python_values() {
        assert_eq!(str_of(&json!("a b")), "a b");
        assert_eq!(str_of(&json!(null)), "None");
        assert_eq!(str_of(&json!(true)), "True");
        assert_eq!(str_of(&json!(3)), "3");
        assert_eq!(str_of(&json!(2.5)), "2.5");
        assert_eq!(str_of(&json!(["a", "it's", 1])), "['a', \"it's\", 1]");
        assert_eq!(str_of(&json!({"k": [true, null]})), "{'k': [True, None]}");
        assert_eq!(str_of(&json!(["a\nb\u{200b}"])), "['a\\nb\\u200b']");
        assert_eq!(str_of(&json!([{"$py": "nan"}, {"$py": "-0.0"}])), "[nan, -0.0]");
    }

    #[test]
    fn floats_print_as_python_repr() {
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1.5e16), "1.5e+16");
        assert_eq!(float_repr(1e15), "1000000000000000.0");
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(0.00001), "1e-05");
        assert_eq!(float_repr(-0.1 - 0.2), "-0.30000000000000004");
        assert_eq!(float_repr(123.456), "123.456");
    }

    #[test]
    fn unescape_follows_python() {
        assert_eq!(html_unescape("a &amp; b &lt;c&gt; &quot;"), "a & b <c> \"");
        assert_eq!(html_unescape("&amp"), "&");
        assert_eq!(html_unescape("&ampfoo;"), "&foo;");
        assert_eq!(html_unescape("&notit;"), "\u{ac}it;");
        assert_eq!(html_unescape("&#39;&#x27;&#X41"), "''A");
        assert_eq!(html_unescape("&#128;&#0;&#xD800;&#1;"), "\u{20ac}\u{fffd}\u{fffd}");
        assert_eq!(html_unescape("&bogus; & &#;"), "&bogus; & &#;");
        assert_eq!(html_unescape("&nbsp;x"), "\u{a0}x");
    }
}
