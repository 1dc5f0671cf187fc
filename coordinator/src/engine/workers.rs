//! The worker registry: registration, sessions (a newer one replaces an older
//! one), credits, the messages a session sends, and worker loss. A worker is
//! lost at once when its stream ends and after the lease TTL when it goes
//! silent; each attempt it held gets an `error` record with reason
//! `worker_lost` and the unit rule decides whether the unit runs again
//! (guarantee 3 in `docs/design.md`).
//!
//! Identity: registering gives a worker a public id (`w-<hex>`, what lists,
//! leases and records show) and a secret; its *credential* is
//! `<id>.<secret>`. A session's hello and a later registration that wants to
//! keep the identity (`previous_id`) must present the credential, so nobody
//! else can take a worker's identity, its leases or its late records. Only
//! the secret's SHA-256 is kept, in memory and in the store, so the identity
//! survives a coordinator restart. A previous id that does not prove itself
//! gets a new identity.
//!
//! Bounds: at most `max_workers` registrations. A worker that is not
//! connected and holds no lease (nor an orphan lease waiting for it) is
//! forgotten `worker_expiry` after it was last heard from, or earlier, oldest
//! first, when a new worker needs its place.

use std::collections::HashMap;
use std::time::Instant;

use sha2::{Digest, Sha256};
use skillshift_common::ids::AttemptKey;
use skillshift_common::{Site, Version};

use super::{Conn, Effect, Engine, Outbound, Refused, WorkerEvent, WORKER_LOST};
use crate::limits;
use crate::scheduler::sv_index;
use crate::status::WorkerInfo;
use crate::store::{StoreOp, WorkerRow};

pub(super) struct WorkerEntry {
    pub(super) name: String,
    pub(super) hosts: Vec<(Site, Version)>,
    /// The hosted site-versions as a bit set of [`sv_index`].
    pub(super) mask: u8,
    /// Makes its records up (`worker --simulate`): runs the units of simulated sweeps only.
    pub(super) simulated: bool,
    pub(super) slots: u32,
    pub(super) conn: Option<Conn>,
    pub(super) credits: u32,
    pub(super) affinity: Option<usize>,
    pub(super) last_seen: Instant,
    /// Why the worker takes no new work, as its last heartbeat said (its browser does not start).
    pub(super) unavailable: Option<String>,
    secret_sha256: [u8; 32],
}

/// Worker ids as small numbers, so every attempt remembers its holder in 4 bytes.
#[derive(Debug, Default)]
pub(super) struct Names {
    ids: Vec<String>,
    index: HashMap<String, u32>,
}

impl Names {
    pub(super) fn intern(&mut self, id: &str) -> u32 {
        if let Some(n) = self.index.get(id) {
            return *n;
        }
        let n = self.ids.len() as u32;
        self.ids.push(id.to_string());
        self.index.insert(id.to_string(), n);
        n
    }

    pub(super) fn find(&self, id: &str) -> Option<u32> {
        self.index.get(id).copied()
    }

    pub(super) fn name(&self, n: u32) -> Option<&str> {
        self.ids.get(n as usize).map(String::as_str)
    }
}

fn sha256(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// The public part of a credential, as safe to log and echo: never the
/// secret, never more than 64 bytes of whatever was sent.
pub(super) fn public_part(credential: &str) -> String {
    let id = credential.split_once('.').map_or(credential, |(id, _)| id);
    id.chars().take(64).filter(|c| c.is_ascii_graphic()).collect()
}

impl Engine {
    /// What a record says ran it: the name worker `id` registered with (`worker --name`), else its id.
    pub(super) fn worker_label(&self, id: &str) -> String {
        match self.workers.get(id) {
            Some(w) if !w.name.trim().is_empty() => w.name.clone(),
            _ => id.to_string(),
        }
    }

    /// The public id a credential proves, if it proves one.
    fn authenticate(&self, credential: &str) -> Option<&str> {
        let (id, secret) = credential.split_once('.')?;
        let (id, w) = self.workers.get_key_value(id)?;
        // Digests, not secrets, are compared: where they first differ says nothing about the secret.
        (sha256(secret) == w.secret_sha256).then_some(id.as_str())
    }

    pub(super) fn register(
        &mut self,
        name: String,
        hosts: Vec<(Site, Version)>,
        simulated: bool,
        slots: u32,
        previous: Option<String>,
        now: Instant,
    ) -> Result<String, Refused> {
        if name.len() > limits::MAX_WORKER_NAME_BYTES {
            return Err(Refused::Invalid(format!(
                "worker name is {} bytes; the limit is {}",
                name.len(),
                limits::MAX_WORKER_NAME_BYTES
            )));
        }
        let mask = hosts.iter().fold(0u8, |m, (s, v)| m | 1 << sv_index(*s, *v));
        if let Some(credential) = previous {
            if let Some(id) = self.authenticate(&credential).map(str::to_string) {
                if let Some(w) = self.workers.get_mut(&id) {
                    w.name = name;
                    w.hosts = hosts;
                    w.mask = mask;
                    w.simulated = simulated;
                    w.slots = slots;
                    w.last_seen = now;
                }
                tracing::info!(worker = %id, slots, "worker registered again");
                return Ok(credential);
            }
            tracing::warn!(
                previous = %public_part(&credential),
                "previous worker id not recognised (forgotten, unknown or without its secret); registering a new worker"
            );
        }
        if self.workers.len() >= self.limits.max_workers && !self.forget_oldest_idle() {
            return Err(Refused::Full(format!(
                "{} workers are registered, the limit (--max-workers), and none is idle",
                self.workers.len()
            )));
        }
        let id = self.ids.new_id("w");
        let secret = self.ids.new_secret();
        let secret_sha256 = sha256(&secret);
        let row = WorkerRow {
            id: id.clone(),
            name: name.clone(),
            secret_sha256: hex::encode(secret_sha256),
            registered_ms: self.clock.wall_ms(),
        };
        self.ops.push(StoreOp::Worker(row));
        self.workers.insert(
            id.clone(),
            WorkerEntry {
                name,
                hosts,
                mask,
                simulated,
                slots,
                conn: None,
                credits: 0,
                affinity: None,
                last_seen: now,
                unavailable: None,
                secret_sha256,
            },
        );
        tracing::info!(worker = %id, slots, "worker registered");
        Ok(format!("{id}.{secret}"))
    }

    /// The registry as it was stored, after a restart: every worker keeps its
    /// identity and announces its sites again when it re-registers.
    pub fn restore_workers(&mut self, rows: Vec<WorkerRow>, now: Instant) {
        for row in rows {
            let Some(secret_sha256) = hex::decode(&row.secret_sha256).ok().and_then(|b| <[u8; 32]>::try_from(b).ok())
            else {
                tracing::warn!(worker = %row.id, "stored worker without a valid secret digest; forgotten");
                self.ops.push(StoreOp::ForgetWorker(row.id));
                continue;
            };
            self.workers.insert(
                row.id,
                WorkerEntry {
                    name: row.name,
                    hosts: Vec::new(),
                    mask: 0,
                    simulated: false,
                    slots: 0,
                    conn: None,
                    credits: 0,
                    affinity: None,
                    last_seen: now,
                    unavailable: None,
                    secret_sha256,
                },
            );
        }
    }

    fn idle(&self, id: &str, w: &WorkerEntry) -> bool {
        w.conn.is_none() && !self.leases.involves(id)
    }

    /// Forgets the idle worker heard from longest ago; false when none is idle.
    fn forget_oldest_idle(&mut self) -> bool {
        let oldest =
            self.workers.iter().filter(|(id, w)| self.idle(id, w)).min_by_key(|(_, w)| w.last_seen).map(|(id, _)| id);
        let Some(id) = oldest.cloned() else { return false };
        tracing::info!(worker = %id, "idle worker forgotten to make room for a new one");
        self.forget(id);
        true
    }

    fn forget(&mut self, id: String) {
        self.workers.remove(&id);
        self.ops.push(StoreOp::ForgetWorker(id));
    }

    /// Forgets the workers idle for longer than `worker_expiry`.
    pub(super) fn expire_workers(&mut self, now: Instant) {
        let expiry = self.limits.worker_expiry;
        let expired: Vec<String> = self
            .workers
            .iter()
            .filter(|(id, w)| self.idle(id, w) && now.duration_since(w.last_seen) >= expiry)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            tracing::info!(worker = %id, "worker not heard from for the worker expiry; forgotten");
            self.forget(id);
        }
    }

    /// A session's hello: checks the credential and makes `conn` the
    /// worker's session. Returns the worker's public id.
    pub(super) fn connect(
        &mut self,
        credential: &str,
        conn: Conn,
        running: Vec<AttemptKey>,
        free_slots: u32,
        now: Instant,
    ) -> Result<String, Refused> {
        let Some(worker) = self.authenticate(credential).map(str::to_string) else {
            return Err(Refused::NotRegistered(format!(
                "worker id '{}' is not registered here or its secret does not match: register again",
                public_part(credential)
            )));
        };
        let Some(w) = self.workers.get_mut(&worker) else {
            return Err(Refused::NotRegistered(format!("worker id '{worker}' is not registered here")));
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
        Ok(worker)
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
            self.end_without_record(&key, WORKER_LOST);
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
            let who = worker.clone().unwrap_or_else(|| "not reconnected since the restart".into());
            tracing::warn!(worker = %who, lost = keys.len(), "leases expired");
            if let Some(w) = worker.as_ref().and_then(|w| self.workers.get_mut(w)) {
                w.credits = 0;
            }
            for key in keys {
                self.metrics.lease_expired("ttl");
                self.end_without_record(&key, WORKER_LOST);
            }
        }
    }

    pub(super) fn worker_event(&mut self, worker: &str, conn: u64, event: WorkerEvent, now: Instant) {
        let Some(current) = self.workers.get(worker).and_then(|w| w.conn.clone()) else { return };
        if current.id != conn {
            // A message from a replaced session of the same worker: its records
            // still count (acked on the current session, the worker matches acks
            // by key); nothing else does.
            match event {
                WorkerEvent::Record(key, rec) => self.ingest(worker, &current, key, *rec),
                WorkerEvent::RecordTooLarge(key, bytes) => self.too_large(worker, &current, key, bytes),
                WorkerEvent::Trajectory(key, named, t) => self.ingest_trajectory(worker, &current, key, &named, t),
                _ => {}
            }
            return;
        }
        self.leases.renew(worker, now);
        let Some(w) = self.workers.get_mut(worker) else { return };
        w.last_seen = now;
        match event {
            // Credits come from the network: saturating, and never more than the slots.
            WorkerEvent::Ready(n) => w.credits = w.credits.saturating_add(n).min(w.slots),
            WorkerEvent::Heartbeat { running, unavailable } => {
                if unavailable != w.unavailable {
                    match &unavailable {
                        Some(why) => tracing::warn!(worker = %worker, reason = %why, "worker takes no new work"),
                        None => tracing::info!(worker = %worker, "worker takes work again"),
                    }
                    w.unavailable = unavailable;
                }
                for key in &running {
                    self.leases.attach(key, worker, now);
                }
            }
            WorkerEvent::Progress(_) => {}
            WorkerEvent::Record(key, rec) => self.ingest(worker, &current, key, *rec),
            WorkerEvent::RecordTooLarge(key, bytes) => self.too_large(worker, &current, key, bytes),
            WorkerEvent::Trajectory(key, named, t) => self.ingest_trajectory(worker, &current, key, &named, t),
            WorkerEvent::AckRequest(keys) => {
                for key in keys {
                    if self.stored_real(worker, &key) {
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
                unavailable: w.unavailable.clone(),
            })
            .collect()
    }
}
