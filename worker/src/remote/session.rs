//! The state of a worker's time with the coordinator, in one struct:
//! the link (when connected), the running attempts, the outbox, the
//! reconnection backoff and the drain. [`Session::run`] is its loop; each
//! event it waits for (an attempt ending, a coordinator message, the heartbeat
//! tick, cancellation) is one method. Only [`wire`](super::wire) handles the
//! wire types; everything here is domain values.
//!
//! Attempts run as tasks of the session's own [`TaskCenter`], not of the
//! caller's cancellation: cancelling the worker starts a drain, in which
//! running attempts finish; only past the drain deadline (or on the
//! coordinator's `cancel`) are their tokens cancelled.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use skillshift_common::{Record, Site, Version};
use skillshift_proto::convert::AttemptKey;
use skillshift_tasks::TaskCenter;
use skillshift_telemetry::metrics::WorkerMetrics;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::outbox::{self, Outbox, OutboxError};
use super::wire::{Incoming, Link, LinkError, Outgoing, Received};
use super::{RemoteConfig, RemoteError, Summary};
use crate::executor::Executor;

/// What an attempt task reports to the loop.
enum Done {
    /// The attempt ended: its slot is free.
    Finished(AttemptKey),
    /// Its record is on disk (or could not be written).
    Stored(AttemptKey, Box<Record>, Result<(), OutboxError>),
}

/// Shutdown has begun: no new work.
struct Drain {
    /// When running attempts are cancelled.
    cancel_at: Instant,
    /// Set once no attempt is left: how long undelivered records are still offered.
    deliver_by: Option<Instant>,
}

/// A far-off wake-up for a branch that has nothing to wait for.
const FAR: Duration = Duration::from_secs(3600);

pub(super) struct Session {
    cfg: RemoteConfig,
    executor: Arc<dyn Executor>,
    hosts: Vec<(Site, Version)>,
    slots: u32,
    outbox: Outbox,
    /// The owner of every attempt task.
    attempts: TaskCenter,
    /// The running attempts, each with the token that cancels it.
    running: HashMap<AttemptKey, CancellationToken>,
    done_tx: mpsc::Sender<Done>,
    done_rx: mpsc::Receiver<Done>,
    /// Empty until the first registration.
    worker_id: String,
    link: Option<Link>,
    connected_once: bool,
    backoff: Duration,
    reconnect_at: Instant,
    heartbeat: Interval,
    drain: Option<Drain>,
    /// Attempts that ended and whose record is still being written to the outbox.
    storing: usize,
    summary: Summary,
}

impl Session {
    pub(super) fn new(cfg: RemoteConfig, executor: Arc<dyn Executor>) -> Result<Session, RemoteError> {
        let outbox = Outbox::open(&cfg.outbox_dir)?;
        let hosts = executor.hosts();
        let slots = executor.slots().max(1) as u32;
        let (done_tx, done_rx) = mpsc::channel(2 * slots as usize + 16);
        Ok(Session {
            attempts: TaskCenter::new(format!("worker {}", cfg.name)),
            backoff: cfg.min_backoff,
            cfg,
            executor,
            hosts,
            slots,
            outbox,
            running: HashMap::new(),
            done_tx,
            done_rx,
            worker_id: String::new(),
            link: None,
            connected_once: false,
            reconnect_at: Instant::now(),
            heartbeat: tokio::time::interval(Duration::from_secs(5)),
            drain: None,
            storing: 0,
            summary: Summary::default(),
        })
    }

    /// Runs until `cancel` fires and the drain is over.
    pub(super) async fn run(mut self, cancel: CancellationToken) -> Result<Summary, RemoteError> {
        let health = crate::health::Health::global();
        loop {
            health.turned();
            health.set_connected(self.link.is_some());
            if self.drained() {
                break;
            }
            if self.link.is_none() && Instant::now() >= self.reconnect_at {
                self.connect().await?;
                continue;
            }
            let drain_wake = self.drain_wake();
            tokio::select! {
                Some(done) = self.done_rx.recv() => self.on_done(done),
                received = next(&mut self.link), if self.link.is_some() => self.on_received(received)?,
                _ = self.heartbeat.tick(), if self.link.is_some() => self.on_heartbeat(),
                _ = tokio::time::sleep_until(self.reconnect_at), if self.link.is_none() => {}
                _ = tokio::time::sleep_until(drain_wake), if self.drain.is_some() => {}
                _ = cancel.cancelled(), if self.drain.is_none() => self.begin_drain(),
            }
        }
        // Every attempt has reported its record; its task ends right after.
        self.attempts.shutdown(Duration::from_secs(1)).await;
        self.summary.undelivered = self.outbox.len();
        Ok(self.summary)
    }

    /// Whether the drain is over: no attempt left and every record delivered (or
    /// the delivery deadline passed). Cancels the attempts past the drain deadline.
    fn drained(&mut self) -> bool {
        let Some(drain) = self.drain.as_mut() else { return false };
        let now = Instant::now();
        if self.running.is_empty() && self.storing == 0 {
            let deliver_by = *drain.deliver_by.get_or_insert(now + self.cfg.deliver_timeout);
            return self.outbox.is_empty() || now >= deliver_by;
        }
        if now >= drain.cancel_at {
            // Every attempt's token is a child of the centre's.
            self.attempts.cancel();
        }
        false
    }

    /// When the drain next has something to check.
    fn drain_wake(&self) -> Instant {
        let far = Instant::now() + FAR;
        self.drain.as_ref().map_or(far, |d| d.deliver_by.unwrap_or(d.cancel_at).min(far))
    }

    fn begin_drain(&mut self) {
        crate::health::Health::global().set_draining();
        tracing::info!(running = self.running.len(), "draining: finishing running attempts");
        self.drain = Some(Drain { cancel_at: Instant::now() + self.cfg.drain_timeout, deliver_by: None });
    }

    /// Opens a session, re-sends every unacknowledged record and offers the free
    /// slots. Only a refusal that retrying cannot fix is an error.
    async fn connect(&mut self) -> Result<(), RemoteError> {
        let keys: Vec<AttemptKey> = self.running.keys().cloned().collect();
        match Link::open(&self.cfg, &self.hosts, self.slots, &self.worker_id, &keys).await {
            Ok(link) => {
                if self.worker_id != link.worker_id {
                    tracing::info!(worker = %link.worker_id, "registered with the coordinator");
                }
                self.worker_id = link.worker_id.clone();
                self.backoff = self.cfg.min_backoff;
                self.heartbeat = tokio::time::interval(link.heartbeat);
                self.heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
                let mut ok = true;
                for (key, record) in self.outbox.pending() {
                    ok &= link.send(Outgoing::Record { key, record });
                }
                let free = self.slots.saturating_sub(self.running.len() as u32);
                if self.drain.is_none() && free > 0 {
                    ok &= link.send(Outgoing::Ready { credits: free });
                }
                tracing::info!(resent = self.outbox.len(), running = self.running.len(), "session open");
                self.connected_once = true;
                // A queue that filled already: try again at once.
                if ok {
                    self.link = Some(link);
                }
            }
            Err(e) => {
                let refused = match e {
                    LinkError::Unauthenticated(_) => true,
                    // A registration refused as malformed before any session: a configuration mistake.
                    LinkError::Invalid(_) => !self.connected_once,
                    LinkError::Unavailable(_) => false,
                };
                if refused {
                    return Err(RemoteError::Refused(e.to_string()));
                }
                tracing::warn!(error = %e, retry_in_ms = self.backoff.as_millis() as u64, "coordinator unreachable");
                self.retry_later();
            }
        }
        Ok(())
    }

    fn retry_later(&mut self) {
        self.reconnect_at = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(self.cfg.max_backoff);
    }

    /// Sends on the open link, if any; a full queue drops the link (reconnecting at once).
    fn send(&mut self, m: Outgoing<'_>) {
        if let Some(link) = &self.link {
            if !link.send(m) {
                tracing::warn!("outgoing queue full; reconnecting");
                self.link = None;
            }
        }
    }

    fn on_done(&mut self, done: Done) {
        match done {
            Done::Finished(key) => {
                // The slot is free now; the record follows once it is on disk.
                self.running.remove(&key);
                self.storing += 1;
                self.summary.attempts += 1;
                if self.drain.is_none() {
                    self.send(Outgoing::Ready { credits: 1 });
                }
            }
            Done::Stored(key, mut record, result) => {
                self.storing = self.storing.saturating_sub(1);
                if let Err(e) = result {
                    tracing::error!(error = %e, "record could not be made durable; sending it anyway");
                }
                // Not part of the record's identity: which worker ran it, named once the coordinator has.
                if record.worker.is_none() && !self.worker_id.is_empty() {
                    record.worker = Some(self.worker_id.clone());
                }
                let record = *record;
                self.send(Outgoing::Record { key: &key, record: &record });
                self.outbox.insert(key, record);
            }
        }
    }

    fn on_heartbeat(&mut self) {
        let running: Vec<AttemptKey> = self.running.keys().cloned().collect();
        self.send(Outgoing::Heartbeat { running: &running });
    }

    fn on_received(&mut self, received: Result<Received, LinkError>) -> Result<(), RemoteError> {
        match received {
            Ok(Received::Message(m)) => self.handle(m)?,
            Ok(Received::Malformed(e)) => tracing::error!(error = %e, "malformed coordinator message ignored"),
            Ok(Received::Closed) => {
                tracing::warn!("session closed by the coordinator");
                self.link = None;
                self.retry_later();
            }
            Err(LinkError::Unauthenticated(m)) => return Err(RemoteError::Refused(m)),
            Err(e) => {
                tracing::warn!(error = %e, "session ended");
                self.link = None;
                self.retry_later();
            }
        }
        Ok(())
    }

    /// Acts on one coordinator message.
    fn handle(&mut self, m: Incoming) -> Result<(), RemoteError> {
        match m {
            Incoming::Assign(key, spec) => {
                if self.running.contains_key(&key) {
                    return Ok(());
                }
                if self.drain.is_some() || self.running.len() as u32 >= self.slots {
                    // The coordinator's lease on it will be released when our heartbeat omits it
                    // or the session ends; running it over the slot budget would be worse.
                    tracing::warn!(sweep = %key.sweep, unit = key.unit, "assignment beyond free slots ignored");
                    return Ok(());
                }
                tracing::info!(sweep = %key.sweep, unit = key.unit, attempt = key.attempt, uid = %spec.uid, condition = %spec.condition, "attempt started");
                self.start(key, *spec);
            }
            Incoming::Cancel(key) => {
                if let Some(token) = self.running.get(&key) {
                    tracing::info!(sweep = %key.sweep, unit = key.unit, "attempt cancelled by the coordinator");
                    token.cancel();
                }
            }
            Incoming::Drain { reason } => tracing::info!(%reason, "coordinator asked to drain"),
            Incoming::Ack(keys) => {
                for key in keys {
                    self.outbox.remove(&key)?;
                }
            }
            Incoming::Reject { key, reason } => {
                tracing::error!(sweep = %key.sweep, unit = key.unit, attempt = key.attempt, %reason, "coordinator refused a record; dropping it");
                self.outbox.remove(&key)?;
            }
        }
        Ok(())
    }

    /// Runs one attempt as a task of the session: it reports the free slot,
    /// writes the record to the outbox off the async threads, then reports it.
    fn start(&mut self, key: AttemptKey, spec: skillshift_common::AttemptSpec) {
        let token = self.attempts.token().child_token();
        let attempt = self.executor.execute(spec, token.clone());
        let tx = self.done_tx.clone();
        let dir = self.outbox.dir().to_path_buf();
        let center = self.attempts.clone();
        let k = key.clone();
        let metrics = WorkerMetrics::global();
        metrics.attempt_started();
        self.attempts.spawn("attempt", move |_| async move {
            // The executor ends the attempt when its own token (a child of this one) is cancelled.
            let record = attempt.await;
            metrics.attempt_finished(record.outcome.map_or("error", |o| o.as_str()));
            let _ = tx.send(Done::Finished(k.clone())).await;
            // fsync off the async threads: the loop keeps serving while the disk works.
            let (k2, r2, d2) = (k.clone(), record.clone(), dir.clone());
            let result = match center.spawn_blocking("outbox-write", move || outbox::write_entry(&d2, &k2, &r2)).await {
                Ok(r) => r,
                Err(e) => {
                    Err(OutboxError::Corrupt { path: dir, message: format!("the outbox writer task failed: {e}") })
                }
            };
            let _ = tx.send(Done::Stored(k, Box::new(record), result)).await;
        });
        self.running.insert(key, token);
    }
}

/// The link's next message; pending forever without a link.
async fn next(link: &mut Option<Link>) -> Result<Received, LinkError> {
    match link {
        Some(l) => l.next().await,
        None => std::future::pending().await,
    }
}
