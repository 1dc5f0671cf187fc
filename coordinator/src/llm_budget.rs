//! The cluster's one LLM budget (`--llm-concurrency`, `--llm-rpm`,
//! `--llm-tpm`; docs/cli.md): permits per model endpoint, granted to workers
//! before each HTTP call and given back after.
//!
//! * [`BudgetConfig`]: the configured ceilings; with none set the budget is
//!   unmetered and every request is answered `metered = false` at once.
//! * `Meter` (one per `(endpoint, model)`): the permits in flight, the grants
//!   and reserved tokens of the last minute, the FIFO of waiting requests and
//!   the AIMD scale. A 429 halves the scale (at most once per round of
//!   permits: a permit granted before the last decrease cannot cause
//!   another), every answered call adds back `1 / (concurrency × limit)`, so
//!   the concurrency limit regains one permit per round of calls. The
//!   effective concurrency, requests and tokens per minute are the
//!   configured ones times the scale (at least 1 each).
//! * [`Ledger`]: every meter, as a pure state machine over an injected
//!   `Instant`, tested without a network or a clock.
//! * [`Budget`]: the ledger behind a std mutex plus the waiting: a request
//!   that cannot be granted sleeps until something changes (a release, an
//!   expiry, a window sliding) or its wait ends.
//!
//! Permits expire when not renewed within the lease TTL, so the permits of a
//! worker that is lost (killed or cut off) come back with its leases. A
//! restarted coordinator knows no permits; workers renew theirs and the new
//! coordinator adopts the ones it does not know, so the ceiling holds again
//! within one renewal and nothing waits on a permit that no one will return.
//! Permit ids carry a per-process prefix, so an adopted id never collides
//! with a new one. A coordinator that restarts (its store held sweeps)
//! grants nothing for half a TTL, so every renewal arrives before it does.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

#[derive(Debug, Clone)]
struct Held {
    expires: Instant,
    granted: Instant,
}

#[derive(Debug)]
struct Meter {
    held: HashMap<String, Held>,
    /// Grant times of the last minute (oldest first), for the request ceiling.
    requests: VecDeque<Instant>,
    /// Reserved (then corrected) tokens of the last minute's grants.
    tokens: VecDeque<(Instant, String, u64)>,
    /// Waiting tickets, first come first served.
    queue: VecDeque<u64>,
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

    fn expire(&mut self, now: Instant) -> usize {
        let before = self.held.len();
        self.held.retain(|_, h| h.expires > now);
        self.expired += (before - self.held.len()) as u64;
        while self.requests.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
            self.requests.pop_front();
        }
        while self.tokens.front().is_some_and(|(t, _, _)| now.duration_since(*t) >= WINDOW) {
            self.tokens.pop_front();
        }
        before - self.held.len()
    }

    fn scaled(&self, ceiling: u64) -> u64 {
        ((ceiling as f64 * self.scale).floor() as u64).max(1)
    }

    fn tokens_in_window(&self) -> u64 {
        self.tokens.iter().map(|(_, _, n)| *n).sum()
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
}

/// Every meter, as a state machine over an injected time.
#[derive(Debug)]
pub struct Ledger {
    cfg: BudgetConfig,
    ttl: Duration,
    meters: HashMap<MeterKey, Meter>,
    prefix: String,
    next: u64,
    /// Permits of an earlier coordinator given back before any renewal named them: never adopted.
    released_foreign: VecDeque<String>,
    /// After a restart, nothing is granted before this: the workers' renewals say first what is in flight.
    quiet_until: Option<Instant>,
}

/// Foreign permit ids remembered as released.
const MAX_RELEASED_FOREIGN: usize = 4096;

impl Ledger {
    pub fn new(cfg: BudgetConfig, ttl: Duration) -> Ledger {
        let prefix = format!("{:08x}", rand::random::<u32>());
        Ledger {
            cfg,
            ttl,
            meters: HashMap::new(),
            prefix,
            next: 0,
            released_foreign: VecDeque::new(),
            quiet_until: None,
        }
    }

    pub fn config(&self) -> BudgetConfig {
        self.cfg
    }

    /// Grants nothing before `until` (a restarted coordinator waits for renewals of permits still held).
    pub fn quiet_until(&mut self, until: Instant) {
        self.quiet_until = Some(until);
    }

    fn meter(&mut self, key: &MeterKey) -> Result<&mut Meter, String> {
        if !self.meters.contains_key(key) {
            if self.meters.len() >= MAX_ENDPOINTS {
                return Err(format!("{MAX_ENDPOINTS} llm endpoints are metered, the limit"));
            }
            self.meters.insert(key.clone(), Meter::new());
        }
        self.meters.get_mut(key).ok_or_else(|| "meter vanished".to_string())
    }

    /// Puts a request in its meter's queue; its ticket decides its turn.
    pub fn enqueue(&mut self, key: &MeterKey) -> Result<u64, String> {
        self.next += 1;
        let ticket = self.next;
        self.meter(key)?.queue.push_back(ticket);
        Ok(ticket)
    }

    /// Takes a ticket out of its queue (its request gave up or its client went away).
    pub fn withdraw(&mut self, key: &MeterKey, ticket: u64) {
        if let Some(m) = self.meters.get_mut(key) {
            m.queue.retain(|t| *t != ticket);
        }
    }

    /// Grants `ticket` a permit if it is first in line and every ceiling allows it.
    pub fn try_grant(&mut self, key: &MeterKey, ticket: u64, tokens: u64, now: Instant) -> Decision {
        let (cfg, ttl) = (self.cfg, self.ttl);
        if let Some(until) = self.quiet_until.filter(|u| now < *u) {
            return Decision::Wait(Some(until));
        }
        let Some(m) = self.meters.get_mut(key) else { return Decision::Wait(None) };
        m.expire(now);
        if m.queue.front() != Some(&ticket) {
            return Decision::Wait(None);
        }
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
            if used > 0 && used + tokens > tpm {
                return Decision::Wait(m.tokens.front().map(|(t, _, _)| *t + WINDOW));
            }
        }
        m.queue.pop_front();
        self.next += 1;
        let permit = format!("{}-{}", self.prefix, self.next);
        m.held.insert(permit.clone(), Held { expires: now + ttl, granted: now });
        // Under steady demand the request slots follow an even timeline (the last one plus the spacing), so
        // the time a waiter takes to wake up does not slow the rate; after a lull the timeline restarts now.
        let slot = match (cfg.rpm.map(|r| WINDOW.div_f64(m.scaled(r.into()) as f64)), m.requests.back()) {
            (Some(spacing), Some(last)) if now < *last + spacing * 2 => (*last + spacing).min(now),
            _ => now,
        };
        m.requests.push_back(slot);
        m.tokens.push_back((now, permit.clone(), tokens));
        let limit = concurrency.unwrap_or(0).min(u32::MAX as u64) as u32;
        Decision::Granted { permit, limit }
    }

    /// Gives a permit back; a 429 shrinks the meter's scale, an answer grows it. Returns whether the
    /// shared limit was lowered.
    pub fn release(
        &mut self,
        key: &MeterKey,
        permit: &str,
        result: CallResult,
        tokens_used: u64,
        now: Instant,
    ) -> bool {
        let base = self.cfg.concurrency.unwrap_or(10).max(1) as f64;
        let foreign = !self.is_own(permit);
        let Some(m) = self.meters.get_mut(key) else { return false };
        let held = m.held.remove(permit);
        if held.is_none() && foreign {
            if self.released_foreign.len() >= MAX_RELEASED_FOREIGN {
                self.released_foreign.pop_front();
            }
            self.released_foreign.push_back(permit.to_string());
        }
        if tokens_used > 0 {
            if let Some(entry) = m.tokens.iter_mut().find(|(_, p, _)| p == permit) {
                entry.2 = tokens_used;
            }
        }
        match result {
            CallResult::RateLimited => {
                // One decrease per round: a permit granted before the last decrease was already counted.
                let fresh = match (&held, m.last_decrease) {
                    (Some(h), Some(at)) => h.granted > at,
                    _ => true,
                };
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
        }
    }

    /// Whether this ledger granted `permit` (its ids carry the ledger's prefix).
    fn is_own(&self, permit: &str) -> bool {
        permit.split_once('-').is_some_and(|(p, _)| p == self.prefix)
    }

    /// Extends held permits (each with the tokens it reserved, which an adopted one does not count again). Ones granted by an earlier coordinator (a restart) are adopted; this one's own
    /// that it no longer holds were released or expired, and stay so. Returns how many were adopted.
    pub fn renew(&mut self, held: &[(MeterKey, String, u64)], now: Instant) -> usize {
        let ttl = self.ttl;
        let mut adopted = 0;
        for (key, permit, _tokens) in held {
            let adoptable = !self.is_own(permit) && !self.released_foreign.contains(permit);
            let Ok(m) = self.meter(key) else { continue };
            match m.held.get_mut(permit) {
                Some(h) => h.expires = now + ttl,
                None if !adoptable => {}
                None => {
                    m.held.insert(permit.clone(), Held { expires: now + ttl, granted: now });
                    adopted += 1;
                }
            }
        }
        adopted
    }

    /// Drops expired permits and old window entries everywhere; returns how many permits expired.
    pub fn expire(&mut self, now: Instant) -> usize {
        self.meters.values_mut().map(|m| m.expire(now)).sum()
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
    /// TTL) the permits it still holds, so they are counted before anything new is granted.
    pub fn restarted(self) -> Budget {
        let until = Instant::now() + self.ttl / 2;
        let _ = self.with_ledger(|l| l.quiet_until(until));
        self
    }

    /// `ttl` is the lease TTL: a permit not renewed within it expires.
    pub fn new(cfg: BudgetConfig, ttl: Duration) -> Budget {
        let shared = Shared {
            ledger: Mutex::new(Ledger::new(cfg, ttl)),
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

    fn with_ledger<T>(&self, f: impl FnOnce(&mut Ledger) -> T) -> Result<T, String> {
        let mut l = self.shared.ledger.lock().map_err(|_| "the llm budget's lock is poisoned".to_string())?;
        Ok(f(&mut l))
    }

    fn total(&self, key: &MeterKey, f: impl FnOnce(&mut MeterTotals)) {
        if let Ok(mut t) = self.shared.totals.lock() {
            f(t.entry(key.clone()).or_default());
        }
    }

    /// Waits up to `wait` (capped at [`MAX_WAIT`]) for a permit on `key`.
    pub async fn acquire(&self, key: &MeterKey, tokens: u64, wait: Duration) -> Result<Acquired, String> {
        if !self.cfg.is_metered() {
            return Ok(Acquired::Unmetered);
        }
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        let ticket = self.with_ledger(|l| l.enqueue(key))??;
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

    pub fn release(&self, key: &MeterKey, permit: &str, result: CallResult, tokens_used: u64) {
        let decreased =
            self.with_ledger(|l| l.release(key, permit, result, tokens_used, Instant::now())).unwrap_or(false);
        if result == CallResult::RateLimited {
            self.total(key, |t| {
                t.rate_limited += 1;
                t.decreases += u64::from(decreased);
            });
        }
        self.shared.changed.notify_waiters();
    }

    pub fn renew(&self, held: &[(MeterKey, String, u64)]) -> usize {
        let adopted = self.with_ledger(|l| l.renew(held, Instant::now())).unwrap_or(0);
        if adopted > 0 {
            tracing::info!(adopted, "llm budget adopted permits it did not know (a restart)");
        }
        adopted
    }

    /// Drops expired permits; run periodically so a lost worker's permits come back.
    pub fn sweep_expired(&self) {
        let n = self.with_ledger(|l| l.expire(Instant::now())).unwrap_or(0);
        if n > 0 {
            tracing::warn!(expired = n, "llm permits expired without renewal (a lost worker)");
            self.shared.changed.notify_waiters();
        }
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

    fn grant(l: &mut Ledger, tokens: u64, now: Instant) -> Option<String> {
        let t = l.enqueue(&key()).unwrap();
        match l.try_grant(&key(), t, tokens, now) {
            Decision::Granted { permit, .. } => Some(permit),
            Decision::Wait(_) => {
                l.withdraw(&key(), t);
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
        l.release(&key(), &a, CallResult::Answered, 5, now);
        assert!(grant(&mut l, 10, now).is_some());
        assert_eq!(l.views()[0].in_flight, 2);
    }

    #[test]
    fn first_come_first_served() {
        let now = Instant::now();
        let mut l = Ledger::new(cfg(Some(1), None, None), Duration::from_secs(30));
        let a = grant(&mut l, 1, now).unwrap();
        let t1 = l.enqueue(&key()).unwrap();
        let t2 = l.enqueue(&key()).unwrap();
        l.release(&key(), &a, CallResult::Answered, 0, now);
        assert_eq!(l.try_grant(&key(), t2, 1, now), Decision::Wait(None), "t1 is ahead");
        assert!(matches!(l.try_grant(&key(), t1, 1, now), Decision::Granted { .. }));
    }

    #[test]
    fn requests_per_minute_are_spaced_and_bounded() {
        let t0 = Instant::now();
        let mut l = Ledger::new(cfg(None, Some(60), None), Duration::from_secs(30));
        assert!(grant(&mut l, 1, t0).is_some());
        let t = l.enqueue(&key()).unwrap();
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
        let mut ticket = l.enqueue(&key()).unwrap();
        while now < t0 + WINDOW {
            match l.try_grant(&key(), ticket, 1, now) {
                Decision::Granted { .. } => {
                    granted += 1;
                    ticket = l.enqueue(&key()).unwrap();
                }
                Decision::Wait(at) => now = at.unwrap_or(now) + Duration::from_millis(30),
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
        l.release(&key(), &a, CallResult::Answered, 100, t0);
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
            l.release(&key(), p, CallResult::RateLimited, 0, t0 + Duration::from_millis(1));
        }
        assert_eq!(l.views()[0].concurrency, Some(4), "eight 429s of one round halve the limit once");
        let p = grant(&mut l, 1, t0 + Duration::from_millis(2)).unwrap();
        l.release(&key(), &p, CallResult::RateLimited, 0, t0 + Duration::from_millis(3));
        assert_eq!(l.views()[0].concurrency, Some(2), "a permit granted after the decrease counts again");
        let mut t = t0 + Duration::from_millis(10);
        let mut answered = 0;
        while l.views()[0].concurrency != Some(8) {
            let p = grant(&mut l, 1, t).unwrap();
            l.release(&key(), &p, CallResult::Answered, 0, t);
            t += Duration::from_millis(1);
            answered += 1;
            assert!(answered < 1000, "the limit never grew back");
        }
        // Additive: about one permit per round of limit calls, 2+3+...+7 = 27 calls.
        assert!((20..=40).contains(&answered), "{answered} answers to grow from 2 to 8");
    }

    #[test]
    fn unrenewed_permits_expire_and_unknown_ones_are_adopted() {
        let t0 = Instant::now();
        let ttl = Duration::from_secs(3);
        let mut l = Ledger::new(cfg(Some(1), None, None), ttl);
        let a = grant(&mut l, 1, t0).unwrap();
        assert_eq!(l.renew(&[(key(), a.clone(), 1)], t0 + Duration::from_secs(2)), 0);
        assert_eq!(grant(&mut l, 1, t0 + Duration::from_secs(4)), None, "renewed at 2 s, alive until 5 s");
        assert!(grant(&mut l, 1, t0 + Duration::from_secs(5)).is_some(), "expired at 5 s");
        assert_eq!(l.views()[0].expired, 1);
        // A restarted coordinator: a fresh ledger adopts what workers still hold.
        let mut fresh = Ledger::new(cfg(Some(1), None, None), ttl);
        assert_eq!(fresh.renew(&[(key(), a, 1)], t0), 1);
        assert_eq!(grant(&mut fresh, 1, t0), None, "the adopted permit counts");
        assert!(grant(&mut fresh, 1, t0 + ttl).is_some(), "and expires like any other");
        // Its own expired or released permits, and foreign ones already given back, are not adopted.
        let mut l = Ledger::new(cfg(Some(1), None, None), ttl);
        let own = grant(&mut l, 1, t0).unwrap();
        l.release(&key(), &own, CallResult::Answered, 0, t0);
        l.release(&key(), "00000000x-7", CallResult::Answered, 0, t0);
        assert_eq!(l.renew(&[(key(), own, 1), (key(), "00000000x-7".into(), 1)], t0), 0);
        assert!(grant(&mut l, 1, t0).is_some());
        // A restarted ledger is quiet until the renewals are in.
        let mut l = Ledger::new(cfg(Some(1), None, None), ttl);
        l.quiet_until(t0 + Duration::from_secs(1));
        let t = l.enqueue(&key()).unwrap();
        assert_eq!(l.try_grant(&key(), t, 1, t0), Decision::Wait(Some(t0 + Duration::from_secs(1))));
        assert!(matches!(l.try_grant(&key(), t, 1, t0 + Duration::from_secs(1)), Decision::Granted { .. }));
    }

    #[tokio::test]
    async fn a_waiting_request_is_granted_on_release_and_gives_up_at_its_deadline() {
        let b = Budget::new(cfg(Some(1), None, None), Duration::from_secs(30));
        let first = match b.acquire(&key(), 1, Duration::from_secs(1)).await.unwrap() {
            Acquired::Granted { permit, .. } => permit,
            other => panic!("{other:?}"),
        };
        let short = b.acquire(&key(), 1, Duration::from_millis(50)).await.unwrap();
        assert!(matches!(short, Acquired::NotYet { .. }), "{short:?}");
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.acquire(&key(), 1, Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        b.release(&key(), &first, CallResult::Answered, 0);
        let got = tokio::time::timeout(Duration::from_secs(2), waiter).await.unwrap().unwrap().unwrap();
        assert!(matches!(got, Acquired::Granted { .. }), "{got:?}");
        assert_eq!(b.views()[0].0.waiting, 0, "no ticket left behind");
        let text = b.exposition();
        assert!(
            text.contains("skillshift_llm_permits_granted_total{endpoint=\"http://llm/v1\",model=\"m\"} 2"),
            "{text}"
        );
        let unmetered = Budget::new(BudgetConfig::default(), Duration::from_secs(30));
        assert_eq!(unmetered.acquire(&key(), 1, Duration::from_secs(1)).await.unwrap(), Acquired::Unmetered);
    }
}
