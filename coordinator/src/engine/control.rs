//! Control commands (submit, status, list, cancel, resume, workers) and the
//! cost budget. A cancelled sweep holds its queued units and asks workers to
//! stop its running attempts; resume queues them again. A sweep whose stored
//! records cost at least its budget is stopped the same way, keeps the reason
//! in its status, and is not resumed while the budget stays spent. Before
//! an attempt is assigned its expected cost is reserved (`units.rs`), and a
//! sweep takes no attempt whose reservation would not fit: the attempts in
//! flight never take the spend past the budget, unless one costs more than
//! any attempt before it.

use std::time::Instant;

use skillshift_common::ids::{AttemptKey, SweepId};
use skillshift_common::Record;

use super::units::{Slot, SweepRun};
use super::{ControlCmd, Effect, Engine, Outbound, Refused};
use crate::lease::Holder;
use crate::planner::{self, SweepSpec};
use crate::store::{StoreOp, SweepMeta};

/// A record's LLM cost in USD; absent, negative or not finite counts as nothing.
pub(super) fn cost_of(rec: &Record) -> f64 {
    rec.cost_usd.filter(|c| c.is_finite() && *c > 0.0).unwrap_or(0.0)
}

/// Why a sweep may not go on: its stored records cost at least its budget, or nothing of it runs and the
/// next attempt's expected cost would take it past the budget.
fn budget_exhausted(s: &SweepRun) -> Option<String> {
    let budget = s.meta.spec.cost_budget_usd?;
    if s.spent >= budget {
        return Some(format!("cost budget of ${budget:.2} reached (${:.2} spent)", s.spent));
    }
    let unfinished = s.resolved < s.units.len() as u64;
    (unfinished && s.running == 0 && !s.may_start_attempt()).then(|| {
        format!(
            "cost budget of ${budget:.2} reached (${:.4} spent; an attempt is expected to cost ${:.4}, more than \
             the ${:.4} left)",
            s.spent,
            s.expected_cost(budget),
            budget - s.spent
        )
    })
}

impl Engine {
    pub(super) fn control(&mut self, cmd: ControlCmd, now: Instant) {
        match cmd {
            ControlCmd::Submit(spec, reply) => {
                let result = self.submit(*spec);
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
                let _ = reply.send(self.worker_list(now));
            }
        }
    }

    /// Plans a sweep and stores it; the reply (its id) waits for the commit.
    /// Its size is counted against the limits before a unit is planned.
    fn submit(&mut self, spec: SweepSpec) -> Result<SweepId, Refused> {
        if self.sweeps.len() >= self.limits.max_sweeps {
            return Err(Refused::Full(format!(
                "the coordinator holds {} sweeps, the limit (--max-sweeps)",
                self.sweeps.len()
            )));
        }
        let n = planner::check(&spec, &self.limits).map_err(|e| Refused::Invalid(e.to_string()))?;
        if self.units_held.saturating_add(n) > self.limits.max_units_total {
            return Err(Refused::Full(format!(
                "the sweep's {n} units and the {} held would pass the limit of {} units in all sweeps",
                self.units_held, self.limits.max_units_total
            )));
        }
        let units = planner::plan(&spec, &self.limits).map_err(|e| Refused::Invalid(e.to_string()))?;
        let (contract, digest) = planner::contract(&spec);
        let id = SweepId::from(self.ids.new_id("sw"));
        let meta = SweepMeta {
            id: id.clone(),
            spec,
            contract,
            config_digest: digest,
            created_ms: self.clock.wall_ms(),
            cancelled: false,
            stopped: None,
        };
        let n = units.len();
        self.ops.push(StoreOp::CreateSweep(meta.clone(), units.clone()));
        let mut run = SweepRun::new(meta, units, vec![Vec::new(); n], vec![Vec::new(); n]);
        run.resolve_all();
        self.units_held += n as u64;
        self.by_id.insert(id.clone(), self.sweeps.len());
        self.sweeps.push(run);
        tracing::info!(sweep = %id, units = n, "sweep submitted");
        Ok(id)
    }

    fn set_cancelled(&mut self, id: &SweepId, cancelled: bool) {
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
        s.resolve_all();
        if cancelled {
            let running: Vec<AttemptKey> = s
                .slots
                .iter()
                .enumerate()
                .flat_map(|(u, v)| v.iter().enumerate().filter(|(_, x)| **x == Slot::Running).map(move |(a, _)| (u, a)))
                .map(|(u, a)| AttemptKey { sweep: id.clone(), unit: u as u32, attempt: a as u32 })
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

    /// Stops a sweep whose stored records have used up its cost budget: no
    /// more units are assigned and its running attempts are cancelled, as by
    /// `sweep cancel`, with the reason kept in its status.
    pub(super) fn check_budget(&mut self, idx: usize) {
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
}
