//! DevTools messages in the browser's own binary form, for `--remote-debugging-pipe=cbor`.
//!
//! Chrome keeps DevTools messages as CBOR inside the browser and converts each one to JSON for a
//! JSON client; on a large answer (an accessibility tree of a thousand nodes is about 400 kB)
//! that conversion is a large part of the call. Over the pipe in CBOR mode the browser sends
//! its bytes as they are, and this module turns them into the JSON text the rest of the
//! connection reads, and commands into CBOR.
//!
//! The subset is Chrome's (`third_party/inspector_protocol/crdtp/cbor.h`): every map and array
//! sits in an envelope (tag 24 over a byte string with a 32-bit length) and is of indefinite
//! length; a text string is UTF-8, a byte string without a tag is UTF-16LE text, a byte string
//! under tag 22 is binary data (base64 in JSON); integers fit 32 bits, other numbers are
//! doubles; `true`, `false` and `null`. Anything else is refused, as is nesting deeper than
//! [`MAX_DEPTH`].

use std::fmt::Write as _;
use std::ops::Range;

use serde_json::Value;

mod de;
pub use de::from_slice;

/// The first bytes of an envelope: tag 24, then a byte string with a 4-byte length.
pub const ENVELOPE: [u8; 3] = [0xd8, 0x18, 0x5a];
/// An envelope's header: [`ENVELOPE`] and the length of what it holds.
pub const HEADER: usize = 7;
/// How deep maps and arrays may nest in one message.
pub const MAX_DEPTH: usize = 256;

const TAG_BINARY: u8 = 0xd6; // tag 22: expected conversion to base64
const MAP_START: u8 = 0xbf;
const ARRAY_START: u8 = 0x9f;
const STOP: u8 = 0xff;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("devtools message, byte {at}: {what}")]
pub struct CborError {
    pub at: usize,
    pub what: String,
}

/// The length an envelope's header announces, or why the bytes are not one.
pub fn envelope_len(header: &[u8]) -> Result<usize, CborError> {
    if header.len() < HEADER || header[..3] != ENVELOPE {
        return Err(CborError { at: 0, what: "not an envelope".into() });
    }
    let n = u32::from_be_bytes([header[3], header[4], header[5], header[6]]);
    usize::try_from(n).map_err(|_| CborError { at: 3, what: format!("length {n}") })
}

/// The JSON text of one message (an envelope holding a map), as Chrome would have sent it.
pub fn to_json(bytes: &[u8]) -> Result<String, CborError> {
    let mut r = Reader { bytes, at: 0 };
    let mut out = String::with_capacity(bytes.len() + bytes.len() / 8);
    r.value(&mut out, 0)?;
    if r.at != bytes.len() {
        return Err(r.error(format!("{} bytes after the message", bytes.len() - r.at)));
    }
    Ok(out)
}

/// What the connection routes a message by, read from its top-level map without reading the
/// rest: the id, method and session as they are; where `result`, `error` and `params` lie in the
/// message, for [`from_slice`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Message {
    pub id: Option<u64>,
    pub method: Option<String>,
    pub session_id: Option<String>,
    pub result: Option<Range<usize>>,
    pub error: Option<Range<usize>>,
    pub params: Option<Range<usize>>,
}

/// One message (an envelope holding a map) read into its [`Message`] parts.
pub fn message(bytes: &[u8]) -> Result<Message, CborError> {
    let len = envelope_len(bytes)?;
    if HEADER + len != bytes.len() {
        return Err(CborError { at: 3, what: "the envelope's length is not the message's".into() });
    }
    let mut r = Reader { bytes, at: HEADER };
    if r.byte()? != MAP_START {
        return Err(r.error("a message that is not a map"));
    }
    let mut m = Message::default();
    loop {
        if *r.bytes.get(r.at).ok_or_else(|| r.error("the message ends early"))? == STOP {
            r.at += 1;
            break;
        }
        match r.text()?.as_str() {
            "id" => {
                let b = r.byte()?;
                if b >> 5 != 0 {
                    return Err(r.error("an id that is not a whole number"));
                }
                m.id = Some(r.argument(b & 0x1f)?);
            }
            "method" => m.method = Some(r.text()?),
            "sessionId" => m.session_id = Some(r.text()?),
            key => {
                let start = r.at;
                r.at = de::skip(bytes, start)?;
                let part = Some(start..r.at);
                match key {
                    "result" => m.result = part,
                    "error" => m.error = part,
                    "params" => m.params = part,
                    _ => {}
                }
            }
        }
    }
    if r.at != bytes.len() {
        return Err(r.error(format!("{} bytes after the message", bytes.len() - r.at)));
    }
    Ok(m)
}

/// One command (or any JSON value) in Chrome's CBOR: maps and arrays in envelopes.
pub fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    write(v, &mut out);
    out
}

fn head(major: u8, n: u64, out: &mut Vec<u8>) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend([m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend((n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend(n.to_be_bytes());
        }
    }
}

fn enveloped(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    out.extend(ENVELOPE);
    let len_at = out.len();
    out.extend([0; 4]);
    body(out);
    let len = (out.len() - len_at - 4) as u32;
    out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
}

fn write(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0xf6),
        Value::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
        Value::Number(n) => match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
            Some(i) if i >= 0 => head(0, i as u64, out),
            Some(i) => head(1, (-1 - i64::from(i)) as u64, out),
            None => {
                out.push(0xfb);
                out.extend(n.as_f64().unwrap_or(0.0).to_be_bytes());
            }
        },
        Value::String(s) => {
            head(3, s.len() as u64, out);
            out.extend(s.as_bytes());
        }
        Value::Array(items) => enveloped(out, |out| {
            out.push(ARRAY_START);
            for item in items {
                write(item, out);
            }
            out.push(STOP);
        }),
        Value::Object(map) => enveloped(out, |out| {
            out.push(MAP_START);
            for (k, item) in map {
                head(3, k.len() as u64, out);
                out.extend(k.as_bytes());
                write(item, out);
            }
            out.push(STOP);
        }),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, what: impl Into<String>) -> CborError {
        CborError { at: self.at, what: what.into() }
    }

    fn byte(&mut self) -> Result<u8, CborError> {
        let b = *self.bytes.get(self.at).ok_or_else(|| self.error("the message ends early"))?;
        self.at += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CborError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or_else(|| self.error("the message ends early"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// The argument of an initial byte's additional information.
    fn argument(&mut self, info: u8) -> Result<u64, CborError> {
        Ok(match info {
            0..=23 => u64::from(info),
            24 => u64::from(self.byte()?),
            25 => u64::from(u16::from_be_bytes(self.take(2)?.try_into().unwrap_or_default())),
            26 => u64::from(u32::from_be_bytes(self.take(4)?.try_into().unwrap_or_default())),
            27 => u64::from_be_bytes(self.take(8)?.try_into().unwrap_or_default()),
            _ => return Err(self.error(format!("additional information {info} is not a length"))),
        })
    }

    fn len(&mut self, info: u8) -> Result<usize, CborError> {
        let n = self.argument(info)?;
        usize::try_from(n).ok().filter(|n| *n <= self.bytes.len()).ok_or_else(|| self.error(format!("length {n}")))
    }

    fn value(&mut self, out: &mut String, depth: usize) -> Result<(), CborError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH}")));
        }
        let first = self.byte()?;
        let (major, info) = (first >> 5, first & 0x1f);
        match (major, first) {
            (_, 0xd8) => {
                // An envelope: tag 24, a byte string with a 4-byte length, then a map or array.
                if self.byte()? != 0x18 || self.byte()? != 0x5a {
                    return Err(self.error("a tag other than an envelope"));
                }
                let len = self.len(26)?;
                let end = self.at + len;
                self.container(out, depth)?;
                if self.at != end {
                    return Err(self.error("an envelope's length does not match what it holds"));
                }
            }
            (_, MAP_START) | (_, ARRAY_START) => {
                self.at -= 1;
                self.container(out, depth)?;
            }
            (_, TAG_BINARY) => {
                let b = self.byte()?;
                if b >> 5 != 2 {
                    return Err(self.error("binary data that is not a byte string"));
                }
                let n = self.len(b & 0x1f)?;
                let data = self.take(n)?;
                out.push('"');
                base64::Engine::encode_string(&base64::engine::general_purpose::STANDARD, data, out);
                out.push('"');
            }
            (0, _) => {
                let n = self.argument(info)?;
                let _ = write!(out, "{n}");
            }
            (1, _) => {
                let n = self.argument(info)?;
                let _ = write!(out, "{}", -1 - i128::from(n));
            }
            (2, _) => string(&self.utf16(info)?, out),
            (3, _) => string(self.utf8(info)?, out),
            (7, 0xf4) => out.push_str("false"),
            (7, 0xf5) => out.push_str("true"),
            (7, 0xf6) => out.push_str("null"),
            (7, 0xfb) => {
                let raw = self.take(8)?;
                number(f64::from_be_bytes(raw.try_into().unwrap_or_default()), out);
            }
            _ => return Err(self.error(format!("unexpected initial byte 0x{first:02x}"))),
        }
        Ok(())
    }

    /// A text string (UTF-8) or a byte string of UTF-16LE text: a key, a method, a session.
    fn text(&mut self) -> Result<String, CborError> {
        let first = self.byte()?;
        match first >> 5 {
            2 => self.utf16(first & 0x1f),
            3 => self.utf8(first & 0x1f).map(str::to_string),
            _ => Err(self.error("a name that is not text")),
        }
    }

    fn utf8(&mut self, info: u8) -> Result<&'a str, CborError> {
        let n = self.len(info)?;
        let at = self.at;
        std::str::from_utf8(self.take(n)?).map_err(|e| CborError { at, what: format!("text: {e}") })
    }

    fn utf16(&mut self, info: u8) -> Result<String, CborError> {
        let n = self.len(info)?;
        if n % 2 != 0 {
            return Err(self.error("UTF-16 text of an odd number of bytes"));
        }
        let units = self.take(n)?.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
        Ok(char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect())
    }

    /// An indefinite map or array, up to its stop byte.
    fn container(&mut self, out: &mut String, depth: usize) -> Result<(), CborError> {
        let start = self.byte()?;
        let map = match start {
            MAP_START => true,
            ARRAY_START => false,
            other => return Err(self.error(format!("an envelope holds 0x{other:02x}, not a map or array"))),
        };
        out.push(if map { '{' } else { '[' });
        let mut first = true;
        loop {
            if *self.bytes.get(self.at).ok_or_else(|| self.error("the message ends early"))? == STOP {
                self.at += 1;
                break;
            }
            if !first {
                out.push(',');
            }
            first = false;
            if map {
                let key_at = out.len();
                self.value(out, depth + 1)?;
                if !out[key_at..].starts_with('"') {
                    return Err(self.error("a map key that is not text"));
                }
                out.push(':');
            }
            self.value(out, depth + 1)?;
        }
        out.push(if map { '}' } else { ']' });
        Ok(())
    }
}

/// The integer Chrome's JSON writes a double as: a whole number in the 64-bit range.
fn whole(f: f64) -> Option<i64> {
    const RANGE: f64 = 9_223_372_036_854_775_808.0; // 2^63
    (f.is_finite() && f.fract() == 0.0 && (-RANGE..RANGE).contains(&f)).then_some(f as i64)
}

/// A double as Chrome's JSON writes it: a whole number in the 64-bit range without a fraction
/// (JavaScript's `1` is a double in CBOR and `1` in JSON), NaN and the infinities as `null`.
fn number(f: f64, out: &mut String) {
    if let Some(i) = whole(f) {
        let _ = write!(out, "{i}");
        return;
    }
    match serde_json::Number::from_f64(f) {
        Some(n) => {
            let _ = write!(out, "{n}");
        }
        None => out.push_str("null"),
    }
}

/// `s` as a JSON string. The bytes that need escaping are all ASCII, so the runs between them
/// are copied whole.
fn string(s: &str, out: &mut String) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escaped);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Bytes Chrome 156 sent over the pipe for `Runtime.evaluate` of
    /// `[1,-2,3.5,'é€😀','abc',true,null,2147483648]` (returnByValue).
    const CHROME_EVALUATE: &[u8] = b"\xd8\x18Z\x00\x00\x00\x90\xbfbid\x06fresult\xd8\x18Z\x00\x00\x00P\xbffresult\xd8\x18Z\x00\x00\x00@\xbfdtypefobjectevalue\xd8\x18Z\x00\x00\x00%\x9f\x01!\xfb@\x0c\x00\x00\x00\x00\x00\x00H\xe9\x00\xac =\xd8\x00\xdecabc\xf5\xf6\xfbA\xe0\x00\x00\x00\x00\x00\x00\xff\xff\xffisessionIdx 5FD97BA78D70D331F89EF5CA36BA1FEC\xff";

    #[test]
    fn chromes_own_bytes_read_as_the_json_it_would_have_sent() {
        let text = to_json(CHROME_EVALUATE).expect("chrome's message");
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            v,
            json!({"id": 6, "result": {"result": {"type": "object", "value": [1, -2, 3.5, "é€😀", "abc", true, null, 2147483648i64]}},
                   "sessionId": "5FD97BA78D70D331F89EF5CA36BA1FEC"})
        );
        assert_eq!(envelope_len(CHROME_EVALUATE), Ok(CHROME_EVALUATE.len() - HEADER));
    }

    #[test]
    fn a_command_round_trips_and_every_container_is_enveloped() {
        let cmd = json!({"id": 70000, "method": "Input.insertText", "sessionId": "S",
                         "params": {"text": "a\"\\\n\u{1}é😀", "n": -5, "big": 4294967296i64, "f": 0.25, "list": [true, false, null, {}]}});
        let bytes = encode(&cmd);
        assert_eq!(bytes[..3], ENVELOPE);
        assert_eq!(envelope_len(&bytes), Ok(bytes.len() - HEADER));
        let back: Value = serde_json::from_str(&to_json(&bytes).expect("decodes")).expect("json");
        assert_eq!(back, cmd, "a whole number sent as a double reads back whole, as in Chrome's JSON");
    }

    #[test]
    fn binary_data_becomes_base64_as_chromes_json_says_it() {
        for (data, b64) in
            [(&b""[..], ""), (b"f", "Zg=="), (b"fo", "Zm8="), (b"foo", "Zm9v"), (b"\x89PNG\r\n", "iVBORw0K")]
        {
            let mut msg = vec![0xbf, 0x64];
            msg.extend(b"data");
            msg.push(TAG_BINARY);
            msg.push(0x40 | data.len() as u8);
            msg.extend(data);
            msg.push(STOP);
            assert_eq!(to_json(&msg).expect("decodes"), format!("{{\"data\":\"{b64}\"}}"));
        }
    }

    #[test]
    fn doubles_read_as_chromes_json_writes_them() {
        for (f, text) in
            [(1.0, "1"), (-0.0, "0"), (-3.0, "-3"), (1e15, "1000000000000000"), (2.5, "2.5"), (1e300, "1e300")]
        {
            let mut msg = vec![0xfb];
            msg.extend(f64::to_be_bytes(f));
            let got = to_json(&msg).expect("a double");
            let (want, parsed): (Value, Value) =
                (serde_json::from_str(text).unwrap(), serde_json::from_str(&got).unwrap());
            assert_eq!(parsed, want, "{f} read as {got}");
        }
        for f in [f64::NAN, f64::INFINITY] {
            let mut msg = vec![0xfb];
            msg.extend(f64::to_be_bytes(f));
            assert_eq!(to_json(&msg).expect("a double"), "null");
        }
    }

    #[test]
    fn broken_messages_are_errors_not_panics() {
        let good = encode(&json!({"id": 1, "result": {"a": [1, 2, "x"]}}));
        for cut in 0..good.len() {
            assert!(to_json(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_len = good.clone();
        bad_len[6] = bad_len[6].wrapping_add(1);
        assert!(to_json(&bad_len).is_err());
        assert!(to_json(&[0xbf, 0x01, 0x02, 0xff]).is_err(), "a key that is not text");
        assert!(to_json(&[0xc0]).is_err(), "an unknown tag");
        let deep: Vec<u8> =
            std::iter::repeat_n(ARRAY_START, MAX_DEPTH + 2).chain(std::iter::repeat_n(STOP, MAX_DEPTH + 2)).collect();
        assert!(to_json(&deep).unwrap_err().what.contains("deeper"));
        assert!(envelope_len(&[0xd8, 0x18]).is_err());
    }

    #[test]
    fn a_message_is_read_into_its_parts_as_the_whole_would_read() {
        let part = |bytes: &[u8], r: Option<Range<usize>>| -> Value {
            from_slice(&bytes[r.expect("the part")]).expect("reads")
        };
        let m = message(CHROME_EVALUATE).expect("chrome's message");
        let whole: Value = serde_json::from_str(&to_json(CHROME_EVALUATE).unwrap()).unwrap();
        assert_eq!(
            (m.id, m.session_id.as_deref(), m.method.as_deref()),
            (Some(6), Some(whole["sessionId"].as_str().unwrap()), None)
        );
        assert_eq!(part(CHROME_EVALUATE, m.result.clone()), whole["result"]);
        assert_eq!((m.error, m.params), (None, None));
        assert_eq!(from_slice::<Value>(CHROME_EVALUATE).unwrap(), whole, "read straight, as its JSON text reads");

        let event = encode(&json!({"method": "Page.loadEventFired", "params": {"timestamp": 2.5}, "sessionId": "S"}));
        let m = message(&event).unwrap();
        assert_eq!(
            (m.id, m.method.as_deref(), m.session_id.as_deref()),
            (None, Some("Page.loadEventFired"), Some("S"))
        );
        assert_eq!(part(&event, m.params), json!({"timestamp": 2.5}));

        let error = encode(&json!({"id": 9, "error": {"code": -32000, "message": "No node"}, "extra": [1]}));
        let m = message(&error).unwrap();
        assert_eq!(m.id, Some(9));
        assert_eq!(part(&error, m.error), json!({"code": -32000, "message": "No node"}));

        for cut in 0..error.len() {
            assert!(message(&error[..cut]).is_err(), "cut at {cut}");
        }
        assert!(message(&encode(&json!({"id": "7"}))).unwrap_err().what.contains("whole number"));
        assert!(message(&encode(&json!([1]))).is_err(), "a message that is not a map");
    }

    #[test]
    fn values_read_straight_as_their_json_text_reads() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Node<'a> {
            #[serde(borrow)]
            id: std::borrow::Cow<'a, str>,
            n: Option<i64>,
            list: Vec<u32>,
        }
        let cmd = json!({"a": "x\"y", "n": -5, "big": 4294967296i64, "f": 0.25, "list": [true, false, null, {}, []], "t": "é😀"});
        let bytes = encode(&cmd);
        assert_eq!(
            from_slice::<Value>(&bytes).unwrap(),
            serde_json::from_str::<Value>(&to_json(&bytes).unwrap()).unwrap()
        );
        // A whole double reads as the integer Chrome's JSON writes.
        let mut whole = vec![MAP_START, 0x61, b'n', 0xfb];
        whole.extend(2.0f64.to_be_bytes());
        whole.push(STOP);
        assert!(from_slice::<Value>(&whole).unwrap()["n"].is_u64());
        // Fields a type does not keep are passed over, enveloped or not.
        let doc =
            encode(&json!({"id": "n1", "skipped": {"deep": [1, 2, {"x": null}]}, "list": [1, 2], "n": null, "z": 1.5}));
        let node: Node = from_slice(&doc).expect("a node");
        assert_eq!(node, Node { id: "n1".into(), n: None, list: vec![1, 2] });
        assert!(matches!(node.id, std::borrow::Cow::Borrowed(_)), "text is borrowed from the message");
        for cut in 0..bytes.len() {
            assert!(from_slice::<Value>(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let deep: Vec<u8> =
            std::iter::repeat_n(ARRAY_START, MAX_DEPTH + 2).chain(std::iter::repeat_n(STOP, MAX_DEPTH + 2)).collect();
        assert!(from_slice::<Value>(&deep).unwrap_err().what.contains("deeper"));
        assert!(from_slice::<Value>(&[0xbf, 0x01, 0x02, 0xff]).is_err(), "a key that is not text");
    }

    #[test]
    fn text_is_escaped_as_json_wherever_the_escapes_fall() {
        for text in ["", "plain", "\"", "a\"b\\c", "\u{1}\u{1f}x\n\r\t", "é\"€\n😀", "end\\"] {
            let mut out = String::new();
            string(text, &mut out);
            assert_eq!(serde_json::from_str::<String>(&out).expect("json"), text, "{out}");
        }
    }
}
