//! `skillshift coordinator`: runs the coordinator until Ctrl-C / SIGTERM, then
//! shuts down in order (stop leasing, drain, stop serving, flush the store).
//! The first line on stdout names the bound addresses, so scripts (and the
//! test sandbox) can use `--listen 127.0.0.1:0`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use skillshift_coordinator::server::{self, Config, TlsFiles};

#[derive(clap::Args)]
pub struct Args {
    /// gRPC address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// HTTP address of the status page (/, /healthz, /api/status).
    #[arg(long)]
    pub http: Option<SocketAddr>,
    /// Where the store lives.
    #[arg(long, default_value = ".skillshift/coordinator")]
    pub data_dir: PathBuf,
    /// Shared token every worker and control client must present.
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
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let telemetry = args.telemetry.config("skillshift-coordinator")?;
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key, ca: args.ca }),
        _ => None,
    };
    let config = Config {
        listen: args.listen,
        http: args.http,
        data_dir: args.data_dir,
        token: args.token.filter(|t| !t.is_empty()),
        tls,
        lease_ttl: Duration::from_millis(args.lease_ttl_ms),
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        // Logs to stderr; spans over OTLP only when an endpoint is configured.
        let traces = skillshift_telemetry::init(&telemetry)?;
        let cancel = skillshift_experiment::signals::cancel_on_signals();
        let running = server::start(config, cancel).await?;
        match running.http_addr {
            Some(h) => println!("coordinator listening on {} (http {h})", running.grpc_addr),
            None => println!("coordinator listening on {}", running.grpc_addr),
        }
        running.wait().await?;
        // Last in the shutdown order: flush the spans, with a deadline.
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        eprintln!("coordinator stopped; store flushed");
        Ok(ExitCode::SUCCESS)
    })
}
