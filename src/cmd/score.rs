//! `skillshift score TASKS_FILE --task ID [--answer TEXT] [--url URL]
//! [--page FILE] [--site NAME=URL]... [--evaluator webarena|strict|webarena-verified]
//! [--network HAR] [--response FILE|TEXT] [--json]`: one task's evaluators on a
//! final state given by hand (`skillshift_experiment::score`). Exit 0 whatever
//! the verdict; 2 when the task cannot be read or scored.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use skillshift_common::evaluate::Mode;
use skillshift_common::task::SiteKey;
use skillshift_experiment::score::{self, ScoreSettings};

#[derive(clap::Args)]
pub struct Args {
    /// Any WebArena config file: one task object or an array.
    pub tasks_file: PathBuf,
    /// The task's own task_id (not its position in the file).
    #[arg(long = "task")]
    pub task: i64,
    /// The answer of the agent's final stop; without it the agent never stopped (WebArena then reads "").
    #[arg(long)]
    pub answer: Option<String>,
    /// The final URL (default: the --page file's URL).
    #[arg(long)]
    pub url: Option<String>,
    /// An HTML file headless Chromium loads as the page every program_html check reads.
    #[arg(long)]
    pub page: Option<PathBuf>,
    /// A site's base URL, e.g. gitlab=http://localhost:8023 (default: the embedded fixture sites).
    #[arg(long = "site")]
    pub sites: Vec<String>,
    /// webarena (WebArena's rules, the default), strict (its plain bugs fixed) or webarena-verified
    /// (WebArena-Verified's evaluators, on --response and --network, for its tasks).
    #[arg(long, default_value = "webarena")]
    pub evaluator: String,
    /// The attempt's network trace, a HAR file (ours or any browser's), for --evaluator webarena-verified.
    #[arg(long)]
    pub network: Option<PathBuf>,
    /// The agent's final response for --evaluator webarena-verified: a JSON file, or the text itself.
    #[arg(long)]
    pub response: Option<String>,
    /// Print {"task_id", "verdict", "evaluators": [...]} as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let sites: Vec<(SiteKey, String)> =
        args.sites.iter().map(|s| score::parse_site(s)).collect::<Result<_, _>>().map_err(anyhow::Error::msg)?;
    let mode: Mode = args.evaluator.parse().map_err(anyhow::Error::msg)?;
    let settings = ScoreSettings {
        tasks_file: args.tasks_file,
        task_id: args.task,
        answer: args.answer,
        url: args.url,
        page: args.page,
        sites,
        mode,
        network: args.network,
        response: args.response,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let report = rt.block_on(score::score(&settings))?;
    if args.json {
        super::write_stdout(&format!("{}\n", serde_json::to_string(&report)?))
    } else {
        super::write_stdout(&report.text())
    }
}
