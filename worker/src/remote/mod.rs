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
//! * [`outbox`]: records on disk until acknowledged.
//! * [`simulate`]: the `--simulate MS` executor.

pub mod outbox;
pub mod simulate;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use skillshift_common::Record;
use skillshift_proto::channel::{self, BearerAuth, ClientTls, ConnectError};
use skillshift_proto::convert::{self, AttemptKey};
use skillshift_proto::v1::{self, worker_client::WorkerClient};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::Streaming;

use crate::executor::Executor;
use outbox::{Outbox, OutboxError};

/// Messages to the coordinator waiting to be written to the stream.
const OUTGOING_CAPACITY: usize = 1024;

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
    pub undelivered: usize,
}

struct Session {
    tx: mpsc::Sender<v1::WorkerMessage>,
    inbound: Streaming<v1::CoordinatorMessage>,
    heartbeat: Duration,
}

type Client = WorkerClient<tonic::service::interceptor::InterceptedService<tonic::transport::Channel, BearerAuth>>;

async fn open_session(
    cfg: &RemoteConfig,
    hosts: &[v1::SiteVersion],
    slots: u32,
    previous_id: &str,
    running: Vec<AttemptKey>,
) -> Result<(String, Session), tonic::Status> {
    let unavailable = |e: ConnectError| tonic::Status::unavailable(e.to_string());
    let ep = channel::endpoint(&cfg.url, &cfg.tls).map_err(unavailable)?;
    let ch = ep.connect().await.map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let auth = BearerAuth::new(cfg.token.as_deref()).map_err(unavailable)?;
    let mut client: Client = WorkerClient::with_interceptor(ch, auth);
    let reply = client
        .register(v1::RegisterRequest {
            name: cfg.name.clone(),
            hosts: hosts.to_vec(),
            slots,
            previous_id: previous_id.to_string(),
        })
        .await?
        .into_inner();
    let (tx, rx) = mpsc::channel(OUTGOING_CAPACITY);
    let hello = v1::Hello {
        worker_id: reply.worker_id.clone(),
        running: running.iter().map(Into::into).collect(),
        // Credits follow in a `ready` once the session is up.
        free_slots: 0,
    };
    let first = v1::WorkerMessage { body: Some(v1::worker_message::Body::Hello(hello)) };
    tx.try_send(first).map_err(|_| tonic::Status::internal("outgoing queue full at hello"))?;
    let inbound = client.session(tokio_stream::wrappers::ReceiverStream::new(rx)).await?.into_inner();
    let heartbeat = Duration::from_millis(reply.heartbeat_ms.clamp(50, 60_000));
    Ok((reply.worker_id, Session { tx, inbound, heartbeat }))
}

fn msg(body: v1::worker_message::Body) -> v1::WorkerMessage {
    v1::WorkerMessage { body: Some(body) }
}

fn record_msg(key: &AttemptKey, rec: &Record) -> v1::WorkerMessage {
    msg(v1::worker_message::Body::Record(v1::RecordMessage { attempt: Some(key.into()), record: Some(rec.into()) }))
}

/// Runs the worker until `cancel` fires, then drains. Only a refusal that
/// retrying cannot fix (a wrong token) or a broken outbox ends it early.
pub async fn run(
    cfg: RemoteConfig,
    executor: Arc<dyn Executor>,
    cancel: CancellationToken,
) -> Result<Summary, RemoteError> {
    // Checked once up front so a bad URL or CA file is a clear error, not a retry loop.
    channel::endpoint(&cfg.url, &cfg.tls)?;
    BearerAuth::new(cfg.token.as_deref())?;
    let mut outbox = Outbox::open(&cfg.outbox_dir)?;
    let hosts: Vec<v1::SiteVersion> =
        executor.hosts().into_iter().map(|(s, v)| convert::site_version_to_wire(s, v)).collect();
    let slots = executor.slots().max(1) as u32;
    let (done_tx, mut done_rx) = mpsc::channel::<Done>(2 * slots as usize + 16);
    let mut running: HashMap<AttemptKey, (CancellationToken, JoinHandle<()>)> = HashMap::new();
    let mut worker_id = String::new();
    let mut session: Option<Session> = None;
    let mut backoff = cfg.min_backoff;
    let mut reconnect_at = Instant::now();
    let mut draining = false;
    let mut drain_deadline: Option<Instant> = None;
    let mut deliver_deadline: Option<Instant> = None;
    // Attempts that ended and whose record is still being written to the outbox.
    let mut storing = 0usize;
    let mut summary = Summary::default();
    let mut heartbeat = tokio::time::interval(Duration::from_secs(5));
    let mut connected_once = false;

    loop {
        if draining {
            let now = Instant::now();
            if running.is_empty() && storing == 0 {
                let deliver_by = *deliver_deadline.get_or_insert(now + cfg.deliver_timeout);
                if outbox.is_empty() || now >= deliver_by {
                    break;
                }
            } else if drain_deadline.is_some_and(|d| now >= d) {
                for (tok, _) in running.values() {
                    tok.cancel();
                }
            }
        }
        if session.is_none() && Instant::now() >= reconnect_at {
            let keys: Vec<AttemptKey> = running.keys().cloned().collect();
            match open_session(&cfg, &hosts, slots, &worker_id, keys).await {
                Ok((id, s)) => {
                    if worker_id != id {
                        tracing::info!(worker = %id, "registered with the coordinator");
                    }
                    worker_id = id;
                    backoff = cfg.min_backoff;
                    heartbeat = tokio::time::interval(s.heartbeat);
                    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    let mut ok = true;
                    // Re-send everything not yet acknowledged, then offer the free slots.
                    for (key, rec) in outbox.pending() {
                        ok &= s.tx.try_send(record_msg(key, rec)).is_ok();
                    }
                    let free = slots.saturating_sub(running.len() as u32);
                    if !draining && free > 0 {
                        ok &= s.tx.try_send(msg(v1::worker_message::Body::Ready(v1::Ready { credits: free }))).is_ok();
                    }
                    tracing::info!(resent = outbox.len(), running = running.len(), "session open");
                    connected_once = true;
                    if ok {
                        session = Some(s);
                    }
                }
                Err(status) => {
                    if status.code() == tonic::Code::Unauthenticated
                        || (status.code() == tonic::Code::InvalidArgument && !connected_once)
                    {
                        return Err(RemoteError::Refused(status.message().to_string()));
                    }
                    tracing::warn!(error = %status.message(), retry_in_ms = backoff.as_millis() as u64, "coordinator unreachable");
                    reconnect_at = Instant::now() + backoff;
                    backoff = (backoff * 2).min(cfg.max_backoff);
                }
            }
            continue;
        }

        let wake = if session.is_none() { reconnect_at } else { Instant::now() + Duration::from_secs(3600) };
        let far = Instant::now() + Duration::from_secs(3600);
        let drain_wake = deliver_deadline.or(drain_deadline).map_or(far, |d| d.min(far));
        tokio::select! {
            Some(done) = done_rx.recv() => match done {
                Done::Finished(key) => {
                    // The slot is free now; the record follows once it is on disk.
                    running.remove(&key);
                    storing += 1;
                    summary.attempts += 1;
                    if let (Some(s), false) = (&session, draining) {
                        if s.tx.try_send(msg(v1::worker_message::Body::Ready(v1::Ready { credits: 1 }))).is_err() {
                            tracing::warn!("outgoing queue full; reconnecting");
                            session = None;
                        }
                    }
                }
                Done::Stored(key, mut rec, result) => {
                    storing = storing.saturating_sub(1);
                    if let Err(e) = result {
                        tracing::error!(error = %e, "record could not be made durable; sending it anyway");
                    }
                    if rec.worker.is_none() && !worker_id.is_empty() {
                        rec.worker = Some(worker_id.clone());
                    }
                    let m = record_msg(&key, &rec);
                    outbox.insert(key, *rec);
                    if let Some(s) = &session {
                        if s.tx.try_send(m).is_err() {
                            tracing::warn!("outgoing queue full; reconnecting");
                            session = None;
                        }
                    }
                }
            },
            incoming = next_message(&mut session), if session.is_some() => {
                match incoming {
                    Ok(Some(m)) => {
                        handle_incoming(m, &executor, &mut running, &done_tx, &mut outbox, draining, slots)?;
                    }
                    Ok(None) | Err(_) => {
                        if let Err(e) = incoming {
                            if e.code() == tonic::Code::Unauthenticated {
                                return Err(RemoteError::Refused(e.message().to_string()));
                            }
                            tracing::warn!(error = %e.message(), "session ended");
                        } else {
                            tracing::warn!("session closed by the coordinator");
                        }
                        session = None;
                        reconnect_at = Instant::now() + backoff;
                        backoff = (backoff * 2).min(cfg.max_backoff);
                    }
                }
            }
            _ = heartbeat.tick(), if session.is_some() => {
                if let Some(s) = &session {
                    let keys = running.keys().map(Into::into).collect();
                    if s.tx.try_send(msg(v1::worker_message::Body::Heartbeat(v1::Heartbeat { running: keys }))).is_err() {
                        session = None;
                    }
                }
            }
            _ = tokio::time::sleep_until(wake), if session.is_none() => {}
            _ = tokio::time::sleep_until(drain_wake), if draining => {}
            _ = cancel.cancelled(), if !draining => {
                tracing::info!(running = running.len(), "draining: finishing running attempts");
                draining = true;
                drain_deadline = Some(Instant::now() + cfg.drain_timeout);
            }
        }
    }
    summary.undelivered = outbox.len();
    Ok(summary)
}

/// What an attempt task reports to the loop.
enum Done {
    /// The attempt ended: its slot is free.
    Finished(AttemptKey),
    /// Its record is on disk (or could not be written).
    Stored(AttemptKey, Box<Record>, Result<(), OutboxError>),
}

fn dir_of(_e: &tokio::task::JoinError) -> PathBuf {
    PathBuf::from("(outbox writer task)")
}

/// The next message of the session; pending forever without one.
async fn next_message(session: &mut Option<Session>) -> Result<Option<v1::CoordinatorMessage>, tonic::Status> {
    match session {
        Some(s) => s.inbound.message().await,
        None => std::future::pending().await,
    }
}

/// Acts on one coordinator message.
fn handle_incoming(
    m: v1::CoordinatorMessage,
    executor: &Arc<dyn Executor>,
    running: &mut HashMap<AttemptKey, (CancellationToken, JoinHandle<()>)>,
    done_tx: &mpsc::Sender<Done>,
    outbox: &mut Outbox,
    draining: bool,
    slots: u32,
) -> Result<(), RemoteError> {
    use v1::coordinator_message::Body;
    match m.body {
        Some(Body::Assign(a)) => {
            let (key, spec) = match convert::assignment_from_wire(a) {
                Ok(x) => x,
                Err(e) => {
                    tracing::error!(error = %e, "malformed assignment ignored");
                    return Ok(());
                }
            };
            if running.contains_key(&key) {
                return Ok(());
            }
            if draining || running.len() as u32 >= slots {
                // The coordinator's lease on it will be released when our heartbeat omits it
                // or the session ends; running it over the slot budget would be worse.
                tracing::warn!(sweep = %key.sweep, unit = key.unit, "assignment beyond free slots ignored");
                return Ok(());
            }
            tracing::info!(sweep = %key.sweep, unit = key.unit, attempt = key.attempt, uid = %spec.uid, condition = %spec.condition, "attempt started");
            let token = CancellationToken::new();
            let fut = executor.execute(spec, token.clone());
            let tx = done_tx.clone();
            let k = key.clone();
            let dir = outbox.dir().to_path_buf();
            let metrics = skillshift_telemetry::metrics::WorkerMetrics::global();
            metrics.attempt_started();
            let join = tokio::spawn(async move {
                let rec = fut.await;
                metrics.attempt_finished(rec.outcome.map_or("error", |o| o.as_str()));
                let _ = tx.send(Done::Finished(k.clone())).await;
                // fsync off the async threads: the loop keeps serving while the disk works.
                let (k2, r2) = (k.clone(), rec.clone());
                let result = match tokio::task::spawn_blocking(move || outbox::write_entry(&dir, &k2, &r2)).await {
                    Ok(r) => r,
                    Err(e) => Err(OutboxError::Corrupt { path: dir_of(&e), message: e.to_string() }),
                };
                let _ = tx.send(Done::Stored(k, Box::new(rec), result)).await;
            });
            running.insert(key, (token, join));
        }
        Some(Body::Cancel(r)) => {
            if let Ok(key) = AttemptKey::try_from(r) {
                if let Some((tok, _)) = running.get(&key) {
                    tracing::info!(sweep = %key.sweep, unit = key.unit, "attempt cancelled by the coordinator");
                    tok.cancel();
                }
            }
        }
        Some(Body::Drain(d)) => {
            tracing::info!(reason = %d.reason, "coordinator asked to drain");
        }
        Some(Body::Ack(a)) => {
            for r in a.attempts {
                if let Ok(key) = AttemptKey::try_from(r) {
                    outbox.remove(&key)?;
                }
            }
        }
        Some(Body::Reject(r)) => {
            if let Ok(key) = AttemptKey::try_from(r.attempt) {
                tracing::error!(sweep = %key.sweep, unit = key.unit, attempt = key.attempt, reason = %r.reason, "coordinator refused a record; dropping it");
                outbox.remove(&key)?;
            }
        }
        None => tracing::warn!("empty coordinator message ignored"),
    }
    Ok(())
}
