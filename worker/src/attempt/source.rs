//! The task source and what every attempt of a worker shares: where task
//! definitions come from ([`TaskSource`]), the worker's [`RunContext`] (its
//! sites, tasks, name, screenshot and perturbation defaults, with a cache of
//! loaded task files) and the network-trace setting ([`NetworkTrace`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use skillshift_common::task::{Task, TaskFileError};
use skillshift_common::trajectory::ScreenshotPolicy;
use skillshift_common::{Site, Version};

use crate::llm_permit::PermitGate;
use crate::perturb::Profile;
use crate::sites::SiteManager;

/// Where task definitions come from.
#[derive(Clone)]
pub enum TaskSource {
    /// `data/tasks/<site>.<version>.json` under this directory.
    Dir(PathBuf),
    /// As `Dir`, but the site-versions listed run on real instances and read the tasks adapted to
    /// them where the directory has those ([`skillshift_common::task::task_file_path_on`]).
    DirReal(PathBuf, Vec<(Site, Version)>),
    /// Tasks in memory, by site-version, from whoever assembles the worker (the
    /// embedded fixture sites' generated tasks, for one).
    Given(TaskFn),
}

/// The tasks of a site-version, in task-id order.
pub type TaskFn = Arc<dyn Fn(Site, Version) -> Vec<Task> + Send + Sync>;

impl std::fmt::Debug for TaskSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskSource::Dir(dir) => f.debug_tuple("Dir").field(dir).finish(),
            TaskSource::DirReal(dir, real) => f.debug_tuple("DirReal").field(dir).field(real).finish(),
            TaskSource::Given(_) => f.write_str("Given(..)"),
        }
    }
}

/// Loaded task files, by site-version.
type TaskCache = Mutex<HashMap<(Site, Version), Arc<Vec<Task>>>>;

/// What every attempt of a worker shares.
pub struct RunContext {
    pub sites: Arc<dyn SiteManager>,
    pub tasks: TaskSource,
    pub worker: String,
    pub screenshots: Option<PathBuf>,
    /// Which steps of the trajectory keep a screenshot.
    pub screenshot_policy: ScreenshotPolicy,
    /// Used when the attempt carries no profile of its own.
    pub profile: Profile,
    /// What every attempt records of its network (`SKILLSHIFT_NETWORK_TRACE`, [`NetworkTrace`]).
    pub network_trace: NetworkTrace,
    /// The cluster's LLM budget the attempts' LLM agents ask for permits (`None`: not metered),
    /// handed in by whoever starts the worker (`remote::permit_gate`).
    pub llm_permits: Option<Arc<PermitGate>>,
    // A std mutex: held only to look up or insert an Arc, never across an await.
    cache: TaskCache,
}

/// What every attempt records of its network, from `SKILLSHIFT_NETWORK_TRACE` (for measuring what the
/// trace costs, `scripts/bench/network_cost.sh`): `on` (or unset, or empty) its trace, without
/// response bodies unless its assignment or its task asks for them; `off` no trace, unless its task's
/// evaluators read one; `bodies` its trace with every response body. Whatever the setting, a
/// WebArena-Verified task scored by its own evaluators gets the trace (and the bodies) they read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NetworkTrace {
    #[default]
    On,
    Off,
    Bodies,
}

/// A `SKILLSHIFT_NETWORK_TRACE` other than `on`, `off` or `bodies`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadNetworkTrace {
    #[error("{var} is '{0}': expected on, off or bodies", var = NetworkTrace::VAR)]
    Value(String),
    #[error("{var} is {0:?}: expected on, off or bodies", var = NetworkTrace::VAR)]
    NotUnicode(std::ffi::OsString),
}

/// Why a uid names no task ([`RunContext::task`]).
#[derive(Debug, thiserror::Error)]
pub enum NoTask {
    /// The site-version's task file does not load.
    #[error(transparent)]
    File(#[from] TaskFileError),
    #[error("{site}.{version} has no task {task_id} ({count} tasks)")]
    Missing { site: Site, version: Version, task_id: u32, count: usize },
}

impl NetworkTrace {
    /// The environment variable it is read from.
    pub const VAR: &'static str = "SKILLSHIFT_NETWORK_TRACE";

    /// The setting of the environment; a value other than `on`, `off` or `bodies` is an error naming
    /// it. Every command that runs attempts checks it before it starts ([`RunContext::new`] reads it
    /// again and keeps the trace on for a value nobody checked).
    pub fn from_env() -> Result<NetworkTrace, BadNetworkTrace> {
        match std::env::var(Self::VAR) {
            Err(std::env::VarError::NotPresent) => Ok(NetworkTrace::On),
            Ok(v) => v.parse(),
            Err(std::env::VarError::NotUnicode(v)) => Err(BadNetworkTrace::NotUnicode(v)),
        }
    }

    /// Whether every attempt records its trace.
    pub fn records(self) -> bool {
        self != NetworkTrace::Off
    }
}

impl std::str::FromStr for NetworkTrace {
    type Err = BadNetworkTrace;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "on" | "" => Ok(NetworkTrace::On),
            "off" => Ok(NetworkTrace::Off),
            "bodies" => Ok(NetworkTrace::Bodies),
            other => Err(BadNetworkTrace::Value(other.to_string())),
        }
    }
}

impl RunContext {
    pub fn new(sites: Arc<dyn SiteManager>, tasks: TaskSource, worker: impl Into<String>) -> Self {
        RunContext {
            sites,
            tasks,
            worker: worker.into(),
            screenshots: None,
            screenshot_policy: ScreenshotPolicy::default(),
            profile: Profile::default_profile(),
            network_trace: NetworkTrace::from_env().unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the network trace stays on");
                NetworkTrace::On
            }),
            llm_permits: None,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The task of a uid, loading its file once.
    pub fn task(&self, site: Site, version: Version, task_id: u32) -> Result<Task, NoTask> {
        let cached = self.cache.lock().ok().and_then(|c| c.get(&(site, version)).cloned());
        let tasks = match cached {
            Some(t) => t,
            None => {
                let loaded = match &self.tasks {
                    TaskSource::Dir(dir) => {
                        let path = skillshift_common::task::task_file_path(dir, site, version);
                        skillshift_common::task::load_task_file(&path, site)?
                    }
                    TaskSource::DirReal(dir, real) => {
                        let on_real = real.contains(&(site, version));
                        let path = skillshift_common::task::task_file_path_on(dir, site, version, on_real);
                        skillshift_common::task::load_task_file(&path, site)?
                    }
                    TaskSource::Given(tasks) => tasks(site, version),
                };
                let arc = Arc::new(loaded);
                if let Ok(mut c) = self.cache.lock() {
                    c.insert((site, version), arc.clone());
                }
                arc
            }
        };
        tasks.get(task_id as usize).cloned().ok_or_else(|| NoTask::Missing {
            site,
            version,
            task_id,
            count: tasks.len(),
        })
    }
}
