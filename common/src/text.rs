//! Input echoed in messages, bounded. An error names the value it refuses,
//! but a value from a file or a flag can be a megabyte long or hold line
//! breaks; [`clip`] keeps the start of it on one line and says how much was
//! cut, so every error stays one short line (docs/formats.md#record-validation).
//! [`py_isspace`] is Python's idea of a space, which WebArena's code strips and splits on.

use std::borrow::Cow;

/// Characters of an input value an error message keeps.
pub const CLIP_CHARS: usize = 80;

/// `s` as an error message may echo it: at most `max` characters, control
/// characters (line breaks, tabs, ...) escaped, and when it is longer,
/// `...` and the number of bytes cut. Short, printable text is borrowed as is.
pub fn clip(s: &str, max: usize) -> Cow<'_, str> {
    let mut chars = s.char_indices();
    let mut end = s.len();
    let mut plain = true;
    for n in 0..=max {
        match chars.next() {
            None => break,
            Some((i, _)) if n == max => {
                end = i;
                break;
            }
            Some((_, c)) => plain &= !c.is_control(),
        }
    }
    if plain && end == s.len() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(end + 32);
    for c in s[..end].chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if end < s.len() {
        out.push_str(&format!("... ({} bytes cut)", s.len() - end));
    }
    Cow::Owned(out)
}

/// [`clip`] at [`CLIP_CHARS`]: the usual echo of one value.
pub fn short(s: &str) -> Cow<'_, str> {
    clip(s, CLIP_CHARS)
}

/// A serde_json error as one bounded line: its message (which may quote the
/// input: an unknown field, an unexpected string) clipped, then where it is.
pub fn json_error(e: &serde_json::Error) -> String {
    let full = e.to_string();
    // serde_json appends " at line L column C" to every positioned message.
    let message = match full.rfind(" at line ") {
        Some(i) if e.line() > 0 => &full[..i],
        _ => full.as_str(),
    };
    let message = clip(message, 2 * CLIP_CHARS);
    if e.line() > 0 {
        format!("{message} at line {} column {}", e.line(), e.column())
    } else {
        message.into_owned()
    }
}

/// Python's `str.isspace` for one character (Rust's `White_Space` plus the
/// information separators U+001C..U+001F, which Python counts as space).
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_long_text_is_cut_with_a_count() {
        assert!(matches!(clip("gitlab", 80), Cow::Borrowed("gitlab")));
        let long = "é".repeat(100);
        // 80 characters kept (160 bytes), 20 cut (40 bytes): never inside a character.
        assert_eq!(clip(&long, 80), format!("{}... (40 bytes cut)", "é".repeat(80)));
        assert_eq!(clip(&"x".repeat(81), 80), format!("{}... (1 bytes cut)", "x".repeat(80)));
        assert_eq!(clip(&"x".repeat(80), 80), "x".repeat(80));
        assert_eq!(clip("", 0), "");
        assert_eq!(clip("ab", 0), "... (2 bytes cut)");
    }

    #[test]
    fn control_characters_cannot_break_the_line() {
        assert_eq!(clip("a\nb\tc", 80), "a\\nb\\tc");
        let long = format!("{}\n", "y".repeat(1 << 20));
        let e = short(&long);
        assert!(!e.contains('\n') && e.len() < 120, "{e}");
    }

    #[test]
    fn json_errors_keep_their_position_and_lose_the_bulk() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct S {
            a: u32,
        }
        let text = format!("{{\n\"{}\": 1}}", "k".repeat(1 << 20));
        let e = serde_json::from_str::<S>(&text).unwrap_err();
        let line = json_error(&e);
        assert!(line.starts_with("unknown field `kkk"), "{line}");
        assert!(line.contains("bytes cut) at line 2 column "), "{line}");
        assert!(line.len() < 250, "{} bytes", line.len());
        let e = serde_json::from_str::<S>("{\"a\": \"one\"}").unwrap_err();
        assert_eq!(json_error(&e), "invalid type: string \"one\", expected u32 at line 1 column 11");
    }
}
