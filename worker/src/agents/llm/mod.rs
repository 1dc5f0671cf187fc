//! A client for any OpenAI-compatible chat-completions API (`POST {base}/chat/completions`).
//!
//! [`LlmConfig`] comes from the standard variables (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`) plus a
//! few `SKILLSHIFT_LLM_*` knobs. [`OpenAiClient`] sends one completion with a deadline on every HTTP call and
//! retries 429 and 5xx answers (and transport failures) with exponential backoff and jitter, bounded both in
//! count and in total time. Each completed call yields an [`LlmCallInfo`]: the facts a GenAI span needs (model,
//! provider, temperature, max_tokens, tokens, finish reason, latency) and its cost from [`price_per_mtok`].
//! Each call is also a `chat {model}` span under the GenAI conventions, through [`skillshift_telemetry::genai`].
//!
//! [`ChatModel`] is the seam the reference agent talks to, so a test can swap the network for a fake; the
//! tests here use the real client against [`super::scripted_llm`], a labelled stand-in server.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use skillshift_telemetry::genai;
use tracing::Instrument;

mod config;
pub use config::{
    call_price, price_per_mtok, LlmConfig, Price, RetryPolicy, DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL,
};

use crate::llm_permit::{PermitGate, MAX_CALL_TOKENS};

/// A reply body larger than this is refused rather than buffered.
const MAX_BODY_BYTES: usize = 8 << 20;

/// Why a chat completion could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("configuration: {0}")]
    Config(String),
    /// A non-retryable HTTP status (400, 401, 404, ...) or the last of the retried ones.
    #[error("{url} answered http {status} after {attempts} attempt(s): {body}")]
    Status { url: String, status: u16, attempts: u32, body: String },
    #[error("{url} could not be reached after {attempts} attempt(s): {reason}")]
    /// `timed_out`: the last try ran out of time (its `error.type` is `timeout`).
    Transport { url: String, attempts: u32, reason: String, timed_out: bool },
    #[error("{url} sent a reply that is not a chat completion: {reason}")]
    BadResponse { url: String, reason: String },
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: "user".into(), content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: "assistant".into(), content: content.into() }
    }
}

/// The facts of one completed LLM call, for records and GenAI spans.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmCallInfo {
    /// `gen_ai.provider.name`.
    pub provider: String,
    pub server_address: String,
    pub server_port: Option<u16>,
    pub request_model: String,
    /// The model the server says answered (often a dated snapshot).
    pub response_model: Option<String>,
    pub response_id: Option<String>,
    pub temperature: f64,
    pub max_tokens: Option<u32>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// False when the server sent no `usage`; the token counts are then 0 and the cost unknown.
    pub usage_reported: bool,
    pub finish_reason: Option<String>,
    pub started_at: SystemTime,
    /// From the first try to the answer, backoff waits included.
    pub latency: Duration,
    /// HTTP calls made, 1 when the first one answered.
    pub http_attempts: u32,
    pub cost_usd: Option<f64>,
}

/// A chat completion: the assistant's text and the call's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub info: LlmCallInfo,
}

/// The seam between an agent and a chat model.
pub trait ChatModel: Send + Sync {
    fn complete<'a>(&'a self, messages: &'a [ChatMessage]) -> BoxFuture<'a, Result<Completion, LlmError>>;
    /// The requested model name.
    fn model(&self) -> &str;
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ApiUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct ApiUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// The tokens a call may use: its prompt at about four characters a token, plus its output ceiling, at
/// most [`MAX_CALL_TOKENS`].
pub fn estimate_tokens(messages: &[ChatMessage], max_tokens: Option<u32>) -> u64 {
    let chars = messages.iter().fold(0u64, |n, m| n.saturating_add((m.content.len() + m.role.len()) as u64));
    chars.div_ceil(4).saturating_add(u64::from(max_tokens.unwrap_or(1024))).min(MAX_CALL_TOKENS)
}

/// The real client over HTTP.
pub struct OpenAiClient {
    config: LlmConfig,
    url: String,
    http: reqwest::Client,
    /// The cluster's LLM budget, a permit per HTTP call; `None` calls at once.
    permits: Option<Arc<PermitGate>>,
}

/// One HTTP try's result, classified for the retry loop.
enum Try {
    Done(ChatResponse),
    /// `timed_out`: the request or its body ran out of time.
    Retry {
        reason: String,
        status: Option<u16>,
        retry_after: Option<Duration>,
        timed_out: bool,
    },
    Fail(LlmError),
}

impl OpenAiClient {
    pub fn new(config: LlmConfig) -> Result<OpenAiClient, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("skillshift/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the http client: {e}")))?;
        let url = format!("{}/chat/completions", config.base_url);
        Ok(OpenAiClient { config, url, http, permits: None })
    }

    /// The client asking `permits` (when given) for a permit before each HTTP call.
    pub fn with_permits(mut self, permits: Option<Arc<PermitGate>>) -> OpenAiClient {
        self.permits = permits;
        self
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// This endpoint asked for another model (and temperature), as an attempt's contract names them; the
    /// HTTP client (its connection pool) is shared.
    pub fn with_model(&self, model: &str, temperature: f64) -> OpenAiClient {
        let config = LlmConfig { model: model.to_string(), temperature, ..self.config.clone() };
        OpenAiClient { config, url: self.url.clone(), http: self.http.clone(), permits: self.permits.clone() }
    }

    async fn try_once(&self, body: &ChatRequest<'_>) -> Try {
        let mut req = self.http.post(&self.url).json(body);
        if let Some(key) = &self.config.api_key {
            req = req.bearer_auth(key);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                return Try::Retry { reason: describe(&e), status: None, retry_after: None, timed_out: e.is_timeout() }
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .and_then(|s| Duration::try_from_secs_f64(s).ok());
        let bytes = match read_body(resp).await {
            Ok(b) => b,
            Err(e) => {
                let timed_out = matches!(&e, BodyError::Transfer(x) if x.is_timeout());
                return Try::Retry { reason: e.to_string(), status: None, retry_after: None, timed_out };
            }
        };
        if status.is_success() {
            return match serde_json::from_slice::<ChatResponse>(&bytes) {
                Ok(r) => Try::Done(r),
                Err(e) => Try::Fail(LlmError::BadResponse { url: self.url.clone(), reason: e.to_string() }),
            };
        }
        let text = snippet(&bytes);
        if status.as_u16() == 429 || status.is_server_error() {
            Try::Retry { reason: text, status: Some(status.as_u16()), retry_after, timed_out: false }
        } else {
            Try::Fail(LlmError::Status { url: self.url.clone(), status: status.as_u16(), attempts: 0, body: text })
        }
    }

    async fn complete_inner(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let cfg = &self.config;
        let body =
            ChatRequest { model: &cfg.model, messages, temperature: cfg.temperature, max_tokens: cfg.max_tokens };
        let started_at = SystemTime::now();
        let t0 = Instant::now();
        let mut attempts = 0u32;
        let resp = loop {
            attempts += 1;
            // The cluster's LLM budget: a permit per HTTP call (crate::llm_permit).
            let tokens = estimate_tokens(messages, cfg.max_tokens);
            let permit = crate::llm_permit::acquire(self.permits.as_ref(), &cfg.base_url, &cfg.model, tokens).await;
            let tried = self.try_once(&body).await;
            let (result, used) = permit_result(&tried);
            permit.release(result, used);
            let (reason, status, retry_after, timed_out) = match tried {
                Try::Done(r) => break r,
                Try::Fail(LlmError::Status { url, status, body, .. }) => {
                    return Err(LlmError::Status { url, status, attempts, body })
                }
                Try::Fail(e) => return Err(e),
                Try::Retry { reason, status, retry_after, timed_out } => (reason, status, retry_after, timed_out),
            };
            let give_up = |reason: String| match status {
                Some(status) => LlmError::Status { url: self.url.clone(), status, attempts, body: reason },
                None => LlmError::Transport { url: self.url.clone(), attempts, reason, timed_out },
            };
            if attempts > cfg.retry.max_retries {
                return Err(give_up(reason));
            }
            let wait = cfg.retry.delay(attempts - 1, retry_after);
            if t0.elapsed() + wait > cfg.retry.total_budget {
                return Err(give_up(format!("{reason} (retry budget of {:?} spent)", cfg.retry.total_budget)));
            }
            tracing::warn!(url = %self.url, attempt = attempts, ?status, wait_ms = wait.as_millis() as u64, %reason,
                "llm call failed, retrying");
            tokio::time::sleep(wait).await;
        };
        let latency = t0.elapsed();
        let choice = resp.choices.into_iter().next().ok_or_else(|| LlmError::BadResponse {
            url: self.url.clone(),
            reason: "the reply has no choices".into(),
        })?;
        let (tokens_in, tokens_out) = resp.usage.as_ref().map_or((0, 0), |u| (u.prompt_tokens, u.completion_tokens));
        let price = call_price(cfg.price, resp.model.as_deref(), &cfg.model);
        let (server_address, server_port) = cfg.server();
        let info = LlmCallInfo {
            provider: cfg.provider().to_string(),
            server_address,
            server_port,
            request_model: cfg.model.clone(),
            response_model: resp.model,
            response_id: resp.id,
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens,
            tokens_in,
            tokens_out,
            usage_reported: resp.usage.is_some(),
            finish_reason: choice.finish_reason,
            started_at,
            latency,
            http_attempts: attempts,
            cost_usd: price.filter(|_| resp.usage.is_some()).map(|p| p.cost(tokens_in, tokens_out)),
        };
        Ok(Completion { content: choice.message.content.unwrap_or_default(), info })
    }
}

impl ChatModel for OpenAiClient {
    fn complete<'a>(&'a self, messages: &'a [ChatMessage]) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let cfg = &self.config;
            let (address, _) = cfg.server();
            let span = genai::chat(&genai::ChatRequest {
                provider: cfg.provider(),
                model: &cfg.model,
                temperature: Some(cfg.temperature),
                max_tokens: cfg.max_tokens,
                server_address: Some(&address),
            });
            let started = std::time::Instant::now();
            let result = self.complete_inner(messages).instrument(span.clone()).await;
            // Worker metrics: calls, tokens and latency per model (skillshift_worker_llm_*).
            let metrics = skillshift_telemetry::metrics::WorkerMetrics::global();
            match &result {
                Ok(c) => metrics.llm_call(&cfg.model, c.info.latency, true, c.info.tokens_in, c.info.tokens_out),
                Err(_) => metrics.llm_call(&cfg.model, started.elapsed(), false, 0, 0),
            }
            match &result {
                Ok(c) => {
                    let reasons: Vec<String> = c.info.finish_reason.iter().cloned().collect();
                    let reported = c.info.usage_reported;
                    genai::record_response(
                        &span,
                        &genai::ChatResponse {
                            input_tokens: reported.then_some(c.info.tokens_in),
                            output_tokens: reported.then_some(c.info.tokens_out),
                            finish_reasons: &reasons,
                            response_model: c.info.response_model.as_deref(),
                            response_id: c.info.response_id.as_deref(),
                        },
                    );
                    if genai::content_capture_enabled() {
                        genai::record_content(&span, &input_messages_json(messages), &output_message_json(c));
                    }
                }
                Err(e) => genai::record_failure(&span, &error_type(e), &e.to_string()),
            }
            result
        })
    }

    fn model(&self) -> &str {
        &self.config.model
    }
}

/// How a try ended, for the LLM budget: a 429, another answer (with the tokens it reported), or none.
fn permit_result(t: &Try) -> (crate::llm_permit::CallResult, u64) {
    use crate::llm_permit::CallResult;
    match t {
        // The endpoint's counts are network data: their sum saturates (the gate caps what it reports).
        Try::Done(r) => {
            (CallResult::Answered, r.usage.as_ref().map_or(0, |u| u.prompt_tokens.saturating_add(u.completion_tokens)))
        }
        Try::Retry { status: Some(429), .. } => (CallResult::RateLimited, 0),
        Try::Retry { status: Some(_), .. } | Try::Fail(_) => (CallResult::Answered, 0),
        Try::Retry { status: None, .. } => (CallResult::NoAnswer, 0),
    }
}

/// `gen_ai.input.messages`: the request's messages as text parts.
fn input_messages_json(messages: &[ChatMessage]) -> String {
    let list: Vec<_> = messages
        .iter()
        .map(|m| serde_json::json!({"role": m.role, "parts": [{"type": "text", "content": m.content}]}))
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// `gen_ai.output.messages`: the assistant's reply.
fn output_message_json(c: &Completion) -> String {
    serde_json::json!([{
        "role": "assistant",
        "parts": [{"type": "text", "content": c.content}],
        "finish_reason": c.info.finish_reason,
    }])
    .to_string()
}

/// The `error.type` of a failed call: `timeout`, `http_<status>`, `transport`, `bad_reply` or `config`.
fn error_type(e: &LlmError) -> String {
    match e {
        LlmError::Config(_) => "config".into(),
        LlmError::Status { status, .. } => format!("http_{status}"),
        LlmError::Transport { timed_out: true, .. } => "timeout".into(),
        LlmError::Transport { .. } => "transport".into(),
        LlmError::BadResponse { .. } => "bad_reply".into(),
    }
}

/// Why a reply's body was not read ([`read_body`]).
#[derive(Debug, thiserror::Error)]
enum BodyError {
    /// The transfer broke off; shown as [`describe`] shows a request's error.
    #[error("{}", describe(.0))]
    Transfer(reqwest::Error),
    #[error("reply body larger than {} bytes", MAX_BODY_BYTES)]
    TooLarge,
}

/// Reads a body up to [`MAX_BODY_BYTES`].
async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Transfer)? {
        if out.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(BodyError::TooLarge);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let mut msg = format!("{kind}: {e}");
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg
}

/// The first 300 characters of an error body, on one line.
fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(300) {
        Some((i, _)) => format!("{}...", &one_line[..i]),
        None => one_line,
    }
}
