//! Ingest: a worker's record is stored under its own (unit, attempt), once
//! (guarantee 2 in `docs/design.md`), and only from the worker that attempt
//! was leased to.
//!
//! A record's identity is stamped once, by the worker, from the attempt spec
//! it was assigned ([`Record::for_attempt`]); ingest only checks it against
//! the same spec, rebuilt from the sweep's plan, and refuses a record whose
//! uid, site, condition, treatment, rep, attempt, sweep or `config_digest`
//! differs, naming the field. Fields a record may leave out keep their
//! format's meaning: an absent `rep` or `attempt` is 0 (and checked as 0); an
//! absent `treatment`, `sweep` or `config_digest` is accepted and filled from
//! the spec, never replaced when present.
//!
//! Ownership: every attempt remembers the worker it was leased to (the
//! store's ledger keeps it across restarts). A record from any other worker
//! is refused, whether the attempt is running, lost (a late record, which the
//! unit rule then decides) or stored. The stored record's `worker` is the
//! name the sender registered with (`worker --name`; its public id when it
//! gave none or is forgotten), whatever the record said: ownership is
//! decided on the proven id, the record says who ran it as the operator
//! named it.
//!
//! A record larger than `max_record_bytes` is refused (reason `record too
//! large`) without being converted, and its attempt, if still running, ends
//! as `error` (`record_too_large`) so its unit is retried instead of waiting
//! forever. A refused record is answered with a `reject` naming its attempt
//! and stored nowhere.
//!
//! A trajectory is taken under the same ownership rule, and only when the key
//! it names itself by is its attempt's; it is answered with `trajectory_ack`
//! once durable, or refused with `trajectory_reject`. The record the
//! coordinator writes for an attempt it gave up on carries that reason as its
//! failure category.
//!
//! Uploads are checked before they cost anything ([`Input::UploadCheck`]):
//! the session reader asks whether the worker holds the attempt before it
//! keeps a byte of a blob, and again, with the blob's digest, before it
//! inflates it. An attempt keeps one trajectory: a re-upload of the same blob
//! is acknowledged and stores nothing, a different blob for an attempt that
//! has one is refused. A sweep's stored trajectories are charged against its
//! quota (`--max-trajectory-bytes-per-sweep`); one that would pass it is
//! refused, naming the numbers.
//!
//! Every refusal is an [`IngestError`] (a record naming another attempt, a
//! [`Mismatch`]); its text is the reason the worker's `reject` or
//! `trajectory_reject` carries.
//!
//! [`Input::UploadCheck`]: super::Input::UploadCheck

use std::sync::Arc;

use skillshift_common::ids::{AttemptKey, SweepId};
pub use skillshift_common::record::Mismatch;
use skillshift_common::trajectory::Key;
use skillshift_common::{failure, AttemptSpec, Condition, Outcome, Record, Uid};
use skillshift_telemetry::context as trace_context;

use super::units::Slot;
use super::{Conn, Effect, Engine, Outbound, Upload, RECORD_TOO_LARGE};
use crate::planner;
use crate::store::{StoreOp, StoredRecord, StoredTrajectory};

/// The id the engine keeps of a trajectory's blob: the first 8 bytes of its SHA-256 (hex). Two blobs
/// with one id are taken for the same one; the second is then acknowledged and not stored, so a
/// collision costs nothing.
pub fn blob_id(sha256_hex: &str) -> u64 {
    let mut b = [0u8; 8];
    if let Ok(v) = hex::decode(sha256_hex.get(..16).unwrap_or("")) {
        b.copy_from_slice(&v);
    }
    u64::from_be_bytes(b).max(1)
}

/// The id of a trajectory stored before blobs had their digest kept: any re-upload of it is the same.
pub(super) const UNKNOWN_BLOB: u64 = 0;

/// Why a worker's record, trajectory or upload for an attempt is refused; the text is the reason its
/// `reject` (or `trajectory_reject`) carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngestError {
    #[error("unknown sweep '{0}'")]
    UnknownSweep(SweepId),
    #[error("sweep '{sweep}' has no unit {unit}")]
    NoUnit { sweep: SweepId, unit: u32 },
    #[error("attempt {attempt} of unit {unit} was never assigned")]
    NeverAssigned { unit: u32, attempt: u32 },
    #[error("attempt {attempt} of unit {unit} was not leased to this worker")]
    NotHolder { unit: u32, attempt: u32 },
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    #[error("record too large: {bytes} bytes, the limit is {limit} bytes")]
    RecordTooLarge { bytes: usize, limit: usize },
    /// The trajectory names another attempt than the one it was uploaded for.
    #[error(
        "the trajectory names {} {} rep {} attempt {}, not its attempt's {} {}",
        .named.uid, .named.condition, .named.rep, .named.attempt, .uid, .condition
    )]
    TrajectoryMisnamed { named: Box<Key>, uid: Uid, condition: Condition },
    #[error("attempt {attempt} of unit {unit} already has a trajectory, from another blob; an attempt keeps one")]
    OtherBlob { unit: u32, attempt: u32 },
    #[error(
        "sweep '{sweep}' stores {stored} bytes of trajectories; {bytes} more would pass its quota of {quota} bytes \
         (--max-trajectory-bytes-per-sweep)"
    )]
    OverQuota { sweep: SweepId, stored: u64, bytes: u64, quota: u64 },
}

/// Checks `rec`'s identity against the spec of the attempt it claims to be,
/// filling the identity fields it left out. `Err` is the reason to refuse it.
fn check_identity(rec: &mut Record, spec: &AttemptSpec) -> Result<(), Mismatch> {
    rec.rep.get_or_insert(0);
    rec.attempt.get_or_insert(0);
    rec.treatment.get_or_insert_with(|| spec.treatment.clone());
    rec.sweep.get_or_insert_with(|| spec.sweep.clone());
    if rec.config_digest.is_none() {
        rec.config_digest = spec.config_digest.clone();
    }
    rec.identity_mismatch(spec).map_or(Ok(()), Err)
}

impl Engine {
    /// The sweep index and slot of an assigned attempt; `Err` is the reason it is unknown.
    fn assigned(&self, key: &AttemptKey) -> Result<(usize, Slot), IngestError> {
        let Some(&idx) = self.by_id.get(&key.sweep) else {
            return Err(IngestError::UnknownSweep(key.sweep.clone()));
        };
        let s = &self.sweeps[idx];
        if s.units.get(key.unit as usize).is_none() {
            return Err(IngestError::NoUnit { sweep: key.sweep.clone(), unit: key.unit });
        }
        let Some(slot) = s.slot(key.unit, key.attempt) else {
            return Err(IngestError::NeverAssigned { unit: key.unit, attempt: key.attempt });
        };
        Ok((idx, slot))
    }

    /// Whether the attempt was leased to `worker`.
    pub(super) fn holds(&self, worker: &str, idx: usize, key: &AttemptKey) -> bool {
        let me = self.names.find(worker);
        me.is_some() && self.sweeps[idx].holder(key.unit, key.attempt) == me
    }

    fn not_holder(key: &AttemptKey) -> IngestError {
        IngestError::NotHolder { unit: key.unit, attempt: key.attempt }
    }

    /// Checks a worker's record against its attempt and stores it, idempotently.
    pub(super) fn ingest(&mut self, worker: &str, conn: &Conn, key: AttemptKey, mut rec: Record) {
        let (idx, slot) = match self.assigned(&key) {
            Ok(found) => found,
            Err(reason) => return self.reject(worker, conn, key, reason),
        };
        let s = &self.sweeps[idx];
        let unit = &s.units[key.unit as usize];
        let spec = planner::attempt_spec(&s.meta.id, &s.meta.spec, &s.meta.config_digest, unit, key.attempt);
        if let Err(reason) = check_identity(&mut rec, &spec) {
            return self.reject(worker, conn, key, reason.into());
        }
        if !self.holds(worker, idx, &key) {
            return self.reject(worker, conn, key.clone(), Self::not_holder(&key));
        }
        if let Slot::Recorded { synthetic: false, .. } = slot {
            // Already durable: a resend after a lost ack. Acknowledge again.
            return self.ack(worker, conn, key);
        }
        rec.worker = Some(self.worker_label(worker));
        let s = &mut self.sweeps[idx];
        s.slots[key.unit as usize][key.attempt as usize] = Slot::recorded(&rec, false);
        s.note_record(key.unit, key.attempt, &rec);
        if slot == Slot::Running {
            s.running = s.running.saturating_sub(1);
            self.leases.finish(&key);
        }
        s.settle(key.unit, key.attempt, Some(super::control::cost_of(&rec)));
        s.resolve(key.unit);
        // Telemetry: the attempt's span ends with its record.
        self.spans.end_attempt(&key, rec.outcome().as_str(), rec.error.as_deref());
        self.ops.push(StoreOp::Record(key.clone(), StoredRecord { synthetic: false, record: rec }));
        self.ack(worker, conn, key);
        self.check_budget(idx);
    }

    /// Stores an attempt's trajectory from the worker it was leased to.
    pub(super) fn ingest_trajectory(
        &mut self,
        worker: &str,
        conn: &Conn,
        key: AttemptKey,
        named: &Key,
        t: Arc<StoredTrajectory>,
    ) {
        let refuse = |e: &mut Engine, key: AttemptKey, reason: IngestError| {
            tracing::warn!(worker, sweep = %key.sweep, unit = key.unit, attempt = key.attempt, %reason, "trajectory refused");
            let msg = Outbound::TrajectoryReject(key, reason.to_string(), false);
            e.effects.push(Effect::Send { worker: worker.to_string(), conn: conn.clone(), msg });
        };
        let idx = match self.assigned(&key) {
            Ok((idx, _)) => idx,
            Err(reason) => return refuse(self, key, reason),
        };
        if !self.holds(worker, idx, &key) {
            return refuse(self, key.clone(), Self::not_holder(&key));
        }
        let s = &self.sweeps[idx];
        let spec = planner::attempt_spec(
            &s.meta.id,
            &s.meta.spec,
            &s.meta.config_digest,
            &s.units[key.unit as usize],
            key.attempt,
        );
        if Key::for_attempt(&spec) != *named {
            let reason = IngestError::TrajectoryMisnamed {
                named: Box::new(named.clone()),
                uid: spec.uid,
                condition: spec.condition,
            };
            return refuse(self, key, reason);
        }
        let id = blob_id(&t.row.blob_sha256);
        if let Err(reason) = self.trajectory_room(idx, &key, id, t.row.bytes) {
            return refuse(self, key, reason);
        }
        let s = &mut self.sweeps[idx];
        let fresh = s.trajectories.insert((key.unit, key.attempt), id).is_none();
        if fresh {
            s.trajectory_bytes = s.trajectory_bytes.saturating_add(t.row.bytes);
            self.ops.push(StoreOp::Trajectory(key.clone(), t));
        }
        let msg = Outbound::TrajectoryAck(key);
        self.effects.push(Effect::Send { worker: worker.to_string(), conn: conn.clone(), msg });
    }

    /// Whether the attempt may store the blob `id` of `bytes`: `Ok(true)` when it holds that blob
    /// already, `Ok(false)` when it holds none and the sweep's quota has room, `Err` why not.
    fn trajectory_room(&self, idx: usize, key: &AttemptKey, id: u64, bytes: u64) -> Result<bool, IngestError> {
        let s = &self.sweeps[idx];
        match s.trajectories.get(&(key.unit, key.attempt)) {
            Some(&had) if had == id || had == UNKNOWN_BLOB => return Ok(true),
            Some(_) => return Err(IngestError::OtherBlob { unit: key.unit, attempt: key.attempt }),
            None => {}
        }
        let quota = self.limits.max_trajectory_bytes_per_sweep;
        if s.trajectory_bytes.saturating_add(bytes) > quota {
            return Err(IngestError::OverQuota { sweep: key.sweep.clone(), stored: s.trajectory_bytes, bytes, quota });
        }
        Ok(false)
    }

    /// Answers [`super::Input::UploadCheck`]: the attempt must be leased to `worker`; with a blob id, an
    /// attempt holding that blob is [`Upload::Same`], one holding another is refused; and the sweep's
    /// quota must have room (for `blob: None`, any room at all).
    pub(super) fn upload_check(
        &self,
        worker: &str,
        key: &AttemptKey,
        blob: Option<u64>,
    ) -> Result<Upload, IngestError> {
        let (idx, _) = self.assigned(key)?;
        if !self.holds(worker, idx, key) {
            return Err(Self::not_holder(key));
        }
        match blob {
            Some(id) => Ok(if self.trajectory_room(idx, key, id, 0)? { Upload::Same } else { Upload::New }),
            None => {
                // Room for one byte, and the attempt's own trajectory, whatever it is, may still be resent.
                let s = &self.sweeps[idx];
                if s.trajectories.contains_key(&(key.unit, key.attempt)) {
                    return Ok(Upload::New);
                }
                self.trajectory_room(idx, key, 1, 1).map(|_| Upload::New)
            }
        }
    }

    /// A record too large to accept: refused, and its running attempt ends as `error`.
    pub(super) fn too_large(&mut self, worker: &str, conn: &Conn, key: AttemptKey, bytes: usize) {
        let (idx, slot) = match self.assigned(&key) {
            Ok(found) => found,
            Err(reason) => return self.reject(worker, conn, key, reason),
        };
        if !self.holds(worker, idx, &key) {
            return self.reject(worker, conn, key.clone(), Self::not_holder(&key));
        }
        if slot == Slot::Running {
            self.end_without_record(&key, RECORD_TOO_LARGE);
        }
        let limit = self.limits.max_record_bytes;
        self.reject(worker, conn, key, IngestError::RecordTooLarge { bytes, limit });
    }

    /// A running attempt ends without its worker's record (the worker was
    /// lost, or its record was refused): the coordinator records `error` with
    /// `reason` under the attempt's holder and lets the unit's rule decide
    /// whether it runs again. The attempt's own record may still replace it.
    pub(super) fn end_without_record(&mut self, key: &AttemptKey, reason: &str) {
        let Some(&idx) = self.by_id.get(&key.sweep) else { return };
        let holder = self.sweeps[idx].holder(key.unit, key.attempt);
        let worker =
            holder.and_then(|h| self.names.name(h)).map_or_else(|| "unknown".to_string(), |id| self.worker_label(id));
        let s = &mut self.sweeps[idx];
        let Some(slot) = s.slots.get_mut(key.unit as usize).and_then(|v| v.get_mut(key.attempt as usize)) else {
            return;
        };
        if *slot != Slot::Running {
            return;
        }
        *slot = Slot::Recorded { outcome: Outcome::Error, synthetic: true, retry_counted: true };
        s.running = s.running.saturating_sub(1);
        // Nothing spent that the coordinator knows of; the reservation is free again.
        s.settle(key.unit, key.attempt, None);
        self.leases.finish(key);
        let unit = &s.units[key.unit as usize];
        let spec = planner::attempt_spec(&s.meta.id, &s.meta.spec, &s.meta.config_digest, unit, key.attempt);
        let mut rec = Record::for_attempt(&spec);
        rec.outcome = Some(Outcome::Error);
        rec.error = Some(reason.into());
        rec.failure_category = failure::categorize(Outcome::Error, Some(reason), None);
        let detail = match reason {
            super::WORKER_LOST => {
                format!("worker {worker} was lost while it ran the attempt (its stream broke or its lease expired)")
            }
            other => format!("the coordinator ended worker {worker}'s attempt without its record: {other}"),
        };
        rec.error_detail = Some(skillshift_common::record::error_detail(&detail));
        rec.worker = Some(worker);
        if let Some(span) = self.spans.end_attempt(key, Outcome::Error.as_str(), Some(reason)) {
            rec.trace_id = trace_context::trace_id(&span);
        }
        let s = &mut self.sweeps[idx];
        s.note_record(key.unit, key.attempt, &rec);
        self.ops.push(StoreOp::Record(key.clone(), StoredRecord { synthetic: true, record: rec }));
        s.resolve(key.unit);
    }

    /// Whether the attempt's record from its worker is durable, asked by that worker.
    pub(super) fn stored_real(&self, worker: &str, key: &AttemptKey) -> bool {
        let Some(&idx) = self.by_id.get(&key.sweep) else { return false };
        self.holds(worker, idx, key)
            && matches!(self.sweeps[idx].slot(key.unit, key.attempt), Some(Slot::Recorded { synthetic: false, .. }))
    }

    /// Queues an ack; one `Ack` message per session carries a batch's keys.
    pub(super) fn ack(&mut self, worker: &str, conn: &Conn, key: AttemptKey) {
        let entry = self.acks.entry(conn.id).or_insert_with(|| (worker.to_string(), conn.clone(), Vec::new()));
        entry.2.push(key);
    }

    fn reject(&mut self, worker: &str, conn: &Conn, key: AttemptKey, reason: IngestError) {
        tracing::warn!(worker, sweep = %key.sweep, unit = key.unit, attempt = key.attempt, %reason, "record refused");
        let msg = Outbound::Reject(key, reason.to_string());
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
            &"sw-1".into(),
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
        let reason = check_identity(&mut other, &spec).expect_err("another sweep").to_string();
        assert_eq!(reason, "sweep 'sw-2' is not the assignment's 'sw-1'");

        let mut other = Record::for_attempt(&spec);
        other.config_digest = Some("digest-b".into());
        let reason = check_identity(&mut other, &spec).expect_err("another digest").to_string();
        assert_eq!(reason, "config_digest 'digest-b' is not the sweep's 'digest-a'");

        let mut other = Record::for_attempt(&spec);
        other.treatment = Some("SKILLS".into());
        let reason = check_identity(&mut other, &spec).expect_err("another treatment").to_string();
        assert_eq!(reason, "treatment 'SKILLS' is not the unit's 'CONTROL'");
    }

    #[test]
    fn each_refusal_reads_as_its_reason_always_has() {
        let sweep = SweepId::from("sw-1");
        let spec = spec();
        let cases: Vec<(IngestError, &str)> = vec![
            (IngestError::UnknownSweep(sweep.clone()), "unknown sweep 'sw-1'"),
            (IngestError::NoUnit { sweep: sweep.clone(), unit: 7 }, "sweep 'sw-1' has no unit 7"),
            (IngestError::NeverAssigned { unit: 7, attempt: 2 }, "attempt 2 of unit 7 was never assigned"),
            (IngestError::NotHolder { unit: 7, attempt: 2 }, "attempt 2 of unit 7 was not leased to this worker"),
            (IngestError::RecordTooLarge { bytes: 10, limit: 5 }, "record too large: 10 bytes, the limit is 5 bytes"),
            (
                IngestError::TrajectoryMisnamed {
                    named: Box::new(Key::for_attempt(&spec)),
                    uid: spec.uid,
                    condition: Condition::Tgt,
                },
                "the trajectory names skillshift.gitlab.v1.0 src rep 2 attempt 1, not its attempt's \
                 skillshift.gitlab.v1.0 tgt",
            ),
            (
                IngestError::OtherBlob { unit: 7, attempt: 2 },
                "attempt 2 of unit 7 already has a trajectory, from another blob; an attempt keeps one",
            ),
            (
                IngestError::OverQuota { sweep, stored: 90, bytes: 20, quota: 100 },
                "sweep 'sw-1' stores 90 bytes of trajectories; 20 more would pass its quota of 100 bytes \
                 (--max-trajectory-bytes-per-sweep)",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn an_absent_rep_or_attempt_is_zero_and_checked_as_zero() {
        let spec = spec();
        let mut rec = Record::for_attempt(&spec);
        rec.rep = None;
        assert_eq!(check_identity(&mut rec, &spec).map_err(|e| e.to_string()), Err("rep 0 is not the unit's 2".into()));
        let mut rec = Record::for_attempt(&spec);
        rec.attempt = None;
        assert_eq!(
            check_identity(&mut rec, &spec).map_err(|e| e.to_string()),
            Err("attempt 0 is not the assignment's 1".into())
        );
    }
}
