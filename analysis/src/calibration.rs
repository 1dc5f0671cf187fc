//! Calibration (seed 002, formats §7): the 30-family subset rule, the anchor
//! file, grading a run against it, and computing an anchor from a reference run.
//!
//! The subset is a stated rule, `index_j = floor(j * n_tasks / k)`, so anyone
//! can recompute it; `data/calibration_set.json` is its output. A cell's
//! deviation is |observed - value| / sigma, flagged beyond the threshold; only
//! SR and AS gate, ASC and SFR are printed `[not gated]`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cells::{analyse, Analysis, CellStats};
use crate::records::TreatmentRecords;
use skillshift_common::ids::{Condition, Site};

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
    #[error("the anchor has no {metric} for cell {site} {condition}")]
    AnchorCellMissing { site: Site, condition: Condition, metric: &'static str },
}

pub fn load_set(path: &Path) -> Result<CalibrationSet, CalibrationError> {
    let text = std::fs::read_to_string(path).map_err(|e| CalibrationError::SubsetMissing(path.into(), e))?;
    let set: CalibrationSet =
        serde_json::from_str(&text).map_err(|e| CalibrationError::SubsetInvalid(path.into(), e.to_string()))?;
    for (site, s) in &set.sites {
        if let Some(bad) = s.families.iter().find(|&&f| f as usize >= site.n_tasks()) {
            return Err(CalibrationError::SubsetInvalid(
                path.into(),
                format!("family {bad} of {site} is not below {}", site.n_tasks()),
            ));
        }
    }
    Ok(set)
}

pub fn load_anchor(path: &Path) -> Result<Anchor, CalibrationError> {
    let text = std::fs::read_to_string(path).map_err(|e| CalibrationError::AnchorRead(path.into(), e))?;
    serde_json::from_str(&text).map_err(|e| CalibrationError::AnchorInvalid(path.into(), e.to_string()))
}

/// Keep only the calibration families of the given sites, then analyse.
pub fn analyse_subset(t: &TreatmentRecords, set: &CalibrationSet, sites: &[Site]) -> Analysis {
    let mut sub = t.clone();
    sub.rows.retain(|r| sites.contains(&r.site) && set.contains(r.site, r.task_id));
    analyse(&sub)
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

/// Grade every (cell, metric) of `sites` against the anchor.
pub fn grade(a: &Analysis, anchor: &Anchor, threshold: f64, sites: &[Site]) -> Result<Vec<Graded>, CalibrationError> {
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
/// (SR: 100 x sqrt(p(1-p)/n); AS and ASC: sample sd / sqrt(n)).
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
                sr: Some(ValueSigma { value: 100.0 * p, sigma: 100.0 * (p * (1.0 - p) / n).sqrt() }),
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

    #[test]
    fn shipped_anchor_is_unpublished_and_parses() {
        let a = load_anchor(&data().join("reference_results/reference-react.json")).unwrap();
        assert_eq!(a.status, "unpublished");
        assert_eq!(a.max_steps, 10);
    }
}
