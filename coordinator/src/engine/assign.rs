//! Assignment: the scheduler ([`crate::scheduler`], a pure function) picks
//! which worker runs which site-version of which sweep; this turns each pick
//! into a new attempt of the next queued unit: its lease (granted, and written
//! to the store with the wall-clock start), its span, its cost reservation
//! (a sweep with a cost budget), and the `Assign` message that carries the
//! attempt spec.

use std::time::Instant;

use skillshift_common::ids::AttemptKey;

use super::units::UnitStatus;
use super::{Effect, Engine, Outbound};
use crate::planner;
use crate::scheduler::{self, SweepView, WorkerView};
use crate::store::{AttemptRow, StoreOp};

impl Engine {
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
            .map(|w| WorkerView { hosts: w.mask, simulated: w.simulated, credits: w.credits, affinity: w.affinity })
            .collect();
        // A sweep whose budget cannot take one more attempt now is left out; once nothing of it runs, that
        // is its stop.
        let queued: Vec<usize> =
            (0..self.sweeps.len()).filter(|&i| self.sweeps[i].queued.iter().any(|q| *q > 0)).collect();
        for &i in &queued {
            self.check_budget(i);
        }
        let active: Vec<usize> = queued
            .into_iter()
            .filter(|&i| self.sweeps[i].queued.iter().any(|q| *q > 0) && self.sweeps[i].may_start_attempt())
            .collect();
        if active.is_empty() {
            return;
        }
        let sweeps: Vec<SweepView> = active
            .iter()
            .map(|&i| SweepView {
                queued: self.sweeps[i].queued,
                running: self.sweeps[i].running,
                simulated: self.sweeps[i].meta.spec.simulated,
            })
            .collect();
        for pick in scheduler::schedule(&views, &sweeps) {
            let worker = &ids[pick.worker];
            let holder = self.names.intern(worker);
            let s = &mut self.sweeps[active[pick.sweep]];
            // The budget is checked again per pick: each one reserves its expected cost.
            if !s.may_start_attempt() {
                continue;
            }
            let Some(unit) = s.pop(pick.sv) else { continue };
            let attempt = s.start_attempt(unit, holder);
            s.reserve(unit, attempt);
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
            let row = AttemptRow { worker: worker.clone(), started_ms: self.clock.wall_ms() };
            self.ops.push(StoreOp::Attempt(key.clone(), row));
            spec.traceparent = self.spans.open_attempt(&key, &spec, worker);
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
}
