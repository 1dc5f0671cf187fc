//! JavaScript dialogs: WebArena's rule for answering them ([`accepts`]), the reader answering one
//! the moment it opens, and the log of those answered, taken by the attempt
//! ([`super::Connection::take_dialogs`]).

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::Shared;

/// Dialogs noted and not yet taken; later ones are still answered, and only counted.
const MAX_DIALOGS: usize = 32;
/// Characters of a dialog's message kept in its note.
const MAX_DIALOG_CHARS: usize = 500;

/// A JavaScript dialog a page opened, and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// Its message, at most [`MAX_DIALOG_CHARS`] characters.
    pub message: String,
    /// True when accepted (`beforeunload`), false when dismissed.
    pub accepted: bool,
}

/// WebArena's answer to a dialog of `kind`: Playwright's with no dialog listener.
pub fn accepts(kind: &str) -> bool {
    kind == "beforeunload"
}

#[derive(Default)]
pub(super) struct DialogLog {
    pub(super) noted: Vec<Dialog>,
    /// Answered but not noted ([`MAX_DIALOGS`] were waiting to be taken).
    pub(super) unnoted: u64,
}

/// Answers the dialog an event announces, at once and by [`accepts`], and notes it.
pub(super) fn answer_dialog(shared: &Shared, session: Option<&str>, params: &Value) {
    let kind = params.get("type").and_then(Value::as_str).unwrap_or("alert").to_string();
    let accepted = accepts(&kind);
    let id = shared.next.fetch_add(1, Ordering::Relaxed);
    let mut msg = json!({"id": id, "method": "Page.handleJavaScriptDialog", "params": {"accept": accepted}});
    if let Some(s) = session {
        msg["sessionId"] = json!(s);
    }
    // Nobody waits for the answer (an unknown id is dropped); a full queue leaves the dialog to the
    // caller's deadline.
    if shared.out.try_send(msg).is_err() {
        tracing::warn!(%kind, "cannot answer a javascript dialog: the devtools queue is full");
        return;
    }
    let message: String =
        params.get("message").and_then(Value::as_str).unwrap_or_default().chars().take(MAX_DIALOG_CHARS).collect();
    tracing::debug!(%kind, %message, accepted, "answered a javascript dialog");
    if let Ok(mut log) = shared.dialogs.lock() {
        if log.noted.len() < MAX_DIALOGS {
            log.noted.push(Dialog { kind, message, accepted });
        } else {
            log.unnoted = log.unnoted.saturating_add(1);
        }
    }
}
