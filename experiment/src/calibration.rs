//! The calibration run and its grading: the no-skill reference agent over the
//! calibration subset under all six conditions, graded against the anchor
//! (docs/formats.md#calibration). `calibrate --records` grades an existing run;
//! without it [`run_sweep`] submits the sweep, follows it and exports it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use skillshift_analysis::calibration::{
    analyse_subset, cell_uids, compute_anchor, format_line, grade, Anchor, CalibrationError, CalibrationSet,
};
use skillshift_analysis::records::{read_file, TreatmentRecords};
use skillshift_common::ids::{Condition, Site};
use skillshift_coordinator::status::SweepState;

use crate::settings::{Connect, Skills, SweepSettings};

/// What a calibration sweep runs, besides what the anchor fixes.
#[derive(Debug, Clone)]
pub struct CalibrationRun {
    pub sites: Vec<Site>,
    pub subset: PathBuf,
    pub agent: String,
    /// The model of the run (default: the anchor's).
    pub model: Option<String>,
    /// The provider its contract names (`--provider`); refused when the endpoint is another.
    pub provider: Option<String>,
    /// The sampling temperature of the run (default: the anchor's).
    pub temperature: Option<f64>,
    pub seed: u64,
    pub task_timeout_s: u64,
    pub max_retries: u32,
    pub data: PathBuf,
    /// Where the run's per_task.jsonl goes.
    pub out: PathBuf,
    pub conn: Connect,
    /// A demo on `--simulate` workers (`--allow-simulated`): the sweep's contract says `simulated`.
    pub simulated: bool,
}

/// The step budget of the run: the anchor's, and a different one given is refused before
/// anything runs.
pub fn check_budget(anchor: &Anchor, max_steps: Option<u32>) -> Result<u32, CalibrationError> {
    match max_steps {
        Some(given) if given != anchor.max_steps => {
            Err(CalibrationError::BudgetMismatch { given, anchor: anchor.max_steps })
        }
        _ => Ok(anchor.max_steps),
    }
}

/// Submits the calibration runs to the coordinator, follows them to the end and exports
/// their records to `out`/per_task.jsonl (with contract.json beside it), which it returns.
pub fn run_sweep(run: &CalibrationRun, anchor: &Anchor, max_steps: u32) -> anyhow::Result<PathBuf> {
    // An anchor may not name its model ("unknown"); then only --model says which.
    let anchored = Some(anchor.model.as_str()).filter(|m| !m.is_empty() && *m != "unknown");
    if let (Some(given), Some(anchored)) = (&run.model, anchored) {
        if given != anchored {
            eprintln!(
                "skillshift: warning: --model {given} differs from the anchor's model {anchored}; deviations then \
                 measure the model as well as the environment"
            );
        }
    }
    if let Some(given) = run.temperature.filter(|t| *t != anchor.temperature) {
        eprintln!(
            "skillshift: warning: --temperature {given} differs from the anchor's temperature {}; deviations then \
             measure the sampling as well as the environment",
            anchor.temperature
        );
    }
    let settings = SweepSettings {
        sites: run.sites.clone(),
        families: Some(run.subset.clone()),
        skills: Skills::None,
        agent: run.agent.clone(),
        model: run.model.clone().or(anchored.map(String::from)),
        provider: run.provider.clone(),
        temperature: Some(run.temperature.unwrap_or(anchor.temperature)),
        max_steps,
        task_timeout_s: run.task_timeout_s,
        max_retries: run.max_retries,
        seed: run.seed,
        simulated: run.simulated,
        ..SweepSettings::full_grid(run.data.clone())
    };
    let spec = crate::spec::build(&settings)?;
    let runs = crate::spec::units(&spec);
    let out = run.out.join("per_task.jsonl");
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async {
        let mut client = run.conn.client().await?;
        let id = client.submit(&spec).await?;
        eprintln!(
            "calibration sweep {id}: {runs} runs of agent '{}' at max_steps {max_steps} on {}",
            spec.agent, run.conn.coordinator
        );
        let st = crate::follow::follow(&run.conn, &id, crate::progress::interactive()).await?;
        eprintln!("{}", crate::follow::one_line(&st));
        if st.state == SweepState::Cancelled {
            anyhow::bail!(
                "calibration sweep {id} was cancelled; nothing graded (resume it, then grade its export with --records)"
            );
        }
        let n = crate::export::export(&mut client, &id, &out).await?;
        eprintln!("calibration sweep {id}: wrote {n} records to {}", out.display());
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(out)
}

/// The graded lines of a run, and whether any gated value is beyond the threshold.
pub struct Graded {
    pub text: String,
    pub flagged: usize,
}

/// Refuses records a `--simulate` worker made up, unless `allow` (a demo); returns whether any was.
fn check_simulated(what: &str, t: &TreatmentRecords, allow: bool) -> Result<bool, CalibrationError> {
    let count = t.rows.iter().filter(|r| r.simulated).count();
    if count > 0 && !allow {
        return Err(CalibrationError::SimulatedRecords {
            what: what.to_string(),
            count,
            total: t.rows.len(),
            treatment: t.name.clone(),
        });
    }
    Ok(count > 0)
}

/// Said first when `--allow-simulated` let made-up records or a made-up anchor through.
pub const SIMULATED_CALIBRATION: &str = "SIMULATED: made-up records (--allow-simulated); this calibration measures \
    nothing about any environment";

/// Grades the records of `records` against the anchor; `allow_simulated` (a demo) lets made-up
/// records or a simulated anchor through and marks the output.
#[allow(clippy::too_many_arguments)]
pub fn grade_records(
    records: &Path,
    treatment: Option<&str>,
    set: &CalibrationSet,
    sites: &[Site],
    anchor: &Anchor,
    reference: &Path,
    threshold: f64,
    allow_simulated: bool,
) -> anyhow::Result<Graded> {
    if anchor.simulated && !allow_simulated {
        return Err(CalibrationError::SimulatedAnchor(reference.to_path_buf()).into());
    }
    let rs = read_file(records)?;
    let t = rs.select(treatment)?;
    let simulated =
        check_simulated(&format!("the records of {}", records.display()), t, allow_simulated)? || anchor.simulated;
    let a = analyse_subset(t, set, sites)?;
    let graded = grade(&a, anchor, threshold, sites)?;
    let mut out = if simulated { format!("{SIMULATED_CALIBRATION}\n") } else { String::new() };
    out.push_str(&format!(
        "calibrate: {} (treatment {}, {} records of calibration families) against {} (threshold {threshold:.1} sigma, \
         max_steps {})\n",
        records.display(),
        t.name,
        a.records,
        reference.display(),
        anchor.max_steps
    ));
    for g in &graded {
        out.push_str(&format_line(g));
        out.push('\n');
    }
    let gated = graded.iter().filter(|g| g.gated).count();
    let flagged = graded.iter().filter(|g| g.flagged).count();
    if flagged == 0 && simulated {
        out.push_str(&format!(
            "calibration: all {gated} gated values within {threshold:.1} sigma of a simulated comparison: nothing \
             about the environment is known\n"
        ));
    } else if flagged == 0 {
        out.push_str(&format!(
            "calibration: all {gated} gated values within {threshold:.1} sigma: the environment matches the anchor\n"
        ));
    } else {
        out.push_str(&format!(
            "calibration: {flagged} of {gated} gated values beyond {threshold:.1} sigma: something differs from the \
             anchor's environment (check the images named above)\n"
        ));
    }
    Ok(Graded { text: out, flagged })
}

/// `--dry-run`: the cells, task counts and uids of the plan; nothing is run.
pub fn dry_run(set: &CalibrationSet, sites: &[Site], path: &Path) -> anyhow::Result<String> {
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
    Ok(out)
}

/// What `calibrate anchor` computes an anchor from.
pub struct AnchorInput<'a> {
    pub records: &'a Path,
    pub treatment: Option<&'a str>,
    pub set: &'a CalibrationSet,
    pub sites: &'a [Site],
    /// `--agent`: who produced the records, when no contract.json beside them says so (and, when one does,
    /// what it must say).
    pub agent: Option<&'a str>,
    /// `--allow-non-reference`: an anchor of another agent than `reference` (it is labelled with that agent).
    pub allow_non_reference: bool,
    /// `--allow-simulated`: made-up records make a demo anchor, marked `"simulated": true`.
    pub allow_simulated: bool,
    pub model: &'a str,
    pub max_steps: u32,
    /// Image digests to record (image name -> digest), if the file exists.
    pub digests: &'a Path,
}

/// Computes an anchor (value and sigma per cell) from a reference run's records; returns it
/// with the number of records and the treatment it was computed from.
pub fn anchor_from(input: &AnchorInput) -> anyhow::Result<(Anchor, usize, String)> {
    let rs = read_file(input.records)?;
    let t = rs.select(input.treatment)?;
    let agent = anchor_agent(input)?;
    let simulated = check_simulated(&format!("the records of {}", input.records.display()), t, input.allow_simulated)?;
    let analysis = analyse_subset(t, input.set, input.sites)?;
    let images: BTreeMap<String, String> =
        match skillshift_common::bounded::read_to_string(input.digests, skillshift_common::bounded::MAX_FILE_BYTES) {
            Ok(text) => serde_json::from_str(&text)
                .with_context(|| format!("{}: not an image digest map", input.digests.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", input.digests.display())),
        };
    let mut anchor = compute_anchor(&analysis, input.sites, &agent, input.model, input.max_steps, images)?;
    anchor.simulated = simulated;
    Ok((anchor, analysis.records, t.name.clone()))
}

/// The agent that produced the records: the one contract.json beside them names (a `--agent` that
/// disagrees is refused), else `--agent`; an anchor of an agent other than `reference` only with
/// `--allow-non-reference`.
fn anchor_agent(input: &AnchorInput) -> anyhow::Result<String> {
    let flag = format!("calibrate anchor --records {}", input.records.display());
    let contract = skillshift_analysis::compare::contract_beside(input.records).map_err(anyhow::Error::msg)?;
    let named = contract.as_ref().and_then(|c| c.pointer("/agent/name")).and_then(|v| v.as_str());
    let agent = match (named, input.agent) {
        (Some(named), Some(given)) if named != given => anyhow::bail!(
            "{flag}: --agent {given}, but contract.json beside the records says agent '{named}' produced them"
        ),
        (Some(named), _) => named.to_string(),
        (None, Some(given)) => given.to_string(),
        (None, None) => anyhow::bail!(
            "{flag}: no contract.json beside the records names the agent that produced them; say which with --agent"
        ),
    };
    if agent != "reference" && !input.allow_non_reference {
        anyhow::bail!(
            "{flag}: the records were produced by agent '{agent}', not the no-skill reference agent an anchor \
             describes (--allow-non-reference makes an anchor labelled '{agent}')"
        );
    }
    Ok(agent)
}
