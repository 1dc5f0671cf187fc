//! The real [`Executor`]: attempts run in a real browser against the site
//! manager, one chromedriver per slot.
//!
//! Slots are a pool of supervised [`Driver`]s behind a semaphore, so at most
//! `slots` browsers run at once and each attempt gets a driver no other attempt
//! is using. Agents are built per attempt from the spec's `agent` string.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use skillshift_common::blob::Blob;
use skillshift_common::{AttemptSpec, Record, Site, Version};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::agents;
use crate::attempt::{run_attempt_traced, AgentFactory, RunContext};
use crate::browser::{BrowserConfig, Driver};
use crate::executor::Executor;
use crate::llm_permit::PermitGate;
use crate::preflight::PreflightError;

pub struct BrowserExecutor {
    ctx: Arc<RunContext>,
    // A std mutex: it guards only a push or pop of the free list, never an await.
    free: Arc<Mutex<Vec<Arc<Driver>>>>,
    permits: Arc<Semaphore>,
    slots: usize,
    browser: BrowserConfig,
}

impl BrowserExecutor {
    pub fn new(ctx: RunContext, browser: BrowserConfig, slots: usize) -> Self {
        let slots = slots.max(1);
        let drivers: Vec<Arc<Driver>> = (0..slots).map(|_| Arc::new(Driver::new(browser.clone()))).collect();
        BrowserExecutor {
            ctx: Arc::new(ctx),
            free: Arc::new(Mutex::new(drivers)),
            permits: Arc::new(Semaphore::new(slots)),
            slots,
            browser,
        }
    }

    pub fn context(&self) -> &Arc<RunContext> {
        &self.ctx
    }

    /// Stops every idle chromedriver (and its browsers).
    pub async fn shutdown(&self) {
        let drivers: Vec<Arc<Driver>> = self.free.lock().map(|d| d.clone()).unwrap_or_default();
        for d in drivers {
            d.shutdown().await;
        }
    }
}

/// The agent factory for a spec: `skills`, `reference` or `cmd:<command line>`, its LLM calls not
/// metered by a coordinator (see [`factory_with_permits`]).
pub fn factory_for(spec: &AttemptSpec) -> AgentFactory {
    factory_with_permits(spec, None)
}

/// As [`factory_for`], an LLM agent asking `permits` (when given) for a permit before each call.
pub fn factory_with_permits(spec: &AttemptSpec, permits: Option<Arc<PermitGate>>) -> AgentFactory {
    let agent = spec.agent.clone();
    let choice = agents::LlmChoice {
        model: spec.model.clone(),
        temperature: spec.temperature,
        prompt_version: spec.prompt_version.clone(),
    };
    let library = spec.skills.clone();
    Box::new(move |task| agents::build(&agent, &choice, task, library.as_ref(), permits))
}

impl Executor for BrowserExecutor {
    fn hosts(&self) -> Vec<(Site, Version)> {
        self.ctx.sites.hosts()
    }

    fn slots(&self) -> usize {
        self.slots
    }

    fn check(&self) -> BoxFuture<'static, Result<(), PreflightError>> {
        let cfg = self.browser.clone();
        Box::pin(async move { crate::preflight::check(&cfg, crate::preflight::PREFLIGHT_TIMEOUT).await })
    }

    fn execute(&self, spec: AttemptSpec, cancel: CancellationToken) -> BoxFuture<'static, Record> {
        let attempt = self.execute_traced(spec, cancel);
        Box::pin(async move { attempt.await.0 })
    }

    fn execute_traced(
        &self,
        spec: AttemptSpec,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, (Record, Option<Blob>)> {
        let ctx = self.ctx.clone();
        let free = self.free.clone();
        let permits = self.permits.clone();
        let browser = self.browser.clone();
        Box::pin(async move {
            // The semaphore is never closed, so acquiring only waits.
            let _permit = permits.acquire_owned().await.ok();
            let driver = free.lock().ok().and_then(|mut f| f.pop());
            let driver = match driver {
                Some(d) => d,
                None => Arc::new(Driver::new(browser)),
            };
            let factory = factory_with_permits(&spec, ctx.llm_permits.clone());
            let finished = run_attempt_traced(&ctx, &driver, &spec, factory, None, cancel).await;
            if let Ok(mut f) = free.lock() {
                f.push(driver);
            }
            (finished.record, Some(finished.trajectory))
        })
    }
}
