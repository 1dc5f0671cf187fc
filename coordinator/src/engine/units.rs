//! The unit rule: what one sweep knows about each of its units (one slot per
//! attempt) and the status that follows from it (`docs/formats.md`, from
//! records to numbers).
//!
//! A unit is done when one of its attempts has a non-`error` record (the
//! lowest such attempt is its outcome, decided at report time), invalid when
//! it has more than `max_retries` `error` attempts (a `cancelled` one does not
//! count) and none running, held while its sweep is cancelled, and queued
//! again otherwise. [`SweepRun::resolve`] applies the rule and keeps the
//! per-site-version queues and counts in step with it.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use skillshift_common::{Outcome, Record};

use super::CANCELLED;
use crate::planner::Unit;
use crate::scheduler::{sv_index, SV_COUNT};
use crate::store::{StoredRecord, SweepMeta};

/// One attempt of a unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Slot {
    Running,
    /// `synthetic`: written by the coordinator (a lost worker), not by a worker.
    Recorded {
        outcome: Outcome,
        synthetic: bool,
        retry_counted: bool,
    },
}

impl Slot {
    /// The slot of a worker's (or the coordinator's) record.
    pub(super) fn recorded(rec: &Record, synthetic: bool) -> Slot {
        let outcome = rec.outcome();
        let retry_counted = outcome == Outcome::Error && rec.error.as_deref() != Some(CANCELLED);
        Slot::Recorded { outcome, synthetic, retry_counted }
    }

    pub(super) fn stored(rec: &StoredRecord) -> Slot {
        Slot::recorded(&rec.record, rec.synthetic)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UnitStatus {
    Queued,
    Running,
    Done {
        success: bool,
    },
    Invalid,
    /// Cancelled before it finished; resumable.
    Held,
}

/// An attempt whose holder is not known (a store without its ledger row).
pub(super) const NOBODY: u32 = u32::MAX;

/// One sweep in memory: its plan, the attempts of every unit and the queues.
pub(super) struct SweepRun {
    pub(super) meta: SweepMeta,
    pub(super) units: Vec<Unit>,
    pub(super) slots: Vec<Vec<Slot>>,
    /// Who each attempt was leased to (a number of the engine's `Names`), beside `slots`.
    holders: Vec<Vec<u32>>,
    pub(super) status: Vec<UnitStatus>,
    queues: [VecDeque<u32>; SV_COUNT],
    pub(super) queued: [u32; SV_COUNT],
    pub(super) running: u32,
    pub(super) resolved: u64,
    pub(super) first_assign: Option<Instant>,
    pub(super) resolved_at_first: u64,
    /// LLM cost of the stored records, in USD.
    pub(super) spent: f64,
    /// Stored records from workers, and the largest cost of any of them (USD).
    pub(super) costed: u64,
    pub(super) dearest: f64,
    /// The expected cost reserved for each running attempt (unit, attempt) of a sweep with a cost budget.
    reservations: HashMap<(u32, u32), f64>,
    reserved: f64,
    /// Why each `error` attempt (unit, attempt) errored: its `error` and `error_detail` (`sweep status` counts them).
    errors: HashMap<(u32, u32), String>,
    /// The stored trajectory of each attempt (unit, attempt) that has one: the first 8 bytes of its
    /// blob's SHA-256 ([`super::ingest::blob_id`]), or [`super::ingest::UNKNOWN_BLOB`] for one stored
    /// before blobs had their digest kept.
    pub(super) trajectories: HashMap<(u32, u32), u64>,
    /// Bytes its stored trajectories are charged against the sweep's quota.
    pub(super) trajectory_bytes: u64,
}

impl SweepRun {
    /// A sweep with every unit `Held`; call [`SweepRun::resolve_all`] to
    /// queue what may run. `holders` has one entry per slot.
    pub(super) fn new(meta: SweepMeta, units: Vec<Unit>, slots: Vec<Vec<Slot>>, holders: Vec<Vec<u32>>) -> SweepRun {
        let status = vec![UnitStatus::Held; units.len()];
        SweepRun {
            meta,
            units,
            slots,
            holders,
            status,
            queues: Default::default(),
            queued: [0; SV_COUNT],
            running: 0,
            resolved: 0,
            first_assign: None,
            resolved_at_first: 0,
            spent: 0.0,
            costed: 0,
            dearest: 0.0,
            reservations: HashMap::new(),
            reserved: 0.0,
            errors: HashMap::new(),
            trajectories: HashMap::new(),
            trajectory_bytes: 0,
        }
    }

    /// Keeps why an attempt errored, or forgets it when its (later) record is not an error.
    pub(super) fn note_record(&mut self, unit: u32, attempt: u32, rec: &Record) {
        if rec.outcome() == Outcome::Error {
            self.errors.insert((unit, attempt), skillshift_common::record::error_key(rec));
        } else {
            self.errors.remove(&(unit, attempt));
        }
    }

    /// The most frequent reasons attempts errored, with their counts, most frequent first.
    pub(super) fn top_errors(&self, n: usize) -> Vec<(String, u64)> {
        let mut counts: HashMap<&str, u64> = HashMap::new();
        for key in self.errors.values() {
            *counts.entry(key.as_str()).or_default() += 1;
        }
        skillshift_common::record::most_frequent(counts, n)
    }

    /// The cost reserved for the next attempt (docs/cli.md#cost-budget): the largest cost of any stored
    /// record, or, before any, the whole remaining budget, so the first attempt runs alone until it shows
    /// what an attempt costs. Not the mean: attempts in flight that cost more than the mean would pass the
    /// budget together; only one dearer than every attempt before it can.
    pub(super) fn expected_cost(&self, budget: f64) -> f64 {
        if self.costed == 0 {
            (budget - self.spent).max(0.0)
        } else {
            self.dearest
        }
    }

    /// Whether one more attempt fits the cost budget: what is spent, what running attempts have reserved
    /// and what the next is expected to cost stay within it. Always, without a budget.
    pub(super) fn may_start_attempt(&self) -> bool {
        let Some(budget) = self.meta.spec.cost_budget_usd else { return true };
        // The first attempt reserves exactly what is left, so equality must pass despite rounding.
        self.spent + self.reserved + self.expected_cost(budget) <= budget * (1.0 + 1e-9)
    }

    /// Reserves the expected cost of a new attempt, when the sweep has a budget.
    pub(super) fn reserve(&mut self, unit: u32, attempt: u32) {
        let Some(budget) = self.meta.spec.cost_budget_usd else { return };
        let amount = self.expected_cost(budget);
        self.reserved += amount;
        self.reservations.insert((unit, attempt), amount);
    }

    /// An attempt stopped running: its reservation is released, and `cost` (its record's, `None` when it
    /// has none) joins what was spent.
    pub(super) fn settle(&mut self, unit: u32, attempt: u32, cost: Option<f64>) {
        if let Some(amount) = self.reservations.remove(&(unit, attempt)) {
            self.reserved = (self.reserved - amount).max(0.0);
        }
        if let Some(c) = cost {
            self.spent += c;
            self.costed += 1;
            self.dearest = self.dearest.max(c);
        }
    }

    /// What the running attempts have reserved, in USD.
    #[cfg(test)]
    pub(super) fn reserved_usd(&self) -> f64 {
        self.reserved
    }

    fn sv(&self, unit: u32) -> usize {
        let u = &self.units[unit as usize];
        sv_index(u.family.site, u.condition.version())
    }

    pub(super) fn resolve_all(&mut self) {
        for u in 0..self.units.len() {
            self.resolve(u as u32);
        }
    }

    /// Applies the unit outcome rule and keeps the queues and counts in step.
    pub(super) fn resolve(&mut self, unit: u32) {
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
    pub(super) fn pop(&mut self, sv: usize) -> Option<u32> {
        while let Some(u) = self.queues[sv].pop_front() {
            if self.status[u as usize] == UnitStatus::Queued {
                self.queued[sv] -= 1;
                return Some(u);
            }
        }
        None
    }

    /// A new running attempt of `unit`, leased to `holder`; returns its number.
    pub(super) fn start_attempt(&mut self, unit: u32, holder: u32) -> u32 {
        let attempt = self.slots[unit as usize].len() as u32;
        self.slots[unit as usize].push(Slot::Running);
        self.holders[unit as usize].push(holder);
        attempt
    }

    /// Who the attempt was leased to, if it was ever assigned.
    pub(super) fn holder(&self, unit: u32, attempt: u32) -> Option<u32> {
        self.holders.get(unit as usize).and_then(|v| v.get(attempt as usize)).copied()
    }

    /// The attempt's slot, if it was ever assigned.
    pub(super) fn slot(&self, unit: u32, attempt: u32) -> Option<Slot> {
        self.slots.get(unit as usize).and_then(|v| v.get(attempt as usize)).copied()
    }

    /// Whether nothing in the sweep is queued or running.
    pub(super) fn idle(&self) -> bool {
        self.running == 0 && self.queued.iter().all(|q| *q == 0)
    }
}
