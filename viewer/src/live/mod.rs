//! [`LiveSource`]: the viewer over a running coordinator, the page at
//! [`crate::LIVE_PATH`] on its `--http` port.
//!
//! What the source needs of the coordinator is the [`Coordinator`] trait:
//! the sweeps and their states as the engine sees them now, and the records,
//! trajectories and screenshots its store holds now. This module names no
//! part of the coordinator; [`coordinator`] implements the trait over the
//! coordinator's store and engine handle and builds the hook its server
//! takes. A watcher asks for the sweeps' counts once a second and says which
//! sweep changed, for the page's server-sent events.

pub mod coordinator;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use skillshift_common::record::Record;
use skillshift_common::trajectory::{self, Trajectory};
use skillshift_taskcenter::TaskCenter;
use tokio::sync::broadcast;

use crate::export::is_digest;
use crate::source::{Source, SourceError, SweepInfo};

pub use coordinator::hook;

/// How often the watcher asks the engine whether a sweep changed.
const WATCH_PERIOD: Duration = Duration::from_secs(1);
/// Changes kept for a slow page; a page that lags further is told to refresh everything.
const CHANGES_CAPACITY: usize = 64;

/// One sweep as the engine sees it now.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSweep {
    pub id: String,
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

/// What the live source reads from a running coordinator. The sweeps come
/// from its engine (`Err` carries why the engine did not answer: it is
/// shutting down); the rest are blocking reads of its store, which the
/// source runs on the blocking pool.
pub trait Coordinator: Send + Sync + 'static {
    /// Every sweep, in no particular order.
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<LiveSweep>, String>>;

    /// Whether the engine knows the sweep `id`.
    fn has_sweep<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, String>>;

    /// Every record of `sweep` in the order they were written, each with
    /// whether its attempt's trajectory is stored. Blocking.
    fn records(&self, sweep: &str) -> Result<Vec<(Record, bool)>, SourceError>;

    /// The trajectory of the attempt `record` names in `sweep`, `None` when the
    /// attempt kept none; refused when its JSON is larger than `limit` bytes. Blocking.
    fn trajectory(&self, sweep: &str, record: &Record, limit: usize) -> Result<Option<Trajectory>, SourceError>;

    /// A screenshot's PNG bytes by its hex digest, `None` when the store has none. Blocking.
    fn screenshot(&self, sha256_hex: &str) -> Result<Option<Vec<u8>>, SourceError>;
}

pub struct LiveSource {
    coordinator: Arc<dyn Coordinator>,
    changes: broadcast::Sender<String>,
}

pub(crate) fn unavailable(what: &str, e: impl std::fmt::Display) -> SourceError {
    SourceError::Unavailable(format!("coordinator store: {what}: {e}"))
}

/// What the watcher compares: a sweep's state and how many attempts ended.
fn fingerprint(s: &LiveSweep) -> (&'static str, u64, u64) {
    (s.state, s.attempts, s.units_done)
}

/// The name an export gives the attempt's trajectory file (docs/formats.md#viewer),
/// shown by the page; the live source itself finds trajectories by attempt.
fn trajectory_name(r: &Record) -> String {
    let dir = trajectory::DIR;
    format!(
        "{dir}/{}/{}.{}.{}.{}.json",
        trajectory::safe_segment(r.treatment()),
        r.uid,
        r.condition,
        r.rep(),
        r.attempt()
    )
}

impl LiveSource {
    /// A source over `coordinator`, its watcher spawned on `tasks` (it stops with them, or when the engine stops).
    pub fn new(coordinator: Arc<dyn Coordinator>, tasks: &TaskCenter) -> LiveSource {
        let (changes, _) = broadcast::channel(CHANGES_CAPACITY);
        let (c, tx) = (coordinator.clone(), changes.clone());
        tasks.spawn("viewer-watch", move |token| async move {
            let mut last: BTreeMap<String, (&'static str, u64, u64)> = BTreeMap::new();
            let mut tick = tokio::time::interval(WATCH_PERIOD);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = token.cancelled() => break,
                }
                let Ok(sweeps) = c.sweeps().await else { break };
                for s in &sweeps {
                    let now = fingerprint(s);
                    if last.insert(s.id.clone(), now) != Some(now) {
                        // No page listening is not an error.
                        let _ = tx.send(s.id.clone());
                    }
                }
            }
        });
        LiveSource { coordinator, changes }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&dyn Coordinator) -> Result<T, SourceError> + Send + 'static,
    ) -> Result<T, SourceError> {
        let c = self.coordinator.clone();
        skillshift_taskcenter::run_blocking(what, move || f(c.as_ref())).await.map_err(|e| unavailable(what, e))?
    }

    async fn check_sweep(&self, sweep: &str) -> Result<(), SourceError> {
        match self.coordinator.has_sweep(sweep).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(SourceError::NotFound(format!("no sweep '{}' on this coordinator", clip(sweep)))),
            Err(e) => Err(unavailable("asking for the sweep", e)),
        }
    }
}

pub(crate) fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

impl Source for LiveSource {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<SweepInfo>, SourceError>> {
        Box::pin(async move {
            let mut sweeps = self.coordinator.sweeps().await.map_err(|e| unavailable("listing sweeps", e))?;
            sweeps.sort_by_key(|s| s.created_ms);
            Ok(sweeps
                .into_iter()
                .map(|s| SweepInfo { live: s.live, state: Some(s.state.to_string()), id: s.id })
                .collect())
        })
    }

    fn records<'a>(&'a self, sweep: &'a str) -> BoxFuture<'a, Result<Arc<Vec<Record>>, SourceError>> {
        Box::pin(async move {
            self.check_sweep(sweep).await?;
            let id = sweep.to_string();
            self.blocking("reading records", move |c| {
                let out = c
                    .records(&id)?
                    .into_iter()
                    .map(|(mut r, kept)| {
                        if kept {
                            r.trajectory = Some(trajectory_name(&r));
                        }
                        r
                    })
                    .collect();
                Ok(Arc::new(out))
            })
            .await
        })
    }

    fn trajectory<'a>(
        &'a self,
        sweep: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<Option<Trajectory>, SourceError>> {
        Box::pin(async move {
            let (id, wanted) = (sweep.to_string(), record.clone());
            self.blocking("reading a trajectory", move |c| {
                c.trajectory(&id, &wanted, crate::api::MAX_TRAJECTORY_JSON_BYTES)
            })
            .await
        })
    }

    fn screenshot<'a>(&'a self, _sweep: &'a str, sha256_hex: &'a str) -> BoxFuture<'a, Result<Vec<u8>, SourceError>> {
        Box::pin(async move {
            if !is_digest(sha256_hex) {
                return Err(SourceError::NotFound(format!("'{}' is not a screenshot digest", clip(sha256_hex))));
            }
            let digest = sha256_hex.to_string();
            self.blocking("reading a screenshot", move |c| {
                c.screenshot(&digest)?
                    .ok_or_else(|| SourceError::NotFound(format!("no screenshot {digest} in the store")))
            })
            .await
        })
    }

    fn changes(&self) -> Option<broadcast::Receiver<String>> {
        Some(self.changes.subscribe())
    }
}
