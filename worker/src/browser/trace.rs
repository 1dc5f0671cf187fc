//! The attempt's network trace, as the session sees it: the agent's step each request is sent in,
//! the trace closed before the scorer's own requests, and the post data and bodies the DevTools
//! reader could not read as they came, read between steps before the trace is taken.

use std::time::Duration;

use serde_json::{json, Value};

use super::Session;
use crate::cdp::CallError;

impl Session {
    /// The agent step the attempt's requests are sent in from now on (1-based; 0 before the first).
    pub fn network_step(&self, step: u32) {
        if let Some(conn) = &self.devtools {
            conn.with_trace(|t| t.set_step(step));
        }
    }

    /// No new request joins the trace from now on (the scorer's own requests are not the agent's).
    pub fn network_close(&self) {
        if let Some(conn) = &self.devtools {
            conn.with_trace(|t| t.close());
        }
    }

    /// Reads the post data and response bodies the trace still lacks, each once, while their
    /// tabs are open; what cannot be read is left out. Bounded by the trace's entries.
    pub async fn network_flush(&self) {
        use crate::network::Wanted;
        let Some(conn) = &self.devtools else { return };
        let wanted = conn.with_trace(|t| t.wanted()).unwrap_or_default();
        let limit = self.cfg.call_timeout.min(Duration::from_secs(5));
        for w in wanted {
            let (method, session, request) = match &w {
                Wanted::PostData { session, request, .. } => ("Network.getRequestPostData", session, request),
                Wanted::Body { session, request, .. } => ("Network.getResponseBody", session, request),
            };
            let answer = conn.call(Some(session), method, &json!({"requestId": request}), limit).await;
            let value = match answer.map(|a| a.read::<Value>()) {
                Ok(Ok(v)) => v,
                Ok(Err(e)) => {
                    tracing::debug!(%method, error = %e, "an unreadable answer");
                    continue;
                }
                Err(e) => {
                    tracing::debug!(%method, error = %e, "not read for the network trace");
                    if matches!(e, CallError::Lost(_)) {
                        return;
                    }
                    continue;
                }
            };
            conn.with_trace(|t| t.answered(&w, &value));
        }
    }

    /// The attempt's network trace, completed ([`Session::network_flush`]) and taken; `None` when
    /// none was recorded (chromedriver's relay, or a trace turned off).
    /// Without `flush` (a browser that failed), what was recorded is taken as it stands.
    pub async fn network_take(&self, flush: bool) -> Option<skillshift_common::har::Har> {
        let conn = self.devtools.as_ref()?;
        if !conn.with_trace(|t| t.is_recording()).unwrap_or(false) {
            return None;
        }
        if flush {
            self.network_flush().await;
        }
        conn.with_trace(|t| t.take())
    }
}
