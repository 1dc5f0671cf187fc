//! The coordinator's state machine: sweeps, units, attempts, workers and
//! leases, driven by one input at a time with the time passed in.
//!
//! The engine does no I/O. Each input updates memory and appends to two
//! outboxes: store writes ([`StoreOp`]) and effects (messages to workers,
//! replies to callers). The driver (`server::drive`) applies a batch of
//! inputs, writes and flushes the store once (group commit), and only then
//! performs the effects, so nothing is acknowledged or assigned before it is
//! durable. Nor does it read anything from outside: the monotonic time comes
//! with each input, the wall clock and fresh ids from the [`Clock`] and
//! [`Ids`] given to [`Engine::new`].
//!
//! This module is the actor's core: its inputs and outputs and the dispatch
//! of one input. The parts, by job:
//!
//! * `units`: the unit rule (`docs/formats.md`, from records to numbers):
//!   one sweep's units, attempts and queues.
//! * `workers`: the worker registry (identities and their secrets, expiry),
//!   sessions, credits and worker loss.
//! * `ingest`: a worker's record checked against its attempt and its lease
//!   holder, and stored once.
//! * `assign`: the scheduler's picks turned into attempts, leases and messages.
//! * `control`: control commands and the cost budget.
//! * `progress`: a sweep's status and ETA.
//! * `restore`: the engine rebuilt from the store after a restart.
//! * `spans`: the attempt and sweep spans.
//! * `sources`: the wall clock and the id source, real and fake.

mod assign;
mod control;
mod ingest;
mod progress;
mod restore;
mod sources;
mod spans;
mod units;
mod workers;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skillshift_common::ids::{AttemptKey, SweepId};
use skillshift_common::{AttemptSpec, Record, Site, Version};
use skillshift_telemetry::metrics::CoordinatorMetrics;
use tokio::sync::{mpsc, oneshot};

pub use self::ingest::{blob_id, IngestError, Mismatch};
pub use self::sources::{Clock, Ids, ManualClock, RandomIds, SequentialIds, SystemClock};
use self::spans::Spans;
use self::units::SweepRun;
use self::workers::{Names, WorkerEntry};
use crate::lease::Leases;
use crate::limits::Limits;
use crate::planner::SweepSpec;
use crate::status::{SweepStatus, WorkerInfo};
use crate::store::{StoreOp, StoredTrajectory};

/// Why an attempt ended without a measurement because its worker vanished.
pub const WORKER_LOST: &str = "worker_lost";
/// The error reason of an attempt stopped by a sweep cancel; it does not use up a retry.
pub const CANCELLED: &str = "cancelled";
/// Why an attempt ended without a measurement because its record was too large to accept.
pub const RECORD_TOO_LARGE: &str = "record_too_large";

/// Why the engine refused a request; the services map each kind to one status code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Malformed, or past a bound of its own (`invalid_argument`).
    #[error("{0}")]
    Invalid(String),
    /// The coordinator holds as much as it may (`resource_exhausted`).
    #[error("{0}")]
    Full(String),
    /// The worker id is not registered, or the secret does not match (`failed_precondition`).
    #[error("{0}")]
    NotRegistered(String),
}

/// A message from a connected worker, already converted from the wire.
#[derive(Debug, Clone)]
pub enum WorkerEvent {
    Ready(u32),
    /// The attempts it runs, and why it takes no new work, when it does not.
    Heartbeat {
        running: Vec<AttemptKey>,
        unavailable: Option<String>,
    },
    Progress(AttemptKey),
    Record(AttemptKey, Box<Record>),
    /// A record whose encoded size (bytes) is past the limit; not converted.
    RecordTooLarge(AttemptKey, usize),
    AckRequest(Vec<AttemptKey>),
    /// An attempt's whole trajectory, with the key it names itself by.
    Trajectory(AttemptKey, Box<skillshift_common::trajectory::Key>, Arc<StoredTrajectory>),
}

/// What [`Input::UploadCheck`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upload {
    /// The attempt has no trajectory yet: go on.
    New,
    /// The attempt already holds this blob (a resend after a lost ack): acknowledge, store nothing.
    Same,
}

/// A message to a worker, converted to the wire at the edge.
#[derive(Debug, Clone)]
pub enum Outbound {
    Assign(AttemptKey, Box<AttemptSpec>),
    Cancel(AttemptKey),
    Drain(String),
    Ack(Vec<AttemptKey>),
    Reject(AttemptKey, String),
    /// The attempt's trajectory is durable.
    TrajectoryAck(AttemptKey),
    /// The attempt's trajectory is refused for good (`true`: past the size limit).
    TrajectoryReject(AttemptKey, String, bool),
    /// Ends the session with an `invalid_argument` status.
    Fatal(String),
}

/// One worker session's outbound half.
#[derive(Debug, Clone)]
pub struct Conn {
    pub id: u64,
    pub tx: mpsc::Sender<Outbound>,
}

pub enum ControlCmd {
    Submit(Box<SweepSpec>, oneshot::Sender<Result<SweepId, Refused>>),
    Get(SweepId, oneshot::Sender<Option<SweepStatus>>),
    List(oneshot::Sender<Vec<SweepStatus>>),
    Cancel(SweepId, oneshot::Sender<Option<SweepStatus>>),
    Resume(SweepId, oneshot::Sender<Option<SweepStatus>>),
    Workers(oneshot::Sender<Vec<WorkerInfo>>),
}

pub enum Input {
    /// Answered with the worker's credential (`<id>.<secret>`) once its
    /// registration is durable.
    Register {
        name: String,
        hosts: Vec<(Site, Version)>,
        /// The worker makes its records up (`--simulate`): it runs only simulated sweeps.
        simulated: bool,
        slots: u32,
        /// The credential of an earlier registration, to keep that identity.
        previous: Option<String>,
        reply: oneshot::Sender<Result<String, Refused>>,
    },
    /// A session's hello; answered with the worker's public id.
    Connect {
        credential: String,
        conn: Conn,
        running: Vec<AttemptKey>,
        free_slots: u32,
        reply: oneshot::Sender<Result<String, Refused>>,
    },
    /// A message of a session [`Input::Connect`] accepted; `worker` is the public id.
    Worker {
        worker: String,
        conn: u64,
        event: WorkerEvent,
    },
    Disconnect {
        worker: String,
        conn: u64,
    },
    /// May `worker` upload a trajectory for `key`? Asked by the session reader before it keeps
    /// any of a blob (`blob: None`) and, with the blob's id ([`ingest::blob_id`]), before it
    /// inflates the whole blob. Answered at once, writing nothing.
    UploadCheck {
        worker: String,
        key: AttemptKey,
        blob: Option<u64>,
        reply: oneshot::Sender<Result<Upload, IngestError>>,
    },
    Control(ControlCmd),
    Tick,
    /// Stop assigning and ask every worker to drain.
    Drain,
    /// Drop every session (shutdown): their streams end, workers reconnect later.
    CloseSessions,
    /// Handled by the driver: flush and stop.
    Shutdown,
}

/// Something to do once the batch's writes are durable.
pub enum Effect {
    Send { worker: String, conn: Conn, msg: Outbound },
    Reply(Box<dyn FnOnce() + Send>),
}

pub struct Engine {
    limits: Limits,
    leases: Leases,
    heartbeat: Duration,
    sweeps: Vec<SweepRun>,
    by_id: HashMap<SweepId, usize>,
    workers: BTreeMap<String, WorkerEntry>,
    /// Worker ids as numbers, for every attempt's holder.
    names: Names,
    /// Units of every sweep held, against [`Limits::max_units_total`].
    units_held: u64,
    draining: bool,
    ops: Vec<StoreOp>,
    effects: Vec<Effect>,
    acks: HashMap<u64, (String, Conn, Vec<AttemptKey>)>,
    /// Telemetry: the spans of running attempts and sweeps; the coordinator's counters.
    spans: Spans,
    metrics: CoordinatorMetrics,
    clock: Box<dyn Clock>,
    ids: Box<dyn Ids>,
}

impl Engine {
    /// An empty engine whose leases last `ttl`; it reads the wall clock from
    /// `clock` and takes sweep and worker ids from `ids`.
    pub fn new(ttl: Duration, clock: impl Clock + 'static, ids: impl Ids + 'static) -> Engine {
        Engine::with_limits(ttl, Limits::default(), clock, ids)
    }

    /// As [`Engine::new`], enforcing `limits` instead of the defaults.
    pub fn with_limits(ttl: Duration, limits: Limits, clock: impl Clock + 'static, ids: impl Ids + 'static) -> Engine {
        Engine {
            limits,
            leases: Leases::new(ttl),
            heartbeat: (ttl / 6).max(Duration::from_millis(50)),
            sweeps: Vec::new(),
            by_id: HashMap::new(),
            workers: BTreeMap::new(),
            names: Names::default(),
            units_held: 0,
            draining: false,
            ops: Vec::new(),
            effects: Vec::new(),
            acks: HashMap::new(),
            spans: Spans::default(),
            metrics: CoordinatorMetrics::new().0,
            clock: Box::new(clock),
            ids: Box::new(ids),
        }
    }

    /// Counts into `metrics` (the ones `/metrics` serves) instead of a private set.
    pub fn set_metrics(&mut self, metrics: CoordinatorMetrics) {
        self.metrics = metrics;
    }

    pub fn metrics(&self) -> &CoordinatorMetrics {
        &self.metrics
    }

    pub fn ttl(&self) -> Duration {
        self.leases.ttl()
    }

    /// How often workers should send a heartbeat.
    pub fn heartbeat_interval(&self) -> Duration {
        self.heartbeat
    }

    /// Takes the pending store writes and effects of the inputs handled so far.
    pub fn take_outputs(&mut self) -> (Vec<StoreOp>, Vec<Effect>) {
        for (_, (worker, conn, keys)) in self.acks.drain() {
            self.effects.push(Effect::Send { worker, conn, msg: Outbound::Ack(keys) });
        }
        (std::mem::take(&mut self.ops), std::mem::take(&mut self.effects))
    }

    pub fn handle(&mut self, input: Input, now: Instant) {
        match input {
            Input::Register { name, hosts, simulated, slots, previous, reply } => {
                let result = self.register(name, hosts, simulated, slots, previous, now);
                // A new identity is answered once its row is durable.
                self.effects.push(Effect::Reply(Box::new(move || {
                    let _ = reply.send(result);
                })));
            }
            Input::Connect { credential, conn, running, free_slots, reply } => {
                let _ = reply.send(self.connect(&credential, conn, running, free_slots, now));
            }
            Input::Worker { worker, conn, event } => self.worker_event(&worker, conn, event, now),
            Input::Disconnect { worker, conn } => self.disconnect(&worker, conn),
            Input::UploadCheck { worker, key, blob, reply } => {
                let _ = reply.send(self.upload_check(&worker, &key, blob));
            }
            Input::Control(cmd) => self.control(cmd, now),
            Input::Tick => self.tick(now),
            Input::Shutdown => {}
            Input::CloseSessions => self.close_sessions(),
            Input::Drain => self.drain(),
        }
    }

    fn tick(&mut self, now: Instant) {
        self.expire_leases(now);
        self.expire_workers(now);
        // Telemetry: a sweep's span ends once nothing in it is queued or running.
        let (by_id, sweeps) = (&self.by_id, &self.sweeps);
        self.spans.end_idle_sweeps(|id| by_id.get(id).is_none_or(|&i| sweeps[i].idle()));
    }
}

#[cfg(test)]
mod tests;
