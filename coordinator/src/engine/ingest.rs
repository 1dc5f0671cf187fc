//! Ingest: a worker's record is stored under its own (unit, attempt), once
//! (guarantee 2 in `docs/design.md`).
//!
//! A record's identity is stamped once, by the worker, from the attempt spec
//! it was assigned ([`Record::for_attempt`]); ingest only checks it against
//! the same spec, rebuilt from the sweep's plan, and refuses a record whose
//! uid, site, condition, treatment, rep, attempt, sweep or `config_digest`
//! differs, naming the field. A refused record is answered with a `reject`
//! and stored nowhere. Fields a record may leave out keep their format's
//! meaning: an absent `rep` or `attempt` is 0 (and checked as 0); an absent
//! `treatment`, `sweep` or `config_digest` is accepted and filled from the
//! spec, never replaced when present.

use skillshift_common::{AttemptSpec, Record};
use skillshift_proto::convert::AttemptKey;

use super::units::Slot;
use super::{Conn, Effect, Engine, Outbound};
use crate::planner;
use crate::store::{StoreOp, StoredRecord};

/// Checks `rec`'s identity against the spec of the attempt it claims to be,
/// filling the identity fields it left out. `Err` is the reason to refuse it.
fn check_identity(rec: &mut Record, spec: &AttemptSpec) -> Result<(), String> {
    rec.rep.get_or_insert(0);
    rec.attempt.get_or_insert(0);
    rec.treatment.get_or_insert_with(|| spec.treatment.clone());
    rec.sweep.get_or_insert_with(|| spec.sweep.clone());
    if rec.config_digest.is_none() {
        rec.config_digest = spec.config_digest.clone();
    }
    let Some((field, _)) = rec.identity_mismatch(spec) else { return Ok(()) };
    Err(match field {
        "uid" => format!("uid '{}' is not the unit's '{}'", rec.uid, spec.uid),
        "site" => format!("site '{}' is not the unit's '{}'", rec.site, spec.uid.site),
        "condition" => format!("condition '{}' is not the unit's '{}'", rec.condition, spec.condition),
        "rep" => format!("rep {} is not the unit's {}", rec.rep(), spec.rep),
        "attempt" => format!("attempt {} is not the assignment's {}", rec.attempt(), spec.attempt),
        "treatment" => format!("treatment '{}' is not the unit's '{}'", rec.treatment(), spec.treatment),
        "sweep" => format!("sweep '{}' is not the assignment's '{}'", rec.sweep.as_deref().unwrap_or(""), spec.sweep),
        "config_digest" => format!(
            "config_digest '{}' is not the sweep's '{}'",
            rec.config_digest.as_deref().unwrap_or(""),
            spec.config_digest.as_deref().unwrap_or("")
        ),
        other => format!("{other} is not the assignment's"),
    })
}

impl Engine {
    /// Checks a worker's record against its attempt and stores it, idempotently.
    pub(super) fn ingest(&mut self, worker: &str, conn: &Conn, key: AttemptKey, mut rec: Record) {
        let Some(&idx) = self.by_id.get(&key.sweep) else {
            return self.reject(worker, conn, key.clone(), format!("unknown sweep '{}'", key.sweep));
        };
        let s = &mut self.sweeps[idx];
        let Some(unit) = s.units.get(key.unit as usize) else {
            let reason = format!("sweep '{}' has no unit {}", key.sweep, key.unit);
            return self.reject(worker, conn, key, reason);
        };
        let Some(slot) = s.slot(key.unit, key.attempt) else {
            let reason = format!("attempt {} of unit {} was never assigned", key.attempt, key.unit);
            return self.reject(worker, conn, key, reason);
        };
        let spec = planner::attempt_spec(&s.meta.id, &s.meta.spec, &s.meta.config_digest, unit, key.attempt);
        if let Err(reason) = check_identity(&mut rec, &spec) {
            return self.reject(worker, conn, key, reason);
        }
        if let Slot::Recorded { synthetic: false, .. } = slot {
            // Already durable: a resend after a lost ack. Acknowledge again.
            return self.ack(worker, conn, key);
        }
        if rec.worker.is_none() {
            rec.worker = Some(worker.to_string());
        }
        let recorded = Slot::recorded(&rec, false);
        s.slots[key.unit as usize][key.attempt as usize] = recorded;
        if slot == Slot::Running {
            s.running = s.running.saturating_sub(1);
            self.leases.finish(&key);
        }
        s.resolve(key.unit);
        // Telemetry: the attempt's span ends with its record.
        self.spans.end_attempt(&key, rec.outcome().as_str(), rec.error.as_deref());
        s.spent += super::control::cost_of(&rec);
        self.ops.push(StoreOp::Record(key.clone(), StoredRecord { synthetic: false, record: rec }));
        self.ack(worker, conn, key);
        self.check_budget(idx);
    }

    /// Whether the attempt's record from a worker is durable.
    pub(super) fn stored_real(&self, key: &AttemptKey) -> bool {
        let Some(&idx) = self.by_id.get(&key.sweep) else { return false };
        matches!(self.sweeps[idx].slot(key.unit, key.attempt), Some(Slot::Recorded { synthetic: false, .. }))
    }

    /// Queues an ack; one `Ack` message per session carries a batch's keys.
    pub(super) fn ack(&mut self, worker: &str, conn: &Conn, key: AttemptKey) {
        let entry = self.acks.entry(conn.id).or_insert_with(|| (worker.to_string(), conn.clone(), Vec::new()));
        entry.2.push(key);
    }

    fn reject(&mut self, worker: &str, conn: &Conn, key: AttemptKey, reason: String) {
        tracing::warn!(worker, sweep = %key.sweep, unit = key.unit, attempt = key.attempt, %reason, "record refused");
        let msg = Outbound::Reject(key, reason);
        self.effects.push(Effect::Send { worker: worker.to_string(), conn: conn.clone(), msg });
    }
}

#[cfg(test)]
mod tests {
    use skillshift_common::{Condition, Uid};

    use super::*;

    fn spec() -> AttemptSpec {
        let uid: Uid = "skillshift.gitlab.v1.0".parse().expect("uid");
        planner::attempt_spec(
            "sw-1",
            &planner::SweepSpec::full_grid(planner::TreatmentSpec { name: "CONTROL".into(), skills: None }),
            "digest-a",
            &planner::Unit { treatment: 0, family: uid.family(), condition: Condition::Src, rep: 2 },
            1,
        )
    }

    #[test]
    fn a_record_stamped_from_its_spec_passes_unchanged() {
        let spec = spec();
        let mut rec = Record::for_attempt(&spec);
        let before = rec.clone();
        assert_eq!(check_identity(&mut rec, &spec), Ok(()));
        assert_eq!(rec, before);
    }

    #[test]
    fn absent_treatment_sweep_and_digest_are_filled_from_the_spec_but_a_different_value_is_refused() {
        let spec = spec();
        let mut rec = Record::new(spec.uid, spec.condition);
        rec.rep = Some(2);
        rec.attempt = Some(1);
        assert_eq!(check_identity(&mut rec, &spec), Ok(()));
        assert_eq!(rec, Record::for_attempt(&spec), "filled exactly as the worker would have stamped it");

        let mut other = Record::for_attempt(&spec);
        other.sweep = Some("sw-2".into());
        let reason = check_identity(&mut other, &spec).expect_err("another sweep");
        assert_eq!(reason, "sweep 'sw-2' is not the assignment's 'sw-1'");

        let mut other = Record::for_attempt(&spec);
        other.config_digest = Some("digest-b".into());
        let reason = check_identity(&mut other, &spec).expect_err("another digest");
        assert_eq!(reason, "config_digest 'digest-b' is not the sweep's 'digest-a'");

        let mut other = Record::for_attempt(&spec);
        other.treatment = Some("SKILLS".into());
        let reason = check_identity(&mut other, &spec).expect_err("another treatment");
        assert_eq!(reason, "treatment 'SKILLS' is not the unit's 'CONTROL'");
    }

    #[test]
    fn an_absent_rep_or_attempt_is_zero_and_checked_as_zero() {
        let spec = spec();
        let mut rec = Record::for_attempt(&spec);
        rec.rep = None;
        assert_eq!(check_identity(&mut rec, &spec), Err("rep 0 is not the unit's 2".into()));
        let mut rec = Record::for_attempt(&spec);
        rec.attempt = None;
        assert_eq!(check_identity(&mut rec, &spec), Err("attempt 0 is not the assignment's 1".into()));
    }
}
