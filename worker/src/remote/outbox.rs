//! The worker's outbox: every record is written here, durably, before it is
//! sent, and removed only when the coordinator acknowledges it. Records
//! survive a coordinator outage and a restart of the worker process, and are
//! re-sent after every reconnection (the coordinator's ingest is idempotent).
//!
//! One file per attempt, written to a temporary name, fsynced and renamed, so
//! a crash leaves either the whole record or nothing.
//!
//! An attempt's trajectory blob lives beside its record (`<name>.traj`: the
//! attempt's key as one JSON line, then the blob), written durably before the
//! record, and acknowledged on its own: it stays after its record's ack until
//! the coordinator holds it too. One the coordinator refuses for good is moved
//! to `quarantine/`, out of the way of the rest.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use skillshift_common::ids::{AttemptKey, SweepId};
use skillshift_common::Record;

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("outbox {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("outbox {path}: unreadable entry: {message}")]
    Corrupt { path: PathBuf, message: String },
}

#[derive(Serialize, Deserialize)]
struct Entry {
    sweep: SweepId,
    unit: u32,
    attempt: u32,
    record: Record,
}

pub struct Outbox {
    dir: PathBuf,
    pending: BTreeMap<AttemptKey, Record>,
    /// Trajectory files not yet acknowledged.
    trajectories: BTreeMap<AttemptKey, PathBuf>,
}

/// The first line of a `.traj` file: whose trajectory it is.
#[derive(Serialize, Deserialize)]
struct TrajectoryHeader {
    sweep: SweepId,
    unit: u32,
    attempt: u32,
}

/// The longest header line read back.
const MAX_HEADER_BYTES: u64 = 4096;
/// The file that keeps the worker's credential.
const IDENTITY: &str = "identity";
/// Where refused trajectories go.
pub const QUARANTINE: &str = "quarantine";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutboxError + '_ {
    move |source| OutboxError::Io { path: path.to_path_buf(), source }
}

fn stem(key: &AttemptKey) -> String {
    let sweep: String =
        key.sweep.as_str().chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("{sweep}.{}.{}", key.unit, key.attempt)
}

fn file_name(key: &AttemptKey) -> String {
    format!("{}.json", stem(key))
}

fn trajectory_name(key: &AttemptKey) -> String {
    format!("{}.traj", stem(key))
}

/// The key in a `.traj` file's first line.
fn read_header(path: &Path) -> Result<AttemptKey, OutboxError> {
    use std::io::{BufRead, Read};
    let f = std::fs::File::open(path).map_err(io(path))?;
    let mut line = String::new();
    std::io::BufReader::new(f.take(MAX_HEADER_BYTES)).read_line(&mut line).map_err(io(path))?;
    let h: TrajectoryHeader = serde_json::from_str(line.trim_end())
        .map_err(|e| OutboxError::Corrupt { path: path.to_path_buf(), message: format!("trajectory header: {e}") })?;
    Ok(AttemptKey { sweep: h.sweep, unit: h.unit, attempt: h.attempt })
}

/// The blob of a `.traj` file (after its header line). Blocking.
pub fn read_trajectory(path: &Path) -> Result<Vec<u8>, OutboxError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let start = bytes.iter().position(|b| *b == b'\n').map(|i| i + 1).ok_or_else(|| OutboxError::Corrupt {
        path: path.to_path_buf(),
        message: "trajectory file without a header line".into(),
    })?;
    Ok(bytes[start..].to_vec())
}

impl Outbox {
    /// Opens (creating) the outbox and loads what a previous run left in it.
    pub fn open(dir: &Path) -> Result<Outbox, OutboxError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut pending = BTreeMap::new();
        let mut trajectories = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
            if path.extension().and_then(|e| e.to_str()) == Some("traj") {
                trajectories.insert(read_header(&path)?, path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                // A temporary file from a crash mid-write: the record was never sent.
                if path.extension().and_then(|e| e.to_str()) == Some("tmp") {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            let text = std::fs::read(&path).map_err(io(&path))?;
            let e: Entry = serde_json::from_slice(&text)
                .map_err(|e| OutboxError::Corrupt { path: path.clone(), message: e.to_string() })?;
            pending.insert(AttemptKey { sweep: e.sweep, unit: e.unit, attempt: e.attempt }, e.record);
        }
        Ok(Outbox { dir: dir.to_path_buf(), pending, trajectories })
    }

    /// Stores a record durably (fsync) before it may be sent.
    pub fn put(&mut self, key: AttemptKey, record: Record) -> Result<(), OutboxError> {
        write_entry(&self.dir, &key, &record, None)?;
        self.insert(key, record);
        Ok(())
    }

    /// Records a trajectory file already written with [`write_entry`].
    pub fn insert_trajectory(&mut self, key: AttemptKey) {
        let path = self.dir.join(trajectory_name(&key));
        self.trajectories.insert(key, path);
    }

    /// The trajectories waiting for their acknowledgement, in key order.
    pub fn pending_trajectories(&self) -> impl Iterator<Item = (&AttemptKey, &PathBuf)> {
        self.trajectories.iter()
    }

    /// The trajectory file of `key`, if it waits.
    pub fn trajectory_path(&self, key: &AttemptKey) -> Option<&PathBuf> {
        self.trajectories.get(key)
    }

    /// The coordinator holds the trajectory: forget it.
    pub fn remove_trajectory(&mut self, key: &AttemptKey) -> Result<bool, OutboxError> {
        let Some(path) = self.trajectories.remove(key) else { return Ok(false) };
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(OutboxError::Io { path, source: e }),
        }
    }

    /// The coordinator refused the trajectory for good: move it to `quarantine/`, keep the rest.
    pub fn quarantine_trajectory(&mut self, key: &AttemptKey) -> Result<Option<PathBuf>, OutboxError> {
        let Some(path) = self.trajectories.remove(key) else { return Ok(None) };
        let dir = self.dir.join(QUARANTINE);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let to = dir.join(trajectory_name(key));
        match std::fs::rename(&path, &to) {
            Ok(()) => Ok(Some(to)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(OutboxError::Io { path, source: e }),
        }
    }

    /// The credential a previous run of this worker kept here.
    pub fn identity(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join(IDENTITY)).ok()?;
        Some(text.trim().to_string()).filter(|t| !t.is_empty() && t.len() <= 1024)
    }

    /// Keeps the worker's credential, durably, for its next run on this outbox.
    pub fn keep_identity(&self, credential: &str) -> Result<(), OutboxError> {
        write_durably(&self.dir.join(IDENTITY), credential.as_bytes())
    }

    pub fn trajectories_len(&self) -> usize {
        self.trajectories.len()
    }

    /// Records an entry already written with [`write_entry`].
    pub fn insert(&mut self, key: AttemptKey, record: Record) {
        self.pending.insert(key, record);
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The coordinator holds the record durably: forget it.
    pub fn remove(&mut self, key: &AttemptKey) -> Result<bool, OutboxError> {
        if self.pending.remove(key).is_none() {
            return Ok(false);
        }
        let path = self.dir.join(file_name(key));
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(OutboxError::Io { path, source: e }),
        }
    }

    pub fn pending(&self) -> impl Iterator<Item = (&AttemptKey, &Record)> {
        self.pending.iter()
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// No record and no trajectory waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.trajectories.is_empty()
    }
}

/// Writes one entry durably (temporary file, fsync, rename, fsync of the
/// folder), its trajectory blob first when it has one. Blocking: call it off the async threads.
pub fn write_entry(
    dir: &Path,
    key: &AttemptKey,
    record: &Record,
    trajectory: Option<&[u8]>,
) -> Result<(), OutboxError> {
    if let Some(blob) = trajectory {
        let path = dir.join(trajectory_name(key));
        let header = TrajectoryHeader { sweep: key.sweep.clone(), unit: key.unit, attempt: key.attempt };
        let mut bytes = serde_json::to_vec(&header)
            .map_err(|e| OutboxError::Corrupt { path: path.clone(), message: e.to_string() })?;
        bytes.push(b'\n');
        bytes.extend_from_slice(blob);
        write_durably(&path, &bytes)?;
    }
    let path = dir.join(file_name(key));
    let entry = Entry { sweep: key.sweep.clone(), unit: key.unit, attempt: key.attempt, record: record.clone() };
    let bytes =
        serde_json::to_vec(&entry).map_err(|e| OutboxError::Corrupt { path: path.clone(), message: e.to_string() })?;
    write_durably(&path, &bytes)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), OutboxError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::{Condition, Uid};

    #[test]
    fn records_survive_reopen_until_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = AttemptKey { sweep: "sw-1".into(), unit: 4, attempt: 1 };
        let uid: Uid = "skillshift.magento.v1.3".parse().expect("uid");
        {
            let mut o = Outbox::open(dir.path()).expect("open");
            o.put(key.clone(), Record::new(uid, Condition::Src)).expect("put");
            std::fs::write(dir.path().join("half.tmp"), b"{").expect("tmp");
        }
        let mut o = Outbox::open(dir.path()).expect("reopen");
        assert_eq!(o.len(), 1);
        assert_eq!(o.pending().next().map(|(k, r)| (k.clone(), r.uid)), Some((key.clone(), uid)));
        assert!(!dir.path().join("half.tmp").exists(), "torn writes are discarded");
        assert!(o.remove(&key).expect("remove"));
        assert!(Outbox::open(dir.path()).expect("reopen").is_empty());
    }

    #[test]
    fn a_trajectory_outlives_its_records_ack_until_its_own_and_a_refused_one_is_quarantined() {
        let dir = tempfile::tempdir().expect("tempdir");
        let uid: Uid = "skillshift.magento.v1.3".parse().expect("uid");
        let (k1, k2) = (
            AttemptKey { sweep: "sw/1".into(), unit: 4, attempt: 0 },
            AttemptKey { sweep: "sw/1".into(), unit: 5, attempt: 0 },
        );
        for k in [&k1, &k2] {
            write_entry(dir.path(), k, &Record::new(uid, Condition::Src), Some(b"blob\nbytes")).expect("write");
        }
        let mut o = Outbox::open(dir.path()).expect("open");
        assert_eq!((o.len(), o.trajectories_len()), (2, 2));
        o.remove(&k1).expect("ack the record");
        let mut o = Outbox::open(dir.path()).expect("reopen");
        assert_eq!((o.len(), o.trajectories_len()), (1, 2), "the trajectory waits for its own ack");
        let path = o.trajectory_path(&k1).expect("path").clone();
        assert_eq!(read_trajectory(&path).expect("read"), b"blob\nbytes");
        assert!(o.remove_trajectory(&k1).expect("ack"));
        let moved = o.quarantine_trajectory(&k2).expect("quarantine").expect("moved");
        assert!(moved.starts_with(dir.path().join(QUARANTINE)) && moved.exists());
        o.remove(&k2).expect("ack");
        assert!(Outbox::open(dir.path()).expect("reopen").is_empty(), "the quarantine is not re-sent");
    }
}
