//! `skillshift compare --baseline A --candidate B`: SR deltas per cell and
//! overall with 95% intervals, a verdict, the `delta >= 0` verdict of the comparison seed, the
//! frozen-contract check (`contract.json` beside each records file), each side's LLM use and,
//! with `--gates`, each side's readiness (docs/formats.md#compare).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use skillshift_analysis::cells::analyse;
use skillshift_analysis::compare::{
    apply_gates, check_contract, compare, contract_beside, render_text, Side, SideInfo,
};
use skillshift_analysis::gates;
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
    #[arg(long, visible_alias = "baseline-treatment")]
    pub treatment_baseline: Option<String>,
    /// The candidate's treatment, when its file holds several.
    #[arg(long, visible_alias = "candidate-treatment")]
    pub treatment_candidate: Option<String>,
    /// Output format: table, markdown, json or html.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Exit 1 when the verdict is `worse`.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Readiness gates (skillshift.gates/1) applied to both sides; the candidate's readiness sets the exit code.
    #[arg(long, value_name = "GATES.json")]
    pub gates: Option<PathBuf>,
    /// A demo: compare two runs of made-up records (--simulate), marked as such; a simulated side against a
    /// real one is refused even so.
    #[arg(long)]
    pub allow_simulated: bool,
}

/// Made-up records are never compared with a measurement, and with each other only for a demo.
fn check_simulated(args: &Args, baseline: bool, candidate: bool) -> anyhow::Result<()> {
    let side = |simulated: bool, file: &PathBuf| {
        format!("{} ({})", file.display(), if simulated { "simulated" } else { "real" })
    };
    if baseline != candidate {
        anyhow::bail!(
            "the baseline {} and the candidate {} mix records a --simulate worker made up with real ones; a \
             made-up side measures nothing and is never compared with a measurement",
            side(baseline, &args.baseline),
            side(candidate, &args.candidate)
        );
    }
    if baseline && !args.allow_simulated {
        anyhow::bail!(
            "the records of {} were made up by a --simulate worker (\"simulated\": true): they measure nothing, so \
             no verdict rests on them (--allow-simulated, for a demo, marks the output)",
            args.baseline.display()
        );
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let gates = args.gates.as_deref().map(gates::load).transpose()?;
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
    check_simulated(&args, ba.simulated, ca.simulated)?;
    let bc = contract_beside(&args.baseline).map_err(|e| anyhow!(e))?;
    let cc = contract_beside(&args.candidate).map_err(|e| anyhow!(e))?;
    let (bf, cf) = (args.baseline.display().to_string(), args.candidate.display().to_string());
    let contract = check_contract(
        Side { file: &bf, contract: bc.as_ref(), digests: &ba.config_digests, treatment: &ba.treatment },
        Side { file: &cf, contract: cc.as_ref(), digests: &ca.config_digests, treatment: &ca.treatment },
        same_file,
    );
    let mut c = compare(&ba, &ca, SideInfo::of(&args.baseline, &ba), SideInfo::of(&args.candidate, &ca), contract);
    if let Some(g) = &gates {
        apply_gates(&mut c, g, &ba, &ca);
    }
    let out = match args.format {
        Format::Table => render_text(&c),
        Format::Json => serde_json::to_string_pretty(&c).context("serialising the comparison")? + "\n",
    };
    super::write_stdout(&out)?;
    let regression = args.fail_on_regression && c.verdict == "worse";
    Ok(ExitCode::from(match c.candidate_readiness_exit() {
        1 => 1,
        _ if regression => 1,
        code => code,
    }))
}
