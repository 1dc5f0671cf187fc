//! The embedded store: sled behind one module that owns every key encoding.
//!
//! Trees:
//! * `sweeps`: sweep id -> [`SweepMeta`] (spec, contract, digest, cancel flag);
//! * `unit_chunks`: (sweep, chunk) -> up to [`UNITS_PER_CHUNK`] [`Unit`]s in
//!   plan order, 12 bytes each (treatment u16, site u8, task id u32, condition
//!   u8, rep u32; big-endian, sites and conditions by their index in `ALL`);
//! * `units`: (sweep, unit) -> one [`Unit`] as JSON, as stores before
//!   `unit_chunks` kept them; read, never written;
//! * `attempts`: (sweep, unit, attempt) -> [`AttemptRow`] (who ran it: the lease ledger);
//! * `records`: (sweep, unit, attempt) -> [`StoredRecord`];
//! * `workers`: worker id -> [`WorkerRow`] (the registry, so an identity
//!   survives a restart).
//! * `trajectories`: (sweep, unit, attempt) -> the attempt's trajectory, its
//!   JSON zstd-compressed (`docs/formats.md`, trajectories);
//! * `screenshots`: SHA-256 (hex) -> PNG, stored once however many steps name it.
//! * `llm_budget`: `permit_key` -> the 32 random bytes that tag LLM permit ids
//!   (`crate::llm_budget`), so a restarted coordinator can tell its
//!   predecessors' permits from made-up ones.
//! * `trajectory_rows`: (sweep, unit, attempt) -> [`TrajectoryRow`]: the
//!   SHA-256 of the blob the trajectory came in and the bytes it was charged
//!   against its sweep's quota, written with the trajectory. An attempt keeps
//!   one trajectory: the engine compares a re-upload's digest with this one.
//!   Trajectories stored before this tree have no row here.
//!
//! Keys are `sweep id, 0x00, unit (u32 BE), attempt (u32 BE)`, so a prefix scan
//! yields a sweep's rows in (unit, attempt) order: export is deterministic and,
//! a key being unique, never holds two records of one attempt. Writes are
//! applied in batches and made durable by one [`Store::flush`] (group commit);
//! the engine acknowledges nothing before that flush returns.
//!
//! A sweep is created by one sled transaction holding its metadata and all
//! its units ([`StoreOp::CreateSweep`]), so no crash or failed write leaves
//! one without the other. A sweep found with fewer units than its spec plans
//! (written by a version without that transaction) and nothing run yet is
//! removed on load, with a log line; one that has attempts is refused as
//! corrupt.
//!
//! A store whose write or flush failed is *broken*: it refuses every later
//! write. When sled itself failed, its handle is kept alive to the end of
//! the process, because sled flushes when its last handle is dropped and,
//! after a failed write (a full disk), that flush waits forever: the process
//! would never exit.
//!
//! [`Faults`] is a test hook: it makes writes fail as a full disk would.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use skillshift_common::blob;
use skillshift_common::ids::{AttemptKey, Family, SweepId};
use skillshift_common::trajectory::Trajectory;
use skillshift_common::{Condition, Record, Site};
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use crate::planner::{self, SweepSpec, Unit};

/// Units per row of the `unit_chunks` tree.
pub const UNITS_PER_CHUNK: usize = 65_536;
/// Bytes of one unit in a chunk.
const UNIT_BYTES: usize = 12;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store at {path}: {source}")]
    Open { path: String, source: sled::Error },
    #[error("store: {0}")]
    Sled(#[from] sled::Error),
    #[error("store: corrupt {what} at key {key}: {message}")]
    Corrupt { what: &'static str, key: String, message: String },
    #[error("store: an earlier write failed; nothing more is written")]
    Broken,
    #[error("store: a write has not finished after {secs} s (a full or failing disk?); nothing more is written")]
    Stalled { secs: u64 },
    #[error("store: {0} (injected fault)")]
    Injected(&'static str),
}

/// Why [`Store::trajectory`] returned none.
#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    /// Its JSON inflates past the reader's bound.
    #[error("the trajectory's JSON inflates past {limit} bytes")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the store keeps about a sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepMeta {
    pub id: SweepId,
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

/// A stored record. `synthetic` marks the `error` record the coordinator
/// writes for an attempt that ended without its worker's record (the worker
/// was lost, or its record was too large); the attempt's own record, if it
/// arrives late, replaces it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRecord {
    pub synthetic: bool,
    pub record: Record,
}

/// A registered worker: its public id, its name and the SHA-256 of the secret
/// it proves its identity with (never the secret itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerRow {
    pub id: String,
    pub name: String,
    pub secret_sha256: String,
    pub registered_ms: u64,
}

/// One write of a batch.
#[derive(Debug, Clone)]
pub enum StoreOp {
    /// A new sweep: its metadata and every unit, in one transaction.
    CreateSweep(SweepMeta, Vec<Unit>),
    /// A sweep's metadata changed (cancelled, resumed, stopped).
    Sweep(SweepMeta),
    Attempt(AttemptKey, AttemptRow),
    Record(AttemptKey, StoredRecord),
    Worker(WorkerRow),
    ForgetWorker(String),
    /// An attempt's trajectory: its compressed JSON and the screenshots it names, by digest.
    Trajectory(AttemptKey, Arc<StoredTrajectory>),
}

/// What the store keeps of one trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTrajectory {
    /// The trajectory's JSON, zstd-compressed ([`skillshift_common::blob::compress`]).
    pub compressed: Vec<u8>,
    pub screenshots: Vec<(String, Vec<u8>)>,
    /// The SHA-256 (hex) of the blob it was uploaded in, and what it is charged against its sweep's quota.
    pub row: TrajectoryRow,
}

/// One attempt's trajectory as its sweep's quota and a re-upload see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryRow {
    /// The SHA-256 (hex) of the compressed blob the worker sent.
    pub blob_sha256: String,
    /// The compressed JSON's bytes and every screenshot's, whether or not another attempt stored it first.
    pub bytes: u64,
}

/// Everything stored about one sweep, as loaded on restart.
#[derive(Debug, Clone)]
pub struct SweepRows {
    pub meta: SweepMeta,
    pub units: Vec<Unit>,
    pub attempts: Vec<(AttemptKey, AttemptRow)>,
    pub records: Vec<(AttemptKey, StoredRecord)>,
    /// The sweep's stored trajectories that have a [`TrajectoryRow`].
    pub trajectories: Vec<(AttemptKey, TrajectoryRow)>,
}

/// Injected write failures, for tests: after `n` more row writes every write
/// fails with the error a full disk gives (`StorageFull`).
#[derive(Debug)]
pub struct Faults {
    writes_left: AtomicU64,
    stalled: AtomicBool,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults { writes_left: AtomicU64::new(u64::MAX), stalled: AtomicBool::new(false) }
    }
}

impl Faults {
    /// Makes every row write block until [`Faults::unstall`], as a disk that stops answering does.
    pub fn stall_writes(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    pub fn unstall(&self) {
        self.stalled.store(false, Ordering::SeqCst);
    }

    /// Lets `n` more row writes through, then fails every one.
    pub fn fail_writes_after(&self, n: u64) {
        self.writes_left.store(n, Ordering::SeqCst);
    }

    /// One row write: `Err` once the allowance is used up.
    fn write(&self) -> Result<(), StoreError> {
        while self.stalled.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let left = self.writes_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
            u64::MAX => Some(u64::MAX),
            0 => None,
            n => Some(n - 1),
        });
        match left {
            Ok(_) => Ok(()),
            Err(_) => Err(StoreError::Injected("no space left on device")),
        }
    }
}

#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    sweeps: sled::Tree,
    unit_chunks: sled::Tree,
    legacy_units: sled::Tree,
    attempts: sled::Tree,
    records: sled::Tree,
    workers: sled::Tree,
    trajectories: sled::Tree,
    trajectory_rows: sled::Tree,
    screenshots: sled::Tree,
    faults: Arc<Faults>,
    broken: Arc<AtomicBool>,
}

fn sweep_prefix(sweep: &SweepId) -> Vec<u8> {
    let sweep = sweep.as_str().as_bytes();
    let mut k = Vec::with_capacity(sweep.len() + 1);
    k.extend_from_slice(sweep);
    k.push(0);
    k
}

fn unit_key(sweep: &SweepId, unit: u32) -> Vec<u8> {
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
    let sweep = std::str::from_utf8(&bytes[..zero]).ok()?.into();
    let rest = &bytes[zero + 1..];
    if rest.len() != 8 {
        return None;
    }
    let unit = u32::from_be_bytes(rest[..4].try_into().ok()?);
    let attempt = u32::from_be_bytes(rest[4..].try_into().ok()?);
    Some(AttemptKey { sweep, unit, attempt })
}

fn shown(key: &[u8]) -> String {
    String::from_utf8_lossy(key).replace('\0', "/")
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Serializing our own plain structs cannot fail (no maps with non-string keys).
    serde_json::to_vec(v).unwrap_or_default()
}

fn decode<T: for<'de> Deserialize<'de>>(what: &'static str, key: &[u8], v: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(v).map_err(|e| StoreError::Corrupt { what, key: shown(key), message: e.to_string() })
}

/// Units as the 12-byte rows of a chunk.
fn encode_units(units: &[Unit]) -> Vec<u8> {
    let mut out = Vec::with_capacity(units.len() * UNIT_BYTES);
    for u in units {
        out.extend_from_slice(&u.treatment.to_be_bytes());
        out.push(u.family.site.index() as u8);
        out.extend_from_slice(&u.family.task_id.to_be_bytes());
        out.push(u.condition.index() as u8);
        out.extend_from_slice(&u.rep.to_be_bytes());
    }
    out
}

fn decode_units(key: &[u8], bytes: &[u8], out: &mut Vec<Unit>) -> Result<(), StoreError> {
    let corrupt = |message: String| StoreError::Corrupt { what: "unit chunk", key: shown(key), message };
    if bytes.len() % UNIT_BYTES != 0 {
        return Err(corrupt(format!("{} bytes is not a whole number of {UNIT_BYTES}-byte units", bytes.len())));
    }
    for (i, b) in bytes.chunks_exact(UNIT_BYTES).enumerate() {
        let site = Site::ALL.get(b[2] as usize).ok_or_else(|| corrupt(format!("unit {i}: site index {}", b[2])))?;
        let condition =
            Condition::ALL.get(b[7] as usize).ok_or_else(|| corrupt(format!("unit {i}: condition index {}", b[7])))?;
        out.push(Unit {
            treatment: u16::from_be_bytes([b[0], b[1]]),
            family: Family { site: *site, task_id: u32::from_be_bytes([b[3], b[4], b[5], b[6]]) },
            condition: *condition,
            rep: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        });
    }
    Ok(())
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
            unit_chunks: db.open_tree("unit_chunks")?,
            legacy_units: db.open_tree("units")?,
            attempts: db.open_tree("attempts")?,
            records: db.open_tree("records")?,
            workers: db.open_tree("workers")?,
            trajectories: db.open_tree("trajectories")?,
            trajectory_rows: db.open_tree("trajectory_rows")?,
            screenshots: db.open_tree("screenshots")?,
            db,
            faults: Arc::default(),
            broken: Arc::default(),
        })
    }

    /// Marks the store broken after a failed write (see the module header).
    fn broke(&self, e: StoreError) -> StoreError {
        let first = !self.broken.swap(true, Ordering::SeqCst);
        if first && matches!(e, StoreError::Sled(_) | StoreError::Stalled { .. }) {
            // Never dropped: sled's flush on drop would wait forever after its own failure, or behind a
            // write stuck on the disk.
            std::mem::forget(self.db.clone());
        }
        e
    }

    /// Marks the store broken because a write has been blocked for `waited`: nothing more is written,
    /// and the database is never dropped (its flush on drop would block the exit behind the stuck write).
    pub fn stalled(&self, waited: std::time::Duration) -> StoreError {
        self.broke(StoreError::Stalled { secs: waited.as_secs() })
    }

    fn check_writable(&self) -> Result<(), StoreError> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(StoreError::Broken);
        }
        Ok(())
    }

    /// The test hook that makes writes fail.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    fn insert(&self, tree: &sled::Tree, key: impl AsRef<[u8]>, value: Vec<u8>) -> Result<(), StoreError> {
        self.faults.write()?;
        tree.insert(key.as_ref(), value)?;
        Ok(())
    }

    /// A sweep's metadata and units, all or nothing.
    fn create_sweep(&self, meta: &SweepMeta, units: &[Unit]) -> Result<(), StoreError> {
        let chunks: Vec<(Vec<u8>, Vec<u8>)> = units
            .chunks(UNITS_PER_CHUNK)
            .enumerate()
            .map(|(i, c)| (unit_key(&meta.id, i as u32), encode_units(c)))
            .collect();
        let meta_bytes = encode(meta);
        let faults = &self.faults;
        let result = (&self.sweeps, &self.unit_chunks).transaction(|(sweeps, unit_chunks)| {
            for (k, v) in &chunks {
                faults.write().map_err(ConflictableTransactionError::Abort)?;
                unit_chunks.insert(k.as_slice(), v.as_slice())?;
            }
            faults.write().map_err(ConflictableTransactionError::Abort)?;
            sweeps.insert(meta.id.as_str().as_bytes(), meta_bytes.as_slice())?;
            Ok(())
        });
        match result {
            Ok(()) => Ok(()),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(e.into()),
        }
    }

    /// Applies a batch (in memory); durable only after [`Store::flush`].
    pub fn apply(&self, ops: &[StoreOp]) -> Result<(), StoreError> {
        self.check_writable()?;
        self.apply_ops(ops).map_err(|e| self.broke(e))
    }

    fn apply_ops(&self, ops: &[StoreOp]) -> Result<(), StoreError> {
        for op in ops {
            match op {
                StoreOp::CreateSweep(meta, units) => self.create_sweep(meta, units)?,
                StoreOp::Sweep(meta) => self.insert(&self.sweeps, meta.id.as_str().as_bytes(), encode(meta))?,
                StoreOp::Attempt(key, row) => self.insert(&self.attempts, attempt_key(key), encode(row))?,
                StoreOp::Record(key, rec) => self.insert(&self.records, attempt_key(key), encode(rec))?,
                StoreOp::Worker(row) => self.insert(&self.workers, row.id.as_bytes(), encode(row))?,
                StoreOp::ForgetWorker(id) => {
                    self.faults.write()?;
                    self.workers.remove(id.as_bytes())?;
                }
                StoreOp::Trajectory(key, t) => {
                    // One trajectory per attempt: the engine never sends a second one; a resend is dropped here too.
                    if self.trajectory_rows.contains_key(attempt_key(key))? {
                        continue;
                    }
                    for (digest, png) in &t.screenshots {
                        if !self.screenshots.contains_key(digest.as_bytes())? {
                            self.insert(&self.screenshots, digest.as_bytes(), png.clone())?;
                        }
                    }
                    self.insert(&self.trajectories, attempt_key(key), t.compressed.clone())?;
                    self.insert(&self.trajectory_rows, attempt_key(key), encode(&t.row))?;
                }
            }
        }
        Ok(())
    }

    /// Makes every applied write durable (survives a kill of the process).
    pub fn flush(&self) -> Result<usize, StoreError> {
        self.check_writable()?;
        let flushed = self.faults.write().and_then(|()| Ok(self.db.flush()?));
        flushed.map_err(|e| self.broke(e))
    }

    /// An attempt's trajectory, as its worker sent it, read only when its JSON is at most `limit` bytes
    /// (the viewer reads within its bound, an export within [`blob::MAX_STORED_JSON_BYTES`]).
    pub fn trajectory(&self, key: &AttemptKey, limit: usize) -> Result<Option<Trajectory>, TrajectoryError> {
        let k = attempt_key(key);
        let Some(bytes) = self.trajectories.get(&k).map_err(StoreError::from)? else { return Ok(None) };
        match blob::decompress(&bytes, limit) {
            Ok(t) => Ok(Some(t)),
            Err(blob::BlobError::TooLarge { limit }) => Err(TrajectoryError::TooLarge { limit }),
            Err(e) => Err(StoreError::Corrupt { what: "trajectory", key: shown(&k), message: e.to_string() }.into()),
        }
    }

    /// Whether the attempt has a stored trajectory (with or without its [`TrajectoryRow`]).
    pub fn has_trajectory(&self, key: &AttemptKey) -> Result<bool, StoreError> {
        Ok(self.trajectories.contains_key(attempt_key(key))?)
    }

    /// An attempt's trajectory still compressed ([`skillshift_common::blob::decompress`] reads it).
    pub fn trajectory_compressed(&self, key: &AttemptKey) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.trajectories.get(attempt_key(key))?.map(|v| v.to_vec()))
    }

    /// The attempts of a sweep that have a trajectory, in (unit, attempt) order.
    pub fn trajectory_keys(&self, sweep: &SweepId) -> Result<Vec<AttemptKey>, StoreError> {
        let mut out = Vec::new();
        for row in self.trajectories.scan_prefix(sweep_prefix(sweep)) {
            let (k, _) = row?;
            let key = decode_attempt_key(&k).ok_or_else(|| StoreError::Corrupt {
                what: "trajectory key",
                key: shown(&k),
                message: "not sweep, unit, attempt".into(),
            })?;
            out.push(key);
        }
        Ok(out)
    }

    /// A screenshot by its SHA-256 (hex).
    pub fn screenshot(&self, digest: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.screenshots.get(digest.as_bytes())?.map(|v| v.to_vec()))
    }

    /// Bytes the trajectories and screenshots take in the store (before sled's own overhead).
    pub fn trajectory_bytes(&self) -> Result<(u64, u64), StoreError> {
        let sum = |t: &sled::Tree| -> Result<u64, StoreError> {
            t.iter().values().try_fold(0u64, |n, v| Ok(n + v?.len() as u64))
        };
        Ok((sum(&self.trajectories)?, sum(&self.screenshots)?))
    }

    pub fn record(&self, key: &AttemptKey) -> Result<Option<StoredRecord>, StoreError> {
        let k = attempt_key(key);
        self.records.get(&k)?.map(|v| decode("record", &k, &v)).transpose()
    }

    /// Every stored record of a sweep in (unit, attempt) order.
    pub fn records(
        &self,
        sweep: &SweepId,
    ) -> impl Iterator<Item = Result<(AttemptKey, StoredRecord), StoreError>> + '_ {
        self.records.scan_prefix(sweep_prefix(sweep)).map(|row| {
            let (k, v) = row?;
            let key = decode_attempt_key(&k).ok_or_else(|| StoreError::Corrupt {
                what: "record key",
                key: shown(&k),
                message: "not (sweep, unit, attempt)".into(),
            })?;
            Ok((key, decode("record", &k, &v)?))
        })
    }

    pub fn sweep(&self, id: &SweepId) -> Result<Option<SweepMeta>, StoreError> {
        let k = id.as_str().as_bytes();
        self.sweeps.get(k)?.map(|v| decode("sweep", k, &v)).transpose()
    }

    /// A sweep's units in plan order: its chunks, or the one-row-per-unit form of older stores.
    fn units(&self, sweep: &SweepId) -> Result<Vec<Unit>, StoreError> {
        let prefix = sweep_prefix(sweep);
        let mut units = Vec::new();
        for row in self.unit_chunks.scan_prefix(&prefix) {
            let (k, v) = row?;
            decode_units(&k, &v, &mut units)?;
        }
        if units.is_empty() {
            for row in self.legacy_units.scan_prefix(&prefix) {
                let (k, v) = row?;
                units.push(decode("unit", &k, &v)?);
            }
        }
        Ok(units)
    }

    /// Removes a sweep that was never fully created (nothing ran in it).
    fn remove_incomplete(&self, id: &SweepId) -> Result<(), StoreError> {
        let prefix = sweep_prefix(id);
        for tree in [&self.unit_chunks, &self.legacy_units] {
            for row in tree.scan_prefix(&prefix).keys() {
                tree.remove(row?)?;
            }
        }
        self.sweeps.remove(id.as_str().as_bytes())?;
        self.db.flush()?;
        Ok(())
    }

    /// Everything stored, sweep by sweep (for the restart reload). A sweep
    /// stored with fewer units than its spec plans and nothing run is
    /// removed (see the module header); with attempts it is corrupt.
    pub fn load_all(&self) -> Result<Vec<SweepRows>, StoreError> {
        let mut metas = Vec::new();
        for row in self.sweeps.iter() {
            let (k, v) = row?;
            metas.push(decode::<SweepMeta>("sweep", &k, &v)?);
        }
        let mut out = Vec::new();
        for meta in metas {
            let units = self.units(&meta.id)?;
            let mut attempts = Vec::new();
            for row in self.attempts.scan_prefix(sweep_prefix(&meta.id)) {
                let (k, v) = row?;
                let key = decode_attempt_key(&k).ok_or_else(|| StoreError::Corrupt {
                    what: "attempt key",
                    key: shown(&k),
                    message: "not (sweep, unit, attempt)".into(),
                })?;
                attempts.push((key, decode("attempt", &k, &v)?));
            }
            let records = self.records(&meta.id).collect::<Result<Vec<_>, _>>()?;
            let mut trajectories = Vec::new();
            for row in self.trajectory_rows.scan_prefix(sweep_prefix(&meta.id)) {
                let (k, v) = row?;
                let key = decode_attempt_key(&k).ok_or_else(|| StoreError::Corrupt {
                    what: "trajectory row key",
                    key: shown(&k),
                    message: "not (sweep, unit, attempt)".into(),
                })?;
                trajectories.push((key, decode("trajectory row", &k, &v)?));
            }
            let planned = planner::unit_count(&meta.spec);
            if planned != Some(units.len() as u64) {
                let planned = planned.map_or("more than 2^64".to_string(), |n| n.to_string());
                if !attempts.is_empty() || !records.is_empty() {
                    return Err(StoreError::Corrupt {
                        what: "sweep",
                        key: meta.id.to_string(),
                        message: format!("{} units stored, its spec plans {planned}", units.len()),
                    });
                }
                tracing::warn!(
                    sweep = %meta.id,
                    stored = units.len(),
                    planned = %planned,
                    "sweep was never fully created (a write was cut short); removed"
                );
                self.remove_incomplete(&meta.id).map_err(|e| self.broke(e))?;
                continue;
            }
            out.push(SweepRows { meta, units, attempts, records, trajectories });
        }
        Ok(out)
    }

    /// The key that tags LLM permit ids: drawn once and kept (flushed before it is used), so every
    /// coordinator on this store tags permits alike.
    pub fn llm_permit_key(&self) -> Result<[u8; 32], StoreError> {
        let tree = self.db.open_tree("llm_budget")?;
        if let Some(v) = tree.get(b"permit_key")? {
            if let Ok(key) = <[u8; 32]>::try_from(v.as_ref()) {
                return Ok(key);
            }
        }
        self.check_writable()?;
        let key: [u8; 32] = rand::random();
        self.faults.write()?;
        tree.insert(b"permit_key", key.to_vec())?;
        self.db.flush()?;
        Ok(key)
    }

    /// Every registered worker (for the restart reload).
    pub fn load_workers(&self) -> Result<Vec<WorkerRow>, StoreError> {
        self.workers
            .iter()
            .map(|row| {
                let (k, v) = row?;
                decode("worker", &k, &v)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::TreatmentSpec;
    use skillshift_common::{Condition, Outcome, Site};

    /// Opens `dir` again; sled's own threads may hold the closed store's lock for a moment.
    fn reopen(dir: &Path) -> Store {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match Store::open(dir) {
                Ok(store) => return store,
                Err(e) if std::time::Instant::now() > deadline => panic!("reopen: {e}"),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    }

    fn meta(id: &str, count: u32) -> (SweepMeta, Vec<Unit>) {
        let mut spec = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
        spec.count = count;
        let units = planner::plan(&spec, &crate::limits::Limits::default()).expect("plan");
        let (contract, config_digest) = planner::contract(&spec);
        let meta =
            SweepMeta { id: id.into(), spec, contract, config_digest, created_ms: 1, cancelled: false, stopped: None };
        (meta, units)
    }

    #[test]
    fn units_round_trip_through_chunks_in_plan_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 31 reps of the full grid: 66,030 units, one more chunk than fits in one.
        let (m, units) = meta("sw-1", 31);
        assert!(units.len() > UNITS_PER_CHUNK);
        {
            let store = Store::open(dir.path()).expect("open");
            store.apply(&[StoreOp::CreateSweep(m, units.clone())]).expect("create");
            store.flush().expect("flush");
        }
        let rows = reopen(dir.path()).load_all().expect("load");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].units, units);
    }

    #[test]
    fn a_sweep_is_created_whole_or_not_at_all() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (m, units) = meta("sw-1", 31);
        {
            let store = Store::open(dir.path()).expect("open");
            // The disk fills after the first chunk: the metadata write never happens.
            store.faults().fail_writes_after(1);
            let e = store.apply(&[StoreOp::CreateSweep(m.clone(), units.clone())]).expect_err("disk full");
            assert!(e.to_string().contains("no space left on device"), "{e}");
            assert!(store.sweep(&"sw-1".into()).expect("read").is_none(), "no metadata without its units");
            assert_eq!(store.unit_chunks.len(), 0, "no units without their metadata");
            let e = store.apply(&[StoreOp::Worker(WorkerRow {
                id: "w-1".into(),
                name: "n".into(),
                secret_sha256: "ab".into(),
                registered_ms: 1,
            })]);
            assert!(matches!(e, Err(StoreError::Broken)), "a broken store writes nothing more: {e:?}");
        }
        let store = reopen(dir.path());
        assert!(store.load_all().expect("load").is_empty());
    }

    #[test]
    fn metadata_stored_without_its_units_is_removed_on_load_unless_something_ran() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (m, _) = meta("sw-half", 1);
        let (other, units) = meta("sw-whole", 1);
        {
            let store = Store::open(dir.path()).expect("open");
            // What an older version left behind on a full disk: the metadata alone.
            store.apply(&[StoreOp::Sweep(m.clone())]).expect("meta");
            store.apply(&[StoreOp::CreateSweep(other, units)]).expect("create");
            store.flush().expect("flush");
        }
        {
            let store = reopen(dir.path());
            let rows = store.load_all().expect("load");
            assert_eq!(rows.iter().map(|r| r.meta.id.as_str()).collect::<Vec<_>>(), ["sw-whole"]);
            assert!(store.sweep(&"sw-half".into()).expect("read").is_none(), "the half-written sweep is gone");
        }
        // The same with an attempt stored: refused as corrupt, nothing removed.
        let store = reopen(dir.path());
        store.apply(&[StoreOp::Sweep(m)]).expect("meta");
        let key = AttemptKey { sweep: "sw-half".into(), unit: 0, attempt: 0 };
        store.apply(&[StoreOp::Attempt(key, AttemptRow { worker: "w-1".into(), started_ms: 1 })]).expect("attempt");
        let e = store.load_all().expect_err("corrupt");
        assert_eq!(e.to_string(), "store: corrupt sweep at key sw-half: 0 units stored, its spec plans 2130");
        assert!(store.sweep(&"sw-half".into()).expect("read").is_some());
    }

    #[test]
    fn units_stored_one_row_each_by_older_stores_still_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (m, units) = meta("sw-old", 1);
        {
            let store = Store::open(dir.path()).expect("open");
            for (i, u) in units.iter().enumerate() {
                store.legacy_units.insert(unit_key(&"sw-old".into(), i as u32), encode(u)).expect("legacy row");
            }
            store.apply(&[StoreOp::Sweep(m)]).expect("meta");
            store.flush().expect("flush");
        }
        let rows = reopen(dir.path()).load_all().expect("load");
        assert_eq!(rows[0].units, units);
    }

    #[test]
    fn a_chunk_with_an_unknown_site_is_corrupt() {
        let mut units = Vec::new();
        let mut bytes = encode_units(&meta("sw", 1).1[..2]);
        bytes[UNIT_BYTES + 2] = 9;
        let e = decode_units(b"sw\0\0\0\0\0", &bytes, &mut units).expect_err("site 9");
        assert!(e.to_string().contains("unit 1: site index 9"), "{e}");
    }

    #[test]
    fn workers_are_kept_and_forgotten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let row =
            |id: &str| WorkerRow { id: id.into(), name: "n".into(), secret_sha256: "ab".into(), registered_ms: 5 };
        {
            let store = Store::open(dir.path()).expect("open");
            store.apply(&[StoreOp::Worker(row("w-1")), StoreOp::Worker(row("w-2"))]).expect("apply");
            store.apply(&[StoreOp::ForgetWorker("w-1".into())]).expect("forget");
            store.flush().expect("flush");
        }
        let store = reopen(dir.path());
        assert_eq!(store.load_workers().expect("load"), vec![row("w-2")]);
    }

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
        let store = reopen(dir.path());
        let keys: Vec<(u32, u32)> = store
            .records(&SweepId::from("s1"))
            .map(|r| r.map(|(k, _)| (k.unit, k.attempt)))
            .collect::<Result<_, _>>()
            .expect("scan");
        assert_eq!(keys, vec![(2, 0), (2, 1), (10, 0), (256, 0)]);
    }
}
