//! The coordinator as the viewer's live source reads it
//! ([`skillshift_live::LiveCoordinator`]): [`Live`] answers the sweeps from
//! the engine (through its [`Handle`]) and the records, trajectories and
//! screenshots from the [`Store`]. The server hands one to the pages hook it
//! was started with, so the viewer mounts its pages on the `--http` port
//! without naming any part of the coordinator.

use std::collections::HashSet;

use futures::future::BoxFuture;
use skillshift_common::ids::{AttemptKey, SweepId};
use skillshift_common::record::Record;
use skillshift_common::trajectory::Trajectory;
use skillshift_live::{LiveCoordinator, LiveError, LiveSweep};

use crate::engine::ControlCmd;
use crate::service::Handle;
use crate::status::SweepState;
use crate::store::{Store, TrajectoryError};

/// A running coordinator: its store and its engine's input.
pub struct Live {
    pub store: Store,
    pub handle: Handle,
}

/// Whether two records name the same attempt.
fn same_attempt(a: &Record, b: &Record) -> bool {
    a.uid == b.uid
        && a.condition == b.condition
        && a.treatment() == b.treatment()
        && a.rep() == b.rep()
        && a.attempt() == b.attempt()
}

impl LiveCoordinator for Live {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<LiveSweep>, LiveError>> {
        Box::pin(async move {
            let all =
                self.handle.ask(ControlCmd::List).await.map_err(|e| LiveError::Engine(e.message().to_string()))?;
            Ok(all
                .into_iter()
                .map(|s| LiveSweep {
                    state: s.state.as_str(),
                    live: matches!(s.state, SweepState::Queued | SweepState::Running),
                    created_ms: s.created_ms,
                    attempts: s.attempts.total,
                    units_done: s.units.done,
                    id: s.id,
                })
                .collect())
        })
    }

    fn has_sweep<'a>(&'a self, id: &'a SweepId) -> BoxFuture<'a, Result<bool, LiveError>> {
        Box::pin(async move {
            let id = id.clone();
            let found = self
                .handle
                .ask(|tx| ControlCmd::Get(id, tx))
                .await
                .map_err(|e| LiveError::Engine(e.message().to_string()))?;
            Ok(found.is_some())
        })
    }

    fn records(&self, sweep: &SweepId) -> Result<Vec<(Record, bool)>, LiveError> {
        let kept: HashSet<AttemptKey> = self
            .store
            .trajectory_keys(sweep)
            .map_err(|e| LiveError::store("trajectory keys", e))?
            .into_iter()
            .collect();
        let mut out = Vec::new();
        for row in self.store.records(sweep) {
            let (key, stored) = row.map_err(|e| LiveError::store("records", e))?;
            out.push((stored.record, kept.contains(&key)));
        }
        Ok(out)
    }

    fn trajectory(&self, sweep: &SweepId, wanted: &Record, limit: usize) -> Result<Option<Trajectory>, LiveError> {
        // The store keys attempts by unit index, which a record does not carry: find its row.
        for row in self.store.records(sweep) {
            let (key, stored) = row.map_err(|e| LiveError::store("records", e))?;
            if same_attempt(&stored.record, wanted) {
                return self.store.trajectory(&key, limit).map_err(|e| match e {
                    TrajectoryError::TooLarge { limit } => {
                        LiveError::TooLarge { uid: wanted.uid, condition: wanted.condition, limit }
                    }
                    TrajectoryError::Store(e) => LiveError::store("trajectory", e),
                });
            }
        }
        Err(LiveError::NoAttempt { uid: wanted.uid, sweep: sweep.clone() })
    }

    fn screenshot(&self, sha256_hex: &str) -> Result<Option<Vec<u8>>, LiveError> {
        self.store.screenshot(sha256_hex).map_err(|e| LiveError::store("screenshot", e))
    }
}
