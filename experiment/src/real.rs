//! `--real-sites FILE`: the site-versions a sites file names run on those real instances, every
//! other one on this worker's fixture sites (`docs/real-sites.md`).
//!
//! The real instances are shared: every in-process worker of `local` and every executor of the
//! audit holds the same [`Remote`], so its turns (one attempt at a time per site-version) and its
//! record of which sites need a reset are one, while each worker keeps fixture sites of its own.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use skillshift_common::skills::Step;
use skillshift_common::{Site, Version};
use skillshift_worker::sites::{Cookies, DirtySites, Endpoint, Remote, ResetPolicy, SiteError, SiteManager};

use crate::embedded::Embedded;

/// A sites file of real instances, loaded once and shared.
#[derive(Clone)]
pub struct RealSites {
    pub path: std::path::PathBuf,
    pub remote: Arc<Remote>,
}

impl std::fmt::Debug for RealSites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealSites").field("path", &self.path).field("hosts", &self.remote.hosts()).finish()
    }
}

impl RealSites {
    /// Loads the file; `policy` replaces its reset policy when given.
    pub fn load(path: &Path, policy: Option<ResetPolicy>) -> anyhow::Result<RealSites> {
        let mut remote = Remote::load(path)?;
        if let Some(p) = policy {
            remote = remote.with_policy(p);
        }
        if remote.hosts().is_empty() {
            anyhow::bail!("--real-sites {}: the file names no site", path.display());
        }
        Ok(RealSites { path: path.to_path_buf(), remote: Arc::new(remote) })
    }

    /// Whether the file names this site-version.
    pub fn hosts(&self, site: Site, version: Version) -> bool {
        self.remote.hosts().contains(&(site, version))
    }

    /// The image names of the named site-versions among `sites`, e.g. `wordpress-v1`.
    pub fn images(&self, sites: &[Site]) -> Vec<String> {
        self.remote.hosts().into_iter().filter(|(s, _)| sites.contains(s)).map(|(s, v)| s.image(v)).collect()
    }

    /// Each named site-version's digest, by image name (what the frozen contract records).
    pub fn digests(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (site, version) in self.remote.hosts() {
            if let Ok(Endpoint { image, digest: Some(d), .. }) = self.remote.endpoint(site, version) {
                out.push((image, d));
            }
        }
        out
    }

    /// Puts in the frozen contract's task-file digests (`task_files`) what the named site-versions
    /// run: the tasks adapted to the real application (`tasks/real/<site>.<version>.json`, keyed
    /// `real/<site>.<version>.json`) in place of the fixture's file, where `data` has them.
    pub fn task_digests(
        &self,
        data: &Path,
        digests: &mut std::collections::BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        for (site, version) in self.remote.hosts() {
            let path = skillshift_common::task::task_file_path_on(data, site, version, true);
            if path != skillshift_common::task::task_file_path(data, site, version) {
                let file = format!("{site}.{version}.json");
                if digests.remove(&file).is_some() {
                    digests.insert(format!("real/{file}"), crate::spec::sha256_file(&path)?);
                }
            }
        }
        Ok(())
    }

    /// Every named site-version answers its env-ctrl health route (or its front page), so a run
    /// does not start against an instance that is down.
    pub async fn check(&self) -> anyhow::Result<()> {
        for (site, version) in self.remote.hosts() {
            let image = site.image(version);
            if let Err(e) = self.remote.probe(site, version).await {
                anyhow::bail!(
                    "--real-sites {}: {image} does not answer ({e}); start it with `bash scripts/real-sites.sh {site}`",
                    self.path.display()
                );
            }
        }
        Ok(())
    }
}

/// The fixture sites with some site-versions replaced by real instances.
pub struct Mixed {
    fixtures: Embedded,
    real: Arc<Remote>,
    // Turns and dirt of the fixture sites are the embedded backend's; the real ones' are the
    // shared remote's. This one is only what `dirty_sites` must return.
    unused: DirtySites,
}

impl Mixed {
    pub async fn start(policy: ResetPolicy, real: &RealSites) -> Result<Mixed, SiteError> {
        Ok(Mixed { fixtures: Embedded::start(policy).await?, real: real.remote.clone(), unused: DirtySites::new() })
    }

    fn backend(&self, site: Site, version: Version) -> &dyn SiteManager {
        if self.real.hosts().contains(&(site, version)) {
            self.real.as_ref()
        } else {
            &self.fixtures
        }
    }
}

impl SiteManager for Mixed {
    fn hosts(&self) -> Vec<(Site, Version)> {
        let mut all = self.fixtures.hosts();
        for h in self.real.hosts() {
            if !all.contains(&h) {
                all.push(h);
            }
        }
        all
    }

    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
        self.backend(site, version).endpoint(site, version)
    }

    fn reset(&self, site: Site, version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
        self.backend(site, version).reset(site, version)
    }

    fn login_steps(&self, site: Site, version: Version) -> Vec<Step> {
        self.backend(site, version).login_steps(site, version)
    }

    fn login_cookies(&self, site: Site, version: Version) -> BoxFuture<'_, Result<Option<Cookies>, SiteError>> {
        self.backend(site, version).login_cookies(site, version)
    }

    fn login_headers(&self, site: Site, version: Version) -> Vec<(String, String)> {
        self.backend(site, version).login_headers(site, version)
    }

    fn locator_grace(&self, site: Site, version: Version) -> std::time::Duration {
        self.backend(site, version).locator_grace(site, version)
    }

    /// The fixture sites' policy; each backend applies its own in [`SiteManager::needs_reset`].
    fn policy(&self) -> ResetPolicy {
        self.fixtures.policy()
    }

    fn dirty_sites(&self) -> &DirtySites {
        &self.unused
    }

    fn turn(&self, site: Site, version: Version) -> BoxFuture<'_, tokio::sync::OwnedMutexGuard<()>> {
        self.backend(site, version).turn(site, version)
    }

    fn needs_reset(&self, site: Site, version: Version) -> bool {
        self.backend(site, version).needs_reset(site, version)
    }

    fn mark_dirty(&self, site: Site, version: Version) {
        self.backend(site, version).mark_dirty(site, version)
    }

    fn mark_clean(&self, site: Site, version: Version) {
        self.backend(site, version).mark_clean(site, version)
    }
}
