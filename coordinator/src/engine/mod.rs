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
//! * `workers`: the worker registry, sessions, credits and worker loss.
//! * `ingest`: a worker's record checked against its attempt and stored once.
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
use std::time::{Duration, Instant};

use skillshift_common::{AttemptSpec, Record, Site, Version};
use skillshift_proto::convert::AttemptKey;
use skillshift_telemetry::metrics::CoordinatorMetrics;
use tokio::sync::{mpsc, oneshot};

pub use self::sources::{Clock, Ids, ManualClock, RandomIds, SequentialIds, SystemClock};
use self::spans::Spans;
use self::units::SweepRun;
use self::workers::WorkerEntry;
use crate::lease::Leases;
use crate::planner::SweepSpec;
use crate::status::{SweepStatus, WorkerInfo};
use crate::store::StoreOp;

/// Why an attempt ended without a measurement because its worker vanished.
pub const WORKER_LOST: &str = "worker_lost";
/// The error reason of an attempt stopped by a sweep cancel; it does not use up a retry.
pub const CANCELLED: &str = "cancelled";

/// A message from a connected worker, already converted from the wire.
#[derive(Debug, Clone)]
pub enum WorkerEvent {
    Ready(u32),
    Heartbeat(Vec<AttemptKey>),
    Progress(AttemptKey),
    Record(AttemptKey, Box<Record>),
    AckRequest(Vec<AttemptKey>),
}

/// A message to a worker, converted to the wire at the edge.
#[derive(Debug, Clone)]
pub enum Outbound {
    Assign(AttemptKey, Box<AttemptSpec>),
    Cancel(AttemptKey),
    Drain(String),
    Ack(Vec<AttemptKey>),
    Reject(AttemptKey, String),
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
    Submit(Box<SweepSpec>, oneshot::Sender<Result<String, String>>),
    Get(String, oneshot::Sender<Option<SweepStatus>>),
    List(oneshot::Sender<Vec<SweepStatus>>),
    Cancel(String, oneshot::Sender<Option<SweepStatus>>),
    Resume(String, oneshot::Sender<Option<SweepStatus>>),
    Workers(oneshot::Sender<Vec<WorkerInfo>>),
}

pub enum Input {
    Register {
        name: String,
        hosts: Vec<(Site, Version)>,
        slots: u32,
        previous_id: Option<String>,
        reply: oneshot::Sender<String>,
    },
    Connect {
        worker: String,
        conn: Conn,
        running: Vec<AttemptKey>,
        free_slots: u32,
    },
    Worker {
        worker: String,
        conn: u64,
        event: WorkerEvent,
    },
    Disconnect {
        worker: String,
        conn: u64,
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
    leases: Leases,
    heartbeat: Duration,
    sweeps: Vec<SweepRun>,
    by_id: HashMap<String, usize>,
    workers: BTreeMap<String, WorkerEntry>,
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
        Engine {
            leases: Leases::new(ttl),
            heartbeat: (ttl / 6).max(Duration::from_millis(50)),
            sweeps: Vec::new(),
            by_id: HashMap::new(),
            workers: BTreeMap::new(),
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
            Input::Register { name, hosts, slots, previous_id, reply } => {
                let id = self.register(name, hosts, slots, previous_id, now);
                let _ = reply.send(id);
            }
            Input::Connect { worker, conn, running, free_slots } => {
                self.connect(worker, conn, running, free_slots, now)
            }
            Input::Worker { worker, conn, event } => self.worker_event(&worker, conn, event, now),
            Input::Disconnect { worker, conn } => self.disconnect(&worker, conn),
            Input::Control(cmd) => self.control(cmd, now),
            Input::Tick => self.tick(now),
            Input::Shutdown => {}
            Input::CloseSessions => self.close_sessions(),
            Input::Drain => self.drain(),
        }
    }

    fn tick(&mut self, now: Instant) {
        self.expire_leases(now);
        // Telemetry: a sweep's span ends once nothing in it is queued or running.
        let (by_id, sweeps) = (&self.by_id, &self.sweeps);
        self.spans.end_idle_sweeps(|id| by_id.get(id).is_none_or(|&i| sweeps[i].idle()));
    }
}

#[cfg(test)]
mod tests;
