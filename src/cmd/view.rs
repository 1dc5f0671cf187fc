//! `skillshift view [DIR | --coordinator URL] [--listen ADDR]`: the trajectory
//! viewer (docs/formats.md#viewer) over an export directory, until Ctrl-C. The
//! first line on stdout is the URL to open.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use skillshift_viewer::ExportSource;

#[derive(clap::Args)]
pub struct Args {
    /// An export directory (per_task.jsonl, contract.json, trajectories/), or its per_task.jsonl.
    #[arg(required_unless_present = "coordinator", conflicts_with = "coordinator")]
    pub dir: Option<PathBuf>,
    /// A running coordinator, for its live sweeps.
    #[arg(long, env = "SKILLSHIFT_COORDINATOR")]
    pub coordinator: Option<String>,
    /// Address to serve the viewer on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub listen: SocketAddr,
    /// A token every page and /api/* needs (/healthz excepted); the printed URL carries it.
    #[arg(long, env = "SKILLSHIFT_TOKEN")]
    pub token: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(url) = &args.coordinator {
        anyhow::bail!(
            "view --coordinator {url}: a coordinator serves its live sweeps' viewer on its own --http port; \
             open that port, or view an export directory (sweep export ID --out DIR/per_task.jsonl)"
        );
    }
    let Some(dir) = args.dir else { anyhow::bail!("view needs an export directory or --coordinator URL") };
    if args.token.as_deref() == Some("") {
        anyhow::bail!("--token is empty: give a non-empty token, or leave --token (and SKILLSHIFT_TOKEN) out");
    }
    // A bad directory is bad input: one line, exit 2, before anything listens.
    let source = ExportSource::open(&dir)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr().context("reading the viewer's address")?;
        super::print_line(&skillshift_viewer::url(addr, args.token.as_deref()))?;
        eprintln!("skillshift: viewing {} (sweep {}); Ctrl-C stops", dir.display(), source.sweep_id());
        let router = skillshift_viewer::router(Arc::new(source), args.token.as_deref());
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        skillshift_viewer::serve(listener, router, shutdown).await.context("serving the viewer")?;
        Ok(ExitCode::SUCCESS)
    })
}
