//! `skillshift calibrate` (docs/formats.md#calibration): grade a run of the
//! no-skill reference agent over the 30-family subset against the published
//! anchor. `--records FILE` grades an existing run; without it the
//! calibration sweep is submitted, followed and exported first. The work is
//! `skillshift_experiment::calibration`'s.
//!
//! Exit codes: 0 every gated value within tolerance, 1 at least one beyond,
//! 2 the check could not be made (a `--threshold` that is not a finite number
//! of sigmas >= 0, subset missing, anchor unpublished or invalid, step budget
//! differs from the anchor's, a family of the subset unmeasured in a cell). A
//! bad threshold or a budget mismatch exits 2 before anything else.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use skillshift_analysis::calibration::{check_threshold, load_anchor, load_set, CalibrationError};
use skillshift_common::ids::{Condition, Site};
use skillshift_experiment::calibration::{self, AnchorInput, CalibrationRun};

use super::flags::{help, AgentArgs, AttemptArgs, DataArgs, RetryArgs, SeedArgs};

const DEFAULT_REFERENCE: &str = "data/reference_results/reference-react.json";
const DEFAULT_SUBSET: &str = "data/calibration_set.json";

#[derive(clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    mut_arg("agent", |a| a.default_value("reference").help("The anchor agent")),
    mut_arg("model", help("The model of the calibration run (default: the anchor's)")),
    mut_arg("provider", help(
        "The LLM provider the calibration run's contract names (e.g. openai); refused when the endpoint of \
         OPENAI_BASE_URL is another"
    )),
    mut_arg("temperature", help("Sampling temperature of the calibration run (default: the anchor's)")),
    // No default: the anchor's budget is the run's, and one given must equal it.
    mut_arg("max_steps", |a| a.default_value(None::<&'static str>).help("The step budget; must equal the anchor's max_steps")),
    mut_arg("task_timeout", help("Wall-clock ceiling of one calibration attempt, in seconds")),
    mut_arg("seed", help("Sweep seed of the calibration run")),
    mut_arg("data", help("Data directory (tasks/, perturbations/, DIGESTS.json) for the calibration sweep's contract")),
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Sub>,
    /// Calibrate one website instead of all three.
    #[arg(long)]
    pub site: Option<Site>,
    /// Print the cells, task counts and uids; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The anchor to grade against.
    #[arg(long, default_value = DEFAULT_REFERENCE)]
    pub reference: PathBuf,
    /// Override the anchor's own sigma threshold (a finite number >= 0).
    #[arg(long)]
    pub threshold: Option<f64>,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Where the calibration run's per_task.jsonl goes.
    #[arg(long, default_value = "runs/calibration")]
    pub out: PathBuf,
    #[command(flatten)]
    pub attempt: AttemptArgs,
    /// Grade an existing run's records instead of running anything.
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// The treatment to grade, when the records hold several.
    #[arg(long)]
    pub treatment: Option<String>,
    /// The calibration subset.
    #[arg(long, default_value = DEFAULT_SUBSET)]
    pub subset: PathBuf,
    #[command(flatten)]
    pub seed: SeedArgs,
    #[command(flatten)]
    pub retry: RetryArgs,
    #[command(flatten)]
    pub data: DataArgs,
    /// A demo: grade made-up records (a --simulate run, or an anchor made from one) and mark the output
    /// SIMULATED; without --records the calibration sweep is submitted for --simulate workers.
    #[arg(long)]
    pub allow_simulated: bool,
    #[command(flatten)]
    pub conn: super::conn::Connection,
}

#[derive(clap::Subcommand)]
pub enum Sub {
    /// Compute an anchor (value and sigma per cell) from a reference run's records.
    Anchor(AnchorArgs),
}

#[derive(clap::Args)]
pub struct AnchorArgs {
    /// The reference run's per_task.jsonl.
    #[arg(long)]
    pub records: PathBuf,
    /// Where to write the anchor JSON.
    #[arg(long)]
    pub out: PathBuf,
    /// The treatment of the records to use, when the file holds several.
    #[arg(long)]
    pub treatment: Option<String>,
    /// Only this site's cells.
    #[arg(long)]
    pub site: Option<Site>,
    /// The agent that produced the records, recorded in the anchor; when contract.json beside the records
    /// names it, that is the agent and this must agree.
    #[arg(long)]
    pub agent: Option<String>,
    /// Make an anchor from the records of an agent other than `reference` (it is labelled with that agent).
    #[arg(long)]
    pub allow_non_reference: bool,
    /// A demo: make an anchor from made-up records (a --simulate run); it is marked "simulated": true.
    #[arg(long)]
    pub allow_simulated: bool,
    /// The model the reference run used, recorded in the anchor.
    #[arg(long, default_value = "unknown")]
    pub model: String,
    /// The step budget the reference run used.
    #[arg(long, default_value_t = 10)]
    pub max_steps: u32,
    /// The calibration subset (data/calibration_set.json's shape) the records must cover.
    #[arg(long, default_value = DEFAULT_SUBSET)]
    pub subset: PathBuf,
    /// Image digests to record (image name -> digest), if the file exists.
    #[arg(long, default_value = "data/DIGESTS.json")]
    pub digests: PathBuf,
}

fn sites(site: Option<Site>) -> Vec<Site> {
    site.map_or_else(|| Site::ALL.to_vec(), |s| vec![s])
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Sub::Anchor(a)) = args.command {
        return anchor(a);
    }
    // Flags first: a threshold that cannot gate (NaN, infinity, negative) is refused before anything is read.
    let threshold = args.threshold.map(check_threshold).transpose()?;
    let sites = sites(args.site);
    // The step budget is checked before anything else, dry run included.
    if args.dry_run {
        if args.attempt.max_steps.is_some() {
            calibration::check_budget(&load_anchor(&args.reference)?, args.attempt.max_steps)?;
        }
        return super::write_stdout(&calibration::dry_run(&load_set(&args.subset)?, &sites, &args.subset)?);
    }
    let anchor = load_anchor(&args.reference)?;
    let max_steps = calibration::check_budget(&anchor, args.attempt.max_steps)?;
    if anchor.status != "published" {
        return Err(CalibrationError::Unpublished(args.reference.clone()).into());
    }
    // Before anything runs: a made-up anchor grades nothing.
    if anchor.simulated && !args.allow_simulated {
        return Err(CalibrationError::SimulatedAnchor(args.reference.clone()).into());
    }
    let set = load_set(&args.subset)?;
    let records = match &args.records {
        Some(r) => r.clone(),
        None => {
            let run = CalibrationRun {
                sites: sites.clone(),
                subset: args.subset.clone(),
                agent: args.agent.agent.clone(),
                model: args.agent.model.clone(),
                provider: args.agent.provider.clone(),
                temperature: args.agent.temperature,
                seed: args.seed.seed,
                task_timeout_s: args.attempt.task_timeout,
                max_retries: args.retry.max_retries,
                data: args.data.data.clone(),
                out: args.out.clone(),
                conn: args.conn.settings(),
                simulated: args.allow_simulated,
            };
            calibration::run_sweep(&run, &anchor, max_steps)?
        }
    };
    let threshold = threshold.unwrap_or(anchor.threshold_sigma);
    let graded = calibration::grade_records(
        &records,
        args.treatment.as_deref(),
        &set,
        &sites,
        &anchor,
        &args.reference,
        threshold,
        args.allow_simulated,
    )?;
    super::write_stdout(&graded.text)?;
    Ok(if graded.flagged > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn anchor(a: AnchorArgs) -> anyhow::Result<ExitCode> {
    let sites = sites(a.site);
    let set = load_set(&a.subset)?;
    let input = AnchorInput {
        records: &a.records,
        treatment: a.treatment.as_deref(),
        set: &set,
        sites: &sites,
        agent: a.agent.as_deref(),
        allow_non_reference: a.allow_non_reference,
        allow_simulated: a.allow_simulated,
        model: &a.model,
        max_steps: a.max_steps,
        digests: &a.digests,
    };
    let (anchor, records, treatment) = calibration::anchor_from(&input)?;
    let text = serde_json::to_string_pretty(&anchor).context("serialising the anchor")? + "\n";
    std::fs::write(&a.out, text).with_context(|| format!("cannot write {}", a.out.display()))?;
    let mark = if anchor.simulated { " (SIMULATED: made-up records; marked \"simulated\": true)" } else { "" };
    super::print_line(&format!(
        "wrote {}: {} cells from {records} records of calibration families (treatment {treatment}, agent {}), \
         max_steps {}{mark}",
        a.out.display(),
        sites.len() * Condition::ALL.len(),
        anchor.agent,
        a.max_steps
    ))?;
    Ok(ExitCode::SUCCESS)
}
