//! LLM calls as spans under the OpenTelemetry GenAI semantic conventions.
//!
//! The agent's client opens [`chat`] before sending a request and fills in
//! what the response said with [`record_response`] (or [`record_failure`]).
//! The span is named `chat {model}` and carries `gen_ai.operation.name`,
//! `gen_ai.provider.name`, `gen_ai.request.model`,
//! `gen_ai.request.temperature`, `gen_ai.request.max_tokens`,
//! `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` and
//! `gen_ai.response.finish_reasons`. Prompt and response content
//! (`gen_ai.input.messages`, `gen_ai.output.messages`) are recorded only when
//! `--trace-llm-content` / `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
//! asks for them.

use opentelemetry::{Array, StringValue, Value};
use tracing::field::Empty;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// What is known before the call.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    /// `gen_ai.provider.name`: `openai` for an OpenAI-compatible API.
    pub provider: &'a str,
    pub model: &'a str,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// `server.address` of the API, when known.
    pub server_address: Option<&'a str>,
}

/// What the response said.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatResponse<'a> {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub finish_reasons: &'a [String],
    pub response_model: Option<&'a str>,
    pub response_id: Option<&'a str>,
}

/// Opens the `chat {model}` span (a CLIENT span, child of the current span).
pub fn chat(req: &ChatRequest<'_>) -> Span {
    let span = tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {}", req.model),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %req.provider,
        gen_ai.request.model = %req.model,
        gen_ai.request.temperature = Empty,
        gen_ai.request.max_tokens = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        server.address = Empty,
        error.type = Empty,
    );
    if let Some(t) = req.temperature {
        span.record("gen_ai.request.temperature", t);
    }
    if let Some(m) = req.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(m));
    }
    if let Some(a) = req.server_address {
        span.record("server.address", a);
    }
    span
}

/// Records the response's usage, finish reasons and model.
pub fn record_response(span: &Span, resp: &ChatResponse<'_>) {
    if let Some(n) = resp.input_tokens {
        span.record("gen_ai.usage.input_tokens", int(n));
    }
    if let Some(n) = resp.output_tokens {
        span.record("gen_ai.usage.output_tokens", int(n));
    }
    if let Some(m) = resp.response_model {
        span.record("gen_ai.response.model", m);
    }
    if let Some(id) = resp.response_id {
        span.record("gen_ai.response.id", id);
    }
    // A string array: tracing fields cannot hold one, the OpenTelemetry span can.
    let reasons: Vec<StringValue> = resp.finish_reasons.iter().map(|r| StringValue::from(r.clone())).collect();
    span.set_attribute("gen_ai.response.finish_reasons", Value::Array(Array::String(reasons)));
}

/// OpenTelemetry has no unsigned integers (tracing-opentelemetry would send a u64 as a string).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Marks the call failed; `error_type` is a short class (`timeout`, `http_429`, `bad_reply`).
pub fn record_failure(span: &Span, error_type: &str, message: &str) {
    span.record("error.type", error_type);
    span.set_status(opentelemetry::trace::Status::error(message.to_string()));
}

/// Whether prompt and response content may be put on spans.
pub fn content_capture_enabled() -> bool {
    crate::init::capture_llm_content()
}

/// Records the request messages and the response messages (JSON, as the
/// conventions' `gen_ai.input.messages` / `gen_ai.output.messages`), only
/// when content capture is on. Returns whether they were recorded.
pub fn record_content(span: &Span, input_messages_json: &str, output_messages_json: &str) -> bool {
    if !content_capture_enabled() {
        return false;
    }
    span.record("gen_ai.input.messages", input_messages_json);
    span.record("gen_ai.output.messages", output_messages_json);
    true
}
