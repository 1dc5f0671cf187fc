//! The worker's side of the cluster's LLM budget (docs/cli.md,
//! `--llm-concurrency`): before each HTTP call to a model endpoint the LLM
//! client asks the coordinator for a permit, and gives it back after with what
//! the endpoint answered (a 429 shrinks the shared limit for every worker).
//!
//! * [`PermitGate`]: a lazily connected client of the coordinator's
//!   `LlmBudget` service, the permits this process holds, and a task that
//!   renews them (a permit not renewed within the lease TTL expires, which is
//!   how a lost worker's permits come back; a restarted coordinator adopts the
//!   renewed ones its predecessor granted). Each gate draws a random holder
//!   secret and sends it with every request: the coordinator binds a permit
//!   to it, so no other client can release or renew this process's permits.
//! * [`acquire`] asks the gate the caller was handed (whoever starts a worker
//!   connects one, `remote::permit_gate`, and hands it down to the LLM
//!   clients of its attempts), or, with none (a `run` of one attempt, a
//!   test), grants at once.
//! * [`Permit`]: held for one HTTP call; [`Permit::release`] (or dropping it,
//!   when the call was abandoned) gives it back in the background.
//!
//! A coordinator that meters nothing answers `metered = false`; the gate then
//! stops asking for [`UNMETERED_RECHECK`]. A coordinator that cannot be reached
//! is asked again with backoff: the call waits (bounded by its attempt's own
//! deadline) rather than overshoot a budget it cannot see.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use skillshift_proto::channel::{self, BearerAuth, ClientTls, ConnectError};
use skillshift_proto::v1::{self, llm_budget_client::LlmBudgetClient};
use skillshift_taskcenter::TaskCenter;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// How long one Acquire may wait in the coordinator before asking again.
const WAIT: Duration = Duration::from_secs(20);
/// After an answer saying nothing is metered, ask again only after this long.
pub const UNMETERED_RECHECK: Duration = Duration::from_secs(30);
/// Backoff between Acquires that found no coordinator.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Tokens one call may reserve or report (the coordinator refuses more; `LlmPermitRequest.tokens`).
pub const MAX_CALL_TOKENS: u64 = 1 << 24;
/// Renewal period until the coordinator has said its own (short, so the first permit is renewed in time
/// under any TTL; with nothing held a renewal sends nothing).
const DEFAULT_RENEW: Duration = Duration::from_millis(200);

type Client = LlmBudgetClient<InterceptedService<Channel, BearerAuth>>;

/// How the call made under a permit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallResult {
    /// The endpoint answered, with any status but 429.
    Answered,
    /// The endpoint answered 429.
    RateLimited,
    /// No answer: a transport failure or a timeout.
    NoAnswer,
}

impl From<CallResult> for v1::LlmCallResult {
    fn from(r: CallResult) -> Self {
        match r {
            CallResult::Answered => v1::LlmCallResult::Answered,
            CallResult::RateLimited => v1::LlmCallResult::RateLimited,
            CallResult::NoAnswer => v1::LlmCallResult::NoAnswer,
        }
    }
}

#[derive(Debug, Clone)]
struct HeldPermit {
    endpoint: String,
    model: String,
    tokens: u64,
}

struct GateState {
    held: HashMap<String, HeldPermit>,
    unmetered_until: Option<Instant>,
    renew_every: Duration,
}

/// A client of the coordinator's LLM budget for this process.
pub struct PermitGate {
    url: String,
    client: Client,
    worker: String,
    /// The secret that binds this process's permits to it (128 random bits, hex).
    holder: String,
    // A std Mutex: held only to read or update the map and two fields, never across an await.
    state: Mutex<GateState>,
    tasks: TaskCenter,
}

impl PermitGate {
    /// A gate on the coordinator at `url`; it connects on first use. Starts the renewal task.
    pub fn connect(
        url: &str,
        tls: &ClientTls,
        token: Option<&str>,
        worker: &str,
    ) -> Result<Arc<PermitGate>, ConnectError> {
        let channel = channel::endpoint(url, tls)?.connect_lazy();
        let client = LlmBudgetClient::with_interceptor(channel, BearerAuth::new(token)?);
        let gate = Arc::new(PermitGate {
            url: url.to_string(),
            client,
            worker: worker.to_string(),
            holder: format!("{:032x}", rand::random::<u128>()),
            state: Mutex::new(GateState { held: HashMap::new(), unmetered_until: None, renew_every: DEFAULT_RENEW }),
            tasks: TaskCenter::new(format!("llm permits {url}")),
        });
        let weak = Arc::downgrade(&gate);
        gate.tasks.spawn("llm-permit-renew", move |stop| async move {
            loop {
                let every = match weak.upgrade() {
                    Some(g) => g.with_state(|s| s.renew_every).unwrap_or(DEFAULT_RENEW),
                    None => return,
                };
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = stop.cancelled() => return,
                }
                match weak.upgrade() {
                    Some(g) => g.renew().await,
                    None => return,
                }
            }
        });
        Ok(gate)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut GateState) -> T) -> Option<T> {
        self.state.lock().ok().map(|mut s| f(&mut s))
    }

    /// Permits this process holds now.
    pub fn held(&self) -> usize {
        self.with_state(|s| s.held.len()).unwrap_or(0)
    }

    /// Waits for a permit for one call to `model` at `endpoint` that may use `tokens`.
    pub async fn acquire(self: &Arc<Self>, endpoint: &str, model: &str, tokens: u64) -> Permit {
        let started = Instant::now();
        let mut backoff = MIN_BACKOFF;
        loop {
            if self.with_state(|s| s.unmetered_until.is_some_and(|t| Instant::now() < t)).unwrap_or(false) {
                return Permit::free(started.elapsed());
            }
            let mut req = tonic::Request::new(v1::LlmPermitRequest {
                endpoint: endpoint.to_string(),
                model: model.to_string(),
                tokens: tokens.min(MAX_CALL_TOKENS),
                worker: self.worker.clone(),
                wait_ms: WAIT.as_millis() as u64,
                holder: self.holder.clone(),
            });
            req.set_timeout(WAIT + Duration::from_secs(5));
            // The call's trace context (its chat span), so the coordinator's llm.permit span sits in the attempt's trace.
            if let Some(tp) = skillshift_telemetry::context::current_traceparent().and_then(|t| t.parse().ok()) {
                req.metadata_mut().insert("traceparent", tp);
            }
            match self.client.clone().acquire(req).await {
                Ok(reply) => {
                    let r = reply.into_inner();
                    let renew = Duration::from_millis(r.renew_ms.clamp(50, 60_000));
                    if !r.metered {
                        self.with_state(|s| {
                            s.unmetered_until = Some(Instant::now() + UNMETERED_RECHECK);
                            s.renew_every = renew;
                        });
                        return Permit::free(started.elapsed());
                    }
                    backoff = MIN_BACKOFF;
                    if !r.permit.is_empty() {
                        let held = HeldPermit { endpoint: endpoint.to_string(), model: model.to_string(), tokens };
                        self.with_state(|s| {
                            s.held.insert(r.permit.clone(), held);
                            s.renew_every = renew;
                            s.unmetered_until = None;
                        });
                        return Permit {
                            held: Some((self.clone(), r.permit)),
                            waited: started.elapsed(),
                            limit: r.limit,
                        };
                    }
                }
                Err(s) if s.code() == tonic::Code::Unimplemented => {
                    // A coordinator without the budget service meters nothing.
                    self.with_state(|st| st.unmetered_until = Some(Instant::now() + UNMETERED_RECHECK));
                }
                Err(s) if matches!(s.code(), tonic::Code::InvalidArgument | tonic::Code::Unauthenticated) => {
                    tracing::error!(code = ?s.code(), error = %s.message(), "llm budget refused the request; calling without a permit");
                    return Permit::free(started.elapsed());
                }
                Err(s) => {
                    tracing::warn!(code = ?s.code(), error = %s.message(), retry_in_ms = backoff.as_millis() as u64,
                        "llm budget unreachable; waiting for a permit");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    fn release_in_background(self: &Arc<Self>, permit: String, result: CallResult, tokens_used: u64) {
        let Some(Some(held)) = self.with_state(|s| s.held.remove(&permit)) else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            return; // no runtime to send it from: it expires after the lease TTL
        }
        let (client, holder) = (self.client.clone(), self.holder.clone());
        self.tasks.spawn("llm-permit-release", move |_| async move {
            let mut req = tonic::Request::new(v1::LlmPermitRelease {
                permit,
                endpoint: held.endpoint,
                model: held.model,
                result: v1::LlmCallResult::from(result) as i32,
                tokens_used: tokens_used.min(MAX_CALL_TOKENS),
                holder,
            });
            req.set_timeout(Duration::from_secs(5));
            // A release that does not arrive is an expiry after the lease TTL.
            if let Err(e) = client.clone().release(req).await {
                tracing::debug!(error = %e.message(), "llm permit release not delivered; it will expire");
            }
        });
    }

    async fn renew(&self) {
        let Some(held) = self.with_state(|s| {
            s.held
                .iter()
                .map(|(p, h)| v1::LlmHeldPermit {
                    permit: p.clone(),
                    endpoint: h.endpoint.clone(),
                    model: h.model.clone(),
                    tokens: h.tokens,
                })
                .collect::<Vec<_>>()
        }) else {
            return;
        };
        if held.is_empty() {
            return;
        }
        let mut req =
            tonic::Request::new(v1::LlmPermitRenew { held, worker: self.worker.clone(), holder: self.holder.clone() });
        req.set_timeout(Duration::from_secs(5));
        match self.client.clone().renew(req).await {
            Ok(r) if r.get_ref().refused > 0 => {
                // Expired here (renewals were late) or made up: the coordinator counts them no more.
                tracing::debug!(refused = r.get_ref().refused, "the coordinator no longer counts some llm permits");
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e.message(), "llm permit renewal failed"),
        }
    }
}

impl Drop for PermitGate {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

/// A permit for one HTTP call; give it back with [`Permit::release`].
pub struct Permit {
    held: Option<(Arc<PermitGate>, String)>,
    /// How long the call waited for it.
    pub waited: Duration,
    /// The endpoint's in-flight limit when granted (0: not metered by concurrency).
    pub limit: u32,
}

impl Permit {
    fn free(waited: Duration) -> Permit {
        Permit { held: None, waited, limit: 0 }
    }

    /// Whether the coordinator granted it (false: nothing is metered).
    pub fn is_metered(&self) -> bool {
        self.held.is_some()
    }

    /// Gives the permit back, saying how the call ended and the tokens it used (0 when unknown).
    pub fn release(mut self, result: CallResult, tokens_used: u64) {
        if let Some((gate, permit)) = self.held.take() {
            gate.release_in_background(permit, result, tokens_used);
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        // Dropped unreleased: the call was abandoned (its attempt cancelled or timed out).
        if let Some((gate, permit)) = self.held.take() {
            gate.release_in_background(permit, CallResult::NoAnswer, 0);
        }
    }
}

/// Waits for a permit from `gate`, as a `llm.permit` span with the wait in `waited_ms`; with no gate, a
/// free permit at once.
pub async fn acquire(gate: Option<&Arc<PermitGate>>, endpoint: &str, model: &str, tokens: u64) -> Permit {
    let Some(gate) = gate else { return Permit::free(Duration::ZERO) };
    let span = tracing::info_span!("llm.permit", waited_ms = tracing::field::Empty, limit = tracing::field::Empty);
    let permit = tracing::Instrument::instrument(gate.acquire(endpoint, model, tokens), span.clone()).await;
    span.record("waited_ms", permit.waited.as_millis() as u64);
    if permit.limit > 0 {
        span.record("limit", permit.limit);
    }
    permit
}
