//! `skillshift local`: the embedded default, everything on this machine
//! (docs/design.md#embedded-default). The cluster is `skillshift_experiment::local`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use skillshift_analysis::report::document;
use skillshift_experiment::local::{self, LocalSettings};

use super::flags::{help, SweepArgs};

#[derive(clap::Args)]
#[command(
    mut_arg("families", help("JSON shaped like data/calibration_set.json: run only these families")),
    mut_arg("skills", help("Skill library; `none` for no skills. Default data/skills/example.json")),
    mut_arg(
        "treatment",
        help(
            "A treatment, NAME[=SKILLS_FILE], repeatable: every unit runs under each (CONTROL alone has no library; \
         another NAME alone takes --skills). Default: one treatment, --skills"
        )
    ),
    mut_arg(
        "reuse_baseline",
        help(
            "Records of an earlier run under the same frozen contract: its treatments named by --treatment are not \
         run again, and its records join this run's (docs/cli.md#baseline-reuse)"
        )
    ),
    mut_arg("data", help("Data directory: tasks/, solutions/, skills/, perturbations/, DIGESTS.json")),
    mut_arg("count", help("Repetitions of every unit")),
    mut_arg("temperature", help("Sampling temperature of an LLM agent (default 0)"))
)]
pub struct Args {
    /// Workers, each with its own browser and fixture sites; by default one per core and one more, at most 8 (an
    /// attempt's waits leave a core idle that the extra worker fills: docs/performance.md#throughput)
    #[arg(long, default_value_t = default_workers(), value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// Attempts each worker runs at once, one browser each.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub slots: u32,
    /// Output folder (records, contract, summary and the store).
    #[arg(long, default_value = "skillshift-local")]
    pub out: PathBuf,
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// A sites file of real instances (written by `bash scripts/real-sites.sh wordpress`): the site-versions it
    /// names run there, the rest on the fixture sites (docs/real-sites.md).
    #[arg(long, value_name = "FILE")]
    pub real_sites: Option<PathBuf>,
    /// Testing aid: workers run no browser, attempts take about MS ms with fake records.
    #[arg(long, hide = true, value_name = "MS")]
    pub simulate: Option<u64>,
    /// Which steps of each attempt's trajectory keep a screenshot: none, failures or all.
    #[arg(long, default_value = "failures")]
    pub screenshots: String,
    #[command(flatten)]
    pub llm: super::coordinator::LlmBudgetArgs,
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

/// `local`'s workers when `--workers` is not given: one per core the process may use, and one more to fill the
/// cores while attempts wait (an input answered at the renderer's next frame, a page's load), at most
/// [`MAX_DEFAULT_WORKERS`].
pub fn default_workers() -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    u32::try_from(cores).unwrap_or(u32::MAX).saturating_add(1).min(MAX_DEFAULT_WORKERS)
}

/// The most workers `local` starts unasked: each is a browser and six fixture sites, about 0.3-0.4 GiB.
const MAX_DEFAULT_WORKERS: u32 = 8;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut telemetry = args.telemetry.config("skillshift-local")?;
    // One line per attempt would bury the progress bars; RUST_LOG still overrides.
    telemetry.default_log_filter = "warn".into();
    if args.sweep.agent.agent == "reference"
        && std::env::var_os("OPENAI_API_KEY").is_none()
        && std::env::var_os("OPENAI_BASE_URL").is_none()
    {
        bail!("--agent reference needs OPENAI_API_KEY or OPENAI_BASE_URL");
    }
    skillshift_worker::attempt::NetworkTrace::from_env().map_err(anyhow::Error::msg)?;
    let sweep = args.sweep.settings(args.simulate.is_some())?;
    let settings = LocalSettings {
        sweep,
        workers: args.workers,
        slots: args.slots,
        out: args.out.clone(),
        simulate: args.simulate.map(Duration::from_millis),
        real_sites: args.real_sites.clone(),
        llm_budget: args.llm.config(),
        telemetry,
        screenshots: skillshift_common::trajectory::ScreenshotPolicy::parse(&args.screenshots)
            .map_err(anyhow::Error::msg)?,
    };
    let done = local::run(settings)?;
    if let Some(status) = &done.status {
        super::print_line(status)?;
    }
    let failing = done.errors.failing();
    if failing {
        // First, so a sweep that measured (almost) nothing cannot be mistaken for a result.
        for line in done.errors.lines() {
            eprintln!("skillshift: {line}");
        }
    }
    let several = done.reports.len() > 1;
    for t in &done.reports {
        if several {
            super::out!("treatment {}:", t.treatment);
        }
        super::write_stdout(&skillshift_analysis::report::text::render(&document(&t.report)))?;
        for note in &t.report.notes {
            eprintln!("skillshift: note: {}: {note}", t.treatment);
        }
    }
    if let [base, rest @ ..] = done.reports.as_slice() {
        for cand in rest {
            let r = done.records.display();
            super::out!(
                "compare with: skillshift compare --baseline {r} --candidate {r} --treatment-baseline {} \
                 --treatment-candidate {}",
                base.treatment,
                cand.treatment
            );
        }
    }
    if args.simulate.is_some() {
        eprintln!("note: --simulate ran no browser; these numbers are fake and measure nothing");
    } else if !done.real.is_empty() {
        super::out!(
            "note: {} ran on the real instances of {}; any other site-version on skillshift's bundled fixture sites. \
             The skills agent exercises the harness: these are not the benchmark's numbers",
            done.real.join(", "),
            args.real_sites.as_deref().map(|p| p.display().to_string()).unwrap_or_default()
        );
    } else {
        super::out!(
            "note: these numbers come from skillshift's bundled fixture sites (small stand-ins for GitLab, Magento and \
             WordPress) and exercise the harness; they are not the benchmark's numbers and must not be reported as such"
        );
    }
    let shots = skillshift_telemetry::metrics::WorkerMetrics::global().screenshot_totals();
    if shots.taken + shots.reused > 0 {
        // The share of the slots' time the steps waited for screenshots: what they cost the sweep's wall time.
        let slot_seconds = done.elapsed.as_secs_f64() * f64::from(args.workers * args.slots);
        eprintln!(
            "trajectory screenshots: {} taken in {:.1} s, of which the steps waited {:.1} s, {:.1}% of the {} slots' \
             time; {} steps kept the previous one of an unchanged page",
            shots.taken,
            shots.seconds,
            shots.wait_seconds,
            100.0 * shots.wait_seconds / slot_seconds.max(f64::EPSILON),
            args.workers * args.slots,
            shots.reused
        );
    }
    let summaries: Vec<String> = done.reports.iter().map(|t| t.summary.display().to_string()).collect();
    eprintln!(
        "done in {:.1} s; records {}, summary {}",
        done.elapsed.as_secs_f64(),
        done.records.display(),
        summaries.join(", ")
    );
    if failing {
        let share = 100.0 * skillshift_experiment::errors::FAILING_ERROR_SHARE;
        eprintln!(
            "skillshift: {} of {} attempts errored (more than {share:.0}% is a sweep that measured too little); \
             the first of the most frequent errors above says why",
            done.errors.errors, done.errors.attempts
        );
        return Ok(ExitCode::from(1));
    }
    for line in done.errors.lines() {
        eprintln!("{line}");
    }
    Ok(if done.completed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
