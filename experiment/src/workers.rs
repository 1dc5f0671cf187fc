//! The one worker builder, used by `skillshift worker`, `local` and `run`:
//! where the sites are, where the tasks come from, and the executor that runs
//! attempts (a browser per slot, or the simulated executor).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use skillshift_common::{Site, Version};
use skillshift_worker::attempt::{RunContext, TaskSource};
use skillshift_worker::browser::BrowserConfig;
use skillshift_worker::executor::Executor;
use skillshift_worker::llm_permit::PermitGate;
use skillshift_worker::remote::simulate::SimulatedExecutor;
use skillshift_worker::run_executor::BrowserExecutor;
use skillshift_worker::sites::{Remote, ResetPolicy, SiteManager};

use crate::embedded::{generated_tasks, Embedded};

/// Where a worker's sites are.
#[derive(Debug, Clone)]
pub enum SiteChoice {
    /// The fixture sites, served in this process.
    Embedded(ResetPolicy),
    /// A `--sites` file: env-ctrl containers or external URLs.
    File(PathBuf),
    /// The fixture sites, served in this process, except the site-versions that real instances
    /// (`--real-sites FILE`, loaded once and shared by every worker of the process) serve.
    Mixed(ResetPolicy, crate::real::RealSites),
}

/// What runs a worker's attempts.
#[derive(Debug, Clone)]
pub enum Runs {
    /// Headless Chromium against these sites.
    Browser(SiteChoice),
    /// No browser: each attempt takes about this long and yields a made-up record.
    Simulated(Duration),
    /// As `Simulated`, and attempts of an LLM agent make their LLM calls for real, to the endpoint of
    /// `OPENAI_BASE_URL` (`worker --simulate MS --simulate-llm`).
    SimulatedLlm(Duration),
}

/// Everything that makes a worker, validated.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    pub name: String,
    pub runs: Runs,
    /// Attempts run at once (one browser each).
    pub slots: u32,
    /// Attempts one Chromium serves before it is replaced.
    pub browser_reuse: u32,
    /// Data directory with tasks/ (the fixture tasks are generated when it has none).
    pub data: PathBuf,
    /// Which steps of each trajectory keep a screenshot.
    pub screenshots: skillshift_common::trajectory::ScreenshotPolicy,
}

/// The sites of a choice, started or loaded.
pub async fn open_sites(choice: &SiteChoice) -> anyhow::Result<Arc<dyn SiteManager>> {
    Ok(match choice {
        SiteChoice::Embedded(policy) => Arc::new(Embedded::start(*policy).await?),
        SiteChoice::File(path) => Arc::new(Remote::load(path)?),
        SiteChoice::Mixed(policy, real) => Arc::new(crate::real::Mixed::start(*policy, real).await?),
    })
}

/// The task files of `data` when it has them, else the fixture sites' generated tasks.
pub fn task_source(data: &Path) -> TaskSource {
    let probe = skillshift_common::task::task_file_path(data, Site::Gitlab, Version::V1);
    if probe.exists() {
        TaskSource::Dir(data.to_path_buf())
    } else {
        generated_tasks()
    }
}

/// The tasks a worker with these sites runs: [`task_source`], where the site-versions that real
/// instances serve (a `--sites` file's, `--real-sites`) read the tasks adapted to the real application
/// when the data directory has them (`tasks/real/`, docs/real-sites.md).
pub fn tasks_for(choice: &SiteChoice, data: &Path) -> anyhow::Result<TaskSource> {
    let real = match choice {
        SiteChoice::Embedded(_) => return Ok(task_source(data)),
        SiteChoice::File(path) => Remote::load(path)?.hosts(),
        SiteChoice::Mixed(_, real) => real.remote.hosts(),
    };
    Ok(match task_source(data) {
        TaskSource::Dir(dir) => TaskSource::DirReal(dir, real),
        generated => generated,
    })
}

/// A built worker's executor, and its browsers when it has any (to shut down at the end).
pub struct BuiltWorker {
    pub executor: Arc<dyn Executor>,
    browser: Option<Arc<BrowserExecutor>>,
}

impl BuiltWorker {
    /// Closes the browsers, if any.
    pub async fn shutdown(&self) {
        if let Some(b) = &self.browser {
            b.shutdown().await;
        }
    }
}

/// Builds the executor a plan describes; its attempts' LLM calls ask `llm_permits` (when given) for a
/// permit each.
pub async fn build(plan: &WorkerPlan, llm_permits: Option<Arc<PermitGate>>) -> anyhow::Result<BuiltWorker> {
    match &plan.runs {
        Runs::Simulated(ms) => {
            Ok(BuiltWorker { executor: Arc::new(SimulatedExecutor::new(*ms, plan.slots as usize)), browser: None })
        }
        Runs::SimulatedLlm(ms) => {
            let config = skillshift_worker::agents::llm::LlmConfig::from_env(None).context("--simulate-llm")?;
            // Each attempt asks this endpoint for the model its contract names (OpenAiClient::with_model).
            let llm = skillshift_worker::agents::llm::OpenAiClient::new(config).context("--simulate-llm")?;
            let llm = Arc::new(llm.with_permits(llm_permits));
            let ex = SimulatedExecutor::new(*ms, plan.slots as usize).with_llm(llm);
            Ok(BuiltWorker { executor: Arc::new(ex), browser: None })
        }
        Runs::Browser(choice) => {
            let sites = open_sites(choice).await?;
            let mut ctx = RunContext::new(sites, tasks_for(choice, &plan.data)?, plan.name.clone());
            ctx.screenshot_policy = plan.screenshots;
            ctx.llm_permits = llm_permits;
            let browser = BrowserConfig { reuse: plan.browser_reuse, ..BrowserConfig::default() };
            let ex = Arc::new(BrowserExecutor::new(ctx, browser, plan.slots as usize));
            Ok(BuiltWorker { executor: ex.clone(), browser: Some(ex) })
        }
    }
}

/// Starts the browser a worker would run, once, within [`skillshift_worker::preflight::PREFLIGHT_TIMEOUT`]:
/// `Err` names what is missing and how to install it.
pub async fn preflight() -> anyhow::Result<()> {
    let browser = BrowserConfig::default();
    skillshift_worker::preflight::check(&browser, skillshift_worker::preflight::PREFLIGHT_TIMEOUT).await?;
    Ok(())
}
