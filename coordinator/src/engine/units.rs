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

use std::collections::VecDeque;
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

/// One sweep in memory: its plan, the attempts of every unit and the queues.
pub(super) struct SweepRun {
    pub(super) meta: SweepMeta,
    pub(super) units: Vec<Unit>,
    pub(super) slots: Vec<Vec<Slot>>,
    pub(super) status: Vec<UnitStatus>,
    queues: [VecDeque<u32>; SV_COUNT],
    pub(super) queued: [u32; SV_COUNT],
    pub(super) running: u32,
    pub(super) resolved: u64,
    pub(super) first_assign: Option<Instant>,
    pub(super) resolved_at_first: u64,
    /// LLM cost of the stored records, in USD.
    pub(super) spent: f64,
}

impl SweepRun {
    /// A sweep with every unit `Held`; call [`SweepRun::resolve_all`] to queue what may run.
    pub(super) fn new(meta: SweepMeta, units: Vec<Unit>, slots: Vec<Vec<Slot>>) -> SweepRun {
        let status = vec![UnitStatus::Held; units.len()];
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

    /// The attempt's slot, if it was ever assigned.
    pub(super) fn slot(&self, unit: u32, attempt: u32) -> Option<Slot> {
        self.slots.get(unit as usize).and_then(|v| v.get(attempt as usize)).copied()
    }

    /// Whether nothing in the sweep is queued or running.
    pub(super) fn idle(&self) -> bool {
        self.running == 0 && self.queued.iter().all(|q| *q == 0)
    }
}
