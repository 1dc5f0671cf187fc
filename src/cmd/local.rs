//! `skillshift local`: the embedded default, everything on this machine
//! (docs/design.md#embedded-default). The cluster is `skillshift_experiment::local`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use skillshift_analysis::report::document;
use skillshift_experiment::local::{self, LocalSettings};
use skillshift_experiment::settings::{Skills, SweepSettings};

#[derive(clap::Args)]
pub struct Args {
    /// Workers, each with its own browser and fixture sites.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// skills, reference (needs OPENAI_API_KEY or OPENAI_BASE_URL) or cmd:<command line>.
    #[arg(long, default_value = "skills")]
    pub agent: String,
    #[arg(long)]
    pub model: Option<String>,
    /// Repetitions of every unit.
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    /// Output folder (records, contract, summary and the store).
    #[arg(long, default_value = "skillshift-local")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 10)]
    pub max_steps: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// JSON shaped like data/calibration_set.json: run only these families.
    #[arg(long)]
    pub families: Option<PathBuf>,
    /// Skill library; `none` for no skills. Default data/skills/example.json.
    #[arg(long)]
    pub skills: Option<String>,
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Testing aid: workers run no browser, attempts take about MS ms with fake records.
    #[arg(long, hide = true, value_name = "MS")]
    pub simulate: Option<u64>,
    /// Which steps of each attempt's trajectory keep a screenshot: none, failures or all.
    #[arg(long, default_value = "failures")]
    pub screenshots: String,
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut telemetry = args.telemetry.config("skillshift-local")?;
    // One line per attempt would bury the progress bars; RUST_LOG still overrides.
    telemetry.default_log_filter = "warn".into();
    if args.agent == "reference"
        && std::env::var_os("OPENAI_API_KEY").is_none()
        && std::env::var_os("OPENAI_BASE_URL").is_none()
    {
        bail!("--agent reference needs OPENAI_API_KEY or OPENAI_BASE_URL");
    }
    let sweep = SweepSettings {
        families: args.families.clone(),
        skills: Skills::from_flag(args.skills.as_deref()),
        agent: args.agent.clone(),
        model: args.model.clone(),
        count: args.count,
        max_steps: args.max_steps,
        seed: args.seed,
        ..SweepSettings::full_grid(args.data.clone())
    };
    let settings = LocalSettings {
        sweep,
        workers: args.workers,
        out: args.out.clone(),
        simulate: args.simulate.map(Duration::from_millis),
        telemetry,
        screenshots: skillshift_common::trajectory::ScreenshotPolicy::parse(&args.screenshots)
            .map_err(anyhow::Error::msg)?,
    };
    let done = local::run(settings)?;
    print!("{}", skillshift_analysis::report::text::render(&document(&done.report)));
    for note in &done.report.notes {
        eprintln!("skillshift: note: {note}");
    }
    if args.simulate.is_some() {
        eprintln!("note: --simulate ran no browser; these numbers are fake and measure nothing");
    } else {
        println!(
            "note: these numbers come from skillshift's bundled fixture sites (small stand-ins for GitLab, Magento and \
             WordPress) and exercise the harness; they are not the benchmark's numbers and must not be reported as such"
        );
    }
    eprintln!(
        "done in {:.1} s; records {}, summary {}",
        done.elapsed.as_secs_f64(),
        done.records.display(),
        done.summary.display()
    );
    Ok(if done.completed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
