//! `skillshift calibrate` (formats §7, seed 002): grade a run of the no-skill
//! reference agent over the 30-family subset against the published anchor.
//!
//! Exit codes: 0 every gated value within tolerance, 1 at least one beyond,
//! 2 the check could not be made (subset missing, anchor unpublished, step
//! budget differs from the anchor's, records missing for a cell). A budget
//! mismatch exits 2 before anything else.
//!
//! `--records FILE` grades an existing run. Without it, calibrate submits the
//! calibration sweep (the subset's families under all six conditions, no
//! skills, the anchor's agent, model, temperature and step budget) to the
//! coordinator, follows it to the end, exports its records under `--out` and
//! grades them: [`run_calibration_sweep`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use skillshift_common::calibration::{
    analyse_subset, cell_uids, compute_anchor, format_line, grade, load_anchor, load_set, Anchor, CalibrationError,
    CalibrationSet,
};
use skillshift_common::ids::{Condition, Site};
use skillshift_common::records::read_file;

const DEFAULT_REFERENCE: &str = "data/reference_results/reference-react.json";
const DEFAULT_SUBSET: &str = "data/calibration_set.json";

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
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
    /// Override the anchor's own sigma threshold.
    #[arg(long)]
    pub threshold: Option<f64>,
    /// The anchor agent.
    #[arg(long, default_value = "reference")]
    pub agent: String,
    /// Where the calibration run's per_task.jsonl goes.
    #[arg(long, default_value = "runs/calibration")]
    pub out: PathBuf,
    /// The step budget; must equal the anchor's max_steps.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Grade an existing run's records instead of running anything.
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// The treatment to grade, when the records hold several.
    #[arg(long)]
    pub treatment: Option<String>,
    /// The calibration subset.
    #[arg(long, default_value = DEFAULT_SUBSET)]
    pub subset: PathBuf,
    /// The model of the calibration run (default: the anchor's).
    #[arg(long)]
    pub model: Option<String>,
    /// Sweep seed of the calibration run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Wall-clock ceiling of one calibration attempt, in seconds.
    #[arg(long, default_value_t = 600)]
    pub task_timeout: u64,
    #[arg(long, default_value_t = 2)]
    pub max_retries: u32,
    /// Data directory (tasks/, perturbations/, DIGESTS.json) for the calibration sweep's contract.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    #[command(flatten)]
    pub conn: super::sweep::Connection,
}

#[derive(clap::Subcommand)]
pub enum Sub {
    /// Compute an anchor (value and sigma per cell) from a reference run's records.
    Anchor(AnchorArgs),
}

#[derive(clap::Args)]
pub struct AnchorArgs {
    #[arg(long)]
    pub records: PathBuf,
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub treatment: Option<String>,
    #[arg(long)]
    pub site: Option<Site>,
    #[arg(long, default_value = "reference")]
    pub agent: String,
    /// The model the reference run used, recorded in the anchor.
    #[arg(long, default_value = "unknown")]
    pub model: String,
    /// The step budget the reference run used.
    #[arg(long, default_value_t = 10)]
    pub max_steps: u32,
    #[arg(long, default_value = DEFAULT_SUBSET)]
    pub subset: PathBuf,
    /// Image digests to record (image name -> digest), if the file exists.
    #[arg(long, default_value = "data/DIGESTS.json")]
    pub digests: PathBuf,
}

/// What a calibration sweep runs.
pub struct SweepPlan<'a> {
    pub args: &'a Args,
    pub sites: Vec<Site>,
    pub anchor: &'a Anchor,
    pub max_steps: u32,
}

/// Submits the calibration runs to the coordinator, follows them to the end
/// and exports their records to `--out`/per_task.jsonl (with contract.json
/// beside it), which it returns.
pub fn run_calibration_sweep(plan: &SweepPlan) -> anyhow::Result<PathBuf> {
    let args = plan.args;
    // An anchor may not name its model ("unknown"); then only --model says which.
    let anchored = Some(plan.anchor.model.as_str()).filter(|m| !m.is_empty() && *m != "unknown");
    if let (Some(given), Some(anchored)) = (&args.model, anchored) {
        if given != anchored {
            eprintln!(
                "skillshift: warning: --model {given} differs from the anchor's model {anchored}; deviations then \
                 measure the model as well as the environment"
            );
        }
    }
    let model = args.model.clone().or(anchored.map(String::from));
    let start = super::sweep::StartArgs {
        sites: plan.sites.clone(),
        conditions: Condition::ALL.to_vec(),
        families: Some(args.subset.clone()),
        treatment: None,
        skills: Some("none".into()),
        agent: args.agent.clone(),
        model,
        provider: None,
        temperature: Some(plan.anchor.temperature),
        count: 1,
        max_steps: plan.max_steps,
        task_timeout: args.task_timeout,
        max_retries: args.max_retries,
        seed: args.seed,
        cost_budget: None,
        profile: None,
        data: args.data.clone(),
    };
    let spec = super::sweep::build_spec(&start)?;
    let runs = skillshift_coordinator::planner::plan(&spec).map(|u| u.len()).unwrap_or(0);
    let out = args.out.join("per_task.jsonl");
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async {
        let mut client = args.conn.client().await?;
        let id = client.submit(&spec).await?;
        eprintln!(
            "calibration sweep {id}: {runs} runs of agent '{}' at max_steps {} on {}",
            spec.agent, plan.max_steps, args.conn.coordinator
        );
        let st = super::sweep::follow(&args.conn, &id).await?;
        eprintln!("{}", super::sweep::one_line(&st));
        if st.state == skillshift_coordinator::status::SweepState::Cancelled {
            anyhow::bail!("calibration sweep {id} was cancelled; nothing graded (resume it, then grade its export with --records)");
        }
        let n = super::sweep::export(&mut client, &id, &out).await?;
        eprintln!("calibration sweep {id}: wrote {n} records to {}", out.display());
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(out)
}

fn sites(site: Option<Site>) -> Vec<Site> {
    site.map_or_else(|| Site::ALL.to_vec(), |s| vec![s])
}

fn check_budget(anchor: &Anchor, max_steps: Option<u32>) -> Result<u32, CalibrationError> {
    match max_steps {
        Some(given) if given != anchor.max_steps => {
            Err(CalibrationError::BudgetMismatch { given, anchor: anchor.max_steps })
        }
        _ => Ok(anchor.max_steps),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Sub::Anchor(a)) = args.command {
        return anchor(a);
    }
    let sites = sites(args.site);
    // The step budget is checked before anything else, dry run included.
    if args.dry_run {
        if args.max_steps.is_some() {
            check_budget(&load_anchor(&args.reference)?, args.max_steps)?;
        }
        return dry_run(&load_set(&args.subset)?, &sites, &args.subset);
    }
    let anchor = load_anchor(&args.reference)?;
    let max_steps = check_budget(&anchor, args.max_steps)?;
    if anchor.status != "published" {
        return Err(CalibrationError::Unpublished(args.reference.clone()).into());
    }
    let set = load_set(&args.subset)?;
    let records = match &args.records {
        Some(r) => r.clone(),
        None => run_calibration_sweep(&SweepPlan { args: &args, sites: sites.clone(), anchor: &anchor, max_steps })?,
    };
    let threshold = args.threshold.unwrap_or(anchor.threshold_sigma);
    let rs = read_file(&records)?;
    let t = rs.select(args.treatment.as_deref())?;
    let a = analyse_subset(t, &set, &sites);
    let graded = grade(&a, &anchor, threshold, &sites)?;
    let mut out = format!(
        "calibrate: {} (treatment {}, {} records of calibration families) against {} (threshold {threshold:.1} sigma, \
         max_steps {})\n",
        records.display(),
        t.name,
        a.records,
        args.reference.display(),
        anchor.max_steps
    );
    for g in &graded {
        out.push_str(&format_line(g));
        out.push('\n');
    }
    let gated = graded.iter().filter(|g| g.gated).count();
    let flagged = graded.iter().filter(|g| g.flagged).count();
    if flagged == 0 {
        out.push_str(&format!(
            "calibration: all {gated} gated values within {threshold:.1} sigma: the environment matches the anchor\n"
        ));
    } else {
        out.push_str(&format!(
            "calibration: {flagged} of {gated} gated values beyond {threshold:.1} sigma: something differs from the \
             anchor's environment (check the images named above)\n"
        ));
    }
    super::report::write_stdout(&out)?;
    Ok(if flagged > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn dry_run(set: &CalibrationSet, sites: &[Site], path: &Path) -> anyhow::Result<ExitCode> {
    let families: usize = sites.iter().map(|s| set.sites.get(s).map_or(0, |x| x.families.len())).sum();
    let mut out = format!(
        "calibration plan from {} ({}): {families} families x {} conditions = {} runs; nothing is run\n",
        path.display(),
        set.rule,
        Condition::ALL.len(),
        families * Condition::ALL.len()
    );
    for &site in sites {
        let Some(s) = set.sites.get(&site) else {
            anyhow::bail!("{}: no families for {site}", path.display());
        };
        let fams: Vec<String> = s.families.iter().map(u32::to_string).collect();
        out.push_str(&format!("{site}: {} of {} families: {}\n", s.k, s.n_tasks, fams.join(" ")));
        for &c in Condition::ALL {
            let uids = cell_uids(set, site, c);
            out.push_str(&format!(
                "  {:<11}{:<10}{:>3} tasks  {}\n",
                site.as_str(),
                c.as_str(),
                uids.len(),
                uids.join(" ")
            ));
        }
    }
    super::report::write_stdout(&out)
}

fn anchor(a: AnchorArgs) -> anyhow::Result<ExitCode> {
    let sites = sites(a.site);
    let set = load_set(&a.subset)?;
    let rs = read_file(&a.records)?;
    let t = rs.select(a.treatment.as_deref())?;
    let analysis = analyse_subset(t, &set, &sites);
    let images: BTreeMap<String, String> = match std::fs::read_to_string(&a.digests) {
        Ok(text) => {
            serde_json::from_str(&text).with_context(|| format!("{}: not an image digest map", a.digests.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", a.digests.display())),
    };
    let anchor = compute_anchor(&analysis, &sites, &a.agent, &a.model, a.max_steps, images)?;
    let text = serde_json::to_string_pretty(&anchor).context("serialising the anchor")? + "\n";
    std::fs::write(&a.out, text).with_context(|| format!("cannot write {}", a.out.display()))?;
    println!(
        "wrote {}: {} cells from {} records of calibration families (treatment {}), max_steps {}",
        a.out.display(),
        sites.len() * Condition::ALL.len(),
        analysis.records,
        t.name,
        a.max_steps
    );
    Ok(ExitCode::SUCCESS)
}
