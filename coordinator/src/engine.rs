//! The coordinator's state machine: sweeps, units, attempts, workers and
//! leases, driven by one input at a time with the time passed in.
//!
//! The engine does no I/O. Each input updates memory and appends to two
//! outboxes: store writes ([`StoreOp`]) and effects (messages to workers,
//! replies to callers). The driver (`server::drive`) applies a batch of
//! inputs, writes and flushes the store once (group commit), and only then
//! performs the effects, so nothing is acknowledged or assigned before it is
//! durable.
//!
//! Unit outcome rule (formats §4): a unit is done when one of its attempts
//! has a non-`error` record (the lowest such attempt is its outcome, decided
//! at report time), invalid when it has more than `max_retries` `error`
//! attempts and none running, and queued again otherwise.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use skillshift_common::{AttemptSpec, Condition, Outcome, Record, Site, Version};
use skillshift_proto::convert::AttemptKey;
use skillshift_telemetry::metrics::CoordinatorMetrics;
use skillshift_telemetry::{context as trace_context, spans};
use tokio::sync::{mpsc, oneshot};

use crate::lease::{Holder, Leases};
use crate::planner::{self, SweepSpec, Unit};
use crate::scheduler::{self, sv_index, SweepView, WorkerView, SV_COUNT};
use crate::status::{AttemptCounts, CellProgress, SweepState, SweepStatus, UnitCounts, WorkerInfo};
use crate::store::{AttemptRow, StoreOp, StoredRecord, SweepMeta, SweepRows};

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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    Running,
    Recorded { outcome: Outcome, synthetic: bool, retry_counted: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnitStatus {
    Queued,
    Running,
    Done {
        success: bool,
    },
    Invalid,
    /// Cancelled before it finished; resumable.
    Held,
}

struct SweepRun {
    meta: SweepMeta,
    units: Vec<Unit>,
    slots: Vec<Vec<Slot>>,
    status: Vec<UnitStatus>,
    queues: [VecDeque<u32>; SV_COUNT],
    queued: [u32; SV_COUNT],
    running: u32,
    resolved: u64,
    first_assign: Option<Instant>,
    resolved_at_first: u64,
    /// LLM cost of the stored records, in USD.
    spent: f64,
}

struct WorkerEntry {
    name: String,
    hosts: Vec<(Site, Version)>,
    mask: u8,
    slots: u32,
    conn: Option<Conn>,
    credits: u32,
    affinity: Option<usize>,
    last_seen: Instant,
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
    /// Telemetry: the span of each running attempt (ends with its record) and
    /// of each sweep running in this process; the coordinator's counters.
    attempt_spans: HashMap<AttemptKey, tracing::Span>,
    sweep_spans: HashMap<String, tracing::Span>,
    metrics: CoordinatorMetrics,
}

fn wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}-{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

impl Engine {
    pub fn new(ttl: Duration) -> Engine {
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
            attempt_spans: HashMap::new(),
            sweep_spans: HashMap::new(),
            metrics: CoordinatorMetrics::new().0,
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

    /// Rebuilds state from the store after a restart: every attempt that was
    /// running becomes an orphan lease that a reconnecting worker may claim.
    pub fn restore(&mut self, rows: Vec<SweepRows>, now: Instant) {
        let mut rows = rows;
        rows.sort_by_key(|r| (r.meta.created_ms, r.meta.id.clone()));
        for r in rows {
            let mut slots: Vec<Vec<Slot>> = vec![Vec::new(); r.units.len()];
            let mut records: HashMap<(u32, u32), StoredRecord> = HashMap::new();
            let mut spent = 0.0;
            for (k, rec) in r.records {
                spent += cost_of(&rec.record);
                records.insert((k.unit, k.attempt), rec);
            }
            let mut max_attempt: HashMap<u32, u32> = HashMap::new();
            for (k, _) in &r.attempts {
                let e = max_attempt.entry(k.unit).or_insert(k.attempt);
                *e = (*e).max(k.attempt);
            }
            for (unit, attempt) in records.keys() {
                let e = max_attempt.entry(*unit).or_insert(*attempt);
                *e = (*e).max(*attempt);
            }
            for (unit, max) in max_attempt {
                let Some(unit_slots) = slots.get_mut(unit as usize) else { continue };
                for a in 0..=max {
                    let slot = match records.get(&(unit, a)) {
                        Some(rec) => recorded(rec),
                        None => {
                            self.leases.orphan(AttemptKey { sweep: r.meta.id.clone(), unit, attempt: a }, now);
                            Slot::Running
                        }
                    };
                    unit_slots.push(slot);
                }
            }
            let status = vec![UnitStatus::Held; r.units.len()];
            let idx = self.sweeps.len();
            self.by_id.insert(r.meta.id.clone(), idx);
            self.sweeps.push(SweepRun::new(r.meta, r.units, slots, status));
            let s = &mut self.sweeps[idx];
            s.spent = spent;
            s.running = s.slots.iter().flatten().filter(|x| **x == Slot::Running).count() as u32;
            for u in 0..s.units.len() {
                s.resolve(u as u32);
            }
            s.resolved_at_first = s.resolved;
        }
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
            Input::CloseSessions => {
                for w in self.workers.values_mut() {
                    w.conn = None;
                    w.credits = 0;
                }
            }
            Input::Drain => {
                self.draining = true;
                for (id, w) in &self.workers {
                    if let Some(conn) = &w.conn {
                        let msg = Outbound::Drain("coordinator is shutting down".into());
                        self.effects.push(Effect::Send { worker: id.clone(), conn: conn.clone(), msg });
                    }
                }
            }
        }
    }

    fn register(
        &mut self,
        name: String,
        hosts: Vec<(Site, Version)>,
        slots: u32,
        previous_id: Option<String>,
        now: Instant,
    ) -> String {
        let id = previous_id
            .filter(|p| p.len() <= 64 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
            .unwrap_or_else(|| new_id("w"));
        let mask = hosts.iter().fold(0u8, |m, (s, v)| m | 1 << sv_index(*s, *v));
        let entry = self.workers.entry(id.clone()).or_insert_with(|| WorkerEntry {
            name: name.clone(),
            hosts: Vec::new(),
            mask: 0,
            slots,
            conn: None,
            credits: 0,
            affinity: None,
            last_seen: now,
        });
        entry.name = name;
        entry.hosts = hosts;
        entry.mask = mask;
        entry.slots = slots;
        entry.last_seen = now;
        tracing::info!(worker = %id, slots, "worker registered");
        id
    }

    fn connect(&mut self, worker: String, conn: Conn, running: Vec<AttemptKey>, free_slots: u32, now: Instant) {
        let Some(w) = self.workers.get_mut(&worker) else {
            let msg = Outbound::Fatal(format!("unknown worker id '{worker}': register first"));
            self.effects.push(Effect::Send { worker, conn, msg });
            return;
        };
        if let Some(old) = w.conn.replace(conn) {
            // A newer session replaces an older one; the old stream ends.
            tracing::info!(worker = %worker, old = old.id, "worker session replaced");
        }
        w.credits = free_slots.min(w.slots);
        w.last_seen = now;
        self.leases.renew(&worker, now);
        let mut attached = 0;
        for key in &running {
            if self.leases.attach(key, &worker, now) {
                attached += 1;
            }
        }
        tracing::info!(worker = %worker, running = running.len(), attached, "worker connected");
    }

    fn disconnect(&mut self, worker: &str, conn: u64) {
        let Some(w) = self.workers.get_mut(worker) else { return };
        if w.conn.as_ref().map(|c| c.id) != Some(conn) {
            return;
        }
        w.conn = None;
        w.credits = 0;
        let lost = self.leases.release_worker(worker);
        tracing::warn!(worker, lost = lost.len(), "worker stream ended; its leases are released");
        for key in lost {
            self.metrics.lease_expired("stream_closed");
            self.lose(&key, worker);
        }
    }

    fn tick(&mut self, now: Instant) {
        for (worker, keys) in self.leases.expire(now) {
            let who = worker.clone().unwrap_or_else(|| "unknown (coordinator restarted)".into());
            tracing::warn!(worker = %who, lost = keys.len(), "leases expired");
            if let Some(w) = worker.as_ref().and_then(|w| self.workers.get_mut(w)) {
                w.credits = 0;
            }
            for key in keys {
                self.metrics.lease_expired("ttl");
                self.lose(&key, &who);
            }
        }
        // Telemetry: a sweep's span ends once nothing in it is queued or running.
        let idle: Vec<String> = self
            .sweep_spans
            .keys()
            .filter(|id| {
                self.by_id.get(*id).is_none_or(|&i| {
                    let s = &self.sweeps[i];
                    s.running == 0 && s.queued.iter().all(|q| *q == 0)
                })
            })
            .cloned()
            .collect();
        for id in idle {
            if let Some(span) = self.sweep_spans.remove(&id) {
                spans::record_outcome(&span, "idle", None);
            }
        }
    }

    /// The attempt's worker is gone: record `error`/`worker_lost` and let the
    /// unit's rule decide whether it runs again.
    fn lose(&mut self, key: &AttemptKey, worker: &str) {
        let Some(&idx) = self.by_id.get(&key.sweep) else { return };
        let s = &mut self.sweeps[idx];
        let Some(slot) = s.slots.get_mut(key.unit as usize).and_then(|v| v.get_mut(key.attempt as usize)) else {
            return;
        };
        if *slot != Slot::Running {
            return;
        }
        *slot = Slot::Recorded { outcome: Outcome::Error, synthetic: true, retry_counted: true };
        s.running = s.running.saturating_sub(1);
        let unit = s.units[key.unit as usize];
        let t = &s.meta.spec.treatments[unit.treatment as usize];
        let mut rec = Record::new(unit.uid(), unit.condition);
        rec.outcome = Some(Outcome::Error);
        rec.error = Some(WORKER_LOST.into());
        rec.treatment = Some(t.name.clone());
        rec.rep = Some(unit.rep);
        rec.attempt = Some(key.attempt);
        rec.sweep = Some(key.sweep.clone());
        rec.config_digest = Some(s.meta.config_digest.clone());
        rec.worker = Some(worker.to_string());
        if let Some(span) = self.attempt_spans.remove(key) {
            spans::record_outcome(&span, Outcome::Error.as_str(), Some(WORKER_LOST));
            rec.trace_id = trace_context::trace_id(&span);
        }
        self.ops.push(StoreOp::Record(key.clone(), StoredRecord { synthetic: true, record: rec }));
        s.resolve(key.unit);
    }

    fn worker_event(&mut self, worker: &str, conn: u64, event: WorkerEvent, now: Instant) {
        let Some(current) = self.workers.get(worker).and_then(|w| w.conn.clone()) else { return };
        if current.id != conn {
            // A message from a replaced session: its records still count (acked on
            // the current session, the worker matches acks by key); nothing else does.
            if let WorkerEvent::Record(key, rec) = event {
                self.ingest(worker, &current, key, *rec);
            }
            return;
        }
        self.leases.renew(worker, now);
        let Some(w) = self.workers.get_mut(worker) else { return };
        w.last_seen = now;
        match event {
            WorkerEvent::Ready(n) => w.credits = (w.credits + n).min(w.slots),
            WorkerEvent::Heartbeat(running) => {
                for key in &running {
                    self.leases.attach(key, worker, now);
                }
            }
            WorkerEvent::Progress(_) => {}
            WorkerEvent::Record(key, rec) => self.ingest(worker, &current, key, *rec),
            WorkerEvent::AckRequest(keys) => {
                for key in keys {
                    if self.stored_real(&key) {
                        self.ack(worker, &current, key);
                    }
                }
            }
        }
    }

    fn stored_real(&self, key: &AttemptKey) -> bool {
        let Some(&idx) = self.by_id.get(&key.sweep) else { return false };
        let slot = self.sweeps[idx].slots.get(key.unit as usize).and_then(|v| v.get(key.attempt as usize));
        matches!(slot, Some(Slot::Recorded { synthetic: false, .. }))
    }

    fn ack(&mut self, worker: &str, conn: &Conn, key: AttemptKey) {
        let entry = self.acks.entry(conn.id).or_insert_with(|| (worker.to_string(), conn.clone(), Vec::new()));
        entry.2.push(key);
    }

    fn reject(&mut self, worker: &str, conn: &Conn, key: AttemptKey, reason: String) {
        tracing::warn!(worker, sweep = %key.sweep, unit = key.unit, attempt = key.attempt, %reason, "record refused");
        let msg = Outbound::Reject(key, reason);
        self.effects.push(Effect::Send { worker: worker.to_string(), conn: conn.clone(), msg });
    }

    /// Stores a worker's record under its own attempt, idempotently.
    fn ingest(&mut self, worker: &str, conn: &Conn, key: AttemptKey, mut rec: Record) {
        let Some(&idx) = self.by_id.get(&key.sweep) else {
            return self.reject(worker, conn, key.clone(), format!("unknown sweep '{}'", key.sweep));
        };
        let s = &mut self.sweeps[idx];
        let Some(unit) = s.units.get(key.unit as usize).copied() else {
            let reason = format!("sweep '{}' has no unit {}", key.sweep, key.unit);
            return self.reject(worker, conn, key, reason);
        };
        let Some(slot) = s.slots[key.unit as usize].get(key.attempt as usize).copied() else {
            let reason = format!("attempt {} of unit {} was never assigned", key.attempt, key.unit);
            return self.reject(worker, conn, key, reason);
        };
        let treatment = &s.meta.spec.treatments[unit.treatment as usize].name;
        let mismatch = if rec.uid != unit.uid() {
            Some(format!("uid '{}' is not the unit's '{}'", rec.uid, unit.uid()))
        } else if rec.condition != unit.condition {
            Some(format!("condition '{}' is not the unit's '{}'", rec.condition, unit.condition))
        } else if rec.rep() != unit.rep {
            Some(format!("rep {} is not the unit's {}", rec.rep(), unit.rep))
        } else if rec.attempt() != key.attempt {
            Some(format!("attempt {} is not the assignment's {}", rec.attempt(), key.attempt))
        } else if rec.treatment.as_deref().is_some_and(|t| t != treatment) {
            Some(format!("treatment '{}' is not the unit's '{treatment}'", rec.treatment()))
        } else {
            None
        };
        if let Some(reason) = mismatch {
            return self.reject(worker, conn, key, reason);
        }
        if let Slot::Recorded { synthetic: false, .. } = slot {
            // Already durable: a resend after a lost ack. Acknowledge again.
            return self.ack(worker, conn, key);
        }
        rec.treatment = Some(treatment.clone());
        rec.rep = Some(unit.rep);
        rec.attempt = Some(key.attempt);
        rec.sweep = Some(key.sweep.clone());
        if rec.config_digest.is_none() {
            rec.config_digest = Some(s.meta.config_digest.clone());
        }
        if rec.worker.is_none() {
            rec.worker = Some(worker.to_string());
        }
        let outcome = rec.outcome();
        let retry_counted = outcome == Outcome::Error && rec.error.as_deref() != Some(CANCELLED);
        s.slots[key.unit as usize][key.attempt as usize] = Slot::Recorded { outcome, synthetic: false, retry_counted };
        if slot == Slot::Running {
            s.running = s.running.saturating_sub(1);
            self.leases.finish(&key);
        }
        s.resolve(key.unit);
        // Telemetry: the attempt's span ends with its record.
        if let Some(span) = self.attempt_spans.remove(&key) {
            spans::record_outcome(&span, outcome.as_str(), rec.error.as_deref());
        }
        s.spent += cost_of(&rec);
        self.ops.push(StoreOp::Record(key.clone(), StoredRecord { synthetic: false, record: rec }));
        self.ack(worker, conn, key);
        self.check_budget(idx);
    }

    /// Stops a sweep whose stored records have used up its cost budget: no
    /// more units are assigned and its running attempts are cancelled, as by
    /// `sweep cancel`, with the reason kept in its status.
    fn check_budget(&mut self, idx: usize) {
        let s = &self.sweeps[idx];
        let Some(reason) = budget_exhausted(s) else { return };
        if s.meta.cancelled || s.resolved == s.units.len() as u64 {
            return;
        }
        let id = s.meta.id.clone();
        tracing::warn!(sweep = %id, %reason, "sweep stopped");
        self.sweeps[idx].meta.stopped = Some(reason);
        self.set_cancelled(&id, true);
    }

    /// Assigns queued units to workers with credits (the scheduler decides).
    pub fn schedule(&mut self, now: Instant) {
        if self.draining || self.sweeps.is_empty() {
            return;
        }
        let stale = self.heartbeat * 3;
        let ids: Vec<String> = self
            .workers
            .iter()
            .filter(|(_, w)| w.conn.is_some() && w.credits > 0 && now.duration_since(w.last_seen) <= stale)
            .map(|(id, _)| id.clone())
            .collect();
        if ids.is_empty() {
            return;
        }
        let views: Vec<WorkerView> = ids
            .iter()
            .filter_map(|id| self.workers.get(id))
            .map(|w| WorkerView { hosts: w.mask, credits: w.credits, affinity: w.affinity })
            .collect();
        let active: Vec<usize> =
            (0..self.sweeps.len()).filter(|&i| self.sweeps[i].queued.iter().any(|q| *q > 0)).collect();
        if active.is_empty() {
            return;
        }
        let sweeps: Vec<SweepView> = active
            .iter()
            .map(|&i| SweepView { queued: self.sweeps[i].queued, running: self.sweeps[i].running })
            .collect();
        for pick in scheduler::schedule(&views, &sweeps) {
            let worker = &ids[pick.worker];
            let s = &mut self.sweeps[active[pick.sweep]];
            let Some(unit) = s.pop(pick.sv) else { continue };
            let attempt = s.slots[unit as usize].len() as u32;
            s.slots[unit as usize].push(Slot::Running);
            s.status[unit as usize] = UnitStatus::Running;
            s.running += 1;
            s.first_assign.get_or_insert(now);
            let key = AttemptKey { sweep: s.meta.id.clone(), unit, attempt };
            let mut spec = planner::attempt_spec(
                &s.meta.id,
                &s.meta.spec,
                &s.meta.config_digest,
                &s.units[unit as usize],
                attempt,
            );
            self.ops.push(StoreOp::Attempt(key.clone(), AttemptRow { worker: worker.clone(), started_ms: wall_ms() }));
            // Telemetry: the attempt's span opens a new trace, linked to the
            // sweep's span; its W3C context rides in the assignment.
            let sweep_span =
                self.sweep_spans.entry(key.sweep.clone()).or_insert_with(|| spans::sweep(&key.sweep, false));
            let span = spans::attempt(&spec, worker, Some(sweep_span));
            spec.traceparent = trace_context::traceparent(&span);
            self.attempt_spans.insert(key.clone(), span);
            if attempt > 0 {
                self.metrics.unit_reassigned();
            }
            self.leases.grant(key.clone(), worker, now);
            let Some(w) = self.workers.get_mut(worker) else { continue };
            w.credits = w.credits.saturating_sub(1);
            w.affinity = Some(pick.sv);
            if let Some(conn) = w.conn.clone() {
                let msg = Outbound::Assign(key, Box::new(spec));
                self.effects.push(Effect::Send { worker: worker.clone(), conn, msg });
            }
        }
    }

    fn control(&mut self, cmd: ControlCmd, now: Instant) {
        match cmd {
            ControlCmd::Submit(spec, reply) => {
                let result = self.submit(*spec, now);
                self.effects.push(Effect::Reply(Box::new(move || {
                    let _ = reply.send(result);
                })));
            }
            ControlCmd::Get(id, reply) => {
                let _ = reply.send(self.status_of(&id, now));
            }
            ControlCmd::List(reply) => {
                let all = (0..self.sweeps.len()).map(|i| self.status(i, now)).collect();
                let _ = reply.send(all);
            }
            ControlCmd::Cancel(id, reply) => {
                self.set_cancelled(&id, true);
                let st = self.status_of(&id, now);
                self.effects.push(Effect::Reply(Box::new(move || {
                    let _ = reply.send(st);
                })));
            }
            ControlCmd::Resume(id, reply) => {
                // A sweep whose budget is spent stays stopped; its status says why.
                let spent = self.by_id.get(&id).and_then(|&i| budget_exhausted(&self.sweeps[i]));
                if spent.is_none() {
                    self.set_cancelled(&id, false);
                }
                let st = self.status_of(&id, now);
                self.effects.push(Effect::Reply(Box::new(move || {
                    let _ = reply.send(st);
                })));
            }
            ControlCmd::Workers(reply) => {
                let list = self
                    .workers
                    .iter()
                    .map(|(id, w)| WorkerInfo {
                        id: id.clone(),
                        name: w.name.clone(),
                        hosts: w.hosts.clone(),
                        slots: w.slots,
                        connected: w.conn.is_some(),
                        running: self.leases.count(id) as u32,
                        last_seen_ms_ago: now.duration_since(w.last_seen).as_millis() as u64,
                    })
                    .collect();
                let _ = reply.send(list);
            }
        }
    }

    fn submit(&mut self, spec: SweepSpec, now: Instant) -> Result<String, String> {
        let units = planner::plan(&spec).map_err(|e| e.to_string())?;
        let (contract, digest) = planner::contract(&spec);
        let id = new_id("sw");
        let meta = SweepMeta {
            id: id.clone(),
            spec,
            contract,
            config_digest: digest,
            created_ms: wall_ms(),
            cancelled: false,
            stopped: None,
        };
        self.ops.push(StoreOp::Sweep(meta.clone()));
        self.ops.push(StoreOp::Units(id.clone(), units.clone()));
        let n = units.len();
        let mut run = SweepRun::new(meta, units, vec![Vec::new(); n], vec![UnitStatus::Held; n]);
        for u in 0..n {
            run.resolve(u as u32);
        }
        let _ = now;
        self.by_id.insert(id.clone(), self.sweeps.len());
        self.sweeps.push(run);
        tracing::info!(sweep = %id, units = n, "sweep submitted");
        Ok(id)
    }

    fn set_cancelled(&mut self, id: &str, cancelled: bool) {
        let Some(&idx) = self.by_id.get(id) else { return };
        let s = &mut self.sweeps[idx];
        if s.meta.cancelled == cancelled {
            return;
        }
        s.meta.cancelled = cancelled;
        if !cancelled {
            s.meta.stopped = None;
        }
        self.ops.push(StoreOp::Sweep(s.meta.clone()));
        for u in 0..s.units.len() {
            s.resolve(u as u32);
        }
        if cancelled {
            let running: Vec<AttemptKey> = s
                .slots
                .iter()
                .enumerate()
                .flat_map(|(u, v)| v.iter().enumerate().filter(|(_, x)| **x == Slot::Running).map(move |(a, _)| (u, a)))
                .map(|(u, a)| AttemptKey { sweep: id.to_string(), unit: u as u32, attempt: a as u32 })
                .collect();
            for key in running {
                if let Some(Holder::Worker(w)) = self.leases.holder(&key).cloned() {
                    if let Some(conn) = self.workers.get(&w).and_then(|e| e.conn.clone()) {
                        self.effects.push(Effect::Send { worker: w, conn, msg: Outbound::Cancel(key) });
                    }
                }
            }
        }
    }

    fn status_of(&self, id: &str, now: Instant) -> Option<SweepStatus> {
        self.by_id.get(id).map(|&i| self.status(i, now))
    }

    fn status(&self, idx: usize, now: Instant) -> SweepStatus {
        let s = &self.sweeps[idx];
        let mut units = UnitCounts { total: s.units.len() as u64, ..Default::default() };
        let mut attempts = AttemptCounts::default();
        let mut cells: BTreeMap<(Site, Condition), CellProgress> = BTreeMap::new();
        for (u, unit) in s.units.iter().enumerate() {
            let cell = cells.entry((unit.family.site, unit.condition)).or_insert(CellProgress {
                site: unit.family.site,
                condition: unit.condition,
                total: 0,
                done: 0,
                running: 0,
                invalid: 0,
                successes: 0,
            });
            cell.total += 1;
            match s.status[u] {
                UnitStatus::Done { success } => {
                    units.done += 1;
                    cell.done += 1;
                    cell.successes += success as u64;
                }
                UnitStatus::Invalid => {
                    units.invalid += 1;
                    cell.invalid += 1;
                }
                UnitStatus::Running => {
                    units.running += 1;
                    cell.running += 1;
                }
                UnitStatus::Queued => units.queued += 1,
                UnitStatus::Held => {}
            }
            for slot in &s.slots[u] {
                attempts.total += 1;
                if let Slot::Recorded { outcome: Outcome::Error, .. } = slot {
                    attempts.error += 1;
                }
            }
        }
        let resolved = units.done + units.invalid;
        let state = if s.meta.cancelled {
            SweepState::Cancelled
        } else if resolved == units.total {
            SweepState::Done
        } else if attempts.total == 0 {
            SweepState::Queued
        } else {
            SweepState::Running
        };
        let eta_ms = s.first_assign.and_then(|t0| {
            let gained = resolved.saturating_sub(s.resolved_at_first);
            if gained == 0 || state != SweepState::Running {
                return None;
            }
            let per = now.duration_since(t0).as_millis() as f64 / gained as f64;
            Some((per * (units.total - resolved) as f64) as u64)
        });
        SweepStatus {
            id: s.meta.id.clone(),
            state,
            units,
            attempts,
            cells: cells.into_values().collect(),
            workers: self.workers.values().filter(|w| w.conn.is_some()).count() as u32,
            eta_ms,
            config_digest: s.meta.config_digest.clone(),
            created_ms: s.meta.created_ms,
            cost_usd: s.spent,
            stopped: s.meta.stopped.clone(),
        }
    }

    /// A stored sweep's metadata (for export).
    pub fn has_sweep(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }
}

/// A record's LLM cost in USD; absent, negative or not finite counts as nothing.
fn cost_of(rec: &Record) -> f64 {
    rec.cost_usd.filter(|c| c.is_finite() && *c > 0.0).unwrap_or(0.0)
}

/// Why a sweep may not go on: its stored records cost at least its budget.
fn budget_exhausted(s: &SweepRun) -> Option<String> {
    let budget = s.meta.spec.cost_budget_usd?;
    (s.spent >= budget).then(|| format!("cost budget of ${budget:.2} reached (${:.2} spent)", s.spent))
}

fn recorded(rec: &StoredRecord) -> Slot {
    let outcome = rec.record.outcome();
    let retry_counted = outcome == Outcome::Error && rec.record.error.as_deref() != Some(CANCELLED);
    Slot::Recorded { outcome, synthetic: rec.synthetic, retry_counted }
}

impl SweepRun {
    fn new(meta: SweepMeta, units: Vec<Unit>, slots: Vec<Vec<Slot>>, status: Vec<UnitStatus>) -> SweepRun {
        SweepRun {
            meta,
            units,
            slots,
            status,
            queues: Default::default(),
            queued: [0; SV_COUNT],
            running: 0,
            resolved: 0,
            first_assign: None,
            resolved_at_first: 0,
            spent: 0.0,
        }
    }

    fn sv(&self, unit: u32) -> usize {
        let u = &self.units[unit as usize];
        sv_index(u.family.site, u.condition.version())
    }

    /// Applies the unit outcome rule and keeps the queues and counts in step.
    fn resolve(&mut self, unit: u32) {
        let slots = &self.slots[unit as usize];
        let first_measured = slots.iter().find_map(|s| match s {
            Slot::Recorded { outcome, .. } if *outcome != Outcome::Error => Some(*outcome),
            _ => None,
        });
        let errors = slots.iter().filter(|s| matches!(s, Slot::Recorded { retry_counted: true, .. })).count();
        let new = if let Some(o) = first_measured {
            UnitStatus::Done { success: o == Outcome::Success }
        } else if slots.contains(&Slot::Running) {
            UnitStatus::Running
        } else if self.meta.cancelled {
            UnitStatus::Held
        } else if errors > self.meta.spec.max_retries as usize {
            UnitStatus::Invalid
        } else {
            UnitStatus::Queued
        };
        let old = self.status[unit as usize];
        if old == new {
            return;
        }
        let sv = self.sv(unit);
        let is_resolved = |s: UnitStatus| matches!(s, UnitStatus::Done { .. } | UnitStatus::Invalid);
        if is_resolved(old) && !is_resolved(new) {
            self.resolved -= 1;
        } else if !is_resolved(old) && is_resolved(new) {
            self.resolved += 1;
        }
        if old == UnitStatus::Queued {
            self.queued[sv] -= 1;
        }
        if new == UnitStatus::Queued {
            self.queued[sv] += 1;
            // A retry goes first: lost work resumes at once instead of at the tail.
            if self.slots[unit as usize].is_empty() {
                self.queues[sv].push_back(unit);
            } else {
                self.queues[sv].push_front(unit);
            }
        }
        self.status[unit as usize] = new;
    }

    /// The next queued unit of a site-version (entries made stale by a late
    /// record or a cancel are skipped).
    fn pop(&mut self, sv: usize) -> Option<u32> {
        while let Some(u) = self.queues[sv].pop_front() {
            if self.status[u as usize] == UnitStatus::Queued {
                self.queued[sv] -= 1;
                return Some(u);
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
