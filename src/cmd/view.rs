//! `skillshift view [DIR | --coordinator URL --coordinator-http URL] [--listen ADDR]`:
//! the trajectory viewer (docs/formats.md#viewer) over an export directory,
//! until Ctrl-C; the first line on stdout is the URL to open. A running
//! coordinator serves the viewer of its live sweeps on its own `--http` port:
//! for it, `view` checks that port answers the viewer's JSON with the token,
//! prints the URL to open there and exits (it proxies nothing).

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
    /// A running coordinator, for its live sweeps (its gRPC URL; the viewer is on its --http port).
    #[arg(long, env = "SKILLSHIFT_COORDINATOR")]
    pub coordinator: Option<String>,
    /// The coordinator's --http address (http://HOST:PORT), where it serves the live viewer.
    #[arg(long, requires = "coordinator")]
    pub coordinator_http: Option<String>,
    /// Address to serve the viewer on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub listen: SocketAddr,
    /// Seconds a connection may pass without a byte either way before it is closed.
    #[arg(long, default_value_t = skillshift_http::IDLE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_s: u64,
    /// A token every page and /api/* needs (/healthz excepted); the printed URL carries it.
    #[arg(long, env = "SKILLSHIFT_TOKEN")]
    pub token: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.token.as_deref() == Some("") {
        anyhow::bail!("--token is empty: give a non-empty token, or leave --token (and SKILLSHIFT_TOKEN) out");
    }
    if let Some(url) = &args.coordinator {
        let Some(http) = &args.coordinator_http else {
            anyhow::bail!(
                "view --coordinator {url}: a coordinator serves its live sweeps' viewer on its own --http port; \
                 give that address too (--coordinator-http http://HOST:PORT), or view an export directory"
            );
        };
        return live(http, args.token.as_deref());
    }
    let Some(dir) = args.dir else { anyhow::bail!("view needs an export directory or --coordinator URL") };
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
        let router = skillshift_viewer::router_on(Arc::new(source), args.token.as_deref(), addr);
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let limits = skillshift_http::HttpLimits {
            idle_timeout: std::time::Duration::from_secs(args.idle_timeout_s),
            ..Default::default()
        };
        skillshift_viewer::serve(listener, router, limits, shutdown).await.context("serving the viewer")?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Checks that the coordinator's HTTP port at `http` serves the viewer with
/// `token`, then prints the URL to open there.
fn live(http: &str, token: Option<&str>) -> anyhow::Result<ExitCode> {
    if token.is_some_and(|t| !t.bytes().all(|b| b.is_ascii_graphic())) {
        anyhow::bail!("--token must be printable ASCII without spaces");
    }
    let rest = http.strip_prefix("http://").unwrap_or(http).trim_end_matches('/');
    if rest.contains('/') || rest.contains("://") {
        anyhow::bail!("--coordinator-http {http}: expected http://HOST:PORT (the coordinator's --http address)");
    }
    let addr: SocketAddr = std::net::ToSocketAddrs::to_socket_addrs(rest)
        .with_context(|| format!("--coordinator-http {http}: not a HOST:PORT"))?
        .next()
        .with_context(|| format!("--coordinator-http {http}: the host has no address"))?;
    let status = get_status(addr, rest, "/api/sweeps", token)
        .with_context(|| format!("cannot reach the coordinator's http port at {http}"))?;
    match status {
        200 => {}
        401 => anyhow::bail!("the coordinator at {http} refused the token (give its --token, or SKILLSHIFT_TOKEN)"),
        404 => anyhow::bail!("{http} does not serve the viewer (is it the coordinator's --http port?)"),
        n => anyhow::bail!("the coordinator at {http} answered /api/sweeps with http {n}"),
    }
    super::print_line(&skillshift_viewer::url_at(addr, skillshift_viewer::LIVE_PATH, token))?;
    Ok(ExitCode::SUCCESS)
}

/// The status code of a plain HTTP/1.1 GET of `path` on `addr`, with a deadline.
fn get_status(addr: SocketAddr, host: &str, path: &str, token: Option<&str>) -> anyhow::Result<u16> {
    use std::io::{Read, Write};
    let timeout = std::time::Duration::from_secs(10);
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n")?;
    // The status line is all that is read: the body may be large.
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < head.len() && !head[..n].contains(&b'\n') {
        let got = s.read(&mut head[n..])?;
        if got == 0 {
            break;
        }
        n += got;
    }
    let line = String::from_utf8_lossy(&head[..n]);
    line.strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("not an http answer: {:?}", line.lines().next().unwrap_or("")))
}
