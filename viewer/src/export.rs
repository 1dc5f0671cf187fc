//! [`ExportSource`]: the viewer over an export directory, as `sweep export`
//! and `local --out` write it (docs/formats.md#trajectories): `per_task.jsonl`,
//! `contract.json` and `trajectories/` side by side.
//!
//! The records are read and validated once, at [`ExportSource::open`], with
//! the analysis' own reader, so the viewer shows exactly what `report` counts
//! and refuses what `report` refuses. Trajectories and screenshots are read
//! on demand, each within a stated size bound, and only from inside the
//! directory: a record's `trajectory` must be a relative path under
//! `trajectories/`, and a screenshot is named by its 64-digit digest alone.
//! Both are resolved (symbolic links followed) before they are read, and a
//! file that resolves outside the directory is answered as missing (`404`):
//! a link to `/etc/passwd` is never served.

use std::io::BufReader;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use skillshift_common::bounded::{self, Line};
use skillshift_common::record::Record;
use skillshift_common::trajectory::{self, Trajectory};

use crate::source::{Source, SourceError, SweepInfo};

/// The records file of an export.
pub const RECORDS: &str = "per_task.jsonl";
/// The largest trajectory file read: 32 MiB, twice the coordinator's bound on a trajectory's JSON
/// ([`crate::api::MAX_TRAJECTORY_JSON_BYTES`]), since an export writes it pretty-printed.
pub const MAX_TRAJECTORY_BYTES: u64 = 2 * crate::api::MAX_TRAJECTORY_JSON_BYTES as u64;
/// The largest screenshot served: 32 MiB.
pub const MAX_SCREENSHOT_BYTES: u64 = 32 << 20;

/// Why an export directory cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{path}: not a directory holding {RECORDS} (an export of `sweep export` or `local --out`)")]
    NotAnExport { path: PathBuf },
    #[error(transparent)]
    Records(#[from] skillshift_analysis::records::RecordsError),
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Line { path: PathBuf, line: u64, message: String },
}

/// One export directory, shown as one sweep.
pub struct ExportSource {
    dir: PathBuf,
    /// `dir` resolved: every file read must resolve under it.
    root: PathBuf,
    sweep: String,
    records: Arc<Vec<Record>>,
}

impl ExportSource {
    /// Opens `path`: an export directory, or the `per_task.jsonl` inside one.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        let (dir, file) = if path.is_dir() {
            (path.to_path_buf(), path.join(RECORDS))
        } else {
            let dir = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            (dir, path.to_path_buf())
        };
        if !file.is_file() {
            return Err(OpenError::NotAnExport { path: path.to_path_buf() });
        }
        // The analysis' validation first: a file `report` refuses is refused here, with its line.
        skillshift_analysis::records::read_file(&file)?;
        let records = read_records(&file)?;
        let mut ids: Vec<&str> = records.iter().filter_map(|r| r.sweep.as_deref()).collect();
        ids.sort_unstable();
        ids.dedup();
        let sweep = match ids.as_slice() {
            [one] => one.to_string(),
            _ => dir
                .canonicalize()
                .ok()
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "export".to_string()),
        };
        let root = dir.canonicalize().map_err(|source| OpenError::Io { path: dir.clone(), source })?;
        Ok(ExportSource { dir, root, sweep, records: Arc::new(records) })
    }

    /// The sweep id the export is shown under.
    pub fn sweep_id(&self) -> &str {
        &self.sweep
    }

    fn check_sweep(&self, sweep: &str) -> Result<(), SourceError> {
        if sweep == self.sweep {
            Ok(())
        } else {
            Err(SourceError::NotFound(format!("no sweep '{}' in this export (it holds '{}')", clip(sweep), self.sweep)))
        }
    }
}

fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    skillshift_common::text::clip(s, skillshift_common::text::CLIP_CHARS)
}

/// Every line of a records file as a [`Record`], each line within the analysis' bound.
fn read_records(file: &Path) -> Result<Vec<Record>, OpenError> {
    let io = |source| OpenError::Io { path: file.to_path_buf(), source };
    let mut reader = BufReader::new(std::fs::File::open(file).map_err(io)?);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut line = 0u64;
    loop {
        line += 1;
        match bounded::read_line(&mut reader, &mut buf, skillshift_analysis::records::MAX_LINE_BYTES).map_err(io)? {
            Line::End => break,
            Line::TooLong => {
                return Err(OpenError::Line { path: file.to_path_buf(), line, message: "line too long".into() })
            }
            Line::Read => {}
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let r: Record = serde_json::from_slice(&buf).map_err(|e| OpenError::Line {
            path: file.to_path_buf(),
            line,
            message: skillshift_common::text::json_error(&e),
        })?;
        out.push(r);
    }
    Ok(out)
}

/// `rel` as a path inside `trajectories/`, or why not.
pub fn trajectory_path(dir: &Path, rel: &str) -> Result<PathBuf, SourceError> {
    let p = Path::new(rel);
    let mut parts = p.components();
    let inside = matches!(parts.next(), Some(Component::Normal(first)) if first == trajectory::DIR)
        && parts.all(|c| matches!(c, Component::Normal(_)))
        && rel.ends_with(".json");
    if !inside {
        return Err(SourceError::Invalid(format!(
            "trajectory '{}' is not a relative .json path under {}/",
            clip(rel),
            trajectory::DIR
        )));
    }
    Ok(dir.join(p))
}

/// Whether `s` is a lowercase hex SHA-256.
pub fn is_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `path` resolved, when it exists and resolves under `root`; otherwise not found
/// (a link out of the export is never followed, and says no more than a missing file).
pub fn inside(root: &Path, path: &Path) -> Result<PathBuf, SourceError> {
    let missing = || SourceError::NotFound(format!("{}: no such file in the export", path.display()));
    let real = path.canonicalize().map_err(|_| missing())?;
    if real.starts_with(root) {
        Ok(real)
    } else {
        Err(missing())
    }
}

fn read_trajectory(root: &Path, path: &Path, record: &Record) -> Result<Trajectory, SourceError> {
    let shown = path.display();
    let real = inside(root, path)?;
    let text = bounded::read_to_string(&real, MAX_TRAJECTORY_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            SourceError::NotFound(format!("{shown}: the record names it but it is missing"))
        }
        _ => SourceError::Unavailable(format!("cannot read {shown}: {e}")),
    })?;
    let t: Trajectory = serde_json::from_str(&text).map_err(|e| {
        SourceError::Invalid(format!("{shown}: not a trajectory: {}", skillshift_common::text::json_error(&e)))
    })?;
    let k = &t.key;
    let same = k.uid == record.uid
        && k.condition == record.condition
        && k.treatment == record.treatment()
        && k.rep == record.rep()
        && k.attempt == record.attempt();
    if !same {
        return Err(SourceError::Invalid(format!(
            "{shown}: belongs to {} {} rep {} attempt {} of '{}', not to the record that names it",
            k.uid,
            k.condition,
            k.rep,
            k.attempt,
            clip(&k.treatment)
        )));
    }
    Ok(t)
}

impl Source for ExportSource {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<SweepInfo>, SourceError>> {
        Box::pin(async move { Ok(vec![SweepInfo { id: self.sweep.clone(), live: false, state: None }]) })
    }

    fn records<'a>(&'a self, sweep: &'a str) -> BoxFuture<'a, Result<Arc<Vec<Record>>, SourceError>> {
        Box::pin(async move {
            self.check_sweep(sweep)?;
            Ok(Arc::clone(&self.records))
        })
    }

    fn trajectory<'a>(
        &'a self,
        sweep: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<Option<Trajectory>, SourceError>> {
        Box::pin(async move {
            self.check_sweep(sweep)?;
            let Some(rel) = record.trajectory.as_deref() else { return Ok(None) };
            let path = trajectory_path(&self.dir, rel)?;
            let (record, root) = (record.clone(), self.root.clone());
            skillshift_taskcenter::run_blocking("read trajectory", move || {
                read_trajectory(&root, &path, &record).map(Some)
            })
            .await
            .map_err(|e| SourceError::Unavailable(format!("reading a trajectory: {e}")))?
        })
    }

    fn screenshot<'a>(&'a self, sweep: &'a str, sha256_hex: &'a str) -> BoxFuture<'a, Result<Vec<u8>, SourceError>> {
        Box::pin(async move {
            self.check_sweep(sweep)?;
            if !is_digest(sha256_hex) {
                return Err(SourceError::NotFound(format!("'{}' is not a screenshot digest", clip(sha256_hex))));
            }
            let path = self.dir.join(trajectory::DIR).join(trajectory::screenshot_name(sha256_hex));
            let root = self.root.clone();
            skillshift_taskcenter::run_blocking("read screenshot", move || read_png(&root, &path))
                .await
                .map_err(|e| SourceError::Unavailable(format!("reading a screenshot: {e}")))?
        })
    }
}

fn read_png(root: &Path, path: &Path) -> Result<Vec<u8>, SourceError> {
    let shown = path.display();
    let real = inside(root, path).map_err(|_| SourceError::NotFound(format!("no screenshot {shown}")))?;
    let meta = std::fs::metadata(&real).map_err(|_| SourceError::NotFound(format!("no screenshot {shown}")))?;
    if meta.len() > MAX_SCREENSHOT_BYTES {
        return Err(SourceError::Invalid(format!(
            "{shown} is {}, more than the {} a screenshot may be",
            bounded::bytes(meta.len()),
            bounded::bytes(MAX_SCREENSHOT_BYTES)
        )));
    }
    if !meta.is_file() {
        return Err(SourceError::NotFound(format!("no screenshot {shown}")));
    }
    std::fs::read(&real).map_err(|e| SourceError::Unavailable(format!("cannot read {shown}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trajectory_path_must_stay_under_trajectories() {
        let d = Path::new("/x");
        assert_eq!(
            trajectory_path(d, "trajectories/ASI/a.json").ok(),
            Some(PathBuf::from("/x/trajectories/ASI/a.json"))
        );
        for bad in [
            "../etc/passwd.json",
            "/abs/trajectories/a.json",
            "trajectories/../a.json",
            "other/a.json",
            "trajectories/a.png",
        ] {
            assert!(matches!(trajectory_path(d, bad), Err(SourceError::Invalid(_))), "{bad}");
        }
    }

    #[test]
    fn a_screenshot_is_named_by_its_digest_alone() {
        assert!(is_digest(&"a".repeat(64)));
        assert!(!is_digest(&"A".repeat(64)));
        assert!(!is_digest("../../etc/passwd"));
        assert!(!is_digest(&"a".repeat(63)));
    }
}
