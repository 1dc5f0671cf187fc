//! [`LiveSource`]: the viewer over a running coordinator's store, mounted on
//! its `--http` port ([`hook`]), the page at [`crate::LIVE_PATH`]. Records and trajectories are read from the
//! store as they are now; the sweeps and their states come from the engine.
//! A watcher asks the engine for the sweeps' counts once a second and says
//! which sweep changed, for the page's server-sent events.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use skillshift_common::record::Record;
use skillshift_common::trajectory::{self, Trajectory};
use skillshift_coordinator::engine::ControlCmd;
use skillshift_coordinator::server::PagesHook;
use skillshift_coordinator::service::Handle;
use skillshift_coordinator::status::{SweepState, SweepStatus};
use skillshift_coordinator::store::{Store, TrajectoryError};
use skillshift_proto::convert::AttemptKey;
use skillshift_tasks::TaskCenter;
use tokio::sync::broadcast;

use crate::export::is_digest;
use crate::source::{Source, SourceError, SweepInfo};

/// How often the watcher asks the engine whether a sweep changed.
const WATCH_PERIOD: Duration = Duration::from_secs(1);
/// Changes kept for a slow page; a page that lags further is told to refresh everything.
const CHANGES_CAPACITY: usize = 64;

pub struct LiveSource {
    store: Store,
    handle: Handle,
    changes: broadcast::Sender<String>,
}

/// The hook a coordinator takes ([`skillshift_coordinator::server::start_with_pages`])
/// to serve the viewer over its live store.
pub fn hook() -> PagesHook {
    Arc::new(|store, handle, tasks| crate::pages_at(crate::LIVE_PATH, Arc::new(LiveSource::new(store, handle, &tasks))))
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> SourceError {
    SourceError::Unavailable(format!("coordinator store: {what}: {e}"))
}

/// What the watcher compares: a sweep's state and how many attempts ended.
fn fingerprint(s: &SweepStatus) -> (&'static str, u64, u64) {
    (s.state.as_str(), s.attempts.total, s.units.done)
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

/// Whether two records name the same attempt.
fn same_attempt(a: &Record, b: &Record) -> bool {
    a.uid == b.uid
        && a.condition == b.condition
        && a.treatment() == b.treatment()
        && a.rep() == b.rep()
        && a.attempt() == b.attempt()
}

impl LiveSource {
    /// A source over `store`, its watcher spawned on `tasks` (it stops with them, or when the engine stops).
    pub fn new(store: Store, handle: Handle, tasks: &TaskCenter) -> LiveSource {
        let (changes, _) = broadcast::channel(CHANGES_CAPACITY);
        let (h, tx) = (handle.clone(), changes.clone());
        tasks.spawn("viewer-watch", move |token| async move {
            let mut last: BTreeMap<String, (&'static str, u64, u64)> = BTreeMap::new();
            let mut tick = tokio::time::interval(WATCH_PERIOD);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = token.cancelled() => break,
                }
                let Ok(sweeps) = h.ask(ControlCmd::List).await else { break };
                for s in &sweeps {
                    let now = fingerprint(s);
                    if last.insert(s.id.clone(), now) != Some(now) {
                        // No page listening is not an error.
                        let _ = tx.send(s.id.clone());
                    }
                }
            }
        });
        LiveSource { store, handle, changes }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(Store) -> Result<T, SourceError> + Send + 'static,
    ) -> Result<T, SourceError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(store)).await.map_err(|e| unavailable(what, e))?
    }

    async fn check_sweep(&self, sweep: &str) -> Result<(), SourceError> {
        let id = sweep.to_string();
        match self.handle.ask(|tx| ControlCmd::Get(id, tx)).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(SourceError::NotFound(format!("no sweep '{}' on this coordinator", clip(sweep)))),
            Err(e) => Err(unavailable("asking for the sweep", e.message())),
        }
    }
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

impl Source for LiveSource {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<SweepInfo>, SourceError>> {
        Box::pin(async move {
            let mut sweeps =
                self.handle.ask(ControlCmd::List).await.map_err(|e| unavailable("listing sweeps", e.message()))?;
            sweeps.sort_by_key(|s| s.created_ms);
            Ok(sweeps
                .into_iter()
                .map(|s| SweepInfo {
                    live: matches!(s.state, SweepState::Queued | SweepState::Running),
                    state: Some(s.state.as_str().to_string()),
                    id: s.id,
                })
                .collect())
        })
    }

    fn records<'a>(&'a self, sweep: &'a str) -> BoxFuture<'a, Result<Arc<Vec<Record>>, SourceError>> {
        Box::pin(async move {
            self.check_sweep(sweep).await?;
            let id = sweep.to_string();
            self.blocking("reading records", move |store| {
                let kept: HashSet<AttemptKey> =
                    store.trajectory_keys(&id).map_err(|e| unavailable("trajectory keys", e))?.into_iter().collect();
                let mut out = Vec::new();
                for row in store.records(&id) {
                    let (key, stored) = row.map_err(|e| unavailable("records", e))?;
                    let mut r = stored.record;
                    if kept.contains(&key) {
                        r.trajectory = Some(trajectory_name(&r));
                    }
                    out.push(r);
                }
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
            // The store keys attempts by unit index, which a record does not carry: find its row.
            self.blocking("reading a trajectory", move |store| {
                for row in store.records(&id) {
                    let (key, stored) = row.map_err(|e| unavailable("records", e))?;
                    if same_attempt(&stored.record, &wanted) {
                        return store.trajectory(&key, crate::api::MAX_TRAJECTORY_JSON_BYTES).map_err(|e| match e {
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
                Err(SourceError::NotFound(format!("no attempt of {} in sweep '{}'", wanted.uid, clip(&id))))
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
            self.blocking("reading a screenshot", move |store| {
                store
                    .screenshot(&digest)
                    .map_err(|e| unavailable("screenshot", e))?
                    .ok_or_else(|| SourceError::NotFound(format!("no screenshot {digest} in the store")))
            })
            .await
        })
    }

    fn changes(&self) -> Option<broadcast::Receiver<String>> {
        Some(self.changes.subscribe())
    }
}
