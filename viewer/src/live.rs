//! [`LiveSource`]: the viewer over a running coordinator, the page at
//! [`crate::LIVE_PATH`] on its `--http` port.
//!
//! What the source needs of the coordinator is the [`LiveCoordinator`] trait
//! (the `skillshift_live` crate, which the coordinator implements): the
//! sweeps and their states as the engine sees them now, and the records,
//! trajectories and screenshots its store holds now. The viewer names no
//! part of the coordinator; [`hook`] builds its pages from the trait alone,
//! for the coordinator's server to mount. A watcher asks for the sweeps'
//! counts once a second and says which sweep changed, for the page's
//! server-sent events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use skillshift_common::ids::SweepId;
use skillshift_common::record::Record;
use skillshift_common::trajectory::{self, Trajectory};
use skillshift_taskcenter::TaskCenter;
use tokio::sync::broadcast;

use crate::export::is_digest;
use crate::source::{Source, SourceError, SweepInfo};

use skillshift_live::{LiveCoordinator, LiveError, LiveSweep, PagesHook};

/// How often the watcher asks the engine whether a sweep changed.
const WATCH_PERIOD: Duration = Duration::from_secs(1);
/// Changes kept for a slow page; a page that lags further is told to refresh everything.
const CHANGES_CAPACITY: usize = 64;

/// The hook a coordinator takes (`skillshift_coordinator::server::start_with_pages`)
/// to serve the viewer over its live store at [`crate::LIVE_PATH`].
pub fn hook() -> PagesHook {
    Arc::new(|coordinator, tasks| crate::pages_at(crate::LIVE_PATH, Arc::new(LiveSource::new(coordinator, &tasks))))
}

pub struct LiveSource {
    coordinator: Arc<dyn LiveCoordinator>,
    changes: broadcast::Sender<String>,
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> SourceError {
    SourceError::Unavailable(format!("coordinator store: {what}: {e}"))
}

impl From<LiveError> for SourceError {
    fn from(e: LiveError) -> SourceError {
        match e {
            LiveError::NoAttempt { .. } => SourceError::NotFound(e.to_string()),
            LiveError::TooLarge { .. } => SourceError::Invalid(e.to_string()),
            LiveError::Engine(_) | LiveError::Store { .. } => SourceError::Unavailable(e.to_string()),
        }
    }
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
    pub fn new(coordinator: Arc<dyn LiveCoordinator>, tasks: &TaskCenter) -> LiveSource {
        let (changes, _) = broadcast::channel(CHANGES_CAPACITY);
        let (c, tx) = (coordinator.clone(), changes.clone());
        tasks.spawn("viewer-watch", move |token| async move {
            let mut last: BTreeMap<SweepId, (&'static str, u64, u64)> = BTreeMap::new();
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
                        let _ = tx.send(s.id.to_string());
                    }
                }
            }
        });
        LiveSource { coordinator, changes }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&dyn LiveCoordinator) -> Result<T, SourceError> + Send + 'static,
    ) -> Result<T, SourceError> {
        let c = self.coordinator.clone();
        skillshift_taskcenter::run_blocking(what, move || f(c.as_ref())).await.map_err(|e| unavailable(what, e))?
    }

    async fn check_sweep(&self, sweep: &SweepId) -> Result<(), SourceError> {
        match self.coordinator.has_sweep(sweep).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(SourceError::NotFound(format!("no sweep '{}' on this coordinator", clip(sweep.as_str())))),
            Err(e) => Err(unavailable("asking for the sweep", e)),
        }
    }
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

impl Source for LiveSource {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<SweepInfo>, SourceError>> {
        Box::pin(async move {
            let mut sweeps = self.coordinator.sweeps().await.map_err(|e| unavailable("listing sweeps", e))?;
            sweeps.sort_by_key(|s| s.created_ms);
            Ok(sweeps
                .into_iter()
                .map(|s| SweepInfo { live: s.live, state: Some(s.state.to_string()), id: s.id.into_string() })
                .collect())
        })
    }

    fn records<'a>(&'a self, sweep: &'a str) -> BoxFuture<'a, Result<Arc<Vec<Record>>, SourceError>> {
        Box::pin(async move {
            let id = SweepId::from(sweep);
            self.check_sweep(&id).await?;
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
            let (id, wanted) = (SweepId::from(sweep), record.clone());
            self.blocking("reading a trajectory", move |c| {
                Ok(c.trajectory(&id, &wanted, crate::api::MAX_TRAJECTORY_JSON_BYTES)?)
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
