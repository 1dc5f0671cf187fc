//! Chrome DevTools over the browser's own WebSocket, or over the pipe of a browser the worker
//! started itself (`--remote-debugging-pipe=cbor`: the browser's own binary form, which spares
//! it converting every answer to JSON; [`cbor`]).
//!
//! One [`Connection`] per browser carries every command of every page session
//! (flat mode: `Target.attachToTarget` with `flatten`, each message tagged with
//! its `sessionId`), matched to its answer by id. Events are fanned out to
//! whoever subscribed for that session, through bounded channels. Every call
//! has a deadline; when the socket closes, every waiting call fails at once.
//! `docs/performance.md` says why this is a small multiplexer over
//! tokio-tungstenite rather than a full CDP crate.
//!
//! A JavaScript dialog (`alert`, `confirm`, `prompt`, `beforeunload`) stops
//! its page's script, and every call into the page with it, until it is
//! answered; so the reader answers it the moment `Page.javascriptDialogOpening`
//! arrives, without waiting for anyone, by WebArena's rule (its Playwright
//! environment registers no dialog listener, and Playwright then accepts
//! `beforeunload` and dismisses the rest), and notes it for the attempt's
//! trajectory ([`Connection::take_dialogs`]).
//!
//! The attempt's network trace is folded here too, as its events arrive ([`crate::network`]), so
//! none is lost to a full subscriber's buffer. And a tab a page of the attempt opens itself
//! (`target=_blank`, `window.open`) is set up before its first request: with the browser's
//! `Target.setAutoAttach` (`waitForDebuggerOnStart`), each new page is held until the reader has
//! sent it the attempt's [`TabSetup`] (the perturbation script, the extra headers, the network
//! trace) and let it run; a new page of no interest (a tab the worker opens itself, which it sets
//! up on attaching) is let run and left at once.
//!
//! The rooms: this one is the transport (the connection, its reader and writer tasks, calls and
//! event subscriptions, the routing of what arrives); `message` the shapes of what arrives
//! (answers read late, events); `dialogs` the dialog rule and log; `tabs` what the reader does for
//! the attempt's tabs (setting up the pages a page opens, asking for the network trace's bodies);
//! `cbor` the pipe's binary form.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

pub mod cbor;
mod dialogs;
mod message;
mod tabs;

pub use dialogs::{accepts, Dialog};
use dialogs::{answer_dialog, DialogLog};
pub use message::{Answer, Event, UnreadableAnswer};
use message::{ErrorBody, Incoming, Payload, Reply, Routed};
pub use tabs::TabSetup;
use tabs::{ask_for, auto_attached, TabState};

/// The largest DevTools message accepted (a 5,000-node accessibility tree is a few MB).
const MAX_MESSAGE: usize = 256 << 20;
/// Commands waiting to be written to the socket.
const OUTBOX: usize = 256;
/// Events buffered per subscriber; later ones are dropped (a subscriber re-checks the page anyway).
const EVENT_BUFFER: usize = 512;

#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("{0}")]
    Protocol(String),
    #[error("devtools connection lost: {0}")]
    Lost(String),
    #[error("no answer within {0} ms")]
    Timeout(u128),
}

/// A subscriber: the session it listens to (`None` for the browser) and its channel.
type Listener = (Option<String>, mpsc::Sender<Event>);

struct Shared {
    next: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    /// Subscriber id -> its listener.
    listeners: Mutex<HashMap<u64, Listener>>,
    lost: Mutex<Option<String>>,
    /// The outgoing queue, for answers the reader sends by itself (dialogs).
    out: mpsc::Sender<Value>,
    dialogs: Mutex<DialogLog>,
    /// The attempt's network trace; empty and closed between attempts.
    net: Mutex<crate::network::Recorder>,
    /// The reader's own calls for the trace (post data, bodies), by id, awaiting their answers.
    net_calls: Mutex<HashMap<u64, crate::network::Wanted>>,
    tabs: Mutex<TabState>,
}

impl Shared {
    /// Sends `method` without waiting for its answer (an unknown id is dropped by [`deliver`]).
    fn send(&self, session: Option<&str>, method: &str, params: Value) -> bool {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.out.try_send(msg).is_ok()
    }

    fn lose(&self, why: &str) {
        if let Ok(mut l) = self.lost.lock() {
            l.get_or_insert_with(|| why.to_string());
        }
        let waiting: Vec<_> = self.pending.lock().map(|mut p| p.drain().collect()).unwrap_or_default();
        for (_, tx) in waiting {
            let _ = tx.send(Err(CallError::Lost(why.to_string())));
        }
        if let Ok(mut l) = self.listeners.lock() {
            l.clear();
        }
    }

    fn lost(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l.clone())
    }
}

/// One WebSocket or pipe to a browser. Dropping it closes the socket or pipe.
pub struct Connection {
    out: mpsc::Sender<Value>,
    shared: Arc<Shared>,
    transport: &'static str,
    tasks: skillshift_taskcenter::TaskCenter,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

impl Connection {
    /// Opens the browser's WebSocket (`webSocketDebuggerUrl` of `/json/version`).
    pub async fn connect(ws_url: &str, limit: Duration) -> Result<Connection, CallError> {
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(MAX_MESSAGE);
        config.max_frame_size = Some(MAX_MESSAGE);
        let (ws, _) =
            tokio::time::timeout(limit, tokio_tungstenite::connect_async_with_config(ws_url, Some(config), true))
                .await
                .map_err(|_| CallError::Timeout(limit.as_millis()))?
                .map_err(|e| CallError::Lost(format!("cannot open {ws_url}: {e}")))?;
        let (shared, out, mut rx, tasks) = Self::parts();
        let s = shared.clone();
        tasks.spawn("devtools-socket", move |token| async move {
            let (mut sink, mut stream) = ws.split();
            let why = loop {
                tokio::select! {
                    _ = token.cancelled() => {
                        let _ = tokio::time::timeout(Duration::from_millis(200), sink.close()).await;
                        break "the connection was closed".to_string();
                    }
                    msg = rx.recv() => {
                        let Some(msg) = msg else { break "the connection was dropped".to_string() };
                        if let Err(e) = sink.send(Message::text(msg.to_string())).await {
                            break format!("write failed: {e}");
                        }
                    }
                    msg = stream.next() => match msg {
                        Some(Ok(Message::Text(t))) => dispatch(&s, t.as_str()),
                        Some(Ok(Message::Binary(b))) => {
                            if let Ok(t) = std::str::from_utf8(&b) {
                                dispatch(&s, t);
                            }
                        }
                        Some(Ok(Message::Close(_))) | None => break "the browser closed the socket".to_string(),
                        Some(Ok(_)) => {}
                        Some(Err(e)) => break format!("read failed: {e}"),
                    }
                }
            };
            s.lose(&why);
        });
        Ok(Connection { out, shared, tasks, transport: "websocket" })
    }

    /// Speaks DevTools in CBOR over the pipe of a browser started with
    /// `--remote-debugging-pipe=cbor`: `to_browser` is its fd 3, `from_browser` its fd 4. Each
    /// message is one envelope ([`cbor::HEADER`] and its length); one over [`MAX_MESSAGE`], or
    /// bytes that are not an envelope, end the connection.
    pub fn over_pipe<R, W>(mut from_browser: R, mut to_browser: W) -> Connection
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (shared, out, mut rx, tasks) = Self::parts();
        let s = shared.clone();
        tasks.spawn("devtools-pipe-in", move |token| async move {
            let why = tokio::select! {
                _ = token.cancelled() => "the connection was closed".to_string(),
                why = read_pipe(&mut from_browser, &s) => why,
            };
            s.lose(&why);
        });
        let s = shared.clone();
        tasks.spawn("devtools-pipe-out", move |token| async move {
            let why = loop {
                tokio::select! {
                    _ = token.cancelled() => break "the connection was closed".to_string(),
                    msg = rx.recv() => {
                        let Some(msg) = msg else { break "the connection was dropped".to_string() };
                        if let Err(e) = to_browser.write_all(&cbor::encode(&msg)).await {
                            break format!("write failed: {e}");
                        }
                    }
                }
            };
            s.lose(&why);
        });
        Connection { out, shared, tasks, transport: "pipe" }
    }

    #[allow(clippy::type_complexity)]
    fn parts() -> (Arc<Shared>, mpsc::Sender<Value>, mpsc::Receiver<Value>, skillshift_taskcenter::TaskCenter) {
        let (out, rx) = mpsc::channel::<Value>(OUTBOX);
        let shared = Arc::new(Shared {
            next: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            listeners: Mutex::new(HashMap::new()),
            lost: Mutex::new(None),
            out: out.clone(),
            dialogs: Mutex::new(DialogLog::default()),
            net: Mutex::new(crate::network::Recorder::default()),
            net_calls: Mutex::new(HashMap::new()),
            tabs: Mutex::new(TabState::default()),
        });
        (shared, out, rx, skillshift_taskcenter::TaskCenter::new("devtools"))
    }

    /// The dialogs answered since the last call (oldest first), and how many more were answered but not
    /// noted.
    pub fn take_dialogs(&self) -> (Vec<Dialog>, u64) {
        match self.shared.dialogs.lock() {
            Ok(mut d) => (std::mem::take(&mut d.noted), std::mem::take(&mut d.unnoted)),
            Err(_) => (Vec::new(), 0),
        }
    }

    /// Starts the attempt's tabs: `setup` is what each later tab gets, `bodies` whether the network
    /// trace reads response bodies. Returns whether the browser's auto-attach still has to be
    /// turned on ([`Connection::auto_attach_on`]).
    pub fn begin_tabs(&self, setup: TabSetup, bodies: bool) -> bool {
        if let Ok(mut net) = self.shared.net.lock() {
            *net = if setup.network { crate::network::Recorder::start(bodies) } else { Default::default() };
        }
        match self.shared.tabs.lock() {
            Ok(mut t) => {
                *t = TabState { setup: Some(setup), auto_attach: t.auto_attach, ..TabState::default() };
                !t.auto_attach
            }
            Err(_) => false,
        }
    }

    /// Notes that the browser auto-attaches new pages from now on.
    pub fn auto_attach_on(&self) {
        if let Ok(mut t) = self.shared.tabs.lock() {
            t.auto_attach = true;
        }
    }

    /// Ends the attempt's tabs: later tabs get nothing, the trace is dropped.
    pub fn end_tabs(&self) {
        if let Ok(mut t) = self.shared.tabs.lock() {
            *t = TabState { auto_attach: t.auto_attach, ..TabState::default() };
        }
        if let Ok(mut net) = self.shared.net.lock() {
            *net = Default::default();
        }
        if let Ok(mut calls) = self.shared.net_calls.lock() {
            calls.clear();
        }
    }

    /// The attempt's tab setup, when `target` has not had it yet (and notes that it now has).
    pub fn setup_for(&self, target: &str) -> Option<TabSetup> {
        let mut t = self.shared.tabs.lock().ok()?;
        let setup = t.setup.clone()?;
        t.done.insert(target.to_string()).then_some(setup)
    }

    /// Sets the extra headers later tabs get.
    pub fn set_tab_headers(&self, headers: Value) {
        if let Ok(mut t) = self.shared.tabs.lock() {
            if let Some(s) = t.setup.as_mut() {
                s.headers = Some(headers);
            }
        }
    }

    /// The session the browser attached `target` to by itself, when it did.
    pub fn auto_session(&self, target: &str) -> Option<String> {
        self.shared.tabs.lock().ok()?.auto.get(target).cloned()
    }

    /// Works on the attempt's network trace.
    pub fn with_trace<T>(&self, f: impl FnOnce(&mut crate::network::Recorder) -> T) -> Option<T> {
        self.shared.net.lock().ok().map(|mut n| f(&mut n))
    }

    /// What carries the messages: `pipe` (CBOR) or `websocket` (JSON).
    pub fn transport(&self) -> &'static str {
        self.transport
    }

    /// True once the socket is gone.
    pub fn is_lost(&self) -> bool {
        self.shared.lost().is_some()
    }

    /// Sends `method` to `session` (or to the browser for `None`) and returns its raw result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: &Value,
        limit: Duration,
    ) -> Result<Answer, CallError> {
        if let Some(why) = self.shared.lost() {
            return Err(CallError::Lost(why));
        }
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.shared.pending.lock() {
            p.insert(id, tx);
        }
        let answer = tokio::time::timeout(limit, async {
            self.out.send(msg).await.map_err(|_| CallError::Lost("the socket task ended".into()))?;
            rx.await.map_err(|_| CallError::Lost("the socket task ended".into()))?
        })
        .await;
        if let Ok(mut p) = self.shared.pending.lock() {
            p.remove(&id);
        }
        answer.map_err(|_| CallError::Timeout(limit.as_millis()))?
    }

    /// Events of `session` from now on, until the returned subscription is dropped.
    pub fn events(&self, session: Option<&str>) -> Events {
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut l) = self.shared.listeners.lock() {
            l.insert(id, (session.map(str::to_string), tx));
        }
        Events { rx, id, shared: self.shared.clone() }
    }
}

/// Reads envelopes from the browser's pipe and dispatches them until it fails; returns why.
async fn read_pipe<R: tokio::io::AsyncRead + Unpin>(from_browser: &mut R, shared: &Shared) -> String {
    let mut header = [0u8; cbor::HEADER];
    loop {
        if let Err(e) = from_browser.read_exact(&mut header).await {
            return match e.kind() {
                std::io::ErrorKind::UnexpectedEof => "the browser closed the pipe".to_string(),
                _ => format!("read failed: {e}"),
            };
        }
        let len = match cbor::envelope_len(&header) {
            Ok(len) if len <= MAX_MESSAGE => len,
            Ok(len) => return format!("a message of {len} bytes, over the {MAX_MESSAGE} allowed"),
            Err(e) => return e.to_string(),
        };
        let mut frame = vec![0u8; cbor::HEADER + len];
        frame[..cbor::HEADER].copy_from_slice(&header);
        if let Err(e) = from_browser.read_exact(&mut frame[cbor::HEADER..]).await {
            return format!("read failed: {e}");
        }
        match cbor::message(&frame) {
            Ok(m) => {
                let frame = Arc::new(frame);
                let part = |r: Option<std::ops::Range<usize>>| r.map(|r| Payload::Cbor(frame.clone(), r));
                let (result, error, params) = (part(m.result), part(m.error), part(m.params));
                deliver(shared, Routed { id: m.id, method: m.method, session_id: m.session_id, result, error, params });
            }
            Err(e) => return e.to_string(),
        }
    }
}

/// Routes one JSON message from the WebSocket.
fn dispatch(shared: &Shared, text: &str) {
    let Ok(m) = serde_json::from_str::<Incoming>(text) else {
        tracing::debug!(len = text.len(), "unreadable devtools message");
        return;
    };
    let json = |raw: Option<Box<RawValue>>| raw.map(|r| Payload::Json(r.get().to_string()));
    let (result, error, params) = (json(m.result), json(m.error), json(m.params));
    deliver(shared, Routed { id: m.id, method: m.method, session_id: m.session_id, result, error, params });
}

/// Hands an answer to the call waiting for it, or an event to its session's subscribers.
fn deliver(shared: &Shared, m: Routed) {
    if let Some(id) = m.id {
        let waiter = shared.pending.lock().ok().and_then(|mut p| p.remove(&id));
        let net_call =
            if waiter.is_none() { shared.net_calls.lock().ok().and_then(|mut c| c.remove(&id)) } else { None };
        if let (Some(w), Some(result)) = (net_call, m.result.as_ref()) {
            let answer = result.read::<Value>().unwrap_or(Value::Null);
            if let Ok(mut net) = shared.net.lock() {
                net.answered(&w, &answer);
            }
            return;
        }
        if let Some(tx) = waiter {
            let reply = match (m.result, m.error) {
                (_, Some(e)) => {
                    let e = e
                        .read::<ErrorBody>()
                        .unwrap_or_else(|why| ErrorBody { message: format!("an unreadable error: {why}"), data: None });
                    Err(CallError::Protocol(match e.data {
                        Some(d) if !d.is_empty() => format!("{} ({d})", e.message),
                        _ => e.message,
                    }))
                }
                (Some(r), None) => Ok(Answer(r)),
                (None, None) => Ok(Answer(Payload::Json("{}".into()))),
            };
            let _ = tx.send(reply);
        }
        return;
    }
    let Some(method) = m.method else { return };
    let mut params = None;
    let read = |raw: &Option<Payload>| raw.as_ref().and_then(|p| p.read::<Value>().ok()).unwrap_or(Value::Null);
    if let (true, Some(session)) = (crate::network::FOLDED.contains(&method.as_str()), m.session_id.as_deref()) {
        if let Ok(mut net) = shared.net.lock() {
            if net.records(session) {
                let p = params.get_or_insert_with(|| read(&m.params));
                net.event(session, &method, p);
                for w in net.wanted() {
                    ask_for(shared, &mut net, w);
                }
            }
        }
    }
    if method == "Target.attachedToTarget" && m.session_id.is_none() {
        let p = params.get_or_insert_with(|| read(&m.params));
        auto_attached(shared, p);
    }
    if method == "Page.javascriptDialogOpening" {
        let p =
            params.get_or_insert_with(|| m.params.as_ref().and_then(|p| p.read::<Value>().ok()).unwrap_or(Value::Null));
        answer_dialog(shared, m.session_id.as_deref(), p);
    }
    let Ok(listeners) = shared.listeners.lock() else { return };
    for (session, tx) in listeners.values() {
        if session.as_deref() == m.session_id.as_deref() {
            let p = params
                .get_or_insert_with(|| m.params.as_ref().and_then(|p| p.read::<Value>().ok()).unwrap_or(Value::Null));
            let _ = tx.try_send(Event { method: method.clone(), params: p.clone() });
        }
    }
}

/// A subscription to one session's events.
pub struct Events {
    rx: mpsc::Receiver<Event>,
    id: u64,
    shared: Arc<Shared>,
}

impl Events {
    /// The next event, waiting at most `limit`; `None` on timeout or when the socket is gone.
    pub async fn next_within(&mut self, limit: Duration) -> Option<Event> {
        tokio::time::timeout(limit, self.rx.recv()).await.ok().flatten()
    }

    /// An event already received, without waiting.
    pub fn try_next(&mut self) -> Option<Event> {
        self.rx.try_recv().ok()
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        if let Ok(mut l) = self.shared.listeners.lock() {
            l.remove(&self.id);
        }
    }
}

/// The browser's WebSocket URL from its DevTools HTTP endpoint (`host:port`).
pub async fn browser_ws_url(debugger_address: &str, limit: Duration) -> Result<String, CallError> {
    let url = format!("http://{debugger_address}/json/version");
    let client = reqwest::Client::builder()
        .timeout(limit)
        .no_proxy()
        .build()
        .map_err(|e| CallError::Lost(format!("http client: {e}")))?;
    let v: Value = client
        .get(&url)
        .send()
        .await
        .map_err(|e| CallError::Lost(format!("{url}: {e}")))?
        .json()
        .await
        .map_err(|e| CallError::Lost(format!("{url}: {e}")))?;
    v.get("webSocketDebuggerUrl")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| CallError::Protocol(format!("{url} has no webSocketDebuggerUrl")))
}
