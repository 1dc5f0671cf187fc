//! `skillshift coordinator`: runs the coordinator until Ctrl-C / SIGTERM, then
//! shuts down in order (stop leasing, drain, stop serving, flush the store).
//! The first line on stdout names the bound addresses, so scripts (and the
//! test sandbox) can use `--listen 127.0.0.1:0`. A store that cannot write
//! ends it with one error line and exit 2, for a supervisor to restart it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use skillshift_coordinator::limits::{self, Limits};
use skillshift_coordinator::server::{self, Config, TlsFiles};

/// The bounds without a flag, stated under `--help`.
fn fixed_limits() -> String {
    format!(
        "Fixed limits (docs/cli.md#limits): at most {} reps and {} treatments per sweep, a skill library of {} KiB, \
         {} units in all stored sweeps, worker names of {} bytes; a session must send its hello within {} s; {} worker \
         sessions and {} status watches or exports at once, {} streams per connection; gRPC messages of {} MiB; a \
         record over {} MiB is refused \
         with a reject (\"record too large\") and its attempt recorded as error (record_too_large).",
        limits::MAX_REPS,
        limits::MAX_TREATMENTS,
        limits::MAX_SKILL_LIBRARY_BYTES >> 10,
        limits::MAX_UNITS_TOTAL,
        limits::MAX_WORKER_NAME_BYTES,
        limits::HELLO_TIMEOUT.as_secs(),
        limits::MAX_SESSIONS,
        limits::MAX_CONTROL_STREAMS,
        limits::MAX_STREAMS_PER_CONNECTION,
        limits::MAX_MESSAGE_BYTES >> 20,
        limits::MAX_RECORD_BYTES >> 20,
    )
}

#[derive(clap::Args)]
#[command(after_help = fixed_limits())]
pub struct Args {
    /// gRPC address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// HTTP address of the status page (/, /healthz, /api/status) and the live trajectory viewer (/view, /api/*).
    #[arg(long)]
    pub http: Option<SocketAddr>,
    /// Where the store lives.
    #[arg(long, default_value = ".skillshift/coordinator")]
    pub data_dir: PathBuf,
    /// Shared token every worker and control client must present, and every
    /// HTTP page but /healthz and /metrics (an empty token is refused).
    #[arg(long, env = "SKILLSHIFT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// PEM certificate for TLS (with --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA: clients must present a certificate it signed (mutual TLS).
    #[arg(long, requires = "tls_cert")]
    pub ca: Option<PathBuf>,
    /// Lease time-to-live in milliseconds; heartbeats renew it.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub lease_ttl_ms: u64,
    /// Units one sweep may have; a larger sweep is refused before it is planned.
    #[arg(long, default_value_t = limits::MAX_UNITS_PER_SWEEP, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_units_per_sweep: u64,
    /// Sweeps the coordinator may hold (finished ones count).
    #[arg(long, default_value_t = limits::MAX_SWEEPS, value_parser = positive)]
    pub max_sweeps: usize,
    /// Workers that may be registered at once; an idle one is forgotten to make room.
    #[arg(long, default_value_t = limits::MAX_WORKERS, value_parser = positive)]
    pub max_workers: usize,
    /// Bytes of trajectories (compressed JSON and screenshots) one sweep may store; an upload past
    /// it is refused, naming the numbers.
    #[arg(long, default_value_t = limits::MAX_TRAJECTORY_BYTES_PER_SWEEP, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_trajectory_bytes_per_sweep: u64,
    /// Seconds an --http connection may pass without a byte either way before it is closed.
    #[arg(long, default_value_t = skillshift_http::IDLE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub http_idle_timeout_s: u64,
    /// --http connections open at once; one past it is closed at once.
    #[arg(long, default_value_t = skillshift_http::MAX_HTTP_CONNECTIONS, value_parser = positive)]
    pub http_max_connections: usize,
    /// Seconds a worker that is not connected and holds no lease stays registered.
    #[arg(long, default_value_t = limits::WORKER_EXPIRY.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub worker_expiry_s: u64,
    #[command(flatten)]
    pub llm: LlmBudgetArgs,
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

/// The cluster's LLM budget, per model endpoint (docs/cli.md#llm-budget); shared by `coordinator` and `local`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LlmBudgetArgs {
    /// At most N LLM calls in flight at once across all workers, per model endpoint; a 429 from the
    /// endpoint lowers the shared limit, answers raise it back (AIMD).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub llm_concurrency: Option<u32>,
    /// At most N LLM requests per minute across all workers, per model endpoint (spread evenly).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub llm_rpm: Option<u32>,
    /// At most N LLM tokens per minute across all workers, per model endpoint (reserved per call from its
    /// prompt and max_tokens, corrected by the usage the endpoint reports).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub llm_tpm: Option<u64>,
}

impl LlmBudgetArgs {
    pub fn config(&self) -> skillshift_coordinator::llm_budget::BudgetConfig {
        skillshift_coordinator::llm_budget::BudgetConfig {
            concurrency: self.llm_concurrency,
            rpm: self.llm_rpm,
            tpm: self.llm_tpm,
        }
    }
}

fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive whole number")),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.token.as_deref() == Some("") {
        anyhow::bail!("--token is empty: give a non-empty token, or leave --token (and SKILLSHIFT_TOKEN) out");
    }
    let telemetry = args.telemetry.config("skillshift-coordinator")?;
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key, ca: args.ca }),
        _ => None,
    };
    let config = Config {
        listen: args.listen,
        http: args.http,
        data_dir: args.data_dir,
        token: args.token,
        tls,
        lease_ttl: Duration::from_millis(args.lease_ttl_ms),
        limits: Limits {
            max_units_per_sweep: args.max_units_per_sweep,
            max_sweeps: args.max_sweeps,
            max_workers: args.max_workers,
            max_trajectory_bytes_per_sweep: args.max_trajectory_bytes_per_sweep,
            http: skillshift_http::HttpLimits {
                max_connections: args.http_max_connections,
                idle_timeout: Duration::from_secs(args.http_idle_timeout_s),
                ..Default::default()
            },
            worker_expiry: Duration::from_secs(args.worker_expiry_s),
            ..Limits::default()
        },
        llm_budget: args.llm.config(),
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let result = rt.block_on(async move {
        // Logs to stderr; spans over OTLP only when an endpoint is configured.
        let traces = skillshift_telemetry::init(&telemetry)?;
        let cancel = skillshift_experiment::signals::cancel_on_signals();
        let running = server::start_with_pages(config, cancel, Some(skillshift_viewer::live::hook())).await?;
        match running.http_addr {
            Some(h) => super::out!("coordinator listening on {} (http {h})", running.grpc_addr),
            None => super::out!("coordinator listening on {}", running.grpc_addr),
        }
        running.wait().await?;
        // Last in the shutdown order: flush the spans, with a deadline.
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        eprintln!("coordinator stopped; store flushed");
        Ok(ExitCode::SUCCESS)
    });
    // A store write stuck on a failed disk must not hold the exit (dropping the runtime would wait for it).
    rt.shutdown_timeout(Duration::from_secs(5));
    result
}
