//! Restore after a restart: the engine is rebuilt from the store's rows
//! (guarantee 4 in `docs/design.md`). Every attempt with a lease row and no
//! record was running when the coordinator stopped; it becomes an orphan
//! lease that the worker it was leased to may claim within one TTL, and is
//! lost like a silent worker's otherwise. Every attempt keeps the worker its
//! ledger row names as its holder, so ownership on ingest survives restarts.

use std::collections::HashMap;
use std::time::Instant;

use skillshift_common::ids::AttemptKey;

use super::control::cost_of;
use super::units::{Slot, SweepRun, NOBODY};
use super::Engine;
use crate::store::{StoredRecord, SweepRows};

impl Engine {
    /// Rebuilds state from the store after a restart: every attempt that was
    /// running becomes an orphan lease that a reconnecting worker may claim.
    pub fn restore(&mut self, rows: Vec<SweepRows>, now: Instant) {
        let mut rows = rows;
        rows.sort_by_key(|r| (r.meta.created_ms, r.meta.id.clone()));
        for r in rows {
            let mut slots: Vec<Vec<Slot>> = vec![Vec::new(); r.units.len()];
            let mut holders: Vec<Vec<u32>> = vec![Vec::new(); r.units.len()];
            let mut records: HashMap<(u32, u32), StoredRecord> = HashMap::new();
            let (mut spent, mut costed, mut dearest) = (0.0, 0u64, 0.0f64);
            for (k, rec) in r.records {
                if !rec.synthetic {
                    let c = cost_of(&rec.record);
                    spent += c;
                    costed += 1;
                    dearest = dearest.max(c);
                }
                records.insert((k.unit, k.attempt), rec);
            }
            let mut max_attempt: HashMap<u32, u32> = HashMap::new();
            let mut leased_to: HashMap<(u32, u32), String> = HashMap::new();
            for (k, row) in r.attempts {
                let e = max_attempt.entry(k.unit).or_insert(k.attempt);
                *e = (*e).max(k.attempt);
                leased_to.insert((k.unit, k.attempt), row.worker);
            }
            for (unit, attempt) in records.keys() {
                let e = max_attempt.entry(*unit).or_insert(*attempt);
                *e = (*e).max(*attempt);
            }
            for (unit, max) in max_attempt {
                let Some(unit_slots) = slots.get_mut(unit as usize) else { continue };
                let unit_holders = &mut holders[unit as usize];
                for a in 0..=max {
                    let former = leased_to.remove(&(unit, a));
                    unit_holders.push(former.as_deref().map_or(NOBODY, |w| self.names.intern(w)));
                    let slot = match records.get(&(unit, a)) {
                        Some(rec) => Slot::stored(rec),
                        None => {
                            let key = AttemptKey { sweep: r.meta.id.clone(), unit, attempt: a };
                            self.leases.orphan(key, former, now);
                            Slot::Running
                        }
                    };
                    unit_slots.push(slot);
                }
            }
            let idx = self.sweeps.len();
            self.units_held += r.units.len() as u64;
            self.by_id.insert(r.meta.id.clone(), idx);
            self.sweeps.push(SweepRun::new(r.meta, r.units, slots, holders));
            let s = &mut self.sweeps[idx];
            for ((unit, attempt), rec) in &records {
                s.note_record(*unit, *attempt, &rec.record);
            }
            s.spent = spent;
            s.costed = costed;
            s.dearest = dearest;
            for (k, row) in &r.trajectories {
                s.trajectories.insert((k.unit, k.attempt), super::ingest::blob_id(&row.blob_sha256));
                s.trajectory_bytes = s.trajectory_bytes.saturating_add(row.bytes);
            }
            // The attempts still running may yet spend: they hold their reservations again.
            let running: Vec<(u32, u32)> = (0..s.slots.len())
                .flat_map(|u| (0..s.slots[u].len()).map(move |a| (u, a)))
                .filter(|&(u, a)| s.slots[u][a] == Slot::Running)
                .map(|(u, a)| (u as u32, a as u32))
                .collect();
            for (u, a) in running {
                s.reserve(u, a);
            }
            s.running = s.slots.iter().flatten().filter(|x| **x == Slot::Running).count() as u32;
            s.resolve_all();
            s.resolved_at_first = s.resolved;
        }
    }
}
