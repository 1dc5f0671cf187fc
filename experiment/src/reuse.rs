//! Baseline reuse (docs/cli.md#baseline-reuse): the records of an earlier run
//! stand in for a treatment of a new sweep, so a candidate does not pay for its
//! baseline again.
//!
//! `--reuse-baseline FILE` names an earlier run's `per_task.jsonl` (with its
//! `contract.json` beside it), whose records stand in for the sweep's baseline
//! treatment, the first `--treatment`. At submit, [`for_spec`] checks that run
//! against the new sweep: the same `config_digest` (so every frozen field agrees; a
//! refusal lists the fields that differ), records no older than [`MAX_AGE`],
//! the same skill library for the baseline treatment, and a record for every
//! unit the new sweep plans for it. The baseline is then taken out of the
//! spec ([`Baseline::remaining`]), and at export [`merge`] appends their
//! records to the new `per_task.jsonl` and says in `contract.json` which
//! treatment came from which file and sweep. Both sides then carry one
//! `config_digest`, and `compare` pairs them unit by unit as if one sweep had
//! run both.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::{json, Value};
use skillshift_analysis::compare::contract::{contract_diff, frozen, treatment_of};
use skillshift_common::bounded::{self, Line};
use skillshift_common::Record;
use skillshift_coordinator::limits::Limits;
use skillshift_coordinator::planner::{self, SweepSpec};

/// How old a reused record may be: the comparison seed caches baselines for 7 days.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// An earlier run whose treatments stand in for some of a new sweep's.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub path: PathBuf,
    /// Its `contract.json`.
    pub contract: Value,
    pub digest: String,
    /// The reused treatments, in the new sweep's order.
    pub treatments: Vec<String>,
    /// The sweeps its reused records came from.
    pub sweeps: BTreeSet<String>,
    /// Every treatment of the comparison in its order, the reused (baseline) ones first: the order of
    /// `treatments` in the merged `contract.json`.
    pub order: Vec<String>,
    /// The reused records, as their lines.
    lines: Vec<String>,
}

impl Baseline {
    pub fn records(&self) -> usize {
        self.lines.len()
    }

    /// `spec` without the reused treatments: what is left to run.
    pub fn remaining(&self, spec: &SweepSpec) -> anyhow::Result<SweepSpec> {
        let mut rest = spec.clone();
        rest.treatments.retain(|t| !self.treatments.contains(&t.name));
        if rest.treatments.is_empty() {
            bail!(
                "--reuse-baseline {}: it holds every treatment of the sweep ({}); nothing is left to run",
                self.path.display(),
                self.treatments.join(", ")
            );
        }
        Ok(rest)
    }

    /// One line for the terminal: what is reused from where.
    pub fn describe(&self) -> String {
        let sweeps: Vec<&str> = self.sweeps.iter().map(String::as_str).collect();
        format!(
            "reusing {} records of {} from {} (sweep {}), config_digest {}",
            self.lines.len(),
            self.treatments.join(", "),
            self.path.display(),
            if sweeps.is_empty() { "unknown".to_string() } else { sweeps.join(", ") },
            self.digest
        )
    }
}

/// An earlier run as read: its contract and its records, line by line.
struct Loaded {
    path: PathBuf,
    contract: Value,
    digest: String,
    records: Vec<(Record, String)>,
}

fn load(path: &Path) -> anyhow::Result<Loaded> {
    let flag = format!("--reuse-baseline {}", path.display());
    // The whole file is validated first, as `report` would.
    skillshift_analysis::records::read_file(path).with_context(|| flag.clone())?;
    let contract = skillshift_analysis::compare::contract_beside(path)
        .map_err(|e| anyhow::anyhow!("{flag}: {e}"))?
        .with_context(|| format!("{flag}: no contract.json beside it, so its frozen contract cannot be checked"))?;
    let digest = contract
        .get("config_digest")
        .and_then(Value::as_str)
        .with_context(|| format!("{flag}: its contract.json has no config_digest"))?
        .to_string();
    let file = std::fs::File::open(path).with_context(|| format!("{flag}: opening it"))?;
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut records = Vec::new();
    let mut line = 0u64;
    loop {
        line += 1;
        match bounded::read_line(&mut reader, &mut buf, skillshift_analysis::records::MAX_LINE_BYTES)
            .with_context(|| format!("{flag}: reading line {line}"))?
        {
            Line::End => break,
            Line::TooLong => bail!("{flag}:{line}: the line is longer than the records reader accepts"),
            Line::Read => {}
        }
        let text = String::from_utf8_lossy(&buf).trim().to_string();
        if text.is_empty() {
            continue;
        }
        let rec: Record = serde_json::from_str(&text).with_context(|| format!("{flag}:{line}: not a record"))?;
        // contract.json alone proves nothing about the lines beside it: each must carry its digest.
        if rec.config_digest.as_deref() != Some(digest.as_str()) {
            bail!(
                "{flag}:{line}: the record's config_digest is {}, not the {digest} of contract.json beside it; a \
                 record of another contract (or of none) is never reused",
                rec.config_digest.as_deref().unwrap_or("absent")
            );
        }
        records.push((rec, text));
    }
    Ok(Loaded { path: path.to_path_buf(), contract, digest, records })
}

/// Why a baseline's contract is not the sweep's: the differing frozen fields.
fn differs(old: &Value, new: &Value) -> String {
    let fields = contract_diff(&frozen(old), &frozen(new));
    if fields.is_empty() {
        "its config_digest differs, though no frozen field does (a contract of an older skillshift?)".into()
    } else {
        format!("its frozen contract differs in {}", fields.join(", "))
    }
}

/// Checks the earlier run at `path` against `spec` and picks the treatments it stands in for.
pub fn for_spec(path: &Path, spec: &SweepSpec) -> anyhow::Result<Baseline> {
    let loaded = load(path)?;
    let flag = format!("--reuse-baseline {}", path.display());
    let (contract, digest) = planner::contract(spec);
    if loaded.digest != digest {
        bail!(
            "{flag}: {}; nothing can be reused (config_digest {} vs {digest})",
            differs(&loaded.contract, &contract),
            loaded.digest
        );
    }
    check_simulated(&flag, &loaded.records, spec.simulated)?;
    let held: BTreeSet<&str> = loaded.records.iter().filter_map(|(r, _)| r.treatment.as_deref()).collect();
    if spec.treatments.iter().all(|t| held.contains(t.name.as_str())) {
        let all: Vec<&str> = spec.treatments.iter().map(|t| t.name.as_str()).collect();
        bail!(
            "{flag}: it holds every treatment of the sweep ({}); nothing is left to run (reuse a run of the \
             baseline alone, or compare the runs you have)",
            all.join(", ")
        );
    }
    // The baseline is the first treatment, as `compare` reads a pair.
    let baseline = spec.treatments.first().map(|t| t.name.clone()).context("the sweep has no treatment")?;
    if !held.contains(baseline.as_str()) {
        let held: Vec<&str> = held.into_iter().collect();
        bail!(
            "{flag}: it holds no records of the baseline treatment {baseline} (the first --treatment); it holds {}",
            held.join(", ")
        );
    }
    let reused = vec![baseline];
    for t in spec.treatments.iter().filter(|t| reused.contains(&t.name)) {
        let theirs = treatment_of(Some(&loaded.contract), &t.name).get("skill_library").cloned().unwrap_or(Value::Null);
        let ours = planner::library_digest(t).map_or(Value::Null, Value::String);
        if theirs != ours {
            bail!("{flag}: treatment {}'s skill library is {theirs} there and {ours} here; nothing reused", t.name);
        }
    }
    check_age(&flag, &loaded.records, &reused)?;
    // Every unit the sweep plans for a reused treatment must have a record there.
    let units = planner::plan(spec, &Limits::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut have: BTreeMap<(&str, String, String, u32), ()> = BTreeMap::new();
    for (r, _) in &loaded.records {
        let Some(t) = r.treatment.as_deref() else { continue };
        have.insert((t, r.uid.to_string(), r.condition.to_string(), r.rep.unwrap_or(0)), ());
    }
    let mut wanted = BTreeSet::new();
    let mut missing = Vec::new();
    for u in &units {
        let name = spec.treatments[u.treatment as usize].name.as_str();
        if !reused.iter().any(|n| n == name) {
            continue;
        }
        let key = (name, u.uid().to_string(), u.condition.to_string(), u.rep);
        if have.contains_key(&key) {
            wanted.insert((key.0.to_string(), key.1, key.2, key.3));
        } else {
            missing.push(format!("{} {} {} rep {}", key.0, key.1, key.2, key.3));
        }
    }
    if !missing.is_empty() {
        bail!(
            "{flag}: it lacks {} of the units this sweep plans for {} (the first: {}); run them, or reuse a run \
             of the same families, conditions and count",
            missing.len(),
            reused.join(", "),
            missing[0]
        );
    }
    let mut sweeps = BTreeSet::new();
    let lines = loaded
        .records
        .into_iter()
        .filter(|(r, _)| {
            let key = (
                r.treatment.clone().unwrap_or_default(),
                r.uid.to_string(),
                r.condition.to_string(),
                r.rep.unwrap_or(0),
            );
            wanted.contains(&key)
        })
        .map(|(r, line)| {
            if let Some(s) = r.sweep {
                sweeps.insert(s);
            }
            line
        })
        .collect();
    let order = spec.treatments.iter().map(|t| t.name.clone()).collect();
    Ok(Baseline { path: loaded.path, contract: loaded.contract, digest, treatments: reused, sweeps, lines, order })
}

/// Refuses records whose `simulated` mark is not the new run's: made-up records never stand in for a
/// measurement (nor real ones in a simulated run). A contract of an older skillshift has no `simulated`
/// field, so its records' own marks are what is checked.
fn check_simulated(flag: &str, records: &[(Record, String)], simulated: bool) -> anyhow::Result<()> {
    let made_up = records.iter().filter(|(r, _)| r.simulated == Some(true)).count();
    if !simulated && made_up > 0 {
        bail!(
            "{flag}: {made_up} of its {} records were made up by a --simulate worker (\"simulated\": true) and \
             this run is real; made-up records never stand in for a measurement",
            records.len()
        );
    }
    if simulated && made_up < records.len() {
        bail!(
            "{flag}: {} of its {} records are real measurements and this run is simulated; the two never mix",
            records.len() - made_up,
            records.len()
        );
    }
    Ok(())
}

/// Refuses records older than [`MAX_AGE`] (by `finished_at`; records without one are not dated).
fn check_age(flag: &str, records: &[(Record, String)], reused: &[String]) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let max = chrono::Duration::from_std(MAX_AGE).context("the reuse age bound")?;
    let oldest = records
        .iter()
        .filter(|(r, _)| r.treatment.as_ref().is_some_and(|t| reused.contains(t)))
        .filter_map(|(r, _)| r.finished_at.as_deref())
        .filter_map(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .min();
    if let Some(oldest) = oldest {
        if now.signed_duration_since(oldest) > max {
            bail!(
                "{flag}: its records go back to {}, more than {} days ago; a baseline is reused for at most {} days",
                oldest.to_rfc3339(),
                MAX_AGE.as_secs() / 86_400,
                MAX_AGE.as_secs() / 86_400
            );
        }
    }
    Ok(())
}

/// For `sweep export`: the earlier run at `path`, checked against the exported `contract`; it stands in for
/// every treatment it holds that the sweep did not run.
pub fn for_export(path: &Path, contract: &Value) -> anyhow::Result<Baseline> {
    let loaded = load(path)?;
    let flag = format!("--reuse-baseline {}", path.display());
    let digest = contract.get("config_digest").and_then(Value::as_str).unwrap_or_default().to_string();
    if loaded.digest != digest {
        bail!("{flag}: {}; nothing merged", differs(&loaded.contract, contract));
    }
    let ran: BTreeSet<&str> = contract
        .get("treatments")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut treatments = Vec::new();
    for (r, _) in &loaded.records {
        match r.treatment.as_deref() {
            Some(t) if !ran.contains(t) && !treatments.iter().any(|x| x == t) => treatments.push(t.to_string()),
            _ => {}
        }
    }
    if treatments.is_empty() {
        bail!("{flag}: every treatment it holds ran in this sweep too; nothing to merge");
    }
    check_simulated(&flag, &loaded.records, contract.get("simulated") == Some(&Value::Bool(true)))?;
    check_age(&flag, &loaded.records, &treatments)?;
    let mut sweeps = BTreeSet::new();
    let mut lines = Vec::new();
    for (r, line) in loaded.records {
        let Some(t) = r.treatment.clone() else { continue };
        if ran.contains(t.as_str()) {
            continue;
        }
        if let Some(s) = r.sweep {
            sweeps.insert(s);
        }
        lines.push(line);
    }
    // The reused treatments are the baseline: first, then the ones this sweep ran.
    let order = treatments.iter().cloned().chain(ran.iter().map(|t| t.to_string())).collect();
    Ok(Baseline { path: loaded.path, contract: loaded.contract, digest, treatments, sweeps, lines, order })
}

/// Appends the baseline's records to the exported `records` and names, in `contract.json` beside them,
/// the file and sweep each reused treatment came from. Returns the number of records appended.
pub fn merge(records: &Path, baseline: &Baseline) -> anyhow::Result<usize> {
    let cpath = crate::export::contract_path(records);
    let text = bounded::read_to_string(&cpath, bounded::MAX_FILE_BYTES)
        .with_context(|| format!("reading {}", cpath.display()))?;
    let mut contract: Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", cpath.display()))?;
    if contract.get("config_digest").and_then(Value::as_str) != Some(baseline.digest.as_str()) {
        bail!(
            "{}: its config_digest is not the reused baseline's {}; nothing merged",
            cpath.display(),
            baseline.digest
        );
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(records)
        .with_context(|| format!("appending to {}", records.display()))?;
    let mut w = std::io::BufWriter::new(&mut file);
    for line in &baseline.lines {
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    drop(w);
    let sweeps: Vec<&str> = baseline.sweeps.iter().map(String::as_str).collect();
    if let Some(m) = contract.as_object_mut() {
        let mut ran = match m.get("treatments") {
            Some(Value::Object(t)) => t.clone(),
            _ => serde_json::Map::new(),
        };
        for name in &baseline.treatments {
            let mut section = treatment_of(Some(&baseline.contract), name);
            if let Some(s) = section.as_object_mut() {
                s.insert(
                    "reused_from".into(),
                    json!({"records": baseline.path.display().to_string(), "sweeps": sweeps}),
                );
            }
            ran.insert(name.clone(), section);
        }
        // In the comparison's order, the baseline first (`compare` and readers take the first as the baseline).
        let mut ordered = serde_json::Map::new();
        for name in &baseline.order {
            if let Some(v) = ran.remove(name) {
                ordered.insert(name.clone(), v);
            }
        }
        ordered.extend(ran);
        // In place: the key keeps its position in the file.
        match m.get_mut("treatments") {
            Some(slot) => *slot = Value::Object(ordered),
            None => {
                m.insert("treatments".into(), Value::Object(ordered));
            }
        }
    }
    std::fs::write(&cpath, serde_json::to_string_pretty(&contract)? + "\n")
        .with_context(|| format!("writing {}", cpath.display()))?;
    Ok(baseline.lines.len())
}
