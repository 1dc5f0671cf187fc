//! URL encoding and decoding: one percent-encoder, the decoder of
//! `application/x-www-form-urlencoded` bodies and query strings, and the
//! decoder of request paths.
//!
//! The encoder comes in two flavours that differ in one character each:
//! [`encode_form`] keeps `*` and escapes `~`, as a browser serialises a form
//! (the simulator submits forms with it, and GitLab's links use it);
//! [`encode_query`] keeps `~` and escapes `*`, as RFC 3986 leaves unreserved
//! characters (Magento's and WordPress's links). Both are kept so every page
//! and task file stays byte-identical.

/// Encodes a form field name or value the way a browser submits a form (space as `+`).
pub fn encode_form(text: &str) -> String {
    encode(text, b'*')
}

/// Encodes a query value keeping RFC 3986's unreserved characters (space as `+`).
pub fn encode_query(text: &str) -> String {
    encode(text, b'~')
}

/// Alphanumerics, `-`, `.`, `_` and `extra` stay; space becomes `+`; every other byte is `%XX`.
fn encode(text: &str, extra: u8) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => out.push(byte as char),
            b if b == extra => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Decodes `application/x-www-form-urlencoded` pairs (a POST body or a query string).
pub fn parse_urlencoded(s: &str) -> Vec<(String, String)> {
    use skillshift_common::evaluate::percent_decode;
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// The first value of `key` in decoded pairs.
pub fn field<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Decodes the `%XX` escapes of a request path; unlike a query, `+` stays `+`
/// (invalid escapes are kept as they are).
pub fn decode_path(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(byte) = hex {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_flavours_differ_only_in_star_and_tilde() {
        assert_eq!(encode_form("a b*~&é"), "a+b*%7E%26%C3%A9");
        assert_eq!(encode_query("a b*~&é"), "a+b%2A~%26%C3%A9");
    }

    #[test]
    fn url_coding_round_trips() {
        let s = "Ann O'Neil & co/ü + 1*~";
        for encoded in [encode_form(s), encode_query(s)] {
            assert_eq!(
                parse_urlencoded(&format!("q={encoded}&x")),
                vec![("q".into(), s.into()), ("x".into(), "".into())]
            );
        }
        assert_eq!(field(&parse_urlencoded("a=1&b=2&a=3"), "a"), Some("1"));
        assert_eq!(decode_path("/a+b/%C3%BC/a%2"), "/a+b/ü/a%2");
    }
}
