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
use rand::Rng;
use serde::{Deserialize, Serialize};
use skillshift_telemetry::genai;
use tracing::Instrument;

use crate::llm_permit::{PermitGate, MAX_CALL_TOKENS};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL: &str = "gpt-4o";
/// WebArena's generation budget for one step (its `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 384;
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
    Transport { url: String, attempts: u32, reason: String },
    #[error("{url} sent a reply that is not a chat completion: {reason}")]
    BadResponse { url: String, reason: String },
}

/// How transient failures (429, 5xx, timeouts, refused connections) are retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first try; the total is `max_retries + 1` HTTP calls at most.
    pub max_retries: u32,
    /// The first backoff; it doubles per retry.
    pub base_delay: Duration,
    /// No single wait is longer than this, `Retry-After` included.
    pub max_delay: Duration,
    /// No retry starts once this much time has passed since the first try.
    pub total_budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 6,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            total_budget: Duration::from_secs(180),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based): `min(max_delay, base * 2^retry)` scaled by a random
    /// factor in [0.5, 1) ("equal jitter"), but never less than the server's `Retry-After`, itself capped.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self.base_delay.saturating_mul(1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX));
        let capped = exp.min(self.max_delay);
        let jittered = capped.mul_f64(rand::rng().random_range(0.5..1.0));
        match retry_after {
            Some(ra) => jittered.max(ra.min(self.max_delay)),
            None => jittered,
        }
    }
}

/// USD per million tokens, input and output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Price {
    pub fn cost(&self, tokens_in: u64, tokens_out: u64) -> f64 {
        (tokens_in as f64 * self.input_per_mtok + tokens_out as f64 * self.output_per_mtok) / 1e6
    }
}

/// List prices known when this table was written (USD per million tokens, input / output). Prices move: set
/// `SKILLSHIFT_LLM_PRICE=<in>,<out>` for a model missing here or priced differently; an unknown model has no cost.
const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4o", 2.50, 10.0),
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4-turbo", 10.0, 30.0),
    ("gpt-4", 30.0, 60.0),
    ("gpt-3.5-turbo", 0.50, 1.50),
    ("o1", 15.0, 60.0),
    ("o3", 2.0, 8.0),
    ("o3-mini", 1.10, 4.40),
    ("o4-mini", 1.10, 4.40),
];

/// The listed price of `model`: an exact entry, or the longest entry that `model` extends with `-...` (dated
/// snapshots such as `gpt-4o-2024-08-06`). A provider prefix (`openai/gpt-4o`) is ignored.
pub fn price_per_mtok(model: &str) -> Option<Price> {
    let m = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    PRICES
        .iter()
        .filter(|(name, _, _)| m == *name || m.strip_prefix(name).is_some_and(|rest| rest.starts_with('-')))
        .max_by_key(|(name, _, _)| name.len())
        .map(|&(_, input_per_mtok, output_per_mtok)| Price { input_per_mtok, output_per_mtok })
}

/// The price of one call: the configured override, else the listed price of the model the server says
/// answered, else (when the reply names no model) of the requested one. A reply from a model missing from the
/// table, such as the scripted test server's, has no price, whatever was requested.
pub fn call_price(configured: Option<Price>, response_model: Option<&str>, request_model: &str) -> Option<Price> {
    configured.or_else(|| price_per_mtok(response_model.unwrap_or(request_model)))
}

/// Everything needed to call one model.
#[derive(Clone, PartialEq)]
pub struct LlmConfig {
    /// Without the trailing `/`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub temperature: f64,
    /// `None` leaves the limit to the server.
    pub max_tokens: Option<u32>,
    /// The deadline of one HTTP call, connection included.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    pub retry: RetryPolicy,
    /// Overrides the price table for this model.
    pub price: Option<Price>,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .field("price", &self.price)
            .finish()
    }
}

impl LlmConfig {
    /// Defaults for `model` at `base_url`: temperature 0, WebArena's 384 output tokens, 120 s per call.
    pub fn new(base_url: &str, model: &str) -> LlmConfig {
        LlmConfig {
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: None,
            model: model.to_string(),
            temperature: 0.0,
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            price: None,
        }
    }

    /// Reads the process environment; see [`LlmConfig::from_lookup`].
    pub fn from_env(model: Option<String>) -> Result<LlmConfig, LlmError> {
        LlmConfig::from_lookup(model, |name| std::env::var(name).ok())
    }

    /// Builds the configuration from variables looked up by name: `OPENAI_BASE_URL` (default the OpenAI API),
    /// `OPENAI_API_KEY` (required for the OpenAI API itself, optional elsewhere), the model from `model`, else
    /// `OPENAI_MODEL`, else [`DEFAULT_MODEL`]; `SKILLSHIFT_LLM_MAX_TOKENS` (0 leaves it to the server),
    /// `SKILLSHIFT_LLM_TIMEOUT_S` (per HTTP call) and `SKILLSHIFT_LLM_PRICE` (`<in>,<out>` USD per million tokens).
    pub fn from_lookup(model: Option<String>, lookup: impl Fn(&str) -> Option<String>) -> Result<LlmConfig, LlmError> {
        let var = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let base_url = var("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(LlmError::Config(format!(
                "OPENAI_BASE_URL must start with http:// or https://, found '{base_url}'"
            )));
        }
        let model = model.filter(|m| !m.trim().is_empty()).or_else(|| var("OPENAI_MODEL"));
        let mut cfg = LlmConfig::new(&base_url, model.as_deref().unwrap_or(DEFAULT_MODEL));
        cfg.api_key = var("OPENAI_API_KEY");
        if cfg.api_key.is_none() && cfg.base_url == DEFAULT_BASE_URL {
            return Err(LlmError::Config(format!(
                "OPENAI_API_KEY is not set (needed for {DEFAULT_BASE_URL}; set OPENAI_BASE_URL for another server)"
            )));
        }
        if let Some(v) = var("SKILLSHIFT_LLM_MAX_TOKENS") {
            let n: u32 = v.parse().map_err(|_| {
                LlmError::Config(format!("SKILLSHIFT_LLM_MAX_TOKENS must be a whole number, found '{v}'"))
            })?;
            cfg.max_tokens = (n > 0).then_some(n);
        }
        if let Some(v) = var("SKILLSHIFT_LLM_TIMEOUT_S") {
            cfg.request_timeout = v
                .parse::<f64>()
                .ok()
                .filter(|s| *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(|| {
                    LlmError::Config(format!(
                        "SKILLSHIFT_LLM_TIMEOUT_S must be a positive number of seconds, found '{v}'"
                    ))
                })?;
        }
        if let Some(v) = var("SKILLSHIFT_LLM_PRICE") {
            let parsed = v
                .split_once(',')
                .and_then(|(i, o)| Some((i.trim().parse::<f64>().ok()?, o.trim().parse::<f64>().ok()?)))
                .filter(|(i, o)| i.is_finite() && o.is_finite() && *i >= 0.0 && *o >= 0.0);
            let (i, o) = parsed.ok_or_else(|| {
                LlmError::Config(format!(
                    "SKILLSHIFT_LLM_PRICE must be '<input>,<output>' USD per million tokens, found '{v}'"
                ))
            })?;
            cfg.price = Some(Price { input_per_mtok: i, output_per_mtok: o });
        }
        Ok(cfg)
    }

    /// The `gen_ai.provider.name`: `openai` for any server reached through the OpenAI API, as the GenAI
    /// conventions ask of a client that cannot know the system behind it; Azure OpenAI by its host.
    pub fn provider(&self) -> &'static str {
        if self.server().0.ends_with(".openai.azure.com") {
            "azure.ai.openai"
        } else {
            "openai"
        }
    }

    /// `server.address` and `server.port` of the base URL.
    pub fn server(&self) -> (String, Option<u16>) {
        let rest = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, r)| r);
        let authority = rest.split('/').next().unwrap_or(rest);
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        match authority.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?))) {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (authority.to_string(), None),
        }
    }
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
    Retry { reason: String, status: Option<u16>, retry_after: Option<Duration> },
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
            Err(e) => return Try::Retry { reason: describe(&e), status: None, retry_after: None },
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
            Err(reason) => return Try::Retry { reason, status: None, retry_after: None },
        };
        if status.is_success() {
            return match serde_json::from_slice::<ChatResponse>(&bytes) {
                Ok(r) => Try::Done(r),
                Err(e) => Try::Fail(LlmError::BadResponse { url: self.url.clone(), reason: e.to_string() }),
            };
        }
        let text = snippet(&bytes);
        if status.as_u16() == 429 || status.is_server_error() {
            Try::Retry { reason: text, status: Some(status.as_u16()), retry_after }
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
            let (reason, status, retry_after) = match tried {
                Try::Done(r) => break r,
                Try::Fail(LlmError::Status { url, status, body, .. }) => {
                    return Err(LlmError::Status { url, status, attempts, body })
                }
                Try::Fail(e) => return Err(e),
                Try::Retry { reason, status, retry_after } => (reason, status, retry_after),
            };
            let give_up = |reason: String| match status {
                Some(status) => LlmError::Status { url: self.url.clone(), status, attempts, body: reason },
                None => LlmError::Transport { url: self.url.clone(), attempts, reason },
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
        LlmError::Transport { reason, .. } if reason.starts_with("timed out") => "timeout".into(),
        LlmError::Transport { .. } => "transport".into(),
        LlmError::BadResponse { .. } => "bad_reply".into(),
    }
}

/// Reads a body up to [`MAX_BODY_BYTES`].
async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e))? {
        if out.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(format!("reply body larger than {MAX_BODY_BYTES} bytes"));
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn config_from_variables() {
        let cfg = LlmConfig::from_lookup(None, lookup(&[("OPENAI_API_KEY", "sk-x")])).unwrap();
        assert_eq!(cfg.base_url, DEFAULT_BASE_URL);
        assert_eq!(cfg.model, DEFAULT_MODEL);
        assert_eq!(cfg.temperature, 0.0);
        assert_eq!(cfg.provider(), "openai");
        assert_eq!(cfg.server(), ("api.openai.com".to_string(), None));

        let cfg = LlmConfig::from_lookup(
            Some("m1".into()),
            lookup(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/"),
                ("OPENAI_MODEL", "ignored"),
                ("SKILLSHIFT_LLM_MAX_TOKENS", "0"),
                ("SKILLSHIFT_LLM_TIMEOUT_S", "2.5"),
                ("SKILLSHIFT_LLM_PRICE", "1, 2"),
            ]),
        )
        .unwrap();
        assert_eq!(cfg.base_url, "http://127.0.0.1:8000/v1");
        assert_eq!(cfg.model, "m1");
        assert_eq!(cfg.api_key, None);
        assert_eq!(cfg.max_tokens, None);
        assert_eq!(cfg.request_timeout, Duration::from_millis(2500));
        assert_eq!(cfg.price, Some(Price { input_per_mtok: 1.0, output_per_mtok: 2.0 }));
        assert_eq!(cfg.provider(), "openai");
        assert_eq!(cfg.server(), ("127.0.0.1".to_string(), Some(8000)));
        let cfg = LlmConfig::from_lookup(None, lookup(&[("OPENAI_BASE_URL", "x"), ("OPENAI_MODEL", "m2")]));
        assert!(cfg.is_err());
    }

    #[test]
    fn config_errors_name_the_variable() {
        let err = |vars: &[(&str, &str)]| LlmConfig::from_lookup(None, lookup(vars)).unwrap_err().to_string();
        assert!(err(&[]).contains("OPENAI_API_KEY"));
        assert!(err(&[("OPENAI_BASE_URL", "ftp://x")]).contains("OPENAI_BASE_URL"));
        let base = ("OPENAI_BASE_URL", "http://h/v1");
        assert!(err(&[base, ("SKILLSHIFT_LLM_MAX_TOKENS", "-1")]).contains("SKILLSHIFT_LLM_MAX_TOKENS"));
        assert!(err(&[base, ("SKILLSHIFT_LLM_TIMEOUT_S", "0")]).contains("SKILLSHIFT_LLM_TIMEOUT_S"));
        assert!(err(&[base, ("SKILLSHIFT_LLM_TIMEOUT_S", "1e300")]).contains("SKILLSHIFT_LLM_TIMEOUT_S"));
        assert!(err(&[base, ("SKILLSHIFT_LLM_PRICE", "3")]).contains("SKILLSHIFT_LLM_PRICE"));
    }

    #[test]
    fn prices_match_snapshots_by_longest_prefix() {
        let p = |m| price_per_mtok(m).map(|p| (p.input_per_mtok, p.output_per_mtok));
        assert_eq!(p("gpt-4o"), Some((2.5, 10.0)));
        assert_eq!(p("gpt-4o-2024-08-06"), Some((2.5, 10.0)));
        assert_eq!(p("gpt-4o-mini-2024-07-18"), Some((0.15, 0.60)));
        assert_eq!(p("openai/gpt-4.1-mini"), Some((0.40, 1.60)));
        assert_eq!(p("gpt-4-0613"), Some((30.0, 60.0)));
        assert_eq!(p("gpt-4ox"), None);
        assert_eq!(p("scripted-test-llm"), None);
        let price = Price { input_per_mtok: 2.5, output_per_mtok: 10.0 };
        assert!((price.cost(1_000_000, 100_000) - 3.5).abs() < 1e-12);
        let own = Price { input_per_mtok: 1.0, output_per_mtok: 1.0 };
        assert_eq!(call_price(None, Some("gpt-4o-2024-08-06"), "gpt-4o"), Some(price));
        assert_eq!(call_price(None, None, "gpt-4o"), Some(price));
        assert_eq!(call_price(None, Some("scripted-test-llm"), "gpt-4o"), None);
        assert_eq!(call_price(Some(own), Some("scripted-test-llm"), "x"), Some(own));
    }

    #[test]
    fn backoff_doubles_is_capped_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            total_budget: Duration::from_secs(10),
        };
        for _ in 0..50 {
            let d0 = policy.delay(0, None);
            assert!(d0 >= Duration::from_millis(50) && d0 < Duration::from_millis(100), "{d0:?}");
            let d2 = policy.delay(2, None);
            assert!(d2 >= Duration::from_millis(200) && d2 < Duration::from_millis(400), "{d2:?}");
            let d9 = policy.delay(9, None);
            assert!(d9 >= Duration::from_millis(500) && d9 < Duration::from_secs(1), "{d9:?}");
            assert_eq!(policy.delay(0, Some(Duration::from_secs(60))), Duration::from_secs(1));
            assert!(policy.delay(40, None) <= Duration::from_secs(1));
        }
    }
}
