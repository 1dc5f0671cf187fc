//! The embedded store: sled behind one module that owns every key encoding.
//!
//! Trees:
//! * `sweeps`: sweep id -> [`SweepMeta`] (spec, contract, digest, cancel flag);
//! * `units`: (sweep, unit) -> [`Unit`];
//! * `attempts`: (sweep, unit, attempt) -> [`AttemptRow`] (who ran it: the lease ledger);
//! * `records`: (sweep, unit, attempt) -> [`StoredRecord`].
//!
//! Keys are `sweep id, 0x00, unit (u32 BE), attempt (u32 BE)`, so a prefix scan
//! yields a sweep's rows in (unit, attempt) order: export is deterministic and,
//! a key being unique, never holds two records of one attempt. Writes are
//! applied in batches and made durable by one [`Store::flush`] (group commit);
//! the engine acknowledges nothing before that flush returns.

use std::path::Path;

use serde::{Deserialize, Serialize};
use skillshift_common::Record;
use skillshift_proto::convert::AttemptKey;

use crate::planner::{SweepSpec, Unit};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store at {path}: {source}")]
    Open { path: String, source: sled::Error },
    #[error("store: {0}")]
    Sled(#[from] sled::Error),
    #[error("store: corrupt {what} at key {key}: {message}")]
    Corrupt { what: &'static str, key: String, message: String },
}

/// What the store keeps about a sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepMeta {
    pub id: String,
    pub spec: SweepSpec,
    pub contract: serde_json::Value,
    pub config_digest: String,
    pub created_ms: u64,
    pub cancelled: bool,
    /// Why the sweep stopped on its own (its cost budget ran out); absent in older stores.
    #[serde(default)]
    pub stopped: Option<String>,
}

/// One attempt in the ledger: which worker it was leased to and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow {
    pub worker: String,
    pub started_ms: u64,
}

/// A stored record. `synthetic` marks the `error`/`worker_lost` record the
/// coordinator writes for a lost attempt; the attempt's own record, if it
/// arrives late, replaces it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRecord {
    pub synthetic: bool,
    pub record: Record,
}

/// One write of a batch.
#[derive(Debug, Clone)]
pub enum StoreOp {
    Sweep(SweepMeta),
    Units(String, Vec<Unit>),
    Attempt(AttemptKey, AttemptRow),
    Record(AttemptKey, StoredRecord),
}

/// Everything stored about one sweep, as loaded on restart.
#[derive(Debug, Clone)]
pub struct SweepRows {
    pub meta: SweepMeta,
    pub units: Vec<Unit>,
    pub attempts: Vec<(AttemptKey, AttemptRow)>,
    pub records: Vec<(AttemptKey, StoredRecord)>,
}

#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    sweeps: sled::Tree,
    units: sled::Tree,
    attempts: sled::Tree,
    records: sled::Tree,
}

fn sweep_prefix(sweep: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(sweep.len() + 1);
    k.extend_from_slice(sweep.as_bytes());
    k.push(0);
    k
}

fn unit_key(sweep: &str, unit: u32) -> Vec<u8> {
    let mut k = sweep_prefix(sweep);
    k.extend_from_slice(&unit.to_be_bytes());
    k
}

fn attempt_key(key: &AttemptKey) -> Vec<u8> {
    let mut k = unit_key(&key.sweep, key.unit);
    k.extend_from_slice(&key.attempt.to_be_bytes());
    k
}

fn decode_attempt_key(bytes: &[u8]) -> Option<AttemptKey> {
    let zero = bytes.iter().position(|b| *b == 0)?;
    let sweep = std::str::from_utf8(&bytes[..zero]).ok()?.to_string();
    let rest = &bytes[zero + 1..];
    if rest.len() != 8 {
        return None;
    }
    let unit = u32::from_be_bytes(rest[..4].try_into().ok()?);
    let attempt = u32::from_be_bytes(rest[4..].try_into().ok()?);
    Some(AttemptKey { sweep, unit, attempt })
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Serializing our own plain structs cannot fail (no maps with non-string keys).
    serde_json::to_vec(v).unwrap_or_default()
}

fn decode<T: for<'de> Deserialize<'de>>(what: &'static str, key: &[u8], v: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(v).map_err(|e| StoreError::Corrupt {
        what,
        key: String::from_utf8_lossy(key).replace('\0', "/"),
        message: e.to_string(),
    })
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            // Durability comes from our explicit group-commit flushes.
            .flush_every_ms(None)
            .open()
            .map_err(|source| StoreError::Open { path: dir.display().to_string(), source })?;
        Ok(Store {
            sweeps: db.open_tree("sweeps")?,
            units: db.open_tree("units")?,
            attempts: db.open_tree("attempts")?,
            records: db.open_tree("records")?,
            db,
        })
    }

    /// Applies a batch (in memory); durable only after [`Store::flush`].
    pub fn apply(&self, ops: &[StoreOp]) -> Result<(), StoreError> {
        for op in ops {
            match op {
                StoreOp::Sweep(meta) => {
                    self.sweeps.insert(meta.id.as_bytes(), encode(meta))?;
                }
                StoreOp::Units(sweep, units) => {
                    let mut batch = sled::Batch::default();
                    for (i, u) in units.iter().enumerate() {
                        batch.insert(unit_key(sweep, i as u32), encode(u));
                    }
                    self.units.apply_batch(batch)?;
                }
                StoreOp::Attempt(key, row) => {
                    self.attempts.insert(attempt_key(key), encode(row))?;
                }
                StoreOp::Record(key, rec) => {
                    self.records.insert(attempt_key(key), encode(rec))?;
                }
            }
        }
        Ok(())
    }

    /// Makes every applied write durable (survives a kill of the process).
    pub fn flush(&self) -> Result<usize, StoreError> {
        Ok(self.db.flush()?)
    }

    pub fn record(&self, key: &AttemptKey) -> Result<Option<StoredRecord>, StoreError> {
        let k = attempt_key(key);
        self.records.get(&k)?.map(|v| decode("record", &k, &v)).transpose()
    }

    /// Every stored record of a sweep in (unit, attempt) order.
    pub fn records(&self, sweep: &str) -> impl Iterator<Item = Result<(AttemptKey, StoredRecord), StoreError>> + '_ {
        self.records.scan_prefix(sweep_prefix(sweep)).map(|row| {
            let (k, v) = row?;
            let key = decode_attempt_key(&k).ok_or_else(|| StoreError::Corrupt {
                what: "record key",
                key: String::from_utf8_lossy(&k).replace('\0', "/"),
                message: "not (sweep, unit, attempt)".into(),
            })?;
            Ok((key, decode("record", &k, &v)?))
        })
    }

    pub fn sweep(&self, id: &str) -> Result<Option<SweepMeta>, StoreError> {
        self.sweeps.get(id.as_bytes())?.map(|v| decode("sweep", id.as_bytes(), &v)).transpose()
    }

    /// Everything stored, sweep by sweep (for the restart reload).
    pub fn load_all(&self) -> Result<Vec<SweepRows>, StoreError> {
        let mut out = Vec::new();
        for row in self.sweeps.iter() {
            let (k, v) = row?;
            let meta: SweepMeta = decode("sweep", &k, &v)?;
            let prefix = sweep_prefix(&meta.id);
            let mut units = Vec::new();
            for row in self.units.scan_prefix(&prefix) {
                let (k, v) = row?;
                units.push(decode("unit", &k, &v)?);
            }
            let mut attempts = Vec::new();
            for row in self.attempts.scan_prefix(&prefix) {
                let (k, v) = row?;
                let key = decode_attempt_key(&k).ok_or_else(|| StoreError::Corrupt {
                    what: "attempt key",
                    key: String::from_utf8_lossy(&k).replace('\0', "/"),
                    message: "not (sweep, unit, attempt)".into(),
                })?;
                attempts.push((key, decode("attempt", &k, &v)?));
            }
            let records = self.records(&meta.id).collect::<Result<Vec<_>, _>>()?;
            out.push(SweepRows { meta, units, attempts, records });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::{Condition, Outcome, Site};

    fn key(unit: u32, attempt: u32) -> AttemptKey {
        AttemptKey { sweep: "s1".into(), unit, attempt }
    }

    fn rec(attempt: u32) -> StoredRecord {
        let uid = skillshift_common::Uid::new(Site::Gitlab, skillshift_common::Version::V1, 3);
        let mut r = Record::new(uid, Condition::Src);
        r.outcome = Some(Outcome::Success);
        r.success = Some(true);
        r.attempt = Some(attempt);
        StoredRecord { synthetic: false, record: r }
    }

    #[test]
    fn records_scan_in_unit_attempt_order_and_survive_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let store = Store::open(dir.path()).expect("open");
            // 256 sorts after 2 only with big-endian keys.
            let ops: Vec<StoreOp> = [(256, 0), (2, 1), (2, 0), (10, 0)]
                .into_iter()
                .map(|(u, a)| StoreOp::Record(key(u, a), rec(a)))
                .collect();
            store.apply(&ops).expect("apply");
            // Another sweep whose id extends this one's must not leak into the scan.
            store
                .apply(&[StoreOp::Record(AttemptKey { sweep: "s10".into(), unit: 0, attempt: 0 }, rec(0))])
                .expect("apply");
            store.apply(&[StoreOp::Record(key(2, 0), rec(0))]).expect("idempotent rewrite");
            store.flush().expect("flush");
        }
        let store = Store::open(dir.path()).expect("reopen");
        let keys: Vec<(u32, u32)> =
            store.records("s1").map(|r| r.map(|(k, _)| (k.unit, k.attempt))).collect::<Result<_, _>>().expect("scan");
        assert_eq!(keys, vec![(2, 0), (2, 1), (10, 0), (256, 0)]);
    }
}
