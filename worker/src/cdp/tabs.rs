//! What the reader does for the attempt's tabs by itself: a page a page of the attempt opens is
//! held by the browser until the reader has sent it the attempt's [`TabSetup`]; and the network
//! trace's post data and bodies are asked for the moment they are known, before the page that
//! holds them navigates away.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::Shared;
use crate::network::{Recorder, Wanted};

/// What every tab of the attempt gets, the tabs a page opens itself included.
#[derive(Debug, Clone, Default)]
pub struct TabSetup {
    /// The attempt's browser context; pages opened in it by one of its pages are set up by the reader.
    pub context: Option<String>,
    /// The perturbation script, registered for every document of the tab.
    pub script: Option<String>,
    /// `Network.setExtraHTTPHeaders`' headers (auto-login).
    pub headers: Option<Value>,
    /// The tab's requests join the attempt's network trace.
    pub network: bool,
}

/// The attempt's tabs as the reader sees them.
#[derive(Default)]
pub(super) struct TabState {
    pub(super) setup: Option<TabSetup>,
    /// Targets set up already.
    pub(super) done: HashSet<String>,
    /// Target id -> the session the browser attached it to by itself (a page a page opened).
    pub(super) auto: HashMap<String, String>,
    /// `Target.setAutoAttach` was sent to the browser.
    pub(super) auto_attach: bool,
}

/// Asks the page for a trace's post data or body at once, before it navigates away; what cannot be
/// sent now (a full queue) is left to the session (its `network_flush`, between steps).
pub(super) fn ask_for(shared: &Shared, net: &mut Recorder, w: Wanted) {
    let (method, session, request) = match &w {
        Wanted::PostData { session, request, .. } => ("Network.getRequestPostData", session, request),
        Wanted::Body { session, request, .. } => ("Network.getResponseBody", session, request),
    };
    let id = shared.next.fetch_add(1, Ordering::Relaxed);
    let msg = json!({"id": id, "method": method, "params": {"requestId": request}, "sessionId": session});
    let Ok(mut calls) = shared.net_calls.lock() else { return };
    calls.insert(id, w);
    if let Err(e) = shared.out.try_send(msg) {
        drop(e);
        if let Some(w) = calls.remove(&id) {
            net.want_again(w);
        }
    }
}

/// Sets up a page the browser attached by itself when a page of the attempt opened it, then lets
/// it run; any other new page is let run and left.
pub(super) fn auto_attached(shared: &Shared, p: &Value) {
    let Some(session) = p.get("sessionId").and_then(Value::as_str) else { return };
    let info = p.get("targetInfo").unwrap_or(&Value::Null);
    let field = |k: &str| info.get(k).and_then(Value::as_str).unwrap_or_default();
    // Only a new page held for the reader: an attach the worker asked for itself (`Target.attachToTarget`)
    // is announced too, and is not the reader's.
    if !p.get("waitingForDebugger").and_then(Value::as_bool).unwrap_or(false) {
        return;
    }
    let target = field("targetId");
    let setup = shared.tabs.lock().ok().and_then(|mut t| {
        let setup = t.setup.clone().filter(|s| {
            field("type") == "page"
                && !field("openerId").is_empty()
                && s.context.as_deref() == Some(field("browserContextId"))
        })?;
        t.done.insert(target.to_string());
        t.auto.insert(target.to_string(), session.to_string());
        Some(setup)
    });
    let Some(setup) = setup else {
        shared.send(Some(session), "Runtime.runIfWaitingForDebugger", json!({}));
        shared.send(None, "Target.detachFromTarget", json!({"sessionId": session}));
        return;
    };
    tracing::debug!(%target, opener = field("openerId"), "setting up a tab a page opened");
    // Sent in order on the tab's session, which runs them in order before the page goes on.
    shared.send(Some(session), "Page.enable", json!({}));
    if let Some(source) = &setup.script {
        shared.send(Some(session), "Page.addScriptToEvaluateOnNewDocument", json!({"source": source}));
    }
    if setup.network || setup.headers.is_some() {
        if setup.network {
            if let Ok(mut net) = shared.net.lock() {
                net.add_session(session);
            }
        }
        shared.send(Some(session), "Network.enable", json!({}));
    }
    if let Some(h) = &setup.headers {
        shared.send(Some(session), "Network.setExtraHTTPHeaders", json!({"headers": h}));
    }
    shared.send(Some(session), "Runtime.runIfWaitingForDebugger", json!({}));
}
