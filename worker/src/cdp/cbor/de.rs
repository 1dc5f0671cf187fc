//! Values read straight from Chrome's CBOR into Rust types through serde, without the JSON text
//! [`super::to_json`] would write: what a large answer (the accessibility tree) is read with.
//!
//! A value reads as its JSON text would: binary data as base64 text, UTF-16 text as text, and a
//! whole double (JavaScript's `1`) as an integer, as Chrome's JSON writes it. A container a type
//! does not keep is skipped by its envelope's length without being read.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{CborError, Reader, ARRAY_START, ENVELOPE, MAP_START, MAX_DEPTH, STOP, TAG_BINARY};

impl de::Error for CborError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CborError { at: 0, what: msg.to_string() }
    }
}

/// `T` read from one CBOR value that fills `bytes`.
pub fn from_slice<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, CborError> {
    let mut d = Deserializer { r: Reader { bytes, at: 0 }, depth: 0 };
    let v = T::deserialize(&mut d).map_err(|e| if e.at == 0 { CborError { at: d.r.at, ..e } } else { e })?;
    if d.r.at != bytes.len() {
        return Err(d.r.error(format!("{} bytes after the value", bytes.len() - d.r.at)));
    }
    Ok(v)
}

/// Where the value that starts at `at` ends (a container in an envelope is not read through).
pub(super) fn skip(bytes: &[u8], at: usize) -> Result<usize, CborError> {
    let mut d = Deserializer { r: Reader { bytes, at }, depth: 1 };
    de::Deserializer::deserialize_ignored_any(&mut d, IgnoredAny)?;
    Ok(d.r.at)
}

struct Deserializer<'de> {
    r: Reader<'de>,
    depth: usize,
}

impl<'de> Deserializer<'de> {
    fn peek(&self) -> Result<u8, CborError> {
        self.r.bytes.get(self.r.at).copied().ok_or_else(|| self.r.error("the message ends early"))
    }

    /// Reads an envelope's header: where what it holds ends.
    fn envelope(&mut self) -> Result<usize, CborError> {
        let header = self.r.take(super::HEADER)?;
        let len = super::envelope_len(header).map_err(|e| CborError { at: self.r.at, ..e })?;
        self.r
            .at
            .checked_add(len)
            .filter(|e| *e <= self.r.bytes.len())
            .ok_or_else(|| self.r.error("an envelope past the message"))
    }

    /// Opens a map or array, in an envelope or not: whether it is a map, and where its envelope
    /// says it ends.
    fn open(&mut self) -> Result<(bool, Option<usize>), CborError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.r.error(format!("nested deeper than {MAX_DEPTH}")));
        }
        let end = if self.peek()? == ENVELOPE[0] { Some(self.envelope()?) } else { None };
        match self.r.byte()? {
            MAP_START => Ok((true, end)),
            ARRAY_START => Ok((false, end)),
            other => Err(self.r.error(format!("0x{other:02x} where a map or array starts"))),
        }
    }

    fn close(&mut self, end: Option<usize>) -> Result<(), CborError> {
        if self.r.byte()? != STOP {
            return Err(self.r.error("a map or array with more than was read"));
        }
        match end {
            Some(end) if end != self.r.at => Err(self.r.error("an envelope's length does not match what it holds")),
            _ => Ok(()),
        }
    }
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = CborError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CborError> {
        let first = self.peek()?;
        if first == ENVELOPE[0] || first == MAP_START || first == ARRAY_START {
            let (map, end) = self.open()?;
            self.depth += 1;
            let v = if map {
                visitor.visit_map(Items { de: &mut *self })?
            } else {
                visitor.visit_seq(Items { de: &mut *self })?
            };
            self.depth -= 1;
            self.close(end)?;
            return Ok(v);
        }
        self.r.at += 1;
        let (major, info) = (first >> 5, first & 0x1f);
        match (major, first) {
            (_, TAG_BINARY) => {
                let b = self.r.byte()?;
                if b >> 5 != 2 {
                    return Err(self.r.error("binary data that is not a byte string"));
                }
                let n = self.r.len(b & 0x1f)?;
                let data = self.r.take(n)?;
                visitor.visit_string(base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data))
            }
            (0, _) => visitor.visit_u64(self.r.argument(info)?),
            (1, _) => {
                let n = self.r.argument(info)?;
                match i64::try_from(n) {
                    Ok(n) => visitor.visit_i64(-1 - n),
                    Err(_) => visitor.visit_f64(-1.0 - n as f64),
                }
            }
            (2, _) => visitor.visit_string(self.r.utf16(info)?),
            (3, _) => visitor.visit_borrowed_str(self.r.utf8(info)?),
            (7, 0xf4) => visitor.visit_bool(false),
            (7, 0xf5) => visitor.visit_bool(true),
            (7, 0xf6) => visitor.visit_unit(),
            (7, 0xfb) => {
                let raw = self.r.take(8)?;
                let f = f64::from_be_bytes(raw.try_into().unwrap_or_default());
                // As Chrome's JSON writes it (and `to_json` reads it): a whole number as an
                // integer; NaN and the infinities as null.
                match super::whole(f) {
                    Some(i) if i >= 0 => visitor.visit_u64(i as u64),
                    Some(i) => visitor.visit_i64(i),
                    None if f.is_finite() => visitor.visit_f64(f),
                    None => visitor.visit_unit(),
                }
            }
            _ => Err(self.r.error(format!("unexpected initial byte 0x{first:02x}"))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CborError> {
        if self.peek()? == 0xf6 {
            self.r.at += 1;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    /// A value the type does not keep: an enveloped container is passed over by its length.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CborError> {
        if self.peek()? == ENVELOPE[0] {
            self.r.at = self.envelope()?;
            return visitor.visit_unit();
        }
        de::Deserializer::deserialize_any(&mut *self, IgnoredAny)?;
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
    }
}

/// The entries of a map or the items of an array, up to its stop byte.
struct Items<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'de> MapAccess<'de> for Items<'_, 'de> {
    type Error = CborError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, CborError> {
        if self.de.peek()? == STOP {
            return Ok(None);
        }
        let first = self.de.peek()?;
        if first >> 5 != 3 && first >> 5 != 2 {
            return Err(self.de.r.error("a map key that is not text"));
        }
        seed.deserialize(&mut *self.de).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, CborError> {
        seed.deserialize(&mut *self.de)
    }
}

impl<'de> SeqAccess<'de> for Items<'_, 'de> {
    type Error = CborError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, CborError> {
        if self.de.peek()? == STOP {
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}
