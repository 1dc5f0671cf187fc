//! `skillshift worker`: one worker connected to a coordinator. With
//! `--simulate MS` it runs no browser (every site and version, made-up
//! attempts of about MS ms); otherwise attempts run in headless Chromium
//! against the embedded fixture sites or the sites of `--sites FILE`. The
//! worker is built by `skillshift_experiment::workers`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use skillshift_experiment::workers::{self, Runs, SiteChoice, WorkerPlan};
use skillshift_taskcenter::TaskCenter;
use skillshift_worker::remote::{self, RemoteConfig};
use skillshift_worker::sites::ResetPolicy;

use super::conn::Connection;
use super::flags::{help, DataArgs};

#[derive(clap::Args)]
#[command(mut_arg("data", help("Data directory with tasks/ (fixture tasks are generated when missing)")))]
pub struct Args {
    #[command(flatten)]
    pub conn: Connection,
    /// Sites config (env-ctrl containers or external URLs).
    #[arg(long, conflicts_with_all = ["embedded_sites", "simulate"])]
    pub sites: Option<PathBuf>,
    /// Serve the fixture sites in this process.
    #[arg(long, conflicts_with = "simulate")]
    pub embedded_sites: bool,
    /// Attempts run at once (one browser each).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub slots: u32,
    /// Attempts one Chromium serves (each in a fresh tab with cookies, cache and site storage
    /// cleared) before it is replaced; 1 starts a new browser for every attempt.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub browser_reuse: u32,
    /// Run no browser: each attempt takes about MS ms and yields a deterministic fake record.
    #[arg(long, value_name = "MS")]
    pub simulate: Option<u64>,
    /// With --simulate: attempts of an LLM agent make their LLM calls for real, one per simulated step, to
    /// OPENAI_BASE_URL through the cluster's LLM budget (a load test of the budget and the endpoint).
    #[arg(long, requires = "simulate", env = "SKILLSHIFT_SIMULATE_LLM")]
    pub simulate_llm: bool,
    /// This worker's name (default host:pid).
    #[arg(long)]
    pub name: Option<String>,
    /// Where records wait until the coordinator acknowledges them (default .skillshift/outbox/NAME).
    #[arg(long)]
    pub outbox: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataArgs,
    /// On shutdown, seconds to let running attempts finish before cancelling them.
    #[arg(long, default_value_t = 60)]
    pub drain_timeout: u64,
    /// Which steps of each attempt's trajectory keep a screenshot: none, failures or all.
    #[arg(long, default_value = "failures")]
    pub screenshots: String,
    /// Serve this worker's Prometheus metrics at http://ADDR/metrics, and its probes at /healthz (alive)
    /// and /readyz (connected to the coordinator and taking work).
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let host = if host.is_empty() { "worker".to_string() } else { host };
    format!("{host}-{}", std::process::id())
}

impl Args {
    fn plan(&self, name: String) -> anyhow::Result<WorkerPlan> {
        skillshift_worker::attempt::NetworkTrace::from_env().map_err(anyhow::Error::msg)?;
        let runs = match (&self.simulate, &self.sites, self.embedded_sites) {
            (Some(ms), _, _) if self.simulate_llm => Runs::SimulatedLlm(Duration::from_millis(*ms)),
            (Some(ms), _, _) => Runs::Simulated(Duration::from_millis(*ms)),
            (None, Some(path), _) => Runs::Browser(SiteChoice::File(path.clone())),
            (None, None, true) => Runs::Browser(SiteChoice::Embedded(ResetPolicy::BeforeEach)),
            (None, None, false) => bail!("choose where attempts run: --embedded-sites, --sites FILE or --simulate MS"),
        };
        let screenshots =
            skillshift_common::trajectory::ScreenshotPolicy::parse(&self.screenshots).map_err(anyhow::Error::msg)?;
        Ok(WorkerPlan {
            name,
            runs,
            slots: self.slots,
            browser_reuse: self.browser_reuse,
            data: self.data.data.clone(),
            screenshots,
        })
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let telemetry = args.telemetry.config("skillshift-worker")?;
    let name = args.name.clone().unwrap_or_else(default_name);
    let plan = args.plan(name.clone())?;
    let outbox = args.outbox.clone().unwrap_or_else(|| PathBuf::from(".skillshift/outbox").join(&name));
    let conn = args.conn.settings();
    let mut cfg = RemoteConfig::new(&conn.coordinator, &name, outbox);
    cfg.token = conn.token.clone();
    cfg.tls = conn.tls();
    cfg.drain_timeout = Duration::from_secs(args.drain_timeout);
    // The probes answer from what the session loop updates.
    let health = cfg.health.clone();
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        if matches!(plan.runs, workers::Runs::Browser(_)) {
            // Before registering: a worker without a working browser would error every attempt it leases.
            workers::preflight().await?;
        }
        // Logs to stderr; spans over OTLP only when an endpoint is configured.
        let traces = skillshift_telemetry::init(&telemetry)?;
        let cancel = skillshift_experiment::signals::cancel_on_signals();
        // Not cancelled by the signal: /healthz and /metrics keep answering while the worker drains.
        let tasks = TaskCenter::new("worker/http");
        if let Some(addr) = args.metrics_addr {
            let listener =
                tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--metrics-addr {addr}"))?;
            let exposition = skillshift_telemetry::metrics::WorkerMetrics::global_exposition();
            tasks.spawn("metrics", move |stop| {
                skillshift_worker::health::serve(listener, exposition, health, stop.cancelled_owned())
            });
        }
        // The LLM calls of this worker's attempts ask the coordinator for permits.
        let permits = remote::permit_gate(&cfg)?;
        let worker = workers::build(&plan, Some(permits)).await?;
        let summary = remote::run(cfg, worker.executor.clone(), cancel).await?;
        worker.shutdown().await;
        tasks.shutdown(Duration::from_secs(5)).await;
        eprintln!(
            "worker stopped: {} attempts run, {} records and {} trajectories still in the outbox",
            summary.attempts, summary.undelivered, summary.undelivered_trajectories
        );
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        Ok(ExitCode::SUCCESS)
    })
}
