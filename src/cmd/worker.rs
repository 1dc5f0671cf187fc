//! `skillshift worker`: one worker connected to a coordinator. With
//! `--simulate MS` it runs no browser (every site and version, fake attempts
//! of about MS ms); otherwise attempts run in headless Chromium against the
//! embedded fixture sites (`--embedded-sites`) or the sites of `--sites FILE`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use skillshift_experiment::embedded::{generated_tasks, Embedded};
use skillshift_worker::browser::BrowserConfig;
use skillshift_worker::executor::Executor;
use skillshift_worker::remote::{self, simulate::SimulatedExecutor, RemoteConfig};
use skillshift_worker::run_executor::BrowserExecutor;
use skillshift_worker::runloop::{RunContext, TaskSource};
use skillshift_worker::sites::{Remote, ResetPolicy, SiteManager};

use super::sweep::Connection;

#[derive(clap::Args)]
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
    /// This worker's name (default host:pid).
    #[arg(long)]
    pub name: Option<String>,
    /// Where records wait until the coordinator acknowledges them (default .skillshift/outbox/NAME).
    #[arg(long)]
    pub outbox: Option<PathBuf>,
    /// Data directory with tasks/ (fixture tasks are generated when missing).
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// On shutdown, seconds to let running attempts finish before cancelling them.
    #[arg(long, default_value_t = 60)]
    pub drain_timeout: u64,
    /// Serve this worker's Prometheus metrics at http://ADDR/metrics.
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let telemetry = args.telemetry.config("skillshift-worker")?;
    if args.sites.is_none() && !args.embedded_sites && args.simulate.is_none() {
        bail!("choose where attempts run: --embedded-sites, --sites FILE or --simulate MS");
    }
    let name = args.name.clone().unwrap_or_else(default_name);
    let outbox = args.outbox.clone().unwrap_or_else(|| PathBuf::from(".skillshift/outbox").join(&name));
    let mut cfg = RemoteConfig::new(&args.conn.coordinator, &name, outbox);
    cfg.token = args.conn.token.clone().filter(|t| !t.is_empty());
    cfg.tls = args.conn.tls();
    cfg.drain_timeout = Duration::from_secs(args.drain_timeout);
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        // Logs to stderr; spans over OTLP only when an endpoint is configured.
        let traces = skillshift_telemetry::init(&telemetry)?;
        let cancel = super::sweep::cancel_on_signals();
        if let Some(addr) = args.metrics_addr {
            let listener =
                tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--metrics-addr {addr}"))?;
            let exposition = skillshift_telemetry::metrics::WorkerMetrics::global_exposition();
            tokio::spawn(skillshift_telemetry::metrics::serve(listener, exposition, cancel.clone().cancelled_owned()));
        }
        let (executor, browser): (Arc<dyn Executor>, Option<Arc<BrowserExecutor>>) = match args.simulate {
            Some(ms) => (Arc::new(SimulatedExecutor::new(Duration::from_millis(ms), args.slots as usize)), None),
            None => {
                let sites: Arc<dyn SiteManager> = match &args.sites {
                    Some(path) => Arc::new(Remote::load(path)?),
                    None => Arc::new(Embedded::start(ResetPolicy::BeforeEach).await?),
                };
                let task_file = skillshift_common::task::task_file_path(
                    &args.data,
                    skillshift_common::Site::Gitlab,
                    skillshift_common::Version::V1,
                );
                let tasks = if task_file.exists() { TaskSource::Dir(args.data.clone()) } else { generated_tasks() };
                let ctx = RunContext::new(sites, tasks, name.clone());
                let browser = BrowserConfig { reuse: args.browser_reuse, ..BrowserConfig::default() };
                let ex = Arc::new(BrowserExecutor::new(ctx, browser, args.slots as usize));
                (ex.clone() as Arc<dyn Executor>, Some(ex))
            }
        };
        let summary = remote::run(cfg, executor, cancel).await?;
        if let Some(b) = browser {
            b.shutdown().await;
        }
        eprintln!(
            "worker stopped: {} attempts run, {} records still in the outbox",
            summary.attempts, summary.undelivered
        );
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        Ok(ExitCode::SUCCESS)
    })
}
