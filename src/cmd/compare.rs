//! `skillshift compare --baseline A --candidate B`: SR deltas per cell and
//! overall with 95% intervals, a verdict, the `delta >= 0` verdict of the comparison seed, and
//! the frozen-contract check (`contract.json` beside each records file).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use skillshift_analysis::cells::analyse;
use skillshift_analysis::compare::{check_contract, compare, contract_beside, render_text, SideInfo};
use skillshift_analysis::records::read_file;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The baseline's records (per_task.jsonl).
    #[arg(long)]
    pub baseline: PathBuf,
    /// The candidate's records; may be the same file as the baseline with another treatment.
    #[arg(long)]
    pub candidate: PathBuf,
    /// The baseline's treatment, when its file holds several.
    #[arg(long)]
    pub treatment_baseline: Option<String>,
    /// The candidate's treatment, when its file holds several.
    #[arg(long)]
    pub treatment_candidate: Option<String>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Exit 1 when the verdict is `worse`.
    #[arg(long)]
    pub fail_on_regression: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let same_file = args.baseline == args.candidate;
    let base_set = read_file(&args.baseline)?;
    let cand_set = if same_file { base_set.clone() } else { read_file(&args.candidate)? };
    if same_file && args.treatment_baseline == args.treatment_candidate {
        anyhow::bail!(
            "baseline and candidate are the same records ({}); name two treatments with --treatment-baseline and \
             --treatment-candidate (treatments: {})",
            args.baseline.display(),
            base_set.names().join(", ")
        );
    }
    let bt = base_set.select(args.treatment_baseline.as_deref()).map_err(|e| anyhow!("baseline: {e}"))?;
    let ct = cand_set.select(args.treatment_candidate.as_deref()).map_err(|e| anyhow!("candidate: {e}"))?;
    let (ba, ca) = (analyse(bt), analyse(ct));
    let bc = contract_beside(&args.baseline).map_err(|e| anyhow!(e))?;
    let cc = contract_beside(&args.candidate).map_err(|e| anyhow!(e))?;
    let contract = check_contract(bc.as_ref(), cc.as_ref(), &ba.config_digests, &ca.config_digests, same_file);
    let info = |path: &PathBuf, a: &skillshift_analysis::cells::Analysis| SideInfo {
        file: path.display().to_string(),
        treatment: a.treatment.clone(),
        records: a.records,
        config_digests: a.config_digests.clone(),
    };
    let c = compare(&ba, &ca, info(&args.baseline, &ba), info(&args.candidate, &ca), contract);
    let out = match args.format {
        Format::Table => render_text(&c),
        Format::Json => serde_json::to_string_pretty(&c).context("serialising the comparison")? + "\n",
    };
    super::write_stdout(&out)?;
    Ok(if args.fail_on_regression && c.verdict == "worse" { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
