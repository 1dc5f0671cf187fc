//! The worker's outbox: every record is written here, durably, before it is
//! sent, and removed only when the coordinator acknowledges it. Records
//! survive a coordinator outage and a restart of the worker process, and are
//! re-sent after every reconnection (the coordinator's ingest is idempotent).
//!
//! One file per attempt, written to a temporary name, fsynced and renamed, so
//! a crash leaves either the whole record or nothing.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use skillshift_common::Record;
use skillshift_proto::convert::AttemptKey;

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("outbox {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("outbox {path}: unreadable entry: {message}")]
    Corrupt { path: PathBuf, message: String },
}

#[derive(Serialize, Deserialize)]
struct Entry {
    sweep: String,
    unit: u32,
    attempt: u32,
    record: Record,
}

pub struct Outbox {
    dir: PathBuf,
    pending: BTreeMap<AttemptKey, Record>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutboxError + '_ {
    move |source| OutboxError::Io { path: path.to_path_buf(), source }
}

fn file_name(key: &AttemptKey) -> String {
    let sweep: String =
        key.sweep.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("{sweep}.{}.{}.json", key.unit, key.attempt)
}

impl Outbox {
    /// Opens (creating) the outbox and loads what a previous run left in it.
    pub fn open(dir: &Path) -> Result<Outbox, OutboxError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut pending = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
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
        Ok(Outbox { dir: dir.to_path_buf(), pending })
    }

    /// Stores a record durably (fsync) before it may be sent.
    pub fn put(&mut self, key: AttemptKey, record: Record) -> Result<(), OutboxError> {
        write_entry(&self.dir, &key, &record)?;
        self.insert(key, record);
        Ok(())
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

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Writes one entry durably (temporary file, fsync, rename, fsync of the
/// folder). Blocking: call it off the async threads.
pub fn write_entry(dir: &Path, key: &AttemptKey, record: &Record) -> Result<(), OutboxError> {
    let path = dir.join(file_name(key));
    let tmp = path.with_extension("tmp");
    let entry = Entry { sweep: key.sweep.clone(), unit: key.unit, attempt: key.attempt, record: record.clone() };
    let bytes =
        serde_json::to_vec(&entry).map_err(|e| OutboxError::Corrupt { path: path.clone(), message: e.to_string() })?;
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(&bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
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
}
