//! `skillshift sites serve`: the fixture sites on loopback (or any host),
//! one site-version or all six on consecutive ports, until Ctrl-C.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use skillshift_common::{Site, Version};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Serve one site-version, one site's two versions, or all six site-versions.
    Serve(ServeArgs),
    /// Measure page latency and reset time of every site-version (prints a Markdown table).
    Bench(BenchArgs),
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Passes over each site-version's pages.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Resets timed per site-version.
    #[arg(long, default_value_t = 50)]
    resets: usize,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Only this site (gitlab, magento or wordpress).
    #[arg(long)]
    site: Option<Site>,
    /// Only this version (v1 or v2).
    #[arg(long)]
    version: Option<Version>,
    /// First port; the site-versions take consecutive ports from here (0 picks free ports).
    #[arg(long, default_value_t = 8001)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Serve(a) => serve(a),
        Command::Bench(a) => bench(a),
    }
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    super::out!("| image | pages | requests | not 200 | page p50 ms | page p90 ms | socket round trip p50 ms | reset p50 ms | reset max ms |");
    super::out!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &site in Site::ALL {
        for &version in Version::ALL {
            let row = runtime.block_on(skillshift_sites::bench::bench(site, version, args.rounds, args.resets));
            super::out!(
                "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                row.image,
                row.pages,
                row.requests,
                row.not_ok,
                row.page_p50_ms,
                row.page_p90_ms,
                row.socket_p50_ms,
                row.reset_p50_ms,
                row.reset_max_ms
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut handles = Vec::new();
        let mut offset = 0u16;
        for &site in Site::ALL {
            for &version in Version::ALL {
                if args.site.is_some_and(|s| s != site) || args.version.is_some_and(|v| v != version) {
                    continue;
                }
                let port = if args.port == 0 { 0 } else { args.port.saturating_add(offset) };
                let handle = skillshift_sites::serve(site, version, SocketAddr::new(args.host, port)).await?;
                super::out!("{:<13} {}  {}", handle.image(), handle.base_url, handle.digest);
                handles.push(handle);
                offset += 1;
            }
        }
        eprintln!("serving {} site-version(s); Ctrl-C stops", handles.len());
        tokio::signal::ctrl_c().await.context("cannot wait for Ctrl-C")?;
        for handle in handles {
            handle.shutdown().await;
        }
        Ok(ExitCode::SUCCESS)
    })
}
