//! `skillshift bench step --url URL [--steps N] [--json]`: the harness's own cost
//! per step on any page, no agent (`skillshift_worker::bench`; figures and the
//! comparison with BrowserGym in docs/performance.md). `bench floors`: each attempt
//! phase's work done bare on the fixture sites' start pages (`skillshift_worker::floors`).
//! `bench pages`: observation cost against page size (`skillshift_worker::bench_pages`).

use std::process::ExitCode;

use anyhow::Context;
use skillshift_worker::bench::{self, percentile_ms};
use skillshift_worker::bench_pages;
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::floors::{self, FloorPage};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Time observation and action per step on one page.
    Step(StepArgs),
    /// Time each attempt phase's work done bare (one DevTools call, one navigation) on the fixture sites'
    /// start pages: the floors of `scripts/bench/phases.sh`'s table.
    Floors(FloorsArgs),
    /// Time observations of generated pages of growing size, Chrome's part apart from ours.
    Pages(PagesArgs),
}

#[derive(clap::Args)]
struct FloorsArgs {
    /// Rounds over the pages.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// The pages: each site-version's commonest start page (`start`), or the distinct pages its tasks
    /// start on or check, up to 40 each (`tasks`).
    #[arg(long, value_enum, default_value_t = FloorPages::Start)]
    pages: FloorPages,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FloorPages {
    Start,
    Tasks,
}

#[derive(clap::Args)]
struct PagesArgs {
    /// Page sizes, in accessibility nodes.
    #[arg(long, value_delimiter = ',', default_value = "200,1000,5000,20000")]
    nodes: Vec<usize>,
    /// Observations timed per size.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
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
        Command::Floors(a) => floors(a),
        Command::Pages(a) => pages(a),
    }
}

/// The page an attempt on each fixture site-version starts on most often (its tasks' commonest start URL).
fn start_path(site: skillshift_common::Site) -> &'static str {
    match site {
        skillshift_common::Site::Gitlab => "/",
        skillshift_common::Site::Magento => "/admin/admin/dashboard/",
        skillshift_common::Site::Wordpress => "/wp-admin/",
    }
}

fn floors(args: FloorsArgs) -> anyhow::Result<ExitCode> {
    if args.rounds == 0 {
        anyhow::bail!("--rounds must be at least 1");
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let result = runtime.block_on(async {
        let sites = skillshift_sites::serve_all("127.0.0.1", 0).await.context("serving the fixture sites")?;
        let mut pages = Vec::new();
        for h in &sites {
            let cookies = h.login_cookies().await.map_err(anyhow::Error::msg)?;
            let paths = match args.pages {
                FloorPages::Start => vec![start_path(h.site).to_string()],
                FloorPages::Tasks => skillshift_sites::bench::pages(h.site, h.version),
            };
            for path in paths {
                let url = format!("{}{}", h.base_url, path);
                pages.push(FloorPage { url, base: h.base_url.clone(), cookies: cookies.clone() });
            }
        }
        let driver = Driver::new(BrowserConfig::default());
        let r = floors::run(&driver, &pages, args.rounds).await;
        driver.shutdown().await;
        for h in sites {
            h.shutdown().await;
        }
        r.context("bench floors")
    })?;
    let json = result.to_json();
    if args.json {
        return super::write_stdout(&format!("{json}\n"));
    }
    let mut s = format!(
        "{} rounds over {} pages; machine CPU per operation, less {} idle cores\n\n\
         | floor | what | n | p50 ms | p90 ms | CPU ms |\n| --- | --- | ---: | ---: | ---: | ---: |\n",
        result.rounds,
        result.pages.len(),
        result.idle_cores.map_or("unmeasured".to_string(), |c| format!("{c:.3}")),
    );
    if let Some(rows) = json["floors"].as_object() {
        for (key, v) in rows {
            s.push_str(&format!(
                "| {key} | {} | {} | {:.1} | {:.1} | {} |\n",
                v["what"].as_str().unwrap_or(""),
                v["n"],
                v["p50"].as_f64().unwrap_or(0.0),
                v["p90"].as_f64().unwrap_or(0.0),
                v["cpu_ms"].as_f64().map_or(String::new(), |c| format!("{c:.1}")),
            ));
        }
    }
    super::write_stdout(&s)
}

fn pages(args: PagesArgs) -> anyhow::Result<ExitCode> {
    if args.rounds == 0 || args.nodes.is_empty() {
        anyhow::bail!("--rounds and --nodes must each be at least 1");
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let runs = runtime.block_on(async {
        let driver = Driver::new(BrowserConfig::default());
        let r = bench_pages::run(&driver, &args.nodes, args.rounds).await;
        driver.shutdown().await;
        r
    });
    let runs = runs.context("bench pages")?;
    if args.json {
        let all: Vec<serde_json::Value> = runs.iter().map(|r| r.to_json()).collect();
        return super::write_stdout(&format!("{}\n", serde_json::Value::Array(all)));
    }
    let mut s = String::from(
        "| nodes (asked) | rows | observation chars | Chrome's getFullAXTree p50 (p90) ms | our parse p50 ms | \
         our render p50 ms | whole observation p50 (p90) ms |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in &runs {
        let p = |v: &[std::time::Duration], q| percentile_ms(v, q);
        s.push_str(&format!(
            "| {} ({}) | {} | {} | {:.1} ({:.1}) | {:.1} | {:.1} | {:.1} ({:.1}) |\n",
            r.nodes,
            r.target,
            r.rows,
            r.chars,
            p(&r.chrome, 0.5),
            p(&r.chrome, 0.9),
            p(&r.parse, 0.5),
            p(&r.render, 0.5),
            p(&r.observe, 0.5),
            p(&r.observe, 0.9)
        ));
    }
    super::write_stdout(&s)
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
