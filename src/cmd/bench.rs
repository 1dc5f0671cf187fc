//! `skillshift bench step --url URL [--steps N] [--json]`: the harness's own cost
//! per step on any page, no agent (`skillshift_worker::bench`; figures and the
//! comparison with BrowserGym in docs/performance.md).

use std::process::ExitCode;

use anyhow::Context;
use skillshift_worker::bench::{self, percentile_ms};
use skillshift_worker::browser::{BrowserConfig, Driver};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Time observation and action per step on one page.
    Step(StepArgs),
}

#[derive(clap::Args)]
struct StepArgs {
    /// The page to load.
    #[arg(long)]
    url: String,
    /// Steps to run.
    #[arg(long, default_value_t = 50)]
    steps: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Step(a) => step(a),
    }
}

fn step(args: StepArgs) -> anyhow::Result<ExitCode> {
    if !args.url.contains("://") {
        anyhow::bail!("--url '{}' is not a URL (it needs a scheme, such as http:// or file://)", args.url);
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let result = runtime.block_on(async {
        let driver = Driver::new(BrowserConfig::default());
        let r = bench::run(&driver, &args.url, args.steps).await;
        driver.shutdown().await;
        r
    });
    let b = result.with_context(|| format!("bench step on {}", args.url))?;
    if args.json {
        return super::write_stdout(&format!("{}\n", b.to_json()));
    }
    let row = |name: &str, v: &[std::time::Duration]| {
        format!("| {name} | {} | {:.1} | {:.1} |\n", v.len(), percentile_ms(v, 0.5), percentile_ms(v, 0.9))
    };
    let mut s = format!(
        "{}: {} steps, {} action errors\n\n| measure | n | p50 ms | p90 ms |\n| --- | ---: | ---: | ---: |\n",
        b.url, b.steps, b.errors
    );
    s.push_str(&row("setup (kept browser, fresh tab, page load)", &b.setup));
    s.push_str(&row("observation", &b.observe));
    s.push_str(&row("action", &b.act));
    s.push_str(&row("step", &b.step));
    s.push_str(&format!("\nobservation size: {} chars first, {} last\n", b.obs_chars.0, b.obs_chars.1));
    super::write_stdout(&s)
}
