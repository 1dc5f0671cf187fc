//! TEST SUPPORT: a scripted stand-in for an OpenAI-compatible chat API.
//!
//! This is not a language model. It is the one stand-in the project allows: a server on `127.0.0.1:0` that
//! answers `POST /v1/chat/completions` from a script of canned replies, in order, so the `reference` agent and
//! the run path can be tested without a paid LLM. Every answer says what it is: the `model` field is
//! [`SCRIPTED_MODEL`] and the header `x-skillshift-stand-in: scripted-test-llm` is set. Usage is a fixed
//! token count per reply, so token accounting can be checked exactly. Script entries can also answer with an
//! HTTP error status (429, 500, ...) or stall, to exercise retries and timeouts. Every request body is
//! recorded for assertions. Once the script is spent the server answers 400, which the client does not retry.
//!
//! For load tests of the LLM budget, [`ScriptedLlm::start_endless`] answers every request after the script
//! with one fixed entry, each after a fixed delay, and the server records how many requests it held at once
//! ([`ScriptedLlm::max_in_flight`]) and when each arrived ([`ScriptedLlm::arrivals`]).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use skillshift_worker::agents::scripted_llm::{ScriptedLlm, Scripted};
//! let server = ScriptedLlm::start(vec![
//!     Scripted::Status(429),
//!     Scripted::text("In summary, the next action I will perform is ```click [3]```"),
//! ]).await?;
//! std::env::set_var("OPENAI_BASE_URL", server.base_url()); // http://127.0.0.1:PORT/v1
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use skillshift_taskcenter::TaskCenter;

/// The `model` every scripted reply names, so no record can mistake it for a real model.
pub const SCRIPTED_MODEL: &str = "scripted-test-llm";
/// The header set on every answer.
pub const STAND_IN_HEADER: &str = "x-skillshift-stand-in";

/// Computes a reply's text from the request it answers.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> String + Send + Sync>;

/// One entry of the script.
#[derive(Clone)]
pub enum Scripted {
    /// A 200 chat completion whose assistant message is this text.
    Text(String),
    /// A 200 chat completion whose text a test computes from the request, e.g. to name an element id it can
    /// only read in the observation (see [`element_id`]). Still a script: no language model is involved.
    Compute(Responder),
    /// An OpenAI-style error body with this status (429 also sends `Retry-After: 0`).
    Status(u16),
    /// Waits this long, then answers 503: a server that does not answer within the client's deadline.
    Stall(Duration),
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scripted::Text(t) => f.debug_tuple("Text").field(t).finish(),
            Scripted::Compute(_) => f.write_str("Compute(..)"),
            Scripted::Status(s) => f.debug_tuple("Status").field(s).finish(),
            Scripted::Stall(d) => f.debug_tuple("Stall").field(d).finish(),
        }
    }
}

impl Scripted {
    pub fn text(s: impl Into<String>) -> Scripted {
        Scripted::Text(s.into())
    }

    /// A reply in WebArena's form whose action is `action`.
    pub fn action(action: &str) -> Scripted {
        Scripted::Text(webarena_reply(action))
    }

    /// A reply in WebArena's form whose action `f` computes from the request.
    pub fn compute_action(f: impl Fn(&RecordedRequest) -> String + Send + Sync + 'static) -> Scripted {
        Scripted::Compute(Arc::new(move |req: &RecordedRequest| webarena_reply(&f(req))))
    }
}

fn webarena_reply(action: &str) -> String {
    format!("Let's think step-by-step. (scripted) In summary, the next action I will perform is ```{action}```")
}

/// The id of the first `[id] role 'name...'` line of an observation whose role is `role` and whose name starts
/// with `name_prefix`.
pub fn element_id(observation: &str, role: &str, name_prefix: &str) -> Option<u64> {
    observation.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix('[')?;
        let (id, rest) = rest.split_once("] ")?;
        let rest = rest.strip_prefix(role)?.strip_prefix(" '")?;
        rest.starts_with(name_prefix).then(|| id.parse().ok())?
    })
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub authorization: Option<String>,
    pub body: Value,
}

impl RecordedRequest {
    /// The content of the last message, the step's observation for the reference agent.
    pub fn last_message(&self) -> String {
        self.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }
}

struct Shared {
    // A std Mutex: each handler holds it only to pop an entry or push a record, never across an await.
    script: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<RecordedRequest>>,
    served: AtomicU64,
    prompt_tokens: u64,
    completion_tokens: u64,
    /// Served once the script is spent, after `delay`; `None` answers 400.
    fallback: Option<Scripted>,
    delay: Duration,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    arrivals: Mutex<Vec<std::time::Instant>>,
}

/// Counts a request in flight for as long as it lives.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> InFlight<'a> {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        if let Ok(mut a) = shared.arrivals.lock() {
            a.push(std::time::Instant::now());
        }
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running scripted server; it stops when dropped.
pub struct ScriptedLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The owner of the server task; cancelled on drop.
    tasks: TaskCenter,
}

/// Prompt tokens reported per reply by [`ScriptedLlm::start`].
pub const PROMPT_TOKENS: u64 = 1_000;
/// Completion tokens reported per reply by [`ScriptedLlm::start`].
pub const COMPLETION_TOKENS: u64 = 50;

impl ScriptedLlm {
    /// Serves `script` with [`PROMPT_TOKENS`] and [`COMPLETION_TOKENS`] per reply.
    pub async fn start(script: Vec<Scripted>) -> std::io::Result<ScriptedLlm> {
        ScriptedLlm::start_with_usage(script, PROMPT_TOKENS, COMPLETION_TOKENS).await
    }

    pub async fn start_with_usage(
        script: Vec<Scripted>,
        prompt_tokens: u64,
        completion_tokens: u64,
    ) -> std::io::Result<ScriptedLlm> {
        ScriptedLlm::serve(script, prompt_tokens, completion_tokens, None, Duration::ZERO).await
    }

    /// Serves `script`, then `fallback` for every later request; every answer comes after `delay`.
    pub async fn start_endless(
        script: Vec<Scripted>,
        fallback: Scripted,
        delay: Duration,
    ) -> std::io::Result<ScriptedLlm> {
        ScriptedLlm::serve(script, PROMPT_TOKENS, COMPLETION_TOKENS, Some(fallback), delay).await
    }

    async fn serve(
        script: Vec<Scripted>,
        prompt_tokens: u64,
        completion_tokens: u64,
        fallback: Option<Scripted>,
        delay: Duration,
    ) -> std::io::Result<ScriptedLlm> {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
            served: AtomicU64::new(0),
            prompt_tokens,
            completion_tokens,
            fallback,
            delay,
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
            arrivals: Mutex::new(Vec::new()),
        });
        let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let tasks = TaskCenter::new(format!("scripted llm {addr}"));
        tasks.spawn("scripted-llm-server", move |token| async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(token.cancelled_owned());
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "scripted test llm stopped");
            }
        });
        Ok(ScriptedLlm { addr, shared, tasks })
    }

    /// The value for `OPENAI_BASE_URL`: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The most requests the server held at once.
    pub fn max_in_flight(&self) -> u64 {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// When each request arrived, oldest first.
    pub fn arrivals(&self) -> Vec<std::time::Instant> {
        self.shared.arrivals.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// Script entries not yet served.
    pub fn remaining(&self) -> usize {
        self.shared.script.lock().map(|s| s.len()).unwrap_or(0)
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("request body is not JSON: {e}")),
    };
    let _in_flight = InFlight::enter(&shared);
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let request = RecordedRequest { authorization, body };
    if let Ok(mut r) = shared.requests.lock() {
        r.push(request.clone());
    }
    let next = shared.script.lock().ok().and_then(|mut s| s.pop_front()).or_else(|| shared.fallback.clone());
    let n = shared.served.fetch_add(1, Ordering::Relaxed);
    if !shared.delay.is_zero() {
        tokio::time::sleep(shared.delay).await;
    }
    match next {
        None => error(StatusCode::BAD_REQUEST, &format!("script exhausted after {n} replies")),
        Some(Scripted::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = error(status, &format!("scripted status {code}"));
            if code == 429 {
                resp.headers_mut().insert("retry-after", axum::http::HeaderValue::from_static("0"));
            }
            resp
        }
        Some(Scripted::Stall(d)) => {
            tokio::time::sleep(d).await;
            error(StatusCode::SERVICE_UNAVAILABLE, "stalled")
        }
        Some(Scripted::Compute(f)) => completion(&shared, n, f(&request)),
        Some(Scripted::Text(text)) => completion(&shared, n, text),
    }
}

fn completion(shared: &Shared, n: u64, text: String) -> Response {
    let reply = json!({
        "id": format!("scripted-{n}"),
        "object": "chat.completion",
        "created": 0,
        "model": SCRIPTED_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": shared.prompt_tokens,
            "completion_tokens": shared.completion_tokens,
            "total_tokens": shared.prompt_tokens + shared.completion_tokens,
        },
    });
    labelled((StatusCode::OK, Json(reply)).into_response())
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": format!("{SCRIPTED_MODEL}: {message}"), "type": "scripted_test_llm"}});
    labelled((status, Json(body)).into_response())
}

fn labelled(mut resp: Response) -> Response {
    resp.headers_mut().insert(STAND_IN_HEADER, axum::http::HeaderValue::from_static(SCRIPTED_MODEL));
    resp
}
