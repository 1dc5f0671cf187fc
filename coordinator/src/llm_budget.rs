//! The cluster's one LLM budget (`--llm-concurrency`, `--llm-rpm`,
//! `--llm-tpm`; docs/cli.md): permits per model endpoint, granted to workers
//! before each HTTP call and given back after.
//!
//! * [`BudgetConfig`]: the configured ceilings; with none set the budget is
//!   unmetered and every request is answered `metered = false` at once.
//! * `Meter` (one per `(endpoint, model)`): the permits in flight, the grants
//!   and reserved tokens of the last minute, the FIFO of waiting requests and
//!   the AIMD scale. A 429 reported on a permit this ledger holds halves the
//!   scale (at most once per round of permits: a permit granted before the
//!   last decrease cannot cause another), every answered call adds back
//!   `1 / (concurrency × limit)`, so the concurrency limit regains one permit
//!   per round of calls. The effective concurrency, requests and tokens per
//!   minute are the configured ones times the scale (at least 1 each).
//! * [`Ledger`]: every meter, as a pure state machine over an injected
//!   `Instant`, tested without a network or a clock.
//! * [`Budget`]: the ledger behind a std mutex plus the waiting: a request
//!   that cannot be granted sleeps until something changes (a release, an
//!   expiry, a window sliding) or its wait ends.
//!
//! **Holders.** Every request names its holder: a secret the client chose
//! (the worker's permit gate draws one per process), of which only the
//! SHA-256 is kept. A permit belongs to the holder that acquired it; a
//! Release or Renew of a permit the caller does not hold is refused and
//! changes nothing (no limit, no count, no reservation). A holder holds at
//! most [`MAX_HELD_PER_HOLDER`] permits and the ledger at most [`MAX_HELD`].
//!
//! **Permit ids** are `<process prefix>-<counter>-<tag>`, the tag an
//! HMAC-SHA256 under the store's permit key ([`Ledger::keyed`]) of the rest of
//! the id, the meter and the holder: no one can make up an id, and one id
//! proves which holder and meter it was granted to.
//!
//! Permits expire when not renewed within the lease TTL, so the permits of a
//! worker that is lost (killed or cut off) come back with its leases. A
//! restarted coordinator knows no permits; for one TTL after it starts (any
//! permit still alive must be renewed by then) it adopts a renewed permit it
//! does not hold when its tag proves that a coordinator on this store granted
//! it to that holder for that meter, so the ceiling holds again within one
//! renewal and nothing waits on a permit that no one will return. It grants
//! nothing for the first half of that TTL, so every renewal arrives before it
//! does. Outside that window, nothing is adopted.
//!
//! **Bounds.** At most [`MAX_ENDPOINTS`] meters; a meter with nothing held,
//! queued or in its window is removed (when the table is full, or by the
//! periodic expiry), and only an Acquire or an adoption creates one. One
//! call reserves at most [`MAX_CALL_TOKENS`]; token sums saturate.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::sync::Notify;

/// Requests and tokens are counted over this window.
const WINDOW: Duration = Duration::from_secs(60);
/// The longest one Acquire waits before answering "not yet".
pub const MAX_WAIT: Duration = Duration::from_secs(20);
/// The smallest AIMD scale (1/64 of the configured ceilings).
const MIN_SCALE: f64 = 1.0 / 64.0;
/// Endpoints (distinct `(endpoint, model)` pairs) one coordinator meters at most.
pub const MAX_ENDPOINTS: usize = 256;
/// Bytes of an endpoint URL or model name.
pub const MAX_NAME_BYTES: usize = 512;
/// Tokens one call may reserve (prompt estimate plus `max_tokens`) or report as used: 16 Mi, far above any
/// model's context.
pub const MAX_CALL_TOKENS: u64 = 1 << 24;
/// Permits one holder holds at once.
pub const MAX_HELD_PER_HOLDER: usize = 256;
/// Permits the ledger holds at once, over every holder and meter.
pub const MAX_HELD: usize = 4096;
/// Hex digits of a permit id's tag (128 bits).
const TAG_HEX: usize = 32;

/// The configured ceilings; `None` is unbounded. All `None`: unmetered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetConfig {
    pub concurrency: Option<u32>,
    pub rpm: Option<u32>,
    pub tpm: Option<u64>,
}

impl BudgetConfig {
    pub fn is_metered(&self) -> bool {
        self.concurrency.is_some() || self.rpm.is_some() || self.tpm.is_some()
    }
}

/// How a call made under a permit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallResult {
    Answered,
    RateLimited,
    NoAnswer,
}

/// Which meter: a model at an endpoint.
pub type MeterKey = (String, String);

/// Who holds a permit: the SHA-256 of the secret the holder sends with each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Holder([u8; 32]);

impl Holder {
    /// The holder that sends `secret`.
    pub fn of(secret: &str) -> Holder {
        Holder(Sha256::digest(secret.as_bytes()).into())
    }
}

/// Why the budget refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("llm permit '{0}' is not held by this caller (never granted to it, released or expired); nothing changed")]
    NotHeld(String),
    #[error("this holder holds {MAX_HELD_PER_HOLDER} llm permits, the limit; release one first")]
    HolderFull,
    #[error("{MAX_HELD} llm permits are held, the limit")]
    LedgerFull,
    #[error("{MAX_ENDPOINTS} llm endpoints are metered and none is idle, the limit")]
    TooManyEndpoints,
    #[error("the llm budget's lock is poisoned")]
    Poisoned,
}

#[derive(Debug, Clone)]
struct Held {
    expires: Instant,
    granted: Instant,
    holder: Holder,
}

#[derive(Debug)]
struct Meter {
    held: HashMap<String, Held>,
    /// Grant times of the last minute (oldest first), for the request ceiling.
    requests: VecDeque<Instant>,
    /// Reserved (then corrected) tokens of the last minute's grants.
    tokens: VecDeque<(Instant, String, u64)>,
    /// Waiting tickets (with their holders), first come first served.
    queue: VecDeque<(u64, Holder)>,
    scale: f64,
    last_decrease: Option<Instant>,
    /// Permits that expired unrenewed, since start.
    expired: u64,
}

impl Meter {
    fn new() -> Meter {
        Meter {
            held: HashMap::new(),
            requests: VecDeque::new(),
            tokens: VecDeque::new(),
            queue: VecDeque::new(),
            scale: 1.0,
            last_decrease: None,
            expired: 0,
        }
    }

    /// Drops expired permits (returned, for the holders' counts) and old window entries.
    fn expire(&mut self, now: Instant) -> Vec<Holder> {
        let mut gone = Vec::new();
        self.held.retain(|_, h| {
            let alive = h.expires > now;
            if !alive {
                gone.push(h.holder);
            }
            alive
        });
        self.expired = self.expired.saturating_add(gone.len() as u64);
        while self.requests.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
            self.requests.pop_front();
        }
        while self.tokens.front().is_some_and(|(t, _, _)| now.duration_since(*t) >= WINDOW) {
            self.tokens.pop_front();
        }
        gone
    }

    fn scaled(&self, ceiling: u64) -> u64 {
        ((ceiling as f64 * self.scale).floor() as u64).max(1)
    }

    fn tokens_in_window(&self) -> u64 {
        self.tokens.iter().fold(0u64, |sum, (_, _, n)| sum.saturating_add(*n))
    }
}

/// The effective ceilings of one meter and its use, for metrics and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct MeterView {
    pub endpoint: String,
    pub model: String,
    pub in_flight: usize,
    pub waiting: usize,
    pub concurrency: Option<u64>,
    pub rpm: Option<u64>,
    pub tpm: Option<u64>,
    pub scale: f64,
    /// Permits that expired unrenewed (a lost worker's), since start.
    pub expired: u64,
}

/// A decision on one waiting ticket.
#[derive(Debug, PartialEq)]
pub enum Decision {
    Granted {
        permit: String,
        limit: u32,
    },
    /// Not now; something may change by this time (or on any release).
    Wait(Option<Instant>),
    /// Never: the ticket left the queue.
    Refused(BudgetError),
}

/// What one Renew did with the permits it named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Renewed {
    /// Held by the caller and extended.
    pub renewed: usize,
    /// Granted by an earlier coordinator on this store to the caller, and counted from now on.
    pub adopted: usize,
    /// Neither: not the caller's, made up, released, expired, or named outside the restart window.
    pub refused: usize,
}

/// Every meter, as a state machine over an injected time.
#[derive(Debug)]
pub struct Ledger {
    cfg: BudgetConfig,
    ttl: Duration,
    meters: HashMap<MeterKey, Meter>,
    prefix: String,
    next: u64,
    /// The key of permit ids' tags, kept in the store so a restarted coordinator can check them.
    key: [u8; 32],
    /// Permits held per holder, for [`MAX_HELD_PER_HOLDER`].
    holders: HashMap<Holder, usize>,
    /// Permits of an earlier coordinator given back before any renewal named them: never adopted.
    released_foreign: VecDeque<String>,
    /// After a restart, nothing is granted before this: the workers' renewals say first what is in flight.
    quiet_until: Option<Instant>,
    /// After a restart, permits of an earlier coordinator are adopted until this; never otherwise.
    adopt_until: Option<Instant>,
}

/// Foreign permit ids remembered as released.
const MAX_RELEASED_FOREIGN: usize = 4096;

/// HMAC-SHA256 (RFC 2104) of `parts`, each followed by a zero byte.
fn hmac(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut inner = Sha256::new();
    inner.update(key.map(|b| b ^ 0x36));
    inner.update([0x36u8; 32]);
    for p in parts {
        inner.update(p);
        inner.update([0u8]);
    }
    let mut outer = Sha256::new();
    outer.update(key.map(|b| b ^ 0x5c));
    outer.update([0x5cu8; 32]);
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Compares two strings in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Ledger {
    /// A ledger with a fresh random key (its ids can be checked by no other process).
    pub fn new(cfg: BudgetConfig, ttl: Duration) -> Ledger {
        Ledger::keyed(cfg, ttl, rand::random())
    }

    /// A ledger whose permit ids are tagged with `key` (the store's, so a restart can check them).
    pub fn keyed(cfg: BudgetConfig, ttl: Duration, key: [u8; 32]) -> Ledger {
        let prefix = format!("{:08x}", rand::random::<u32>());
        Ledger {
            cfg,
            ttl,
            meters: HashMap::new(),
            prefix,
            next: 0,
            key,
            holders: HashMap::new(),
            released_foreign: VecDeque::new(),
            quiet_until: None,
            adopt_until: None,
        }
    }

    pub fn config(&self) -> BudgetConfig {
        self.cfg
    }

    /// A restart at `now`: grants nothing for half a TTL and adopts proven permits for one TTL.
    pub fn restarted(&mut self, now: Instant) {
        self.quiet_until = Some(now + self.ttl / 2);
        self.adopt_until = Some(now + self.ttl);
    }

    /// Grants nothing before `until` (a restarted coordinator waits for renewals of permits still held).
    pub fn quiet_until(&mut self, until: Instant) {
        self.quiet_until = Some(until);
    }

    /// The tag of the permit id `stem` (`<prefix>-<counter>`) granted on `key` to `holder`.
    fn tag(&self, stem: &str, key: &MeterKey, holder: &Holder) -> String {
        let mac = hmac(&self.key, &[b"llm-permit/1", stem.as_bytes(), key.0.as_bytes(), key.1.as_bytes(), &holder.0]);
        let mut hex = hex::encode(mac);
        hex.truncate(TAG_HEX);
        hex
    }

    /// Whether `permit` is an id a ledger with this key granted on `key` to `holder`.
    fn proves(&self, permit: &str, key: &MeterKey, holder: &Holder) -> bool {
        let Some((stem, tag)) = permit.rsplit_once('-') else { return false };
        stem.contains('-') && same(tag, &self.tag(stem, key, holder))
    }

    /// Whether this process granted `permit` (its ids carry the ledger's prefix).
    fn is_own(&self, permit: &str) -> bool {
        permit.split_once('-').is_some_and(|(p, _)| p == self.prefix)
    }

    fn held_count(&self) -> usize {
        self.meters.values().map(|m| m.held.len()).sum()
    }

    /// Whether `holder` may take one more permit.
    fn room_for(&self, holder: &Holder) -> Result<(), BudgetError> {
        if self.holders.get(holder).copied().unwrap_or(0) >= MAX_HELD_PER_HOLDER {
            return Err(BudgetError::HolderFull);
        }
        if self.held_count() >= MAX_HELD {
            return Err(BudgetError::LedgerFull);
        }
        Ok(())
    }

    fn hold(&mut self, holder: Holder) {
        *self.holders.entry(holder).or_insert(0) += 1;
    }

    fn unhold(&mut self, holder: &Holder) {
        if let Some(n) = self.holders.get_mut(holder) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.holders.remove(holder);
            }
        }
    }

    /// The meter of `key`, created if there is room: when the table is full, a meter with nothing held or
    /// waiting makes room (one at full scale first, then the one granted to longest ago).
    fn meter(&mut self, key: &MeterKey, now: Instant) -> Result<&mut Meter, BudgetError> {
        if !self.meters.contains_key(key) {
            if self.meters.len() >= MAX_ENDPOINTS {
                self.expire(now);
                // Full scale first (`false` sorts first), then the one granted to longest ago (`None` first).
                let idle = self
                    .meters
                    .iter()
                    .filter(|(_, m)| m.held.is_empty() && m.queue.is_empty())
                    .min_by_key(|(_, m)| (m.scale < 1.0, m.requests.back().copied()))
                    .map(|(k, _)| k.clone());
                match idle {
                    Some(k) => {
                        self.meters.remove(&k);
                    }
                    None => return Err(BudgetError::TooManyEndpoints),
                }
            }
            self.meters.insert(key.clone(), Meter::new());
        }
        self.meters.get_mut(key).ok_or(BudgetError::TooManyEndpoints)
    }

    /// The metered keys (a meter that made room for another is gone, with its totals).
    pub fn meter_keys(&self) -> std::collections::HashSet<MeterKey> {
        self.meters.keys().cloned().collect()
    }

    /// Puts `holder`'s request in its meter's queue; its ticket decides its turn.
    pub fn enqueue(&mut self, key: &MeterKey, holder: Holder, now: Instant) -> Result<u64, BudgetError> {
        self.room_for(&holder)?;
        self.next = self.next.saturating_add(1);
        let ticket = self.next;
        self.meter(key, now)?.queue.push_back((ticket, holder));
        Ok(ticket)
    }

    /// Takes a ticket out of its queue (its request gave up or its client went away).
    pub fn withdraw(&mut self, key: &MeterKey, ticket: u64) {
        if let Some(m) = self.meters.get_mut(key) {
            m.queue.retain(|(t, _)| *t != ticket);
        }
    }

    /// Grants `ticket` a permit if it is first in line and every ceiling allows it.
    pub fn try_grant(&mut self, key: &MeterKey, ticket: u64, tokens: u64, now: Instant) -> Decision {
        let (cfg, ttl) = (self.cfg, self.ttl);
        if let Some(until) = self.quiet_until.filter(|u| now < *u) {
            return Decision::Wait(Some(until));
        }
        let gone = match self.meters.get_mut(key) {
            Some(m) => m.expire(now),
            None => return Decision::Wait(None),
        };
        for h in &gone {
            self.unhold(h);
        }
        let Some(&(first, holder)) = self.meters.get(key).and_then(|m| m.queue.front()) else {
            return Decision::Wait(None);
        };
        if first != ticket {
            return Decision::Wait(None);
        }
        // A holder at its cap never blocks the line: its ticket leaves the queue.
        if let Err(e) = self.room_for(&holder) {
            self.withdraw(key, ticket);
            return Decision::Refused(e);
        }
        let Some(m) = self.meters.get_mut(key) else { return Decision::Wait(None) };
        let earliest_expiry = m.held.values().map(|h| h.expires).min();
        let concurrency = cfg.concurrency.map(|c| m.scaled(c.into()));
        if concurrency.is_some_and(|c| m.held.len() as u64 >= c) {
            return Decision::Wait(earliest_expiry);
        }
        if let Some(rpm) = cfg.rpm.map(|r| m.scaled(r.into())) {
            // Spread evenly: at most one grant per 60 s / rpm, and rpm per window.
            let spacing = WINDOW.div_f64(rpm as f64);
            if let Some(last) = m.requests.back() {
                if now.duration_since(*last) < spacing {
                    return Decision::Wait(Some(*last + spacing));
                }
            }
            if m.requests.len() as u64 >= rpm {
                return Decision::Wait(m.requests.front().map(|t| *t + WINDOW));
            }
        }
        if let Some(tpm) = cfg.tpm.map(|t| m.scaled(t)) {
            // A request larger than the whole budget still runs, alone in its window.
            let used = m.tokens_in_window();
            if used > 0 && used.saturating_add(tokens) > tpm {
                return Decision::Wait(m.tokens.front().map(|(t, _, _)| *t + WINDOW));
            }
        }
        m.queue.pop_front();
        self.next = self.next.saturating_add(1);
        let stem = format!("{}-{}", self.prefix, self.next);
        let permit = format!("{stem}-{}", self.tag(&stem, key, &holder));
        self.hold(holder);
        let Some(m) = self.meters.get_mut(key) else { return Decision::Wait(None) };
        m.held.insert(permit.clone(), Held { expires: now + ttl, granted: now, holder });
        // Under steady demand the request slots follow an even timeline (the last one plus the spacing), so
        // the time a waiter takes to wake up does not slow the rate; after a lull the timeline restarts now.
        let slot = match (cfg.rpm.map(|r| WINDOW.div_f64(m.scaled(r.into()) as f64)), m.requests.back()) {
            (Some(spacing), Some(last)) if now < *last + spacing * 2 => (*last + spacing).min(now),
            _ => now,
        };
        m.requests.push_back(slot);
        m.tokens.push_back((now, permit.clone(), tokens.min(MAX_CALL_TOKENS)));
        let limit = concurrency.unwrap_or(0).min(u32::MAX as u64) as u32;
        Decision::Granted { permit, limit }
    }

    /// `holder` gives a permit back; a 429 shrinks the meter's scale, an answer grows it. Returns whether
    /// the shared limit was lowered. A permit the caller does not hold is refused and changes nothing,
    /// except that one an earlier coordinator on this store granted it, named within the restart window,
    /// is remembered as given back (so no later renewal adopts it).
    pub fn release(
        &mut self,
        key: &MeterKey,
        holder: &Holder,
        permit: &str,
        result: CallResult,
        tokens_used: u64,
        now: Instant,
    ) -> Result<bool, BudgetError> {
        let base = self.cfg.concurrency.unwrap_or(10).max(1) as f64;
        let ours = self.meters.get(key).and_then(|m| m.held.get(permit)).is_some_and(|h| h.holder == *holder);
        if !ours {
            let foreign_of_caller =
                !self.is_own(permit) && self.adopt_until.is_some_and(|u| now < u) && self.proves(permit, key, holder);
            if !foreign_of_caller {
                return Err(BudgetError::NotHeld(permit.to_string()));
            }
            if !self.released_foreign.iter().any(|p| p == permit) {
                if self.released_foreign.len() >= MAX_RELEASED_FOREIGN {
                    self.released_foreign.pop_front();
                }
                self.released_foreign.push_back(permit.to_string());
            }
            return Ok(false);
        }
        self.unhold(holder);
        let Some(m) = self.meters.get_mut(key) else { return Err(BudgetError::NotHeld(permit.to_string())) };
        let Some(held) = m.held.remove(permit) else { return Err(BudgetError::NotHeld(permit.to_string())) };
        if tokens_used > 0 {
            if let Some(entry) = m.tokens.iter_mut().find(|(_, p, _)| p == permit) {
                entry.2 = tokens_used.min(MAX_CALL_TOKENS);
            }
        }
        Ok(match result {
            CallResult::RateLimited => {
                // One decrease per round: a permit granted before the last decrease was already counted.
                let fresh = m.last_decrease.is_none_or(|at| held.granted > at);
                if fresh {
                    m.scale = (m.scale / 2.0).max(MIN_SCALE);
                    m.last_decrease = Some(now);
                }
                fresh
            }
            CallResult::Answered => {
                let limit = (base * m.scale).max(1.0);
                m.scale = (m.scale + 1.0 / (base * limit)).min(1.0);
                false
            }
            CallResult::NoAnswer => false,
        })
    }

    /// `holder` keeps the permits it names alive (each with the tokens it reserved, which an adopted one
    /// does not count again). Within the restart window, a permit that an earlier coordinator on this store
    /// granted to `holder` is adopted; everything else not held by `holder` is refused and changes nothing.
    pub fn renew(&mut self, holder: &Holder, held: &[(MeterKey, String, u64)], now: Instant) -> Renewed {
        let ttl = self.ttl;
        let window = self.adopt_until.is_some_and(|u| now < u);
        let mut out = Renewed::default();
        for (key, permit, _tokens) in held {
            if let Some(h) = self.meters.get_mut(key).and_then(|m| m.held.get_mut(permit)) {
                if h.holder == *holder {
                    h.expires = now + ttl;
                    out.renewed += 1;
                } else {
                    out.refused += 1;
                }
                continue;
            }
            let adoptable = window
                && !self.is_own(permit)
                && !self.released_foreign.iter().any(|p| p == permit)
                && self.proves(permit, key, holder)
                && self.room_for(holder).is_ok();
            if !adoptable {
                out.refused += 1;
                continue;
            }
            let Ok(m) = self.meter(key, now) else {
                out.refused += 1;
                continue;
            };
            m.held.insert(permit.clone(), Held { expires: now + ttl, granted: now, holder: *holder });
            self.hold(*holder);
            out.adopted += 1;
        }
        out
    }

    /// Drops expired permits and old window entries everywhere; returns how many permits expired.
    pub fn expire(&mut self, now: Instant) -> usize {
        let gone: Vec<Holder> = self.meters.values_mut().flat_map(|m| m.expire(now)).collect();
        for h in &gone {
            self.unhold(h);
        }
        gone.len()
    }

    pub fn views(&self) -> Vec<MeterView> {
        let mut v: Vec<MeterView> = self
            .meters
            .iter()
            .map(|((endpoint, model), m)| MeterView {
                endpoint: endpoint.clone(),
                model: model.clone(),
                in_flight: m.held.len(),
                waiting: m.queue.len(),
                concurrency: self.cfg.concurrency.map(|c| m.scaled(c.into())),
                rpm: self.cfg.rpm.map(|r| m.scaled(r.into())),
                tpm: self.cfg.tpm.map(|t| m.scaled(t)),
                scale: m.scale,
                expired: m.expired,
            })
            .collect();
        v.sort_by(|a, b| (&a.endpoint, &a.model).cmp(&(&b.endpoint, &b.model)));
        v
    }
}

/// Totals since start, per meter, for `/metrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeterTotals {
    pub granted: u64,
    pub rate_limited: u64,
    /// Times a 429 lowered the shared limit.
    pub decreases: u64,
    pub wait_seconds: f64,
    pub wait_max_seconds: f64,
}

/// The answer to one Acquire.
#[derive(Debug, Clone, PartialEq)]
pub enum Acquired {
    Unmetered,
    Granted {
        permit: String,
        waited: Duration,
        limit: u32,
    },
    /// Nothing within the wait; ask again.
    NotYet {
        waited: Duration,
    },
}

struct Shared {
    // A std Mutex: every critical section is a few map and queue operations, never across an await.
    ledger: Mutex<Ledger>,
    totals: Mutex<HashMap<MeterKey, MeterTotals>>,
    changed: Notify,
}

/// The ledger behind a lock, with waiting. Cheap to clone.
#[derive(Clone)]
pub struct Budget {
    shared: Arc<Shared>,
    cfg: BudgetConfig,
    ttl: Duration,
}

/// Takes a ticket out of the queue if its request is dropped while it waits.
struct Ticket<'a> {
    budget: &'a Budget,
    key: &'a MeterKey,
    ticket: u64,
    done: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.done {
            if let Ok(mut l) = self.budget.shared.ledger.lock() {
                l.withdraw(self.key, self.ticket);
            }
            self.budget.shared.changed.notify_waiters();
        }
    }
}

impl Budget {
    /// After a restart: grant nothing for half a TTL, in which every live worker renews (every third of a
    /// TTL) the permits it still holds, so they are counted before anything new is granted; adopt proven
    /// permits of an earlier coordinator for one TTL.
    pub fn restarted(self) -> Budget {
        let _ = self.with_ledger(|l| l.restarted(Instant::now()));
        self
    }

    /// `ttl` is the lease TTL: a permit not renewed within it expires. A fresh random key: no restart can
    /// adopt this budget's permits (see [`Budget::keyed`]).
    pub fn new(cfg: BudgetConfig, ttl: Duration) -> Budget {
        Budget::keyed(cfg, ttl, rand::random())
    }

    /// As [`Budget::new`], its permit ids tagged with `key` (the store's permit key, so that a coordinator
    /// restarted on the same store can tell the permits an earlier one granted).
    pub fn keyed(cfg: BudgetConfig, ttl: Duration, key: [u8; 32]) -> Budget {
        let shared = Shared {
            ledger: Mutex::new(Ledger::keyed(cfg, ttl, key)),
            totals: Mutex::new(HashMap::new()),
            changed: Notify::new(),
        };
        Budget { shared: Arc::new(shared), cfg, ttl }
    }

    pub fn config(&self) -> BudgetConfig {
        self.cfg
    }

    /// How often workers should renew: a third of the TTL.
    pub fn renew_interval(&self) -> Duration {
        self.ttl / 3
    }

    fn with_ledger<T>(&self, f: impl FnOnce(&mut Ledger) -> T) -> Result<T, BudgetError> {
        let mut l = self.shared.ledger.lock().map_err(|_| BudgetError::Poisoned)?;
        Ok(f(&mut l))
    }

    fn total(&self, key: &MeterKey, f: impl FnOnce(&mut MeterTotals)) {
        if self.shared.totals.lock().is_ok_and(|t| t.len() >= MAX_ENDPOINTS && !t.contains_key(key)) {
            self.prune_totals();
        }
        if let Ok(mut t) = self.shared.totals.lock() {
            f(t.entry(key.clone()).or_default());
        }
    }

    /// Forgets the totals of meters that are gone (removed to make room for others). Never holds both locks.
    fn prune_totals(&self) {
        let Ok(keys) = self.with_ledger(|l| l.meter_keys()) else { return };
        if let Ok(mut t) = self.shared.totals.lock() {
            t.retain(|k, _| keys.contains(k));
        }
    }

    /// Waits up to `wait` (capped at [`MAX_WAIT`]) for a permit on `key` for `holder`. `tokens` is
    /// reserved against `--llm-tpm` (the service refuses more than [`MAX_CALL_TOKENS`]).
    pub async fn acquire(
        &self,
        key: &MeterKey,
        holder: Holder,
        tokens: u64,
        wait: Duration,
    ) -> Result<Acquired, BudgetError> {
        if !self.cfg.is_metered() {
            return Ok(Acquired::Unmetered);
        }
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        let ticket = self.with_ledger(|l| l.enqueue(key, holder, Instant::now()))??;
        let mut guard = Ticket { budget: self, key, ticket, done: false };
        loop {
            // Registered before deciding, so a change between the decision and the sleep is not missed.
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let decision = self.with_ledger(|l| l.try_grant(key, ticket, tokens, Instant::now()))?;
            match decision {
                Decision::Granted { permit, limit } => {
                    guard.done = true;
                    let waited = started.elapsed();
                    self.total(key, |t| {
                        t.granted += 1;
                        t.wait_seconds += waited.as_secs_f64();
                        t.wait_max_seconds = t.wait_max_seconds.max(waited.as_secs_f64());
                    });
                    // The next in line may be grantable too.
                    self.shared.changed.notify_waiters();
                    return Ok(Acquired::Granted { permit, waited, limit });
                }
                Decision::Refused(e) => {
                    guard.done = true;
                    self.shared.changed.notify_waiters();
                    return Err(e);
                }
                Decision::Wait(at) => {
                    let wake = at.map_or(deadline, |at| {
                        let d = at.saturating_duration_since(Instant::now());
                        (tokio::time::Instant::now() + d).min(deadline)
                    });
                    tokio::select! {
                        _ = &mut changed => {}
                        _ = tokio::time::sleep_until(wake) => {}
                    }
                    if tokio::time::Instant::now() >= deadline {
                        // `guard` withdraws the ticket.
                        return Ok(Acquired::NotYet { waited: started.elapsed() });
                    }
                }
            }
        }
    }

    /// `holder` gives `permit` back; refused (and nothing changes) when it does not hold it. Returns
    /// whether a 429 lowered the shared limit.
    pub fn release(
        &self,
        key: &MeterKey,
        holder: &Holder,
        permit: &str,
        result: CallResult,
        tokens_used: u64,
    ) -> Result<bool, BudgetError> {
        let decreased = self.with_ledger(|l| l.release(key, holder, permit, result, tokens_used, Instant::now()))??;
        if result == CallResult::RateLimited {
            self.total(key, |t| {
                t.rate_limited += 1;
                t.decreases += u64::from(decreased);
            });
        }
        self.shared.changed.notify_waiters();
        Ok(decreased)
    }

    /// `holder` renews the permits it names (see [`Ledger::renew`]).
    pub fn renew(&self, holder: &Holder, held: &[(MeterKey, String, u64)]) -> Result<Renewed, BudgetError> {
        let r = self.with_ledger(|l| l.renew(holder, held, Instant::now()))?;
        if r.adopted > 0 {
            tracing::info!(
                adopted = r.adopted,
                "llm budget adopted permits an earlier coordinator granted (a restart)"
            );
            self.shared.changed.notify_waiters();
        }
        if r.refused > 0 {
            tracing::warn!(
                refused = r.refused,
                renewed = r.renewed,
                "llm permit renewal named permits its caller does not hold; refused"
            );
        }
        Ok(r)
    }

    /// Drops expired permits; run periodically so a lost worker's permits come back. Forgets the totals of
    /// meters that made room for others.
    pub fn sweep_expired(&self) {
        let n = self.with_ledger(|l| l.expire(Instant::now())).unwrap_or(0);
        if n > 0 {
            tracing::warn!(expired = n, "llm permits expired without renewal (a lost worker)");
            self.shared.changed.notify_waiters();
        }
        self.prune_totals();
    }

    pub fn views(&self) -> Vec<(MeterView, MeterTotals)> {
        let views = self.with_ledger(|l| l.views()).unwrap_or_default();
        let totals = self.shared.totals.lock().map(|t| t.clone()).unwrap_or_default();
        views
            .into_iter()
            .map(|v| {
                let t = totals.get(&(v.endpoint.clone(), v.model.clone())).cloned().unwrap_or_default();
                (v, t)
            })
            .collect()
    }

    /// The budget's metrics as OpenMetrics text (families only, no `# EOF`).
    pub fn exposition(&self) -> String {
        use std::fmt::Write;
        let views = self.views();
        let mut out = String::new();
        let families: [(&str, &str, &str); 11] = [
            ("skillshift_llm_permits_granted", "counter", "LLM permits granted"),
            ("skillshift_llm_permit_wait_seconds", "counter", "Seconds requests waited for an LLM permit"),
            ("skillshift_llm_permit_wait_max_seconds", "gauge", "Longest wait for one LLM permit"),
            ("skillshift_llm_rate_limited", "counter", "Calls the endpoint answered with 429"),
            ("skillshift_llm_in_flight", "gauge", "LLM permits held"),
            ("skillshift_llm_waiting", "gauge", "Requests waiting for an LLM permit"),
            ("skillshift_llm_concurrency_limit", "gauge", "Effective in-flight limit after 429 decreases"),
            ("skillshift_llm_rpm_limit", "gauge", "Effective requests-per-minute limit"),
            ("skillshift_llm_scale", "gauge", "AIMD scale of the configured ceilings"),
            ("skillshift_llm_limit_decreases", "counter", "Times a 429 halved the shared limit"),
            ("skillshift_llm_permits_expired", "counter", "Permits that expired unrenewed (a lost worker's)"),
        ];
        for (i, (name, kind, help)) in families.iter().enumerate() {
            let _ = writeln!(out, "# HELP {name} {help}.\n# TYPE {name} {kind}");
            let suffix = if *kind == "counter" { "_total" } else { "" };
            for (v, t) in &views {
                let value = match i {
                    0 => t.granted as f64,
                    1 => t.wait_seconds,
                    2 => t.wait_max_seconds,
                    3 => t.rate_limited as f64,
                    4 => v.in_flight as f64,
                    5 => v.waiting as f64,
                    6 => v.concurrency.map_or(f64::NAN, |c| c as f64),
                    7 => v.rpm.map_or(f64::NAN, |c| c as f64),
                    8 => v.scale,
                    9 => t.decreases as f64,
                    _ => v.expired as f64,
                };
                if value.is_nan() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "{name}{suffix}{{endpoint=\"{}\",model=\"{}\"}} {value}",
                    label(&v.endpoint),
                    label(&v.model)
                );
            }
        }
        out
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> MeterKey {
        ("http://llm/v1".into(), "m".into())
    }

    fn cfg(concurrency: Option<u32>, rpm: Option<u32>, tpm: Option<u64>) -> BudgetConfig {
        BudgetConfig { concurrency, rpm, tpm }
    }

    fn me() -> Holder {
        Holder::of("the honest worker's secret")
    }

    fn grant(l: &mut Ledger, tokens: u64, now: Instant) -> Option<String> {
        grant_to(l, &key(), me(), tokens, now)
    }

    fn grant_to(l: &mut Ledger, key: &MeterKey, holder: Holder, tokens: u64, now: Instant) -> Option<String> {
        let t = l.enqueue(key, holder, now).unwrap();
        match l.try_grant(key, t, tokens, now) {
            Decision::Granted { permit, .. } => Some(permit),
            Decision::Wait(_) | Decision::Refused(_) => {
                l.withdraw(key, t);
                None
            }
        }
    }

    #[test]
    fn concurrency_is_a_ceiling_and_a_release_frees_a_place() {
        let now = Instant::now();
        let mut l = Ledger::new(cfg(Some(2), None, None), Duration::from_secs(30));
        let a = grant(&mut l, 10, now).unwrap();
        let _b = grant(&mut l, 10, now).unwrap();
        assert_eq!(grant(&mut l, 10, now), None);
        l.release(&key(), &me(), &a, CallResult::Answered, 5, now).unwrap();
        assert!(grant(&mut l, 10, now).is_some());
        assert_eq!(l.views()[0].in_flight, 2);
    }

    #[test]
    fn first_come_first_served() {
        let now = Instant::now();
        let mut l = Ledger::new(cfg(Some(1), None, None), Duration::from_secs(30));
        let a = grant(&mut l, 1, now).unwrap();
        let t1 = l.enqueue(&key(), me(), now).unwrap();
        let t2 = l.enqueue(&key(), me(), now).unwrap();
        l.release(&key(), &me(), &a, CallResult::Answered, 0, now).unwrap();
        assert_eq!(l.try_grant(&key(), t2, 1, now), Decision::Wait(None), "t1 is ahead");
        assert!(matches!(l.try_grant(&key(), t1, 1, now), Decision::Granted { .. }));
    }

    #[test]
    fn requests_per_minute_are_spaced_and_bounded() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(None, Some(60), None), Duration::from_secs(30));
        assert!(grant(&mut l, 1, t0).is_some());
        let t = l.enqueue(&key(), me(), t0).unwrap();
        assert_eq!(
            l.try_grant(&key(), t, 1, t0 + Duration::from_millis(500)),
            Decision::Wait(Some(t0 + Duration::from_secs(1)))
        );
        assert!(matches!(l.try_grant(&key(), t, 1, t0 + Duration::from_secs(1)), Decision::Granted { .. }));
        // Over a simulated ten minutes at one request every 100 ms, grants hold to 60 a minute.
        let mut l = Ledger::new(cfg(None, Some(60), None), Duration::from_secs(30));
        let granted = (0..6000).filter(|i| grant(&mut l, 1, t0 + Duration::from_millis(100 * i)).is_some()).count();
        assert!((595..=601).contains(&granted), "{granted} grants in 10 minutes");
        // A waiter always in line that wakes 30 ms after its slot does not slow the rate.
        let mut l = Ledger::new(cfg(None, Some(600), None), Duration::from_secs(30));
        let (mut now, mut granted) = (t0, 0);
        // (Each grant to a holder of its own: one holder may hold only MAX_HELD_PER_HOLDER.)
        let holder = |i: u32| Holder::of(&format!("holder {i}"));
        let mut ticket = l.enqueue(&key(), holder(0), t0).unwrap();
        while now < t0 + WINDOW {
            match l.try_grant(&key(), ticket, 1, now) {
                Decision::Granted { .. } => {
                    granted += 1;
                    ticket = l.enqueue(&key(), holder(granted), t0).unwrap();
                }
                Decision::Wait(at) => now = at.unwrap_or(now) + Duration::from_millis(30),
                Decision::Refused(e) => panic!("{e}"),
            }
        }
        assert!((595..=601).contains(&granted), "{granted} grants in a minute at --llm-rpm 600");
    }

    #[test]
    fn tokens_per_minute_count_what_was_used() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(None, None, Some(1000)), Duration::from_secs(30));
        let a = grant(&mut l, 600, t0).unwrap();
        assert_eq!(grant(&mut l, 600, t0), None, "600 + 600 reserved is over 1000");
        l.release(&key(), &me(), &a, CallResult::Answered, 100, t0).unwrap();
        assert!(grant(&mut l, 600, t0).is_some(), "100 used + 600 fits");
        assert_eq!(grant(&mut l, 600, t0), None);
        assert!(grant(&mut l, 600, t0 + WINDOW).is_some(), "the window slid");
        // A request larger than the whole budget runs alone.
        let mut l = Ledger::new(cfg(None, None, Some(1000)), Duration::from_secs(30));
        assert!(grant(&mut l, 5000, t0).is_some());
    }

    #[test]
    fn a_burst_of_429s_halves_once_and_answers_grow_it_back() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(Some(8), None, None), Duration::from_secs(30));
        let permits: Vec<String> = (0..8).map(|_| grant(&mut l, 1, t0).unwrap()).collect();
        for p in &permits {
            l.release(&key(), &me(), p, CallResult::RateLimited, 0, t0 + Duration::from_millis(1)).unwrap();
        }
        assert_eq!(l.views()[0].concurrency, Some(4), "eight 429s of one round halve the limit once");
        let p = grant(&mut l, 1, t0 + Duration::from_millis(2)).unwrap();
        l.release(&key(), &me(), &p, CallResult::RateLimited, 0, t0 + Duration::from_millis(3)).unwrap();
        assert_eq!(l.views()[0].concurrency, Some(2), "a permit granted after the decrease counts again");
        let mut t = t0 + Duration::from_millis(10);
        let mut answered = 0;
        while l.views()[0].concurrency != Some(8) {
            let p = grant(&mut l, 1, t).unwrap();
            l.release(&key(), &me(), &p, CallResult::Answered, 0, t).unwrap();
            t += Duration::from_millis(1);
            answered += 1;
            assert!(answered < 1000, "the limit never grew back");
        }
        // Additive: about one permit per round of limit calls, 2+3+...+7 = 27 calls.
        assert!((20..=40).contains(&answered), "{answered} answers to grow from 2 to 8");
    }

    #[test]
    fn unrenewed_permits_expire_and_proven_ones_are_adopted_after_a_restart_only() {
        let t0 = Instant::now();
        let ttl = Duration::from_secs(3);
        let store_key = [7u8; 32];
        let mut l = Ledger::keyed(cfg(Some(1), None, None), ttl, store_key);
        let a = grant(&mut l, 1, t0).unwrap();
        let r = l.renew(&me(), &[(key(), a.clone(), 1)], t0 + Duration::from_secs(2));
        assert_eq!(r, Renewed { renewed: 1, adopted: 0, refused: 0 });
        assert_eq!(grant(&mut l, 1, t0 + Duration::from_secs(4)), None, "renewed at 2 s, alive until 5 s");
        assert!(grant(&mut l, 1, t0 + Duration::from_secs(5)).is_some(), "expired at 5 s");
        assert_eq!(l.views()[0].expired, 1);
        // A restarted coordinator on the same store adopts what its holder still holds, within one TTL.
        let mut fresh = Ledger::keyed(cfg(Some(1), None, None), ttl, store_key);
        fresh.restarted(t0);
        let other = Holder::of("someone else's secret");
        assert_eq!(fresh.renew(&other, &[(key(), a.clone(), 1)], t0).adopted, 0, "not the holder it was granted to");
        let elsewhere = ("http://other/v1".to_string(), "m".to_string());
        assert_eq!(fresh.renew(&me(), &[(elsewhere, a.clone(), 1)], t0).adopted, 0, "not the meter it was granted on");
        assert_eq!(fresh.renew(&me(), &[(key(), a.clone(), 1)], t0).adopted, 1);
        assert_eq!(grant(&mut fresh, 1, t0 + ttl / 2), None, "the adopted permit counts");
        assert!(grant(&mut fresh, 1, t0 + ttl).is_some(), "and expires like any other");
        // No adoption on a store with another key, or outside the restart window, or without a restart.
        let mut stranger = Ledger::keyed(cfg(Some(1), None, None), ttl, [8u8; 32]);
        stranger.restarted(t0);
        assert_eq!(stranger.renew(&me(), &[(key(), a.clone(), 1)], t0).refused, 1);
        let mut late = Ledger::keyed(cfg(Some(1), None, None), ttl, store_key);
        late.restarted(t0);
        assert_eq!(late.renew(&me(), &[(key(), a.clone(), 1)], t0 + ttl).refused, 1, "past the window");
        let mut never = Ledger::keyed(cfg(Some(1), None, None), ttl, store_key);
        assert_eq!(never.renew(&me(), &[(key(), a.clone(), 1)], t0).refused, 1, "not a restart");
        // Its own expired or released permits, and foreign ones already given back, are not adopted.
        let mut l = Ledger::keyed(cfg(Some(1), None, None), ttl, store_key);
        l.restarted(t0 - ttl / 2);
        let own = grant(&mut l, 1, t0).unwrap();
        l.release(&key(), &me(), &own, CallResult::Answered, 0, t0).unwrap();
        l.release(&key(), &me(), &a, CallResult::Answered, 0, t0).unwrap();
        let r = l.renew(&me(), &[(key(), own, 1), (key(), a, 1)], t0);
        assert_eq!(r, Renewed { renewed: 0, adopted: 0, refused: 2 });
        assert!(grant(&mut l, 1, t0).is_some());
        // A restarted ledger is quiet until the renewals are in.
        let mut l = Ledger::new(cfg(Some(1), None, None), ttl);
        l.quiet_until(t0 + Duration::from_secs(1));
        let t = l.enqueue(&key(), me(), t0).unwrap();
        assert_eq!(l.try_grant(&key(), t, 1, t0), Decision::Wait(Some(t0 + Duration::from_secs(1))));
        assert!(matches!(l.try_grant(&key(), t, 1, t0 + Duration::from_secs(1)), Decision::Granted { .. }));
    }

    #[test]
    fn release_and_renew_of_permits_the_caller_does_not_hold_change_nothing() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(Some(8), None, Some(1000)), Duration::from_secs(30));
        let mine = grant(&mut l, 600, t0).unwrap();
        let thief = Holder::of("a token holder with no permit");
        // Ten made-up 429s, and the honest permit's id released by another holder: refused, no change.
        for i in 0..10 {
            let made_up = format!("00000000-{i}");
            let r = l.release(&key(), &thief, &made_up, CallResult::RateLimited, 0, t0);
            assert_eq!(r, Err(BudgetError::NotHeld(made_up)));
        }
        let stolen = l.release(&key(), &thief, &mine, CallResult::RateLimited, 1, t0);
        assert_eq!(stolen, Err(BudgetError::NotHeld(mine.clone())));
        let v = &l.views()[0];
        assert_eq!((v.scale, v.concurrency, v.in_flight), (1.0, Some(8), 1), "{v:?}");
        assert_eq!(grant(&mut l, 600, t0), None, "the 600 reserved still count against 1000");
        // 4,096 made-up ids and the honest one, renewed by another holder: none held, none extended.
        let fake: Vec<_> = (0..4096).map(|i| (key(), format!("deadbeef-{i}-{:032x}", i), 1)).collect();
        assert_eq!(l.renew(&thief, &fake, t0).refused, 4096);
        assert_eq!(l.renew(&thief, &[(key(), mine.clone(), 1)], t0).refused, 1);
        assert_eq!(l.views()[0].in_flight, 1);
        // A 429 on a permit the caller holds counts; a second release of it is refused.
        assert_eq!(l.release(&key(), &me(), &mine, CallResult::RateLimited, 0, t0), Ok(true));
        assert!(l.release(&key(), &me(), &mine, CallResult::RateLimited, 0, t0).is_err());
        assert_eq!(l.views()[0].concurrency, Some(4));
    }

    #[test]
    fn held_permits_are_capped_per_holder_without_blocking_the_line() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(None, None, Some(u64::MAX)), Duration::from_secs(30));
        let greedy = Holder::of("a greedy holder's secret");
        for _ in 0..MAX_HELD_PER_HOLDER {
            assert!(grant_to(&mut l, &key(), greedy, 1, t0).is_some());
        }
        assert_eq!(l.enqueue(&key(), greedy, t0), Err(BudgetError::HolderFull));
        assert!(grant(&mut l, 1, t0).is_some(), "another holder is still served");
    }

    #[test]
    fn junk_endpoints_make_room_and_never_stop_a_real_one() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(Some(4), None, None), Duration::from_secs(30));
        let junk = Holder::of("a junk-endpoint holder");
        for i in 0..300 {
            let k = (format!("http://junk-{i}/v1"), "m".to_string());
            let p = grant_to(&mut l, &k, junk, 1, t0).unwrap();
            l.release(&k, &junk, &p, CallResult::Answered, 0, t0).unwrap();
        }
        assert_eq!(l.views().len(), MAX_ENDPOINTS);
        assert!(grant(&mut l, 1, t0).is_some(), "the real endpoint gets a meter and a permit");
        // Renewals never create meters: made-up ones name 300 endpoints and leave the table as it was.
        let fake: Vec<_> =
            (0..300).map(|i| ((format!("http://r-{i}/v1"), "m".to_string()), format!("x-{i}-y"), 1)).collect();
        assert_eq!(l.renew(&junk, &fake, t0).refused, 300);
        assert!(l.views().iter().all(|v| !v.endpoint.starts_with("http://r-")));
    }

    #[test]
    fn token_sums_saturate_and_two_huge_estimates_are_not_both_granted() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(None, None, Some(1000)), Duration::from_secs(30));
        assert!(grant(&mut l, 1 << 63, t0).is_some(), "one runs alone in its window");
        assert_eq!(grant(&mut l, 1 << 63, t0), None, "the second waits: the sum does not wrap");
        assert_eq!(grant(&mut l, u64::MAX, t0), None);
    }

    #[tokio::test]
    async fn a_waiting_request_is_granted_on_release_and_gives_up_at_its_deadline() {
        let b = Budget::new(cfg(Some(1), None, None), Duration::from_secs(30));
        let first = match b.acquire(&key(), me(), 1, Duration::from_secs(1)).await.unwrap() {
            Acquired::Granted { permit, .. } => permit,
            other => panic!("{other:?}"),
        };
        let short = b.acquire(&key(), me(), 1, Duration::from_millis(50)).await.unwrap();
        assert!(matches!(short, Acquired::NotYet { .. }), "{short:?}");
        let b2 = b.clone();
        #[allow(clippy::disallowed_methods)] // a test's own helper task, awaited below
        let waiter = tokio::spawn(async move { b2.acquire(&key(), me(), 1, Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        b.release(&key(), &me(), &first, CallResult::Answered, 0).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(2), waiter).await.unwrap().unwrap().unwrap();
        assert!(matches!(got, Acquired::Granted { .. }), "{got:?}");
        assert_eq!(b.views()[0].0.waiting, 0, "no ticket left behind");
        let text = b.exposition();
        assert!(
            text.contains("skillshift_llm_permits_granted_total{endpoint=\"http://llm/v1\",model=\"m\"} 2"),
            "{text}"
        );
        let unmetered = Budget::new(BudgetConfig::default(), Duration::from_secs(30));
        assert_eq!(unmetered.acquire(&key(), me(), 1, Duration::from_secs(1)).await.unwrap(), Acquired::Unmetered);
    }
}
