//! Leases: which worker holds which running attempt, and until when.
//!
//! A worker's leases live as long as the worker is heard from: every message
//! it sends (heartbeats above all) pushes its deadline to `now + ttl`. A broken
//! stream releases its leases at once ([`Leases::release_worker`]); silence
//! releases them when the deadline passes ([`Leases::expire`]). After a
//! coordinator restart, attempts that were running are *orphans* with a
//! deadline of one TTL: the worker they were leased to (the store's ledger
//! says which) re-attaches when it reconnects and names them
//! ([`Leases::attach`]); no other worker may; the rest expire like a silent
//! worker's.
//!
//! Time is passed in, never read, so tests drive it by hand.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use skillshift_common::ids::AttemptKey;

/// Who holds a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    Worker(String),
    /// Running when the coordinator restarted; `former` is who it was leased to.
    Orphan {
        deadline: Instant,
        former: Option<String>,
    },
}

#[derive(Debug)]
pub struct Leases {
    ttl: Duration,
    holders: HashMap<AttemptKey, Holder>,
    by_worker: HashMap<String, BTreeSet<AttemptKey>>,
    deadlines: HashMap<String, Instant>,
}

impl Leases {
    pub fn new(ttl: Duration) -> Leases {
        Leases { ttl, holders: HashMap::new(), by_worker: HashMap::new(), deadlines: HashMap::new() }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn holder(&self, key: &AttemptKey) -> Option<&Holder> {
        self.holders.get(key)
    }

    /// Number of leases a worker holds.
    pub fn count(&self, worker: &str) -> usize {
        self.by_worker.get(worker).map_or(0, |s| s.len())
    }

    /// Total number of leases held (by workers and orphans).
    pub fn len(&self) -> usize {
        self.holders.len()
    }

    pub fn is_empty(&self) -> bool {
        self.holders.is_empty()
    }

    /// Whether any lease is, or waits as an orphan for, `worker`.
    pub fn involves(&self, worker: &str) -> bool {
        self.count(worker) > 0
            || self.holders.values().any(|h| matches!(h, Holder::Orphan { former: Some(f), .. } if f == worker))
    }

    /// The worker was heard from: its leases run until `now + ttl`.
    pub fn renew(&mut self, worker: &str, now: Instant) {
        self.deadlines.insert(worker.to_string(), now + self.ttl);
    }

    /// Grants `key` to `worker`.
    pub fn grant(&mut self, key: AttemptKey, worker: &str, now: Instant) {
        self.renew(worker, now);
        self.by_worker.entry(worker.to_string()).or_default().insert(key.clone());
        self.holders.insert(key, Holder::Worker(worker.to_string()));
    }

    /// A lease whose worker has not reconnected since a restart, held for
    /// one TTL for `former` (the worker it was leased to, if known).
    pub fn orphan(&mut self, key: AttemptKey, former: Option<String>, now: Instant) {
        self.holders.insert(key, Holder::Orphan { deadline: now + self.ttl, former });
    }

    /// A reconnecting worker names an attempt it is still running. Returns
    /// true when the lease is already this worker's, or an orphan it held.
    pub fn attach(&mut self, key: &AttemptKey, worker: &str, now: Instant) -> bool {
        match self.holders.get(key) {
            Some(Holder::Orphan { former: Some(f), .. }) if f == worker => {
                self.grant(key.clone(), worker, now);
                true
            }
            Some(Holder::Orphan { .. }) => false,
            Some(Holder::Worker(w)) => w == worker,
            None => false,
        }
    }

    /// The attempt ended (its record arrived): the lease is gone. Returns the
    /// former holder.
    pub fn finish(&mut self, key: &AttemptKey) -> Option<Holder> {
        let holder = self.holders.remove(key)?;
        if let Holder::Worker(w) = &holder {
            if let Some(set) = self.by_worker.get_mut(w) {
                set.remove(key);
            }
        }
        Some(holder)
    }

    /// The worker's stream broke: every lease it holds is released now.
    pub fn release_worker(&mut self, worker: &str) -> Vec<AttemptKey> {
        self.deadlines.remove(worker);
        let keys: Vec<AttemptKey> = self.by_worker.remove(worker).unwrap_or_default().into_iter().collect();
        for k in &keys {
            self.holders.remove(k);
        }
        keys
    }

    /// Leases whose holder went silent past its deadline (and orphans nobody
    /// re-attached), released. Returns (worker or `None` for orphans, attempts).
    pub fn expire(&mut self, now: Instant) -> Vec<(Option<String>, Vec<AttemptKey>)> {
        let mut out = Vec::new();
        let silent: Vec<String> = self
            .deadlines
            .iter()
            .filter(|(w, d)| **d <= now && self.by_worker.get(*w).is_some_and(|s| !s.is_empty()))
            .map(|(w, _)| w.clone())
            .collect();
        for w in silent {
            let keys = self.release_worker(&w);
            out.push((Some(w), keys));
        }
        let orphans: Vec<AttemptKey> = self
            .holders
            .iter()
            .filter(|(_, h)| matches!(h, Holder::Orphan { deadline, .. } if *deadline <= now))
            .map(|(k, _)| k.clone())
            .collect();
        if !orphans.is_empty() {
            for k in &orphans {
                self.holders.remove(k);
            }
            out.push((None, orphans));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(unit: u32) -> AttemptKey {
        AttemptKey { sweep: "s".into(), unit, attempt: 0 }
    }

    #[test]
    fn heartbeats_renew_and_silence_expires_at_the_ttl() {
        let t0 = Instant::now();
        let ttl = Duration::from_secs(30);
        let mut l = Leases::new(ttl);
        l.grant(key(1), "w1", t0);
        l.grant(key(2), "w2", t0);
        l.renew("w1", t0 + Duration::from_secs(20));
        assert!(l.expire(t0 + Duration::from_secs(29)).is_empty());
        let gone = l.expire(t0 + ttl);
        assert_eq!(gone, vec![(Some("w2".to_string()), vec![key(2)])]);
        assert_eq!(l.holder(&key(1)), Some(&Holder::Worker("w1".into())));
        let gone = l.expire(t0 + Duration::from_secs(50));
        assert_eq!(gone, vec![(Some("w1".to_string()), vec![key(1)])]);
        assert!(l.is_empty());
    }

    #[test]
    fn a_broken_stream_releases_at_once_and_finish_removes_one() {
        let t0 = Instant::now();
        let mut l = Leases::new(Duration::from_secs(30));
        l.grant(key(1), "w", t0);
        l.grant(key(2), "w", t0);
        assert_eq!(l.finish(&key(1)), Some(Holder::Worker("w".into())));
        assert_eq!(l.count("w"), 1);
        assert_eq!(l.release_worker("w"), vec![key(2)]);
        assert!(l.is_empty());
        assert!(l.expire(t0 + Duration::from_secs(100)).is_empty());
    }

    #[test]
    fn orphans_reattach_to_their_former_holder_or_expire() {
        let t0 = Instant::now();
        let mut l = Leases::new(Duration::from_secs(30));
        l.orphan(key(1), Some("w".into()), t0);
        l.orphan(key(2), Some("w".into()), t0);
        l.orphan(key(3), None, t0);
        assert!(l.involves("w") && !l.involves("other"));
        assert!(!l.attach(&key(1), "other", t0), "an orphan is not adopted by another worker");
        assert!(!l.attach(&key(3), "w", t0), "nor one whose holder is unknown");
        assert!(l.attach(&key(1), "w", t0 + Duration::from_secs(5)));
        assert!(!l.attach(&key(9), "w", t0), "unknown attempts are not adopted");
        assert!(!l.attach(&key(1), "other", t0), "another worker's lease is not taken");
        let mut gone = l.expire(t0 + Duration::from_secs(30));
        gone[0].1.sort_by_key(|k| k.unit);
        assert_eq!(gone, vec![(None, vec![key(2), key(3)])]);
        assert_eq!(l.holder(&key(1)), Some(&Holder::Worker("w".into())));
    }
}
