//! Calibration (docs/formats.md#calibration): the 30-family subset rule, the
//! anchor file, grading a run against it, and computing an anchor from a
//! reference run.
//!
//! The subset is a stated rule, `index_j = floor(j * n_tasks / k)`, so anyone
//! can recompute it; `data/calibration_set.json` is its output. A cell's
//! deviation is |observed - value| / sigma, flagged beyond the threshold; only
//! SR and AS gate, ASC and SFR are printed `[not gated]`.
//!
//! What the gate refuses to grade (exit 2, never a pass): a threshold or a
//! sigma that is not a finite number >= 0 (NaN and infinity would pass
//! anything), and records that leave a family of the subset unmeasured in
//! some cell ([`check_coverage`]). An anchor's value and the observed value
//! are the same expression of the same counts ([`CellStats::sr`] and the
//! means), so with sigma 0 the records an anchor was made from grade as equal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cells::{analyse, Analysis, CellStats};
use crate::records::TreatmentRecords;
use skillshift_common::bounded::{self, MAX_FILE_BYTES};
use skillshift_common::ids::{Condition, Site};
use skillshift_common::text::json_error;

pub const RULE: &str = "index_j = floor(j * n_tasks / k)";
/// Families per site in the subset: GitLab 14, Magento 10, WordPress 6.
pub fn k_of(site: Site) -> usize {
    match site {
        Site::Gitlab => 14,
        Site::Magento => 10,
        Site::Wordpress => 6,
    }
}

/// `floor(j * n_tasks / k)` for j = 0 .. k-1.
pub fn families(n_tasks: usize, k: usize) -> Vec<u32> {
    (0..k).map(|j| (j * n_tasks / k) as u32).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteSubset {
    pub n_tasks: usize,
    pub k: usize,
    pub families: Vec<u32>,
}

/// `data/calibration_set.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationSet {
    pub rule: String,
    pub sites: BTreeMap<Site, SiteSubset>,
}

impl CalibrationSet {
    /// The subset the rule gives.
    pub fn from_rule() -> Self {
        let sites = Site::ALL
            .iter()
            .map(|&s| (s, SiteSubset { n_tasks: s.n_tasks(), k: k_of(s), families: families(s.n_tasks(), k_of(s)) }))
            .collect();
        CalibrationSet { rule: RULE.to_string(), sites }
    }

    /// The file's text as shipped: pretty JSON, families on one line per site.
    pub fn to_json(&self) -> String {
        let mut out = format!("{{\n  \"rule\": \"{}\",\n  \"sites\": {{\n", self.rule);
        let n = self.sites.len();
        for (i, (site, s)) in self.sites.iter().enumerate() {
            let fams: Vec<String> = s.families.iter().map(u32::to_string).collect();
            out.push_str(&format!(
                "    \"{site}\": {{\"n_tasks\": {}, \"k\": {}, \"families\": [{}]}}{}\n",
                s.n_tasks,
                s.k,
                fams.join(", "),
                if i + 1 < n { "," } else { "" }
            ));
        }
        out.push_str("  }\n}\n");
        out
    }

    pub fn contains(&self, site: Site, task_id: u32) -> bool {
        self.sites.get(&site).is_some_and(|s| s.families.contains(&task_id))
    }
}

/// A value and its standard error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ValueSigma {
    pub value: f64,
    pub sigma: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnchorCell {
    #[serde(rename = "SR", default, skip_serializing_if = "Option::is_none")]
    pub sr: Option<ValueSigma>,
    #[serde(rename = "AS", default, skip_serializing_if = "Option::is_none")]
    pub as_: Option<ValueSigma>,
    #[serde(rename = "ASC", default, skip_serializing_if = "Option::is_none")]
    pub asc: Option<ValueSigma>,
}

/// `data/reference_results/reference-react.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anchor {
    pub status: String,
    pub agent: String,
    pub model: String,
    pub temperature: f64,
    pub max_steps: u32,
    pub threshold_sigma: f64,
    #[serde(default)]
    pub images: BTreeMap<String, String>,
    #[serde(default)]
    pub cells: BTreeMap<Site, BTreeMap<Condition, AnchorCell>>,
    /// Computed from records a `--simulate` worker made up (`calibrate anchor --allow-simulated`, a demo):
    /// it measures nothing, and grading refuses it unless told the same. Absent on a real anchor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// Why calibration could not be checked (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    #[error("calibration subset missing: cannot read {0}: {1}")]
    SubsetMissing(PathBuf, std::io::Error),
    #[error("{0}: not a calibration set: {1}")]
    SubsetInvalid(PathBuf, String),
    #[error("cannot read anchor {0}: {1}")]
    AnchorRead(PathBuf, std::io::Error),
    #[error("{0}: not an anchor file: {1}")]
    AnchorInvalid(PathBuf, String),
    /// An anchor that reads as JSON but holds a value no gate could use.
    #[error("{0}: not an anchor file: {1}")]
    AnchorUnsound(PathBuf, AnchorProblem),
    #[error(
        "the anchor in {0} is unpublished: there is nothing to grade against yet (see \
         data/reference_results/README.md); calibrate never reports a pass it did not earn"
    )]
    Unpublished(PathBuf),
    #[error(
        "step budget --max-steps {given} differs from the anchor's max_steps {anchor}: AS is a count of steps, \
         so the two cannot be graded against each other; nothing was run"
    )]
    BudgetMismatch { given: u32, anchor: u32 },
    #[error("records missing for cell {site} {condition}: no evaluable record of a calibration family")]
    MissingCell { site: Site, condition: Condition },
    #[error(
        "records missing for cell {site} {condition}: no evaluable record of calibration {} ({} of the subset's {families} \
         families unmeasured); a cell is graded only on every family of the subset",
        family_list(.missing),
        .missing.len()
    )]
    MissingFamilies { site: Site, condition: Condition, missing: Vec<u32>, families: usize },
    #[error("the calibration subset has no families for {0}")]
    SiteNotInSubset(Site),
    #[error("threshold {0} is not a finite number of sigmas >= 0: a gate with it would not measure anything")]
    InvalidThreshold(f64),
    #[error("the anchor has no {metric} for cell {site} {condition}")]
    AnchorCellMissing { site: Site, condition: Condition, metric: &'static str },
    #[error(
        "{what} made up by a --simulate worker ({count} of {total} records of treatment {treatment} say \"simulated\": \
         true): they measure nothing, so no calibration rests on them (--allow-simulated, for a demo, marks the output)"
    )]
    SimulatedRecords { what: String, count: usize, total: usize, treatment: String },
    #[error(
        "the anchor {0} was computed from simulated records (\"simulated\": true): it measures nothing \
         (--allow-simulated, for a demo, marks the output)"
    )]
    SimulatedAnchor(PathBuf),
}

/// What is wrong with an anchor that reads as JSON ([`load_anchor`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnchorProblem {
    #[error("threshold_sigma is {0}: it must be a finite number of sigmas >= 0")]
    Threshold(f64),
    #[error("cell {site} {condition} {metric}: sigma {sigma} is not a finite number >= 0")]
    Sigma { site: Site, condition: Condition, metric: &'static str, sigma: f64 },
    /// A value outside its metric's `range` (`in [0, 100]` for SR, `>= 0` otherwise).
    #[error("cell {site} {condition} {metric}: value {value} is not {range}")]
    Value { site: Site, condition: Condition, metric: &'static str, value: f64, range: &'static str },
}

/// `11, 23, 34` (at most ten, then how many more), for a message.
fn family_list(families: &[u32]) -> String {
    let shown: Vec<String> = families.iter().take(10).map(u32::to_string).collect();
    let word = if families.len() == 1 { "family" } else { "families" };
    match families.len() {
        n if n > 10 => format!("{word} {} and {} more", shown.join(", "), n - 10),
        _ => format!("{word} {}", shown.join(", ")),
    }
}

/// Reads a calibration set of at most [`MAX_FILE_BYTES`]: every family below
/// its site's task count, none twice, none of its sites empty.
pub fn load_set(path: &Path) -> Result<CalibrationSet, CalibrationError> {
    let text = bounded::read_to_string(path, MAX_FILE_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => CalibrationError::SubsetInvalid(path.into(), e.to_string()),
        _ => CalibrationError::SubsetMissing(path.into(), e),
    })?;
    let set: CalibrationSet =
        serde_json::from_str(&text).map_err(|e| CalibrationError::SubsetInvalid(path.into(), json_error(&e)))?;
    for (site, s) in &set.sites {
        let invalid = |why: String| Err(CalibrationError::SubsetInvalid(path.into(), why));
        if let Some(bad) = s.families.iter().find(|&&f| f as usize >= site.n_tasks()) {
            return invalid(format!("family {bad} of {site} is not below {}", site.n_tasks()));
        }
        if s.families.is_empty() {
            return invalid(format!("{site} lists no family"));
        }
        let mut seen = BTreeSet::new();
        if let Some(twice) = s.families.iter().find(|&&f| !seen.insert(f)) {
            return invalid(format!("family {twice} of {site} is listed twice"));
        }
    }
    Ok(set)
}

/// A threshold that can gate: a finite number of sigmas, >= 0. NaN or
/// infinity would pass any deviation and a negative one fail an exact match.
pub fn check_threshold(threshold: f64) -> Result<f64, CalibrationError> {
    if threshold.is_finite() && threshold >= 0.0 {
        Ok(threshold)
    } else {
        Err(CalibrationError::InvalidThreshold(threshold))
    }
}

/// Reads an anchor of at most [`MAX_FILE_BYTES`]; its `threshold_sigma` and
/// every sigma must be finite and >= 0, every value finite and in range
/// (SR in [0, 100], AS and ASC >= 0).
pub fn load_anchor(path: &Path) -> Result<Anchor, CalibrationError> {
    let text =
        bounded::read_to_string(path, MAX_FILE_BYTES).map_err(|e| CalibrationError::AnchorRead(path.into(), e))?;
    let anchor: Anchor =
        serde_json::from_str(&text).map_err(|e| CalibrationError::AnchorInvalid(path.into(), json_error(&e)))?;
    check_anchor(&anchor).map_err(|why| CalibrationError::AnchorUnsound(path.into(), why))?;
    Ok(anchor)
}

fn check_anchor(a: &Anchor) -> Result<(), AnchorProblem> {
    if check_threshold(a.threshold_sigma).is_err() {
        return Err(AnchorProblem::Threshold(a.threshold_sigma));
    }
    for (site, conditions) in &a.cells {
        for (condition, cell) in conditions {
            for (metric, v, max) in [("SR", cell.sr, 100.0), ("AS", cell.as_, f64::MAX), ("ASC", cell.asc, f64::MAX)] {
                let Some(v) = v else { continue };
                let (site, condition) = (*site, *condition);
                if !(v.sigma.is_finite() && v.sigma >= 0.0) {
                    return Err(AnchorProblem::Sigma { site, condition, metric, sigma: v.sigma });
                }
                if !(v.value.is_finite() && (0.0..=max).contains(&v.value)) {
                    let range = if metric == "SR" { "in [0, 100]" } else { ">= 0" };
                    return Err(AnchorProblem::Value { site, condition, metric, value: v.value, range });
                }
            }
        }
    }
    Ok(())
}

/// Keep only the calibration families of the given sites, analyse them, and
/// refuse the result unless every family is measured in every cell
/// ([`check_coverage`]).
pub fn analyse_subset(
    t: &TreatmentRecords,
    set: &CalibrationSet,
    sites: &[Site],
) -> Result<Analysis, CalibrationError> {
    let mut sub = t.clone();
    sub.rows.retain(|r| sites.contains(&r.site) && set.contains(r.site, r.task_id));
    let a = analyse(&sub);
    check_coverage(&a, set, sites)?;
    Ok(a)
}

/// Every family of the subset has an evaluable record in every cell of
/// `sites`: an anchor's cell is a mean over all of its families, so a run
/// that measured fewer is not the same measurement and is not graded (nor
/// made into an anchor). The error names the cell and the families missing.
pub fn check_coverage(a: &Analysis, set: &CalibrationSet, sites: &[Site]) -> Result<(), CalibrationError> {
    let measured: BTreeSet<(Site, Condition, u32)> =
        a.units.iter().filter(|u| u.is_valid()).map(|u| (u.site, u.condition, u.task_id)).collect();
    for &site in sites {
        let subset = set.sites.get(&site).ok_or(CalibrationError::SiteNotInSubset(site))?;
        for &condition in Condition::ALL {
            let missing: Vec<u32> =
                subset.families.iter().copied().filter(|&f| !measured.contains(&(site, condition, f))).collect();
            if !missing.is_empty() {
                return Err(CalibrationError::MissingFamilies {
                    site,
                    condition,
                    missing,
                    families: subset.families.len(),
                });
            }
        }
    }
    Ok(())
}

/// One graded (cell, metric) line.
#[derive(Debug, Clone, PartialEq)]
pub struct Graded {
    pub site: Site,
    pub condition: Condition,
    pub metric: &'static str,
    pub observed: Option<f64>,
    pub anchor: Option<ValueSigma>,
    pub deviation: Option<f64>,
    pub gated: bool,
    pub flagged: bool,
}

/// |observed - value| / sigma; sigma 0 gives 0 when equal and infinity otherwise.
pub fn deviation(observed: f64, anchor: ValueSigma) -> f64 {
    let d = (observed - anchor.value).abs();
    if anchor.sigma > 0.0 {
        d / anchor.sigma
    } else if d == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Grade every (cell, metric) of `sites` against the anchor; `threshold`
/// must pass [`check_threshold`].
pub fn grade(a: &Analysis, anchor: &Anchor, threshold: f64, sites: &[Site]) -> Result<Vec<Graded>, CalibrationError> {
    let threshold = check_threshold(threshold)?;
    let mut out = Vec::new();
    for &site in sites {
        for &condition in Condition::ALL {
            let c: CellStats = a.cells.get(site, condition);
            if c.evaluable == 0 {
                return Err(CalibrationError::MissingCell { site, condition });
            }
            let cell = anchor.cells.get(&site).and_then(|m| m.get(&condition)).cloned().unwrap_or_default();
            let known = a.skill_calls_known;
            let rows: [(&'static str, Option<f64>, Option<ValueSigma>, bool); 4] = [
                ("SR", c.sr(), cell.sr, true),
                ("AS", c.as_(), cell.as_, true),
                ("ASC", c.asc(known), cell.asc, false),
                ("SFR", c.sfr(known), None, false),
            ];
            for (metric, observed, anchor_v, gated) in rows {
                if gated && anchor_v.is_none() {
                    return Err(CalibrationError::AnchorCellMissing { site, condition, metric });
                }
                let dev = observed.zip(anchor_v).map(|(o, v)| deviation(o, v));
                out.push(Graded {
                    site,
                    condition,
                    metric,
                    observed,
                    anchor: anchor_v,
                    deviation: dev,
                    gated,
                    flagged: gated && dev.is_some_and(|d| d > threshold),
                });
            }
        }
    }
    Ok(out)
}

/// The §7 output line, e.g.
/// `  gitlab     tgt       SR   observed    41.00  anchor    22.00 +/- 2.10    9.0 sigma  FAIL  [image gitlab-v2]`.
pub fn format_line(g: &Graded) -> String {
    let num = |v: Option<f64>| v.map_or_else(|| format!("{:>9}", "--"), |v| format!("{v:>9.2}"));
    let mut s = format!(
        "  {:<11}{:<10}{:<5}observed{}  anchor{}",
        g.site.as_str(),
        g.condition.as_str(),
        g.metric,
        num(g.observed),
        num(g.anchor.map(|a| a.value))
    );
    if let Some(a) = g.anchor {
        s.push_str(&format!(" +/- {:.2}", a.sigma));
    }
    match g.deviation {
        Some(d) if d.is_infinite() => s.push_str(&format!("{:>7} sigma", "inf")),
        Some(d) => s.push_str(&format!("{d:>7.1} sigma")),
        None => {}
    }
    if g.gated {
        s.push_str(if g.flagged { "  FAIL" } else { "  PASS" });
        s.push_str(&format!("  [image {}]", g.site.image(g.condition.version())));
    } else {
        s.push_str("  [not gated]");
    }
    s
}

/// Compute an anchor from a reference run: value and sigma per cell
/// (SR: 100 x sqrt(p(1-p)/n); AS and ASC: sample sd / sqrt(n)). Each value
/// is the very expression [`grade`] observes, so equal counts give equal values.
pub fn compute_anchor(
    a: &Analysis,
    sites: &[Site],
    agent: &str,
    model: &str,
    max_steps: u32,
    images: BTreeMap<String, String>,
) -> Result<Anchor, CalibrationError> {
    let mut cells: BTreeMap<Site, BTreeMap<Condition, AnchorCell>> = BTreeMap::new();
    for &site in sites {
        for &condition in Condition::ALL {
            let c = a.cells.get(site, condition);
            if c.evaluable == 0 {
                return Err(CalibrationError::MissingCell { site, condition });
            }
            let n = f64::from(c.evaluable);
            let p = f64::from(c.successes) / n;
            let se = |sd: Option<f64>| sd.unwrap_or(0.0) / n.sqrt();
            let cell = AnchorCell {
                sr: c.sr().map(|v| ValueSigma { value: v, sigma: 100.0 * (p * (1.0 - p) / n).sqrt() }),
                as_: c.as_().map(|v| ValueSigma { value: v, sigma: se(c.steps_sd()) }),
                asc: c.asc(a.skill_calls_known).map(|v| ValueSigma { value: v, sigma: se(c.calls_sd()) }),
            };
            cells.entry(site).or_default().insert(condition, cell);
        }
    }
    Ok(Anchor {
        status: "published".to_string(),
        agent: agent.to_string(),
        model: model.to_string(),
        temperature: 0.0,
        max_steps,
        threshold_sigma: 3.0,
        images,
        cells,
        simulated: false,
    })
}

/// The uids a cell of the subset runs.
pub fn cell_uids(set: &CalibrationSet, site: Site, condition: Condition) -> Vec<String> {
    set.sites
        .get(&site)
        .map(|s| {
            s.families
                .iter()
                .map(|&f| skillshift_common::ids::Uid::new(site, condition.version(), f).to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Sites named in a set, in table order.
pub fn set_sites(set: &CalibrationSet) -> BTreeSet<Site> {
    set.sites.keys().copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::ids::Version;

    fn data() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data")
    }

    #[test]
    fn shipped_subset_is_the_rules_output() {
        let set = CalibrationSet::from_rule();
        assert_eq!(set.sites[&Site::Gitlab].families[..3], [0, 11, 23]);
        assert_eq!(set.sites.values().map(|s| s.families.len()).sum::<usize>(), 30);
        if std::env::var_os("SKILLSHIFT_BLESS").is_some() {
            std::fs::write(data().join("calibration_set.json"), set.to_json()).unwrap();
        }
        let shipped = std::fs::read_to_string(data().join("calibration_set.json")).unwrap();
        assert_eq!(shipped, set.to_json(), "data/calibration_set.json differs from the rule's output");
        assert_eq!(load_set(&data().join("calibration_set.json")).unwrap(), set);
    }

    #[test]
    fn every_family_resolves_in_both_versions() {
        let set = CalibrationSet::from_rule();
        for (site, s) in &set.sites {
            for &f in &s.families {
                assert!((f as usize) < site.n_tasks());
            }
            for v in Version::ALL {
                let path = skillshift_common::task::task_file_path(&data(), *site, *v);
                let tasks = skillshift_common::task::load_task_file(&path, *site).unwrap();
                for &f in &s.families {
                    assert!(tasks.iter().any(|t| t.task_id == f), "{} lacks task {f}", path.display());
                }
            }
        }
    }

    #[test]
    fn deviation_and_line_format() {
        let g = Graded {
            site: Site::Gitlab,
            condition: Condition::Tgt,
            metric: "SR",
            observed: Some(41.0),
            anchor: Some(ValueSigma { value: 22.0, sigma: 2.1 }),
            deviation: Some(deviation(41.0, ValueSigma { value: 22.0, sigma: 2.1 })),
            gated: true,
            flagged: true,
        };
        assert_eq!(
            format_line(&g),
            "  gitlab     tgt       SR   observed    41.00  anchor    22.00 +/- 2.10    9.0 sigma  FAIL  [image gitlab-v2]"
        );
        assert_eq!(deviation(3.0, ValueSigma { value: 3.0, sigma: 0.0 }), 0.0);
        assert!(deviation(3.5, ValueSigma { value: 3.0, sigma: 0.0 }).is_infinite());
    }

    /// Records of every calibration family of `sites` under all six conditions; `ok`
    /// says which succeed, steps are `1 + family % 4` so AS varies.
    fn subset_records(sites: &[Site], ok: impl Fn(Site, u32, Condition) -> bool) -> String {
        let set = CalibrationSet::from_rule();
        let mut out = String::new();
        for &site in sites {
            for &f in &set.sites[&site].families {
                for &c in Condition::ALL {
                    out.push_str(&format!(
                        "{{\"uid\": \"skillshift.{site}.{}.{f}\", \"site\": \"{site}\", \"condition\": \"{c}\", \
                         \"success\": {}, \"steps\": {}, \"skill_calls\": null, \"skill_failures\": null}}\n",
                        c.version(),
                        ok(site, f, c),
                        1 + f % 4
                    ));
                }
            }
        }
        out
    }

    fn subset_of(text: &str, sites: &[Site]) -> Result<Analysis, CalibrationError> {
        let rs = crate::records::read(text.as_bytes(), Path::new("run.jsonl")).unwrap();
        analyse_subset(rs.select(None).unwrap(), &CalibrationSet::from_rule(), sites)
    }

    fn analysis_of(text: &str, sites: &[Site]) -> Analysis {
        subset_of(text, sites).unwrap()
    }

    /// An anchor computed from `text`, written as `calibrate anchor` writes it and read back.
    fn anchor_file(dir: &Path, anchor: &Anchor) -> PathBuf {
        let path = dir.join("anchor.json");
        std::fs::write(&path, serde_json::to_string_pretty(anchor).unwrap()).unwrap();
        path
    }

    #[test]
    fn a_threshold_that_silences_the_gate_is_refused() {
        let sites = [Site::Wordpress];
        let all_fail = analysis_of(&subset_records(&sites, |_, _, _| false), &sites);
        let all_pass = analysis_of(&subset_records(&sites, |_, _, _| true), &sites);
        let anchor = compute_anchor(&all_pass, &sites, "reference", "m", 10, BTreeMap::new()).unwrap();
        // 100 points off: flagged at the anchor's own threshold...
        assert!(grade(&all_fail, &anchor, 3.0, &sites).unwrap().iter().any(|g| g.flagged));
        // ...and a threshold that is not a finite number of sigmas >= 0 is no threshold at all.
        for t in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0] {
            assert!(grade(&all_fail, &anchor, t, &sites).is_err(), "threshold {t} was accepted");
        }
    }

    #[test]
    fn an_anchor_with_a_negative_sigma_or_threshold_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sites = [Site::Wordpress];
        let a = analysis_of(&subset_records(&sites, |_, f, _| f % 2 == 0), &sites);
        let good = compute_anchor(&a, &sites, "reference", "m", 10, BTreeMap::new()).unwrap();
        assert!(load_anchor(&anchor_file(dir.path(), &good)).is_ok());
        let mut bad = good.clone();
        bad.threshold_sigma = -1.0;
        let e = load_anchor(&anchor_file(dir.path(), &bad)).unwrap_err().to_string();
        assert!(e.contains("threshold_sigma"), "{e}");
        let mut bad = good.clone();
        if let Some(sr) = bad.cells.get_mut(&Site::Wordpress).and_then(|m| m.get_mut(&Condition::Tgt)) {
            sr.sr = Some(ValueSigma { value: 50.0, sigma: -2.0 });
        }
        let e = load_anchor(&anchor_file(dir.path(), &bad)).unwrap_err().to_string();
        assert!(e.contains("wordpress tgt SR") && e.contains("sigma"), "{e}");
    }

    #[test]
    fn sigma_zero_anchor_from_the_same_records_passes() {
        let dir = tempfile::tempdir().unwrap();
        // Success fractions such as 1/6, 1/3, 5/14, 3/10, ... whose percentages are not exact in binary.
        let ok = |site: Site, f: u32, c: Condition| (f as usize + c.index() + site.index()) % 3 == 0;
        let a = analysis_of(&subset_records(Site::ALL, ok), Site::ALL);
        let mut anchor = compute_anchor(&a, Site::ALL, "reference", "m", 10, BTreeMap::new()).unwrap();
        for cell in anchor.cells.values_mut().flat_map(|m| m.values_mut()) {
            for v in [&mut cell.sr, &mut cell.as_, &mut cell.asc].into_iter().flatten() {
                v.sigma = 0.0;
            }
        }
        let anchor = load_anchor(&anchor_file(dir.path(), &anchor)).unwrap();
        let graded = grade(&a, &anchor, 3.0, Site::ALL).unwrap();
        let flagged: Vec<String> = graded.iter().filter(|g| g.flagged).map(format_line).collect();
        assert!(flagged.is_empty(), "the same records, sigma 0: {flagged:#?}");
    }

    #[test]
    fn anchor_values_survive_the_file_exactly() {
        // Every SR and mean a cell of up to 400 records can have, written and read back bit for bit.
        let values: Vec<f64> = (1..=400u32)
            .flat_map(|n| (0..=n).map(move |s| 100.0 * f64::from(s) / f64::from(n)))
            .chain((1..=400u32).flat_map(|n| (0..=4 * n).map(move |s| f64::from(s) / f64::from(n))))
            .collect();
        let text = serde_json::to_string(&values).unwrap();
        let back: Vec<f64> = serde_json::from_str(&text).unwrap();
        let differ = values.iter().zip(&back).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        assert_eq!(differ, 0, "{differ} of {} values changed on the way through JSON", values.len());
    }

    #[test]
    fn records_of_one_family_are_not_graded() {
        let sites = [Site::Wordpress];
        let one: String = subset_records(&sites, |_, _, _| true)
            .lines()
            .filter(|l| l.contains(".v1.0\"") || l.contains(".v2.0\""))
            .map(|l| format!("{l}\n"))
            .collect();
        // Neither graded nor made into an anchor: both start from the subset's analysis.
        let e = subset_of(&one, &sites).unwrap_err().to_string();
        assert!(e.starts_with("records missing for cell wordpress src: "), "{e}");
        assert!(e.contains("families 13, 26, 39, 52, 65 (5 of the subset's 6 families unmeasured)"), "{e}");
        // One error-only unit leaves its family unmeasured too.
        let mut text = subset_records(&sites, |_, _, _| true);
        text = text.replacen(
            "\"success\": true, \"steps\": 1,",
            "\"success\": null, \"steps\": null, \"outcome\": \"error\",",
            1,
        );
        let e = subset_of(&text, &sites).unwrap_err().to_string();
        assert!(e.contains("cell wordpress src: no evaluable record of calibration family 0 (1 of"), "{e}");
        // A set without the site is refused, not graded as empty.
        let mut set = CalibrationSet::from_rule();
        set.sites.remove(&Site::Wordpress);
        let rs = crate::records::read(one.as_bytes(), Path::new("run.jsonl")).unwrap();
        let e = analyse_subset(rs.select(None).unwrap(), &set, &sites).unwrap_err().to_string();
        assert_eq!(e, "the calibration subset has no families for wordpress");
    }

    #[test]
    fn shipped_anchor_is_unpublished_and_parses() {
        let a = load_anchor(&data().join("reference_results/reference-react.json")).unwrap();
        assert_eq!(a.status, "unpublished");
        assert_eq!(a.max_steps, 10);
    }
}
