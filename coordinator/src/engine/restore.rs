//! Restore after a restart: the engine is rebuilt from the store's rows
//! (guarantee 4 in `docs/design.md`). Every attempt with a lease row and no
//! record was running when the coordinator stopped; it becomes an orphan
//! lease that a reconnecting worker may claim within one TTL, and is lost
//! like a silent worker's otherwise.

use std::collections::HashMap;
use std::time::Instant;

use skillshift_proto::convert::AttemptKey;

use super::control::cost_of;
use super::units::{Slot, SweepRun};
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
            let mut records: HashMap<(u32, u32), StoredRecord> = HashMap::new();
            let mut spent = 0.0;
            for (k, rec) in r.records {
                spent += cost_of(&rec.record);
                records.insert((k.unit, k.attempt), rec);
            }
            let mut max_attempt: HashMap<u32, u32> = HashMap::new();
            for (k, _) in &r.attempts {
                let e = max_attempt.entry(k.unit).or_insert(k.attempt);
                *e = (*e).max(k.attempt);
            }
            for (unit, attempt) in records.keys() {
                let e = max_attempt.entry(*unit).or_insert(*attempt);
                *e = (*e).max(*attempt);
            }
            for (unit, max) in max_attempt {
                let Some(unit_slots) = slots.get_mut(unit as usize) else { continue };
                for a in 0..=max {
                    let slot = match records.get(&(unit, a)) {
                        Some(rec) => Slot::stored(rec),
                        None => {
                            self.leases.orphan(AttemptKey { sweep: r.meta.id.clone(), unit, attempt: a }, now);
                            Slot::Running
                        }
                    };
                    unit_slots.push(slot);
                }
            }
            let idx = self.sweeps.len();
            self.by_id.insert(r.meta.id.clone(), idx);
            self.sweeps.push(SweepRun::new(r.meta, r.units, slots));
            let s = &mut self.sweeps[idx];
            s.spent = spent;
            s.running = s.slots.iter().flatten().filter(|x| **x == Slot::Running).count() as u32;
            s.resolve_all();
            s.resolved_at_first = s.resolved;
        }
    }
}
