//! A sweep's progress as control clients see it ([`SweepStatus`]): unit and
//! attempt counts, per-cell progress, its state and an ETA. The ETA is the
//! time per unit resolved since this process first assigned one of the
//! sweep's units, times the units left; units already resolved when this
//! process loaded the sweep (after a restart) do not count toward the rate.

use std::collections::BTreeMap;
use std::time::Instant;

use skillshift_common::ids::SweepId;
use skillshift_common::{Condition, Outcome, Site};

use super::units::{Slot, UnitStatus};
use super::Engine;
use crate::scheduler::sv_of;
use crate::status::{AttemptCounts, CellProgress, SweepState, SweepStatus, UnitCounts, Unrunnable};

impl Engine {
    pub(super) fn status_of(&self, id: &SweepId, now: Instant) -> Option<SweepStatus> {
        self.by_id.get(id).map(|&i| self.status(i, now))
    }

    pub(super) fn status(&self, idx: usize, now: Instant) -> SweepStatus {
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
        let unrunnable = self.unrunnable(idx);
        let eta_ms = s.first_assign.and_then(|t0| {
            let gained = resolved.saturating_sub(s.resolved_at_first);
            if gained == 0 || state != SweepState::Running || !unrunnable.is_empty() {
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
            top_errors: s.top_errors(crate::status::TOP_ERRORS),
            unrunnable,
        }
    }

    /// The sweep's queued units, per site-version, that no connected worker of its kind (simulated or
    /// real) hosts: they wait for a worker that may never come, so no ETA is honest.
    fn unrunnable(&self, idx: usize) -> Vec<Unrunnable> {
        let s = &self.sweeps[idx];
        if s.meta.cancelled {
            return Vec::new();
        }
        let simulated = s.meta.spec.simulated;
        let hosted = self
            .workers
            .values()
            .filter(|w| w.conn.is_some() && w.simulated == simulated)
            .fold(0u8, |mask, w| mask | w.mask);
        s.queued
            .iter()
            .enumerate()
            .filter(|&(sv, &n)| n > 0 && hosted & (1 << sv) == 0)
            .map(|(sv, &n)| {
                let (site, version) = sv_of(sv);
                Unrunnable { site, version, queued: u64::from(n) }
            })
            .collect()
    }

    /// Whether the engine knows the sweep (stored, so it can be exported).
    pub fn has_sweep(&self, id: &SweepId) -> bool {
        self.by_id.contains_key(id)
    }
}
