//! The [`Coordinator`] trait over a running coordinator: its store for
//! records, trajectories and screenshots, its engine handle for the sweeps.
//! The one module of the viewer that names the coordinator's parts, and the
//! [`hook`] its server takes to mount the viewer on its `--http` port.
//!
//! It lives here, not in the coordinator, because the viewer still depends
//! on the coordinator crate (for the bounded HTTP server and the token
//! check): the coordinator implementing a trait of the viewer would be a
//! dependency circle until those move to a crate of their own.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use skillshift_common::ids::AttemptKey;
use skillshift_common::record::Record;
use skillshift_common::trajectory::Trajectory;
use skillshift_coordinator::engine::ControlCmd;
use skillshift_coordinator::server::PagesHook;
use skillshift_coordinator::service::Handle;
use skillshift_coordinator::status::SweepState;
use skillshift_coordinator::store::{Store, TrajectoryError};

use super::{clip, unavailable, Coordinator, LiveSource, LiveSweep};
use crate::source::SourceError;

/// A running coordinator: its store and its engine's input.
pub struct Running {
    pub store: Store,
    pub handle: Handle,
}

/// The hook a coordinator takes ([`skillshift_coordinator::server::start_with_pages`])
/// to serve the viewer over its live store.
pub fn hook() -> PagesHook {
    Arc::new(|store, handle, tasks| {
        let running: Arc<dyn Coordinator> = Arc::new(Running { store, handle });
        crate::pages_at(crate::LIVE_PATH, Arc::new(LiveSource::new(running, &tasks)))
    })
}

/// Whether two records name the same attempt.
fn same_attempt(a: &Record, b: &Record) -> bool {
    a.uid == b.uid
        && a.condition == b.condition
        && a.treatment() == b.treatment()
        && a.rep() == b.rep()
        && a.attempt() == b.attempt()
}

impl Coordinator for Running {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<LiveSweep>, String>> {
        Box::pin(async move {
            let all = self.handle.ask(ControlCmd::List).await.map_err(|e| e.message().to_string())?;
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

    fn has_sweep<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let id = id.to_string();
            let found = self.handle.ask(|tx| ControlCmd::Get(id, tx)).await.map_err(|e| e.message().to_string())?;
            Ok(found.is_some())
        })
    }

    fn records(&self, sweep: &str) -> Result<Vec<(Record, bool)>, SourceError> {
        let kept: HashSet<AttemptKey> =
            self.store.trajectory_keys(sweep).map_err(|e| unavailable("trajectory keys", e))?.into_iter().collect();
        let mut out = Vec::new();
        for row in self.store.records(sweep) {
            let (key, stored) = row.map_err(|e| unavailable("records", e))?;
            out.push((stored.record, kept.contains(&key)));
        }
        Ok(out)
    }

    fn trajectory(&self, sweep: &str, wanted: &Record, limit: usize) -> Result<Option<Trajectory>, SourceError> {
        // The store keys attempts by unit index, which a record does not carry: find its row.
        for row in self.store.records(sweep) {
            let (key, stored) = row.map_err(|e| unavailable("records", e))?;
            if same_attempt(&stored.record, wanted) {
                return self.store.trajectory(&key, limit).map_err(|e| match e {
                    TrajectoryError::TooLarge { limit } => SourceError::Invalid(format!(
                        "the trajectory of {} {} is larger than the {} the viewer reads; \
                         `sweep export` writes it whole",
                        wanted.uid,
                        wanted.condition,
                        skillshift_common::bounded::bytes(limit as u64)
                    )),
                    TrajectoryError::Store(e) => unavailable("trajectory", e),
                });
            }
        }
        Err(SourceError::NotFound(format!("no attempt of {} in sweep '{}'", wanted.uid, clip(sweep))))
    }

    fn screenshot(&self, sha256_hex: &str) -> Result<Option<Vec<u8>>, SourceError> {
        self.store.screenshot(sha256_hex).map_err(|e| unavailable("screenshot", e))
    }
}
