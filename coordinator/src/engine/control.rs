//! Control commands (submit, status, list, cancel, resume, workers) and the
//! cost budget. A cancelled sweep holds its queued units and asks workers to
//! stop its running attempts; resume queues them again. A sweep whose stored
//! records cost at least its budget is stopped the same way, keeps the reason
//! in its status, and is not resumed while the budget stays spent.

use std::time::Instant;

use skillshift_common::Record;
use skillshift_proto::convert::AttemptKey;

use super::units::{Slot, SweepRun};
use super::{ControlCmd, Effect, Engine, Outbound};
use crate::lease::Holder;
use crate::planner::{self, SweepSpec};
use crate::store::{StoreOp, SweepMeta};

/// A record's LLM cost in USD; absent, negative or not finite counts as nothing.
pub(super) fn cost_of(rec: &Record) -> f64 {
    rec.cost_usd.filter(|c| c.is_finite() && *c > 0.0).unwrap_or(0.0)
}

/// Why a sweep may not go on: its stored records cost at least its budget.
fn budget_exhausted(s: &SweepRun) -> Option<String> {
    let budget = s.meta.spec.cost_budget_usd?;
    (s.spent >= budget).then(|| format!("cost budget of ${budget:.2} reached (${:.2} spent)", s.spent))
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
    fn submit(&mut self, spec: SweepSpec) -> Result<String, String> {
        let units = planner::plan(&spec).map_err(|e| e.to_string())?;
        let (contract, digest) = planner::contract(&spec);
        let id = self.ids.new_id("sw");
        let meta = SweepMeta {
            id: id.clone(),
            spec,
            contract,
            config_digest: digest,
            created_ms: self.clock.wall_ms(),
            cancelled: false,
            stopped: None,
        };
        self.ops.push(StoreOp::Sweep(meta.clone()));
        self.ops.push(StoreOp::Units(id.clone(), units.clone()));
        let n = units.len();
        let mut run = SweepRun::new(meta, units, vec![Vec::new(); n]);
        run.resolve_all();
        self.by_id.insert(id.clone(), self.sweeps.len());
        self.sweeps.push(run);
        tracing::info!(sweep = %id, units = n, "sweep submitted");
        Ok(id)
    }

    fn set_cancelled(&mut self, id: &str, cancelled: bool) {
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
                .map(|(u, a)| AttemptKey { sweep: id.to_string(), unit: u as u32, attempt: a as u32 })
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
