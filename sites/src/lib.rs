//! Fixture web applications for skillshift: GitLab, the Magento admin and
//! WordPress, each in a v1 and a v2 layout, served with axum as
//! server-rendered HTML (see `sites-contract.md` and design.md).
//!
//! * [`App`]: what every site-version provides (router, reset, login steps);
//!   [`app`], [`tasks`] and [`skills`] dispatch to the sites.
//! * [`gitlab`], [`magento`], [`wordpress`]: the three sites, each with its
//!   app of a version (`gitlab::app`, and `Magento::app`, `WordPress::app`
//!   of [`kit::site::Pages`]), its task generator `tasks::generate(version)`
//!   and its example skills. No site uses another's modules.
//! * [`kit`]: the framework the sites share (requests and responses, state
//!   and sessions, URL coding, the seeded PRNG, paging, layout, task
//!   building).
//! * [`server`]: serving site-versions on ports; it wraps each site's router
//!   with the [`env_ctrl`] surface and the client-side behaviours script.
//! * [`sim`]: a headless HTTP-level browser that runs steps and scores tasks
//!   without Chromium.
//! * [`generate`]: renders the data files from code; [`digest`]: the
//!   per-site-version digests; [`validate`]: checks the data files;
//!   [`bench`](mod@bench): page and reset timings.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

use std::sync::Arc;

use skillshift_common::skills::Step;
use skillshift_common::task::Task;
use skillshift_common::{Site, Version};

pub mod bench;
pub mod digest;
pub mod env_ctrl;
pub mod generate;
pub mod gitlab;
pub mod kit;
pub mod magento;
pub mod server;
pub mod sim;
pub mod validate;
pub mod wordpress;

use kit::site::Pages;
pub use server::{serve, serve_all, site_router, LoginError, ServeError, SiteHandle};

/// One site in one version, as the framework serves it.
pub trait App: Send + Sync + 'static {
    /// Every page of the site, its own login page included. Served at the root of its port.
    fn router(self: Arc<Self>) -> axum::Router;
    /// Restore the seeded state (and drop sessions). Must take well under a second.
    fn reset(&self);
    /// The steps (docs/formats.md#skills) that log in from a fresh browser on the
    /// site's base URL (with the site placeholders as in task files), including v2's extra steps.
    fn login_steps(&self) -> Vec<Step>;
}

/// A generated task and its reference solution (steps as in docs/formats.md#skills).
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedTask {
    pub task: Task,
    pub solution: Vec<Step>,
}

/// The application of `site` in `version`.
pub fn app(site: Site, version: Version) -> Arc<dyn App> {
    match site {
        Site::Gitlab => gitlab::app(version),
        Site::Magento => magento::Magento::app(version),
        Site::Wordpress => wordpress::WordPress::app(version),
    }
}

/// The generated tasks of `site` in `version` (exactly `site.n_tasks()` once built).
pub fn tasks(site: Site, version: Version) -> Vec<GeneratedTask> {
    match site {
        Site::Gitlab => gitlab::tasks::generate(version),
        Site::Magento => magento::tasks::generate(version),
        Site::Wordpress => wordpress::tasks::generate(version),
    }
}

/// The example library's skills of `site` (written against v1).
pub fn skills(site: Site) -> Vec<skillshift_common::skills::Skill> {
    match site {
        Site::Gitlab => gitlab::tasks::skills(),
        Site::Magento => magento::tasks::skills(),
        Site::Wordpress => wordpress::tasks::skills(),
    }
}
