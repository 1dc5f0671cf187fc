//! The worker registry: registration (a worker keeps its id across
//! reconnects), sessions (a newer one replaces an older one), credits, the
//! messages a session sends, and worker loss. A worker is lost at once when
//! its stream ends and after the lease TTL when it goes silent; each attempt
//! it held gets an `error` record with reason `worker_lost` and the unit rule
//! decides whether the unit runs again (guarantee 3 in `docs/design.md`).

use std::time::Instant;

use skillshift_common::{Outcome, Record, Site, Version};
use skillshift_proto::convert::AttemptKey;
use skillshift_telemetry::context as trace_context;

use super::units::Slot;
use super::{Conn, Effect, Engine, Outbound, WorkerEvent, WORKER_LOST};
use crate::planner;
use crate::scheduler::sv_index;
use crate::status::WorkerInfo;
use crate::store::{StoreOp, StoredRecord};

pub(super) struct WorkerEntry {
    pub(super) name: String,
    pub(super) hosts: Vec<(Site, Version)>,
    /// The hosted site-versions as a bit set of [`sv_index`].
    pub(super) mask: u8,
    pub(super) slots: u32,
    pub(super) conn: Option<Conn>,
    pub(super) credits: u32,
    pub(super) affinity: Option<usize>,
    pub(super) last_seen: Instant,
}

impl Engine {
    pub(super) fn register(
        &mut self,
        name: String,
        hosts: Vec<(Site, Version)>,
        slots: u32,
        previous_id: Option<String>,
        now: Instant,
    ) -> String {
        let id = previous_id
            .filter(|p| p.len() <= 64 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
            .unwrap_or_else(|| self.ids.new_id("w"));
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

    pub(super) fn connect(
        &mut self,
        worker: String,
        conn: Conn,
        running: Vec<AttemptKey>,
        free_slots: u32,
        now: Instant,
    ) {
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

    pub(super) fn disconnect(&mut self, worker: &str, conn: u64) {
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

    /// Every session ends (shutdown): the workers reconnect later and keep their leases until then.
    pub(super) fn close_sessions(&mut self) {
        for w in self.workers.values_mut() {
            w.conn = None;
            w.credits = 0;
        }
    }

    /// Stops assigning and asks every connected worker to drain.
    pub(super) fn drain(&mut self) {
        self.draining = true;
        for (id, w) in &self.workers {
            if let Some(conn) = &w.conn {
                let msg = Outbound::Drain("coordinator is shutting down".into());
                self.effects.push(Effect::Send { worker: id.clone(), conn: conn.clone(), msg });
            }
        }
    }

    /// Loses the attempts whose leases passed their deadline.
    pub(super) fn expire_leases(&mut self, now: Instant) {
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
        let unit = &s.units[key.unit as usize];
        let spec = planner::attempt_spec(&s.meta.id, &s.meta.spec, &s.meta.config_digest, unit, key.attempt);
        let mut rec = Record::for_attempt(&spec);
        rec.outcome = Some(Outcome::Error);
        rec.error = Some(WORKER_LOST.into());
        rec.worker = Some(worker.to_string());
        if let Some(span) = self.spans.end_attempt(key, Outcome::Error.as_str(), Some(WORKER_LOST)) {
            rec.trace_id = trace_context::trace_id(&span);
        }
        self.ops.push(StoreOp::Record(key.clone(), StoredRecord { synthetic: true, record: rec }));
        s.resolve(key.unit);
    }

    pub(super) fn worker_event(&mut self, worker: &str, conn: u64, event: WorkerEvent, now: Instant) {
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

    /// The registry as control clients see it.
    pub(super) fn worker_list(&self, now: Instant) -> Vec<WorkerInfo> {
        self.workers
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
            .collect()
    }
}
