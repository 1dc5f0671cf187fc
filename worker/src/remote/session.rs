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
//!
//! Trajectories follow their records: each waits in the outbox and is sent
//! whole, one at a time, by an upload task on the link's own chunk queue;
//! after a reconnection every unacknowledged one is sent again. A trajectory
//! too large for any coordinator never leaves: its attempt's record becomes an
//! `error` (`trajectory_too_large`) instead, so no attempt silently loses it.
//!
//! The worker's credential is kept in its outbox (`identity`), so a worker
//! restarted on the same outbox (after a crash, say) is the same worker to the
//! coordinator, which then accepts the records and trajectories it left.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use skillshift_common::blob::{Blob, Limits, MAX_BLOB_BYTES};
use skillshift_common::ids::AttemptKey;
use skillshift_common::{Outcome, Record, Site, Version};
use skillshift_taskcenter::TaskCenter;
use skillshift_telemetry::metrics::WorkerMetrics;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::outbox::{self, Outbox, OutboxError};
use super::wire::{Incoming, Link, LinkError, Outgoing, Received, Uploader};
use super::{RemoteConfig, RemoteError, Summary};
use crate::executor::Executor;
use crate::preflight::PreflightError;

/// What an attempt task reports to the loop.
enum Done {
    /// The attempt ended: its slot is free.
    Finished(AttemptKey, Ended),
    /// Its record is on disk (or could not be written), with its trajectory when it has one.
    Stored(AttemptKey, Box<Record>, Result<bool, OutboxError>),
    /// An upload of link generation `.0` ended.
    Uploaded(u64, AttemptKey, Upload),
    /// A check of the executor (its browser starts) ended, `Err` saying why not; `.0` is the [`Hold::epoch`] it
    /// was started in.
    Checked(u64, Result<(), PreflightError>),
}

/// How an attempt ended, as far as the worker's own health goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ended {
    /// A measured outcome: the browser works.
    Measured,
    /// An `error` for another reason (a timeout, a site reset, a cancellation).
    Errored,
    /// An `error` with reason `browser`, with its detail.
    BrowserFailed(String),
}

impl Ended {
    fn of(record: &Record) -> Ended {
        if record.outcome != Some(Outcome::Error) {
            return Ended::Measured;
        }
        if record.error.as_deref() != Some(skillshift_common::ErrorReason::Browser.as_str()) {
            return Ended::Errored;
        }
        Ended::BrowserFailed(record.error_detail.clone().unwrap_or_else(|| "the browser failed".into()))
    }
}

/// After this many `browser` errors in a row the worker takes no new work until its executor checks out,
/// even when each check after one of them passed.
pub const BROKEN_AFTER: u32 = 3;

/// How often a worker that takes no work checks whether its browser starts again.
pub const RECHECK_EVERY: Duration = Duration::from_secs(30);

/// The worker withholds its free slots from the coordinator. After an attempt whose browser failed, it checks
/// at once that a browser starts before it takes more work: a retried unit is offered first, and without the
/// check the same broken worker would spend all its retries in seconds. A failed check (or [`BROKEN_AFTER`]
/// failures in a row) makes the worker unavailable: not ready, named in `sweep status`, checked again every
/// [`RECHECK_EVERY`].
struct Hold {
    /// Why the worker takes no work, once it is known; `None` while the check after one failure runs.
    unavailable: Option<String>,
    /// Credits withheld from the coordinator, offered again once the executor checks out.
    owed: u32,
    checking: bool,
    next_check: Instant,
    /// Counts the times the worker was declared unavailable: a check started before the last one is stale.
    epoch: u64,
}

/// How an upload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upload {
    /// Every chunk went out; the ack follows.
    Sent,
    /// The link went down mid-upload: the next link sends it again.
    LinkDown,
    /// The outbox file could not be read: it is set aside, the rest go on.
    Unreadable,
}

/// The reason of a record whose trajectory was past [`MAX_BLOB_BYTES`] even without screenshots.
pub const TRAJECTORY_TOO_LARGE: &str = "trajectory_too_large";

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
    /// Trajectories to send on this link, in order, and the one being sent.
    uploads: VecDeque<AttemptKey>,
    uploading: Option<AttemptKey>,
    /// Counts links, so a finished upload of an old link is recognised.
    generation: u64,
    /// `browser` errors in a row.
    browser_errors: u32,
    hold: Option<Hold>,
}

impl Session {
    pub(super) fn new(cfg: RemoteConfig, executor: Arc<dyn Executor>) -> Result<Session, RemoteError> {
        let outbox = Outbox::open(&cfg.outbox_dir)?;
        let worker_id = outbox.identity().unwrap_or_default();
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
            worker_id,
            link: None,
            connected_once: false,
            reconnect_at: Instant::now(),
            heartbeat: tokio::time::interval(Duration::from_secs(5)),
            drain: None,
            storing: 0,
            summary: Summary::default(),
            uploads: VecDeque::new(),
            uploading: None,
            generation: 0,
            browser_errors: 0,
            hold: None,
        })
    }

    /// Runs until `cancel` fires and the drain is over.
    pub(super) async fn run(mut self, cancel: CancellationToken) -> Result<Summary, RemoteError> {
        let health = self.cfg.health.clone();
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
        self.summary.undelivered_trajectories = self.outbox.trajectories_len();
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
        self.cfg.health.set_draining();
        tracing::info!(running = self.running.len(), "draining: finishing running attempts");
        self.drain = Some(Drain { cancel_at: Instant::now() + self.cfg.drain_timeout, deliver_by: None });
    }

    /// Opens a session, re-sends every unacknowledged record and offers the free
    /// slots. Only a refusal that retrying cannot fix is an error.
    async fn connect(&mut self) -> Result<(), RemoteError> {
        let keys: Vec<AttemptKey> = self.running.keys().cloned().collect();
        match Link::open(&self.cfg, &self.hosts, self.executor.simulated(), self.slots, &self.worker_id, &keys).await {
            Ok(link) => {
                if self.worker_id != link.worker_id {
                    tracing::info!(worker = %link.worker_id, "registered with the coordinator");
                    if let Err(e) = self.outbox.keep_identity(&link.worker_id) {
                        tracing::warn!(error = %e, "the worker's identity could not be kept in its outbox");
                    }
                }
                self.worker_id = link.worker_id.clone();
                self.backoff = self.cfg.min_backoff;
                self.heartbeat = tokio::time::interval(link.heartbeat);
                self.heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
                let mut ok = true;
                for (key, record) in self.outbox.pending() {
                    ok &= link.send(Outgoing::Record { key, record });
                }
                self.generation += 1;
                self.uploading = None;
                self.uploads = self.outbox.pending_trajectories().map(|(k, _)| k.clone()).collect();
                let free = self.slots.saturating_sub(self.running.len() as u32);
                if let Some(h) = &mut self.hold {
                    h.owed = free;
                    ok &= link.send(Outgoing::Heartbeat { running: &keys, unavailable: h.unavailable.as_deref() });
                } else if self.drain.is_none() && free > 0 {
                    ok &= link.send(Outgoing::Ready { credits: free });
                }
                tracing::info!(resent = self.outbox.len(), running = self.running.len(), "session open");
                self.connected_once = true;
                // A queue that filled already: try again at once.
                if ok {
                    self.link = Some(link);
                    self.next_upload();
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
            Done::Finished(key, ended) => {
                // The slot is free now; the record follows once it is on disk.
                self.running.remove(&key);
                self.storing += 1;
                self.summary.attempts += 1;
                match ended {
                    Ended::Measured => self.browser_errors = 0,
                    Ended::Errored => {}
                    Ended::BrowserFailed(detail) => self.browser_failed(detail),
                }
                match &mut self.hold {
                    Some(h) => h.owed += 1,
                    None if self.drain.is_none() => self.send(Outgoing::Ready { credits: 1 }),
                    None => {}
                }
            }
            Done::Stored(key, mut record, result) => {
                self.storing = self.storing.saturating_sub(1);
                let traced = match result {
                    Ok(traced) => traced,
                    Err(e) => {
                        tracing::error!(error = %e, "record could not be made durable; sending it anyway");
                        false
                    }
                };
                // Not part of the record's identity: which worker ran it, named once the coordinator has.
                if record.worker.is_none() && !self.worker_id.is_empty() {
                    record.worker = Some(self.worker_id.clone());
                }
                let record = *record;
                self.send(Outgoing::Record { key: &key, record: &record });
                self.outbox.insert(key.clone(), record);
                if traced {
                    self.outbox.insert_trajectory(key.clone());
                    self.uploads.push_back(key);
                    self.next_upload();
                }
            }
            Done::Uploaded(generation, key, how) => {
                if generation != self.generation || self.uploading.as_ref() != Some(&key) {
                    return;
                }
                self.uploading = None;
                match how {
                    Upload::Sent => {}
                    Upload::LinkDown => return,
                    Upload::Unreadable => match self.outbox.quarantine_trajectory(&key) {
                        Ok(moved) => tracing::error!(quarantined = ?moved, "unreadable trajectory set aside"),
                        Err(e) => tracing::error!(error = %e, "unreadable trajectory could not be set aside"),
                    },
                }
                self.next_upload();
            }
            Done::Checked(epoch, result) => self.on_checked(epoch, result),
        }
    }

    /// An attempt's browser failed: the worker holds its free slots and checks at once that a browser starts;
    /// past [`BROKEN_AFTER`] failures in a row it is unavailable whatever the check says.
    fn browser_failed(&mut self, detail: String) {
        self.browser_errors += 1;
        let hold = self.hold.get_or_insert_with(|| Hold {
            unavailable: None,
            owed: 0,
            checking: false,
            next_check: Instant::now(),
            epoch: 0,
        });
        if self.browser_errors >= BROKEN_AFTER && hold.unavailable.is_none() {
            let reason = format!("browser: {detail}");
            tracing::error!(errors = self.browser_errors, %reason, "the browser keeps failing; taking no new work until it starts again");
            self.declare_unavailable(reason);
        }
        self.maybe_check();
    }

    /// The worker takes no work for `reason`: it is not ready, its heartbeats say why, and its browser is checked
    /// again after [`RECHECK_EVERY`] (a check already running is stale).
    fn declare_unavailable(&mut self, reason: String) {
        let Some(h) = &mut self.hold else { return };
        self.cfg.health.set_unavailable(Some(reason.clone()));
        h.unavailable = Some(reason);
        h.epoch += 1;
        h.next_check = Instant::now() + RECHECK_EVERY;
        self.on_heartbeat();
    }

    /// A check of the executor ended: on success the withheld credits are offered again.
    fn on_checked(&mut self, epoch: u64, result: Result<(), PreflightError>) {
        let Some(h) = &mut self.hold else { return };
        h.checking = false;
        if epoch != h.epoch {
            return;
        }
        match result {
            Ok(()) => {
                let (owed, was_unavailable) = (h.owed, h.unavailable.is_some());
                self.hold = None;
                if was_unavailable {
                    self.browser_errors = 0;
                    self.cfg.health.set_unavailable(None);
                    tracing::info!(credits = owed, "the browser starts again; taking work");
                    self.on_heartbeat();
                } else {
                    tracing::info!(credits = owed, "a browser starts after an attempt's browser failed; taking work");
                }
                if self.drain.is_none() && owed > 0 {
                    self.send(Outgoing::Ready { credits: owed });
                }
            }
            Err(why) => {
                let reason = format!("browser: {why}");
                if h.unavailable.is_none() {
                    tracing::error!(%reason, "the browser does not start; taking no new work until it starts again");
                } else {
                    tracing::warn!(%reason, "the browser still does not start");
                }
                self.declare_unavailable(reason);
            }
        }
    }

    /// Starts a check of the executor when the worker holds its slots and one is due.
    fn maybe_check(&mut self) {
        let Some(h) = &mut self.hold else { return };
        if h.checking || Instant::now() < h.next_check {
            return;
        }
        h.checking = true;
        let (tx, check, epoch) = (self.done_tx.clone(), self.executor.check(), h.epoch);
        self.attempts.spawn("executor-check", move |_| async move {
            let _ = tx.send(Done::Checked(epoch, check.await)).await;
        });
    }

    /// Starts sending the next waiting trajectory, when the link is up and none is on its way.
    fn next_upload(&mut self) {
        if self.uploading.is_some() {
            return;
        }
        let Some(link) = &self.link else { return };
        let uploader: Uploader = link.uploader();
        while let Some(key) = self.uploads.pop_front() {
            let Some(path) = self.outbox.trajectory_path(&key).cloned() else { continue };
            self.uploading = Some(key.clone());
            let (tx, generation, center) = (self.done_tx.clone(), self.generation, self.attempts.clone());
            self.attempts.spawn("trajectory-upload", move |_| async move {
                let read = center.spawn_blocking("outbox-read", move || outbox::read_trajectory(&path)).await;
                let how = match read {
                    Ok(Ok(blob)) if uploader.send(&key, &blob).await => Upload::Sent,
                    Ok(Ok(_)) => Upload::LinkDown,
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "trajectory unreadable in the outbox; not sent");
                        Upload::Unreadable
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the outbox reader task failed");
                        Upload::LinkDown
                    }
                };
                let _ = tx.send(Done::Uploaded(generation, key, how)).await;
            });
            return;
        }
    }

    fn on_heartbeat(&mut self) {
        let running: Vec<AttemptKey> = self.running.keys().cloned().collect();
        let unavailable = self.hold.as_ref().and_then(|h| h.unavailable.clone());
        self.send(Outgoing::Heartbeat { running: &running, unavailable: unavailable.as_deref() });
        self.maybe_check();
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
                self.outbox.remove_trajectory(&key)?;
            }
            Incoming::TrajectoryAck(key) => {
                self.outbox.remove_trajectory(&key)?;
            }
            Incoming::TrajectoryReject { key, reason, too_large } => {
                let moved = self.outbox.quarantine_trajectory(&key)?;
                tracing::error!(sweep = %key.sweep, unit = key.unit, attempt = key.attempt, %reason, too_large,
                    quarantined = ?moved, "coordinator refused a trajectory; quarantined");
            }
        }
        Ok(())
    }

    /// Runs one attempt as a task of the session: it reports the free slot,
    /// writes the record to the outbox off the async threads, then reports it.
    fn start(&mut self, key: AttemptKey, spec: skillshift_common::AttemptSpec) {
        let token = self.attempts.token().child_token();
        let attempt = self.executor.execute_traced(spec, token.clone());
        let tx = self.done_tx.clone();
        let dir = self.outbox.dir().to_path_buf();
        let center = self.attempts.clone();
        let k = key.clone();
        let metrics = WorkerMetrics::global();
        metrics.attempt_started();
        self.attempts.spawn("attempt", move |_| async move {
            // The executor ends the attempt when its own token (a child of this one) is cancelled.
            let (record, trajectory) = attempt.await;
            metrics.attempt_finished(record.outcome.map_or("error", |o| o.as_str()));
            let _ = tx.send(Done::Finished(k.clone(), Ended::of(&record))).await;
            // Compression and fsync off the async threads: the loop keeps serving while the disk works.
            let (k2, d2, fallback) = (k.clone(), dir.clone(), record.clone());
            let span = skillshift_telemetry::spans::deliver(&record.uid.to_string());
            let written_span = span.clone();
            let result = center
                .spawn_blocking("outbox-write", move || {
                    let (record, blob) = encode(record, trajectory);
                    let bytes = blob.as_ref().map_or(0, Vec::len);
                    skillshift_telemetry::spans::record_delivered(&written_span, bytes);
                    let written = outbox::write_entry(&d2, &k2, &record, blob.as_deref()).map(|()| blob.is_some());
                    (record, written)
                })
                .instrument(span)
                .await;
            let (record, result) = result.unwrap_or_else(|e| {
                let message = format!("the outbox writer task failed: {e}");
                (fallback, Err(OutboxError::Corrupt { path: dir, message }))
            });
            let _ = tx.send(Done::Stored(k, Box::new(record), result)).await;
        });
        self.running.insert(key, token);
    }
}

/// The trajectory's blob, within [`MAX_BLOB_BYTES`]: without its screenshots if it must; when even
/// that is too large, none, and the record becomes an `error` that says so.
fn encode(mut record: Record, trajectory: Option<Blob>) -> (Record, Option<Vec<u8>>) {
    let Some(mut blob) = trajectory else { return (record, None) };
    for attempt in 0..2 {
        match blob.encode() {
            // Within the coordinator's bounds, compressed and inflated part by part, or it would be refused.
            Ok(bytes) => match blob.within(&Limits::DEFAULT) {
                Ok(()) if bytes.len() <= MAX_BLOB_BYTES => return (record, Some(bytes)),
                Ok(()) => tracing::warn!(bytes = bytes.len(), attempt, "trajectory past the blob limit"),
                Err(e) => tracing::warn!(error = %e, attempt, "trajectory past the blob limit"),
            },
            Err(e) => {
                tracing::error!(error = %e, "trajectory could not be encoded");
                return (record, None);
            }
        }
        blob.screenshots.clear();
        blob.trajectory.steps.iter_mut().for_each(|s| s.screenshot = None);
    }
    record.success = None;
    record.outcome = Some(Outcome::Error);
    record.error = Some(TRAJECTORY_TOO_LARGE.to_string());
    record.failure_category = Some(TRAJECTORY_TOO_LARGE.to_string());
    (record, None)
}

/// The link's next message; pending forever without a link.
async fn next(link: &mut Option<Link>) -> Result<Received, LinkError> {
    match link {
        Some(l) => l.next().await,
        None => std::future::pending().await,
    }
}
