//! The `LlmBudget` gRPC service: the wire edge of [`crate::llm_budget`].
//! Requests are checked (names bounded, a permit named) and handed to the
//! [`Budget`]; each Acquire is a span whose `waited_ms` field is the time it
//! spent in the queue.

use std::time::Duration;

use skillshift_proto::v1::{self, llm_budget_server::LlmBudget};
use tonic::{Request, Response, Status};
use tracing::Instrument;

use crate::llm_budget::{Acquired, Budget, CallResult, MeterKey, MAX_NAME_BYTES};

/// Renewals one request may carry.
const MAX_RENEW: usize = 4096;

pub struct BudgetService {
    pub budget: Budget,
}

fn key(endpoint: String, model: String) -> Result<MeterKey, Status> {
    for (what, v) in [("endpoint", &endpoint), ("model", &model)] {
        if v.is_empty() || v.len() > MAX_NAME_BYTES {
            return Err(Status::invalid_argument(format!(
                "llm permit: {what} must have 1 to {MAX_NAME_BYTES} bytes, found {}",
                v.len()
            )));
        }
    }
    Ok((endpoint, model))
}

#[tonic::async_trait]
impl LlmBudget for BudgetService {
    async fn acquire(&self, req: Request<v1::LlmPermitRequest>) -> Result<Response<v1::LlmPermitReply>, Status> {
        // The worker's call span (W3C `traceparent` in the metadata): the permit span is its child, inside the
        // attempt's trace; a missing or malformed one leaves the span a root of its own.
        let parent = req.metadata().get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_string);
        let r = req.into_inner();
        let renew_ms = self.budget.renew_interval().as_millis() as u64;
        if !self.budget.config().is_metered() {
            return Ok(Response::new(v1::LlmPermitReply { metered: false, renew_ms, ..Default::default() }));
        }
        let worker: String = r.worker.chars().take(64).collect();
        let key = key(r.endpoint, r.model)?;
        let span = tracing::info_span!("llm.permit", endpoint = %key.0, model = %key.1, %worker,
            waited_ms = tracing::field::Empty, granted = tracing::field::Empty);
        if let Some(tp) = parent {
            if let Err(e) = skillshift_telemetry::context::set_parent(&span, &tp) {
                tracing::debug!("llm permit: trace context ignored: {e}");
            }
        }
        let got = self
            .budget
            .acquire(&key, r.tokens, Duration::from_millis(r.wait_ms))
            .instrument(span.clone())
            .await
            .map_err(Status::internal)?;
        let reply = match got {
            Acquired::Unmetered => v1::LlmPermitReply { metered: false, renew_ms, ..Default::default() },
            Acquired::Granted { permit, waited, limit } => {
                span.record("waited_ms", waited.as_millis() as u64);
                span.record("granted", true);
                v1::LlmPermitReply { metered: true, permit, waited_ms: waited.as_millis() as u64, renew_ms, limit }
            }
            Acquired::NotYet { waited } => {
                span.record("waited_ms", waited.as_millis() as u64);
                span.record("granted", false);
                v1::LlmPermitReply {
                    metered: true,
                    waited_ms: waited.as_millis() as u64,
                    renew_ms,
                    ..Default::default()
                }
            }
        };
        Ok(Response::new(reply))
    }

    async fn renew(&self, req: Request<v1::LlmPermitRenew>) -> Result<Response<v1::LlmPermitRenewReply>, Status> {
        let r = req.into_inner();
        if !self.budget.config().is_metered() {
            return Ok(Response::new(v1::LlmPermitRenewReply { adopted: 0 }));
        }
        if r.held.len() > MAX_RENEW {
            return Err(Status::invalid_argument(format!(
                "llm permit renewal names {} permits; at most {MAX_RENEW}",
                r.held.len()
            )));
        }
        let mut held = Vec::with_capacity(r.held.len());
        for h in r.held {
            if h.permit.is_empty() || h.permit.len() > 64 {
                return Err(Status::invalid_argument("llm permit renewal: a permit id must have 1 to 64 bytes"));
            }
            held.push((key(h.endpoint, h.model)?, h.permit, h.tokens));
        }
        let adopted = self.budget.renew(&held) as u32;
        Ok(Response::new(v1::LlmPermitRenewReply { adopted }))
    }

    async fn release(&self, req: Request<v1::LlmPermitRelease>) -> Result<Response<v1::LlmPermitReleaseReply>, Status> {
        let r = req.into_inner();
        if !self.budget.config().is_metered() {
            return Ok(Response::new(v1::LlmPermitReleaseReply {}));
        }
        let result = match v1::LlmCallResult::try_from(r.result) {
            Ok(v1::LlmCallResult::Answered) => CallResult::Answered,
            Ok(v1::LlmCallResult::RateLimited) => CallResult::RateLimited,
            Ok(v1::LlmCallResult::NoAnswer) => CallResult::NoAnswer,
            _ => return Err(Status::invalid_argument(format!("llm permit release: unknown result {}", r.result))),
        };
        if r.permit.is_empty() || r.permit.len() > 64 {
            return Err(Status::invalid_argument("llm permit release: a permit id must have 1 to 64 bytes"));
        }
        let key = key(r.endpoint, r.model)?;
        if result == CallResult::RateLimited {
            tracing::warn!(endpoint = %key.0, model = %key.1, "llm endpoint answered 429; shrinking the shared limit");
        }
        self.budget.release(&key, &r.permit, result, r.tokens_used);
        Ok(Response::new(v1::LlmPermitReleaseReply {}))
    }
}
