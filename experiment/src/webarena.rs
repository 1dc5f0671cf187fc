//! Running one task of any WebArena config file (`skillshift run ID --tasks
//! FILE --site NAME=URL...`): the task is resolved against the given base URLs
//! and handed to the worker's run loop as the only task of a carrier uid
//! (the task's first grid site, else gitlab, at the condition's version,
//! with the task's own id), against a site manager that knows those URLs,
//! never resets and logs in by no steps of its own.

use std::path::Path;
use std::sync::Arc;

use anyhow::bail;
use futures::future::BoxFuture;
use skillshift_common::skills::Step;
use skillshift_common::task::{SiteBases, SiteKey, Task};
use skillshift_common::{Site, Uid, Version};
use skillshift_worker::attempt::{TaskFn, TaskSource};
use skillshift_worker::sites::{DirtySites, Endpoint, ResetPolicy, SiteError, SiteManager};

/// A WebArena task, resolved, with where it runs.
#[derive(Debug, Clone)]
pub struct WebArenaTask {
    pub uid: Uid,
    pub task: Task,
    pub bases: SiteBases,
}

impl WebArenaTask {
    /// Loads task `task_id` of `file` and resolves it against `sites`; every
    /// site the task names must be given.
    pub fn load(file: &Path, task_id: i64, sites: &[(SiteKey, String)], version: Version) -> anyhow::Result<Self> {
        let task = crate::score::find_task(file, task_id)?;
        let mut bases = SiteBases::default();
        for (k, url) in sites {
            bases.insert(*k, url);
        }
        let missing: Vec<String> =
            task.sites.iter().filter(|k| !bases.0.contains_key(*k)).map(|k| k.to_string()).collect();
        if !missing.is_empty() {
            bail!(
                "task {task_id} of {} runs on {}: give each with --site NAME=URL",
                file.display(),
                missing.join(", ")
            );
        }
        let carrier = task.sites.iter().find_map(|k| k.grid()).unwrap_or(Site::Gitlab);
        let id = u32::try_from(task_id).map_err(|_| anyhow::anyhow!("task id {task_id} is out of range"))?;
        Ok(WebArenaTask { uid: Uid::new(carrier, version, id), task: task.resolved(&bases), bases })
    }

    /// The run loop's task source: this task at its own id's position.
    pub fn source(&self) -> TaskSource {
        let task = self.task.clone();
        let at = self.uid.task_id as usize;
        let f: TaskFn = Arc::new(move |_, _| vec![task.clone(); at + 1]);
        TaskSource::Given(f)
    }

    /// The site manager of the given URLs.
    pub fn sites(&self) -> Arc<dyn SiteManager> {
        let base = self.bases.0.get(&SiteKey::from(self.uid.site)).or_else(|| self.bases.0.values().next());
        Arc::new(GivenSites {
            uid: self.uid,
            base: base.cloned().unwrap_or_default(),
            bases: self.bases.clone(),
            dirty: DirtySites::new(),
        })
    }
}

/// Sites at given URLs: no reset, no login steps.
struct GivenSites {
    uid: Uid,
    base: String,
    /// Every site the task names (WebArena-Verified's evaluators render its URLs with them).
    bases: SiteBases,
    dirty: DirtySites,
}

impl SiteManager for GivenSites {
    fn hosts(&self) -> Vec<(Site, Version)> {
        vec![(self.uid.site, self.uid.version)]
    }
    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
        if (site, version) != (self.uid.site, self.uid.version) {
            return Err(SiteError::NotHosted { image: site.image(version) });
        }
        Ok(Endpoint { base_url: self.base.clone(), image: "webarena".into(), digest: None })
    }
    fn reset(&self, _site: Site, _version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
        Box::pin(async { Ok(()) })
    }
    fn login_steps(&self, _site: Site, _version: Version) -> Vec<Step> {
        Vec::new()
    }
    fn site_bases(&self, _site: Site, _version: Version) -> SiteBases {
        self.bases.clone()
    }
    fn policy(&self) -> ResetPolicy {
        ResetPolicy::Never
    }
    fn dirty_sites(&self) -> &DirtySites {
        &self.dirty
    }
}
