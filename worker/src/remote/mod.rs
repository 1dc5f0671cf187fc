//! The worker's side of the coordinator protocol.
//!
//! [`run`] registers with the coordinator, keeps one session stream open,
//! runs each assignment on the [`Executor`] within its slots, and ships the
//! records back through the durable [`outbox::Outbox`]. When the stream
//! breaks it reconnects with exponential backoff while running attempts go on
//! and their records wait in the outbox; after reconnecting it names the
//! attempts it is still running (so a restarted coordinator re-attaches them)
//! and re-sends every unacknowledged record. On shutdown it drains: no new
//! work, running attempts finish (or are cancelled after the drain timeout),
//! records are delivered while the coordinator answers.
//!
//! * [`wire`]: the wire edge, the only module that handles prost and tonic types.
//! * `session`: the session's state in one struct, and the loop over its events.
//! * [`outbox`]: records on disk until acknowledged.
//! * [`simulate`]: the `--simulate MS` executor.
//!
//! Records arrive from the executor with their identity already stamped
//! ([`skillshift_common::Record::for_attempt`]); this edge never restamps it.

pub mod outbox;
mod session;
pub mod simulate;
pub mod wire;

pub use session::BROKEN_AFTER;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use skillshift_proto::channel::{ClientTls, ConnectError};
use tokio_util::sync::CancellationToken;

use crate::executor::Executor;
use crate::health::Health;
use crate::llm_permit::PermitGate;
use outbox::OutboxError;

#[derive(Debug, Clone)]
pub struct RemoteConfig {
    pub url: String,
    pub token: Option<String>,
    /// The CA to verify the coordinator against and, for mutual TLS, this worker's certificate.
    pub tls: ClientTls,
    pub name: String,
    pub outbox_dir: PathBuf,
    /// How long shutdown waits for running attempts before cancelling them.
    pub drain_timeout: Duration,
    /// How long shutdown keeps trying to deliver records still in the outbox.
    pub deliver_timeout: Duration,
    /// First reconnection delay; doubles up to `max_backoff`.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// What this worker's probes read (`/healthz`, `/readyz`); the session loop updates it. Whoever
    /// serves the probes hands its own in; the default is read by no one.
    pub health: Arc<Health>,
}

impl RemoteConfig {
    pub fn new(url: &str, name: &str, outbox_dir: PathBuf) -> RemoteConfig {
        RemoteConfig {
            url: url.to_string(),
            token: None,
            tls: ClientTls::default(),
            name: name.to_string(),
            outbox_dir,
            drain_timeout: Duration::from_secs(60),
            deliver_timeout: Duration::from_secs(10),
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            health: Arc::new(Health::new()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error("coordinator refused this worker: {0}")]
    Refused(String),
}

/// What [`run`] did, for the caller's last line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub attempts: u64,
    /// Records still in the outbox when the worker stopped.
    pub undelivered: usize,
    /// Trajectories still in the outbox when the worker stopped (their records may be delivered).
    pub undelivered_trajectories: usize,
}

/// Runs the worker until `cancel` fires, then drains. Only a refusal that
/// retrying cannot fix (a wrong token) or a broken outbox ends it early.
pub async fn run(
    cfg: RemoteConfig,
    executor: Arc<dyn Executor>,
    cancel: CancellationToken,
) -> Result<Summary, RemoteError> {
    wire::check(&cfg)?;
    session::Session::new(cfg, executor)?.run(cancel).await
}

/// The LLM permit gate on the coordinator `cfg` names, for the worker's executor: the LLM calls of
/// its attempts ask this coordinator for permits. It connects on first use.
pub fn permit_gate(cfg: &RemoteConfig) -> Result<Arc<PermitGate>, RemoteError> {
    wire::check(cfg)?;
    Ok(PermitGate::connect(&cfg.url, &cfg.tls, cfg.token.as_deref(), &cfg.name)?)
}
