//! The live interface between a running coordinator and the trajectory
//! viewer, so that neither depends on the other:
//!
//! * [`LiveCoordinator`]: what the viewer's live source reads of a running
//!   coordinator (its sweeps as the engine sees them now, the records,
//!   trajectories and screenshots its store holds now), with [`LiveSweep`],
//!   one sweep's row, and [`LiveError`], why it could not answer.
//! * [`PagesHook`]: the pages the coordinator serves on its `--http` port,
//!   built from the trait alone.
//!
//! The coordinator implements the trait over its store and its engine's
//! handle (`skillshift_coordinator::live`) and takes a hook when it starts;
//! the viewer reads through the trait (`skillshift_viewer::live`) and makes
//! the hook. The binary hands one to the other.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

use std::sync::Arc;

use futures::future::BoxFuture;
use skillshift_common::ids::{Condition, SweepId, Uid};
use skillshift_common::record::Record;
use skillshift_common::trajectory::Trajectory;
use skillshift_taskcenter::TaskCenter;

/// One sweep as the engine sees it now.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSweep {
    pub id: SweepId,
    /// `queued`, `running`, `done` or `cancelled`.
    pub state: &'static str,
    /// Queued or running: records may still arrive.
    pub live: bool,
    pub created_ms: u64,
    /// Attempts ended so far.
    pub attempts: u64,
    /// Units done so far.
    pub units_done: u64,
}

/// Why a running coordinator could not answer.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The engine did not answer (it is shutting down); its message.
    #[error("{0}")]
    Engine(String),
    /// The store failed reading `what` (records, trajectory keys, a trajectory, a screenshot).
    #[error("coordinator store: {what}: {source}")]
    Store { what: &'static str, source: Box<dyn std::error::Error + Send + Sync> },
    /// The sweep holds no record of the attempt asked for.
    #[error("no attempt of {uid} in sweep '{}'", clip(.sweep.as_str()))]
    NoAttempt { uid: Uid, sweep: SweepId },
    /// The attempt's trajectory inflates past what the reader asked for.
    #[error(
        "the trajectory of {uid} {condition} is larger than the {} the viewer reads; `sweep export` writes it whole",
        skillshift_common::bounded::bytes(*.limit as u64)
    )]
    TooLarge { uid: Uid, condition: Condition, limit: usize },
}

impl LiveError {
    /// The store failed reading `what`.
    pub fn store(what: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> LiveError {
        LiveError::Store { what, source: Box::new(e) }
    }
}

/// At most 80 characters of `s`, for a message naming something a request sent (as the viewer's own messages clip it).
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

/// What the viewer's live source reads from a running coordinator. The
/// sweeps come from its engine (an [`LiveError::Engine`] when the engine did
/// not answer); the rest are blocking reads of its store, which the source
/// runs on the blocking pool.
pub trait LiveCoordinator: Send + Sync + 'static {
    /// Every sweep, in no particular order.
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<LiveSweep>, LiveError>>;

    /// Whether the engine knows the sweep `id`.
    fn has_sweep<'a>(&'a self, id: &'a SweepId) -> BoxFuture<'a, Result<bool, LiveError>>;

    /// Every record of `sweep` in the order they were written, each with
    /// whether its attempt's trajectory is stored. Blocking.
    fn records(&self, sweep: &SweepId) -> Result<Vec<(Record, bool)>, LiveError>;

    /// The trajectory of the attempt `record` names in `sweep`, `None` when the
    /// attempt kept none; refused ([`LiveError::TooLarge`]) when its JSON is
    /// larger than `limit` bytes. Blocking.
    fn trajectory(&self, sweep: &SweepId, record: &Record, limit: usize) -> Result<Option<Trajectory>, LiveError>;

    /// A screenshot's PNG bytes by its hex digest, `None` when the store has none. Blocking.
    fn screenshot(&self, sha256_hex: &str) -> Result<Option<Vec<u8>>, LiveError>;
}

/// Builds extra pages for a coordinator's `--http` port from the running
/// coordinator (the trajectory viewer over it) once its store and engine
/// exist. They are served behind the port's token check, beside the
/// coordinator's own `/` and `/api/status`. Tasks the pages spawn belong to
/// the given centre, stopped with the server.
pub type PagesHook = Arc<dyn Fn(Arc<dyn LiveCoordinator>, TaskCenter) -> axum::Router + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_attempt_and_the_bound() {
        let long = "s".repeat(100);
        let uid: Uid = "skillshift.gitlab.v1.0".parse().expect("uid");
        let e = LiveError::NoAttempt { uid, sweep: long.into() };
        assert_eq!(e.to_string(), format!("no attempt of skillshift.gitlab.v1.0 in sweep '{}'", "s".repeat(80)));
        let e = LiveError::TooLarge { uid, condition: Condition::Src, limit: 16 << 20 };
        assert_eq!(
            e.to_string(),
            "the trajectory of skillshift.gitlab.v1.0 src is larger than the 16777216 bytes (16 MiB) the viewer reads; \
             `sweep export` writes it whole"
        );
        let e = LiveError::store("records", std::io::Error::other("disk gone"));
        assert_eq!(e.to_string(), "coordinator store: records: disk gone");
    }
}
