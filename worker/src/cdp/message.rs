//! The shapes of what arrives from the browser: a command's [`Answer`], read late into the
//! caller's own type (JSON text from the WebSocket, CBOR parts from the pipe), an [`Event`], and
//! a message as it is routed.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{cbor, CallError};

pub(super) type Reply = Result<Answer, CallError>;

/// Why an answer does not read as the caller's type.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableAnswer {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Cbor(#[from] cbor::CborError),
    /// A part's range that lies outside the pipe message it points into.
    #[error("a part outside its message")]
    OutsideMessage,
}

/// A command's result, read by the caller into its own type ([`Answer::read`]): JSON text from
/// the WebSocket, or the browser's own CBOR from the pipe, read without a JSON text in between.
#[derive(Debug, Clone)]
pub struct Answer(pub(super) Payload);

#[derive(Debug, Clone)]
pub(super) enum Payload {
    Json(String),
    /// One part of a message from the pipe.
    Cbor(Arc<Vec<u8>>, std::ops::Range<usize>),
}

impl Payload {
    pub(super) fn read<'a, T: Deserialize<'a>>(&'a self) -> Result<T, UnreadableAnswer> {
        match self {
            Payload::Json(text) => Ok(serde_json::from_str(text)?),
            Payload::Cbor(message, part) => {
                let bytes = message.get(part.clone()).ok_or(UnreadableAnswer::OutsideMessage)?;
                Ok(cbor::from_slice(bytes)?)
            }
        }
    }
}

impl Answer {
    /// An answer that did not come over a connection (chromedriver's relay).
    pub fn of(v: &Value) -> Answer {
        Answer(Payload::Json(v.to_string()))
    }

    /// The answer as `T` (which may borrow text from it); why not, when it does not read as one.
    pub fn read<'a, T: Deserialize<'a>>(&'a self) -> Result<T, UnreadableAnswer> {
        self.0.read()
    }
}

/// One DevTools event.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
}

#[derive(Deserialize)]
pub(super) struct Incoming {
    pub(super) id: Option<u64>,
    pub(super) method: Option<String>,
    #[serde(rename = "sessionId")]
    pub(super) session_id: Option<String>,
    pub(super) params: Option<Box<RawValue>>,
    pub(super) result: Option<Box<RawValue>>,
    pub(super) error: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) data: Option<String>,
}

/// A message, by what it is routed by, and its parts.
pub(super) struct Routed {
    pub(super) id: Option<u64>,
    pub(super) method: Option<String>,
    pub(super) session_id: Option<String>,
    pub(super) result: Option<Payload>,
    pub(super) error: Option<Payload>,
    pub(super) params: Option<Payload>,
}
