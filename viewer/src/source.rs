//! Where the viewer's data comes from: the [`Source`] trait.
//!
//! Two implementations exist: `ExportSource` (the export module) over an
//! export directory (`per_task.jsonl`, `contract.json`, `trajectories/`), and
//! `LiveSource` (the live module) over a running coordinator, which mounts the
//! pages on its `--http` port with the live source behind them. This module
//! names neither: they build on it. A live source also says when a sweep
//! changed ([`Source::changes`]); the viewer turns that into server-sent
//! events so an open grid refreshes its numbers without polling.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use skillshift_common::record::Record;
use skillshift_common::trajectory::Trajectory;
use tokio::sync::broadcast;

/// One sweep the source holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepInfo {
    pub id: String,
    /// Still running (a live source); an export is never live.
    pub live: bool,
    /// `queued`, `running`, `done`, `cancelled`, or `None` when not known (an export).
    pub state: Option<String>,
}

/// Why a source could not answer.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// No such sweep, trajectory or screenshot.
    #[error("{0}")]
    NotFound(String),
    /// The data exists but is unusable (a malformed trajectory file, a path leaving the export).
    #[error("{0}")]
    Invalid(String),
    /// The source itself failed (I/O, the coordinator shutting down).
    #[error("{0}")]
    Unavailable(String),
}

/// What the viewer reads. Every method is cheap to call again: the viewer
/// keeps no cache of its own, so a live source is always shown as it is now.
pub trait Source: Send + Sync + 'static {
    /// The sweeps, newest last.
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<SweepInfo>, SourceError>>;

    /// Every record (every attempt) of one sweep, in the order they were written
    /// (shared: an export hands out the same list to every request).
    fn records<'a>(&'a self, sweep: &'a str) -> BoxFuture<'a, Result<Arc<Vec<Record>>, SourceError>>;

    /// The trajectory of the attempt `record`, `None` when the attempt kept none.
    fn trajectory<'a>(
        &'a self,
        sweep: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<Option<Trajectory>, SourceError>>;

    /// A screenshot's PNG bytes by the hex SHA-256 of its content.
    fn screenshot<'a>(&'a self, sweep: &'a str, sha256_hex: &'a str) -> BoxFuture<'a, Result<Vec<u8>, SourceError>>;

    /// The ids of sweeps as they change (a record or a trajectory arrived),
    /// for a live source; `None` for a source that never changes.
    fn changes(&self) -> Option<broadcast::Receiver<String>> {
        None
    }
}
