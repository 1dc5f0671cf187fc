//! The embedded default: the fixture sites of `skillshift-sites`, served
//! in-process on loopback ports, behind the worker's [`SiteManager`] seam,
//! and their generated tasks as a [`TaskSource`].
//!
//! The worker library knows only the seam; this module is where the fixture
//! sites meet it, so the worker does not depend on them (`docs/design.md`,
//! the embedded default).

use std::sync::Arc;

use futures::future::BoxFuture;
use skillshift_common::skills::Step;
use skillshift_common::{Site, Version};
use skillshift_sites::SiteHandle;
use skillshift_worker::attempt::TaskSource;
use skillshift_worker::sites::{Cookies, DirtySites, Endpoint, ResetPolicy, SiteError, SiteManager};

/// The fixture sites, served in-process.
pub struct Embedded {
    handles: Vec<SiteHandle>,
    policy: ResetPolicy,
    dirty: DirtySites,
}

impl Embedded {
    /// Serves all six site-versions on free loopback ports.
    pub async fn start(policy: ResetPolicy) -> Result<Embedded, SiteError> {
        let handles = skillshift_sites::serve_all("127.0.0.1", 0).await.map_err(|e| SiteError::Serve(e.to_string()))?;
        Ok(Embedded { handles, policy, dirty: DirtySites::new() })
    }

    fn handle(&self, site: Site, version: Version) -> Result<&SiteHandle, SiteError> {
        self.handles
            .iter()
            .find(|h| h.site == site && h.version == version)
            .ok_or_else(|| SiteError::NotHosted { image: site.image(version) })
    }
}

impl SiteManager for Embedded {
    fn hosts(&self) -> Vec<(Site, Version)> {
        self.handles.iter().map(|h| (h.site, h.version)).collect()
    }

    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
        let h = self.handle(site, version)?;
        Ok(Endpoint { base_url: h.base_url.clone(), image: h.image(), digest: Some(h.digest.clone()) })
    }

    fn reset(&self, site: Site, version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
        Box::pin(async move {
            self.handle(site, version)?.reset();
            Ok(())
        })
    }

    fn login_steps(&self, site: Site, version: Version) -> Vec<Step> {
        skillshift_sites::app(site, version).login_steps()
    }

    /// None: the fixture pages are server-rendered HTML whose one script acts inside the click
    /// that triggers it (`sites/static/behaviors.js`), and the perturbations count agent steps,
    /// not milliseconds; once a step has settled, nothing appears on them without another input.
    fn locator_grace(&self, _site: Site, _version: Version) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Signs in over the site's own handlers in-process (the login steps, run
    /// by the sites crate's HTTP-level browser), so an attempt starts with a
    /// session cookie instead of loading and submitting the sign-in page.
    fn login_cookies(&self, site: Site, version: Version) -> BoxFuture<'_, Result<Option<Cookies>, SiteError>> {
        Box::pin(async move {
            let h = self.handle(site, version)?;
            let cookies =
                h.login_cookies().await.map_err(|e| SiteError::Login { image: h.image(), message: e.to_string() })?;
            Ok(Some(cookies))
        })
    }

    fn policy(&self) -> ResetPolicy {
        self.policy
    }

    fn dirty_sites(&self) -> &DirtySites {
        &self.dirty
    }
}

/// The fixture sites' generated tasks, in memory: the task source that goes
/// with [`Embedded`] when no task files are on disk.
pub fn generated_tasks() -> TaskSource {
    TaskSource::Given(Arc::new(|site, version| {
        skillshift_sites::tasks(site, version).into_iter().map(|g| g.task).collect()
    }))
}
