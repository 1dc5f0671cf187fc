//! The `LlmBudget` gRPC service: the wire edge of [`crate::llm_budget`].
//! Requests are checked (names, holder and permit ids bounded, an estimate
//! within [`MAX_CALL_TOKENS`]) and handed to the [`Budget`]; each Acquire is a
//! span whose `waited_ms` field is the time it spent in the queue.
//! A malformed request and a [`BudgetError`](crate::llm_budget::BudgetError)
//! become a `tonic::Status` through [`ServiceError`], the one mapping of every
//! service.

use std::time::Duration;

use skillshift_proto::v1::{self, llm_budget_server::LlmBudget};
use tonic::{Request, Response, Status};
use tracing::Instrument;

use crate::llm_budget::{Acquired, Budget, CallResult, Holder, MeterKey, MAX_CALL_TOKENS, MAX_NAME_BYTES};
use crate::service_error::ServiceError;

/// Renewals one request may carry.
const MAX_RENEW: usize = 4096;
/// Bytes of a holder secret.
const HOLDER_BYTES: std::ops::RangeInclusive<usize> = 16..=128;
/// Bytes of a permit id.
const MAX_PERMIT_BYTES: usize = 64;

pub struct BudgetService {
    pub budget: Budget,
}

fn key(endpoint: String, model: String) -> Result<MeterKey, ServiceError> {
    for (what, v) in [("endpoint", &endpoint), ("model", &model)] {
        if v.is_empty() || v.len() > MAX_NAME_BYTES {
            return Err(ServiceError::Invalid(format!(
                "llm permit: {what} must have 1 to {MAX_NAME_BYTES} bytes, found {}",
                v.len()
            )));
        }
    }
    Ok((endpoint, model))
}

fn holder(what: &str, secret: &str) -> Result<Holder, ServiceError> {
    if !HOLDER_BYTES.contains(&secret.len()) {
        return Err(ServiceError::Invalid(format!(
            "llm permit {what}: holder must have {} to {} bytes, found {}",
            HOLDER_BYTES.start(),
            HOLDER_BYTES.end(),
            secret.len()
        )));
    }
    Ok(Holder::of(secret))
}

fn permit_id(what: &str, permit: &str) -> Result<(), ServiceError> {
    if permit.is_empty() || permit.len() > MAX_PERMIT_BYTES {
        return Err(ServiceError::Invalid(format!(
            "llm permit {what}: a permit id must have 1 to {MAX_PERMIT_BYTES} bytes, found {}",
            permit.len()
        )));
    }
    Ok(())
}

fn tokens(what: &str, field: &str, n: u64) -> Result<u64, ServiceError> {
    if n > MAX_CALL_TOKENS {
        return Err(ServiceError::Invalid(format!(
            "llm permit {what}: {field} is {n}, more than one call may use ({MAX_CALL_TOKENS})"
        )));
    }
    Ok(n)
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
        let holder = holder("request", &r.holder)?;
        let tokens = tokens("request", "tokens", r.tokens)?;
        let span = tracing::info_span!("llm.permit", endpoint = %key.0, model = %key.1, %worker,
            waited_ms = tracing::field::Empty, granted = tracing::field::Empty);
        if let Some(tp) = parent {
            if let Err(e) = skillshift_telemetry::context::set_parent(&span, &tp) {
                tracing::debug!("llm permit: trace context ignored: {e}");
            }
        }
        let got = self
            .budget
            .acquire(&key, holder, tokens, Duration::from_millis(r.wait_ms))
            .instrument(span.clone())
            .await?;
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
            return Ok(Response::new(v1::LlmPermitRenewReply { adopted: 0, refused: 0 }));
        }
        if r.held.len() > MAX_RENEW {
            return Err(ServiceError::Invalid(format!(
                "llm permit renewal names {} permits; at most {MAX_RENEW}",
                r.held.len()
            ))
            .into());
        }
        let holder = holder("renewal", &r.holder)?;
        let mut held = Vec::with_capacity(r.held.len());
        for h in r.held {
            permit_id("renewal", &h.permit)?;
            held.push((key(h.endpoint, h.model)?, h.permit, h.tokens));
        }
        let done = self.budget.renew(&holder, &held)?;
        Ok(Response::new(v1::LlmPermitRenewReply {
            adopted: done.adopted.min(u32::MAX as usize) as u32,
            refused: done.refused.min(u32::MAX as usize) as u32,
        }))
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
            _ => return Err(ServiceError::Invalid(format!("llm permit release: unknown result {}", r.result)).into()),
        };
        permit_id("release", &r.permit)?;
        let key = key(r.endpoint, r.model)?;
        let holder = holder("release", &r.holder)?;
        let used = tokens("release", "tokens_used", r.tokens_used)?;
        let decreased = self.budget.release(&key, &holder, &r.permit, result, used)?;
        if decreased {
            tracing::warn!(endpoint = %key.0, model = %key.1, "llm endpoint answered 429; shrinking the shared limit");
        }
        Ok(Response::new(v1::LlmPermitReleaseReply {}))
    }
}
