//! Baseline versus candidate (docs/formats.md#compare): per-cell and overall SR
//! deltas with 95% intervals, a verdict, and the frozen-contract check.
//!
//! * A cell is *paired* when both sides hold the same valid units (family,
//!   rep); its interval is Newcombe's score interval for a paired difference
//!   (method 10, Wilson limits with the phi correlation). Otherwise it is
//!   Newcombe's hybrid score interval for independent proportions.
//! * The overall delta is the macro mean of the cell deltas (as SR's overall
//!   is the macro mean of cells); its interval combines the cells' half-widths
//!   as independent errors: a normal approximation, stated as such.
//! * The verdict is `better` or `worse` only when the overall interval
//!   excludes 0, the data covers every cell on both sides, and the two runs
//!   share one frozen contract ([`contract`]: treatments may differ, frozen
//!   fields may not, and an unverified contract is not a shared one);
//!   otherwise `inconclusive` (docs/formats.md#ledger). The simple `delta >= 0`
//!   verdict is reported beside it, with the baseline's health.
//! * Beside the deltas: each side's LLM use by population, pass@k / pass^k,
//!   and, with a gates file, each side's readiness ([`crate::gates`]).
//!
//! The text rendering is [`text`].

pub mod contract;
pub mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

pub use contract::{check_contract, contract_beside, contract_diff, Contract, ContractFileError, Side};
pub use text::render_text;

use crate::gates::{evaluate, GateSet};
use crate::readiness::Gates;
use crate::summary::summarise;
use crate::usage::Populations;

use crate::cells::Analysis;
use skillshift_common::ids::{Condition, Site};

pub use crate::interval::Z95;
/// Below this baseline SR (percent), warn of a weak baseline (docs/formats.md#compare).
pub const WEAK_BASELINE: f64 = 20.0;

/// Wilson score interval for c successes of n, as fractions.
pub fn wilson(c: u32, n: u32) -> (f64, f64) {
    crate::interval::wilson(u64::from(c), u64::from(n))
}

/// Newcombe's interval for p1 - p2 from Wilson limits and a correlation phi
/// (phi = 0 for independent samples).
fn newcombe(p1: f64, (l1, u1): (f64, f64), p2: f64, (l2, u2): (f64, f64), phi: f64) -> (f64, f64) {
    let d = p1 - p2;
    let lo = ((p1 - l1).powi(2) - 2.0 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2).powi(2)).max(0.0).sqrt();
    let hi = ((u1 - p1).powi(2) - 2.0 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2).powi(2)).max(0.0).sqrt();
    ((d - lo).max(-1.0), (d + hi).min(1.0))
}

/// Unpaired: candidate c1/n1 minus baseline c2/n2.
pub fn unpaired_interval(c1: u32, n1: u32, c2: u32, n2: u32) -> (f64, f64) {
    let (p1, p2) = (f64::from(c1) / f64::from(n1), f64::from(c2) / f64::from(n2));
    newcombe(p1, wilson(c1, n1), p2, wilson(c2, n2), 0.0)
}

/// Paired over n units: both succeed (a), only candidate (b), only baseline (c), neither (d).
pub fn paired_interval(a: u32, b: u32, c: u32, d: u32) -> (f64, f64) {
    let n = a + b + c + d;
    let (p1, p2) = (f64::from(a + b) / f64::from(n), f64::from(a + c) / f64::from(n));
    let (fa, fb, fc, fd) = (f64::from(a), f64::from(b), f64::from(c), f64::from(d));
    let den = ((fa + fb) * (fc + fd) * (fa + fc) * (fb + fd)).sqrt();
    // Newcombe's continuity-adjusted phi: A = ad - bc, reduced by n/2 when positive.
    let a_ = fa * fd - fb * fc;
    let half_n = f64::from(n) / 2.0;
    let adj = if a_ > half_n {
        a_ - half_n
    } else if a_ >= 0.0 {
        0.0
    } else {
        a_
    };
    let phi = if den > 0.0 { adj / den } else { 0.0 };
    newcombe(p1, wilson(a + b, n), p2, wilson(a + c, n), phi)
}

#[derive(Debug, Clone, Serialize)]
pub struct SideCell {
    pub successes: u32,
    pub evaluable: u32,
    #[serde(rename = "SR")]
    pub sr: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellDelta {
    pub site: Site,
    pub condition: Condition,
    pub baseline: SideCell,
    pub candidate: SideCell,
    /// Candidate minus baseline, percentage points.
    pub delta: Option<f64>,
    pub interval: Option<[f64; 2]>,
    /// `paired` (with the number of pairs) or `unpaired`.
    pub pairing: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Overall {
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    pub delta: Option<f64>,
    pub interval: Option<[f64; 2]>,
    pub cells: usize,
}
#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    pub file: String,
    pub treatment: String,
    pub records: usize,
    pub config_digests: BTreeSet<String>,
    /// Some record of this side was made up by a `--simulate` worker.
    pub simulated: bool,
}

impl SideInfo {
    /// The side read from `path` and analysed as `a`.
    pub fn of(path: &Path, a: &Analysis) -> SideInfo {
        SideInfo {
            file: path.display().to_string(),
            treatment: a.treatment.clone(),
            records: a.records,
            config_digests: a.config_digests.clone(),
            simulated: a.simulated,
        }
    }
}

/// The advisory check (docs/formats.md#compare) of the baseline: a weak one makes any delta look good.
#[derive(Debug, Clone, Serialize)]
pub struct BaselineHealth {
    /// `healthy`, `warning`, or `unknown` when the baseline has no SR.
    pub status: String,
    /// The baseline's overall SR, percent.
    pub baseline_sr: Option<f64>,
    /// Below this SR (percent) the baseline is weak.
    pub threshold: f64,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub baseline: SideInfo,
    pub candidate: SideInfo,
    pub cells: Vec<CellDelta>,
    pub overall: Overall,
    /// `better`, `worse` or `inconclusive`.
    pub verdict: String,
    pub verdict_reason: String,
    /// The simple rule (docs/formats.md#compare): `pass` when delta >= 0, else `fail`.
    pub seed004_verdict: Option<String>,
    pub directional_only: bool,
    pub contract: Contract,
    pub warnings: Vec<String>,
    /// Overall pass@k / pass^k of each side (docs/formats.md#reliability): informational, not a gate.
    pub reliability: BTreeMap<String, SideReliability>,
    pub baseline_health: BaselineHealth,
    /// LLM calls, tokens and cost of each side, by population.
    pub usage: BTreeMap<String, Populations>,
    /// Each side's readiness under one gates file, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gates: Option<BTreeMap<String, Gates>>,
}

/// One side's overall capability (pass@k) and reliability (pass^k), in percent.
#[derive(Debug, Clone, Serialize)]
pub struct SideReliability {
    pub reps: u32,
    #[serde(rename = "pass@k")]
    pub pass_at_k: BTreeMap<String, Option<f64>>,
    #[serde(rename = "pass^k")]
    pub pass_hat_k: BTreeMap<String, Option<f64>>,
}

fn side_reliability(a: &Analysis) -> SideReliability {
    let r = &a.reliability;
    SideReliability {
        reps: r.reps,
        pass_at_k: r.pass_at_k.iter().map(|(k, t)| (k.clone(), t.overall)).collect(),
        pass_hat_k: r.pass_hat_k.iter().map(|(k, t)| (k.clone(), t.overall)).collect(),
    }
}

/// Compare two analysed treatments.
pub fn compare(
    base: &Analysis,
    cand: &Analysis,
    base_info: SideInfo,
    cand_info: SideInfo,
    mut contract: Contract,
) -> Comparison {
    let outcomes = |a: &Analysis| {
        let mut m: BTreeMap<(Site, Condition), BTreeMap<(u32, u32), bool>> = BTreeMap::new();
        for u in &a.units {
            if let Some(x) = u.measured {
                m.entry((u.site, u.condition)).or_default().insert((u.task_id, u.rep), x.success());
            }
        }
        m
    };
    let (ob, oc) = (outcomes(base), outcomes(cand));
    let empty = BTreeMap::new();
    let mut cells = Vec::new();
    let mut missing = Vec::new();
    let (mut sum_d, mut sum_var, mut m) = (0.0, 0.0, 0usize);
    for &site in Site::ALL {
        for &condition in Condition::ALL {
            let (sb, sc) = (base.cells.get(site, condition), cand.cells.get(site, condition));
            let side =
                |s: crate::cells::CellStats| SideCell { successes: s.successes, evaluable: s.evaluable, sr: s.sr() };
            let (ub, uc) = (ob.get(&(site, condition)).unwrap_or(&empty), oc.get(&(site, condition)).unwrap_or(&empty));
            let mut cell = CellDelta {
                site,
                condition,
                baseline: side(sb),
                candidate: side(sc),
                delta: None,
                interval: None,
                pairing: "none".into(),
            };
            if sb.evaluable == 0 && sc.evaluable == 0 {
                cells.push(cell);
                continue;
            }
            if sb.evaluable == 0 || sc.evaluable == 0 {
                missing.push(format!("{site} {condition}"));
                cells.push(cell);
                continue;
            }
            let same_units = ub.len() == uc.len() && ub.keys().eq(uc.keys());
            let (lo, hi) = if same_units {
                let (mut a, mut b, mut c, mut d) = (0, 0, 0, 0);
                for (k, &yb) in ub {
                    match (uc.get(k).copied().unwrap_or(false), yb) {
                        (true, true) => a += 1,
                        (true, false) => b += 1,
                        (false, true) => c += 1,
                        (false, false) => d += 1,
                    }
                }
                cell.pairing = format!("paired ({})", ub.len());
                paired_interval(a, b, c, d)
            } else {
                cell.pairing = "unpaired".into();
                unpaired_interval(sc.successes, sc.evaluable, sb.successes, sb.evaluable)
            };
            let delta = sc.sr().unwrap_or(0.0) - sb.sr().unwrap_or(0.0);
            cell.delta = Some(delta);
            cell.interval = Some([100.0 * lo, 100.0 * hi]);
            sum_d += delta;
            sum_var += (100.0 * (hi - lo) / (2.0 * Z95)).powi(2);
            m += 1;
            cells.push(cell);
        }
    }
    let macro_sr = |a: &Analysis| crate::shape::mean(a.cells.0.iter().flatten().map(crate::cells::CellStats::sr));
    let overall = if m > 0 {
        let d = sum_d / m as f64;
        let half = Z95 * sum_var.sqrt() / m as f64;
        Overall {
            baseline: macro_sr(base),
            candidate: macro_sr(cand),
            delta: Some(d),
            // A difference of two rates lies in [-100, +100]; the normal approximation of the
            // macro mean can reach past it with few cells, so the interval is cut to that range.
            interval: Some([(d - half).max(-100.0), (d + half).min(100.0)]),
            cells: m,
        }
    } else {
        Overall { baseline: macro_sr(base), candidate: macro_sr(cand), delta: None, interval: None, cells: 0 }
    };
    let mut warnings = std::mem::take(&mut contract.warnings);
    let health = baseline_health(overall.baseline);
    warnings.extend(health.warnings.iter().cloned());
    if !missing.is_empty() {
        warnings.push(format!("cells with records on only one side: {}", missing.join(", ")));
    }
    if base.reps < 2 || cand.reps < 2 {
        warnings.push(crate::reliability::ONE_REP_WARNING.to_string());
    }
    for (side, info) in [("baseline", &base_info), ("candidate", &cand_info)] {
        if info.simulated {
            warnings.push(format!(
                "the {side}'s records ({}) were made up by a --simulate worker: they measure nothing",
                info.file
            ));
        }
    }
    let directional_only = !contract.equivalent;
    let (verdict, reason) = match (overall.delta, overall.interval) {
        (None, _) | (_, None) => ("inconclusive", "no cell has evaluable records on both sides".to_string()),
        _ if !missing.is_empty() => {
            ("inconclusive", "data is missing: some cells have records on only one side".to_string())
        }
        _ if contract.status == "differs" => (
            "inconclusive",
            format!("the runs do not share one contract ({}): a directional observation only", contract.detail),
        ),
        _ if directional_only => (
            "inconclusive",
            format!("the contract could not be verified ({}): a directional observation only", contract.detail),
        ),
        (Some(_), Some([lo, _])) if lo > 0.0 => {
            ("better", "the 95% interval of the overall SR delta lies above 0".to_string())
        }
        (Some(_), Some([_, hi])) if hi < 0.0 => {
            ("worse", "the 95% interval of the overall SR delta lies below 0".to_string())
        }
        _ => ("inconclusive", "the 95% interval of the overall SR delta spans 0".to_string()),
    };
    Comparison {
        schema: "skillshift.compare/1",
        baseline: base_info,
        candidate: cand_info,
        seed004_verdict: overall.delta.map(|d| if d >= 0.0 { "pass".into() } else { "fail".into() }),
        cells,
        overall,
        verdict: verdict.to_string(),
        verdict_reason: reason,
        directional_only,
        contract,
        warnings,
        reliability: [
            ("baseline".to_string(), side_reliability(base)),
            ("candidate".to_string(), side_reliability(cand)),
        ]
        .into(),
        baseline_health: health,
        usage: [("baseline".to_string(), base.usage), ("candidate".to_string(), cand.usage)].into(),
        gates: None,
    }
}

impl Comparison {
    /// The exit code the candidate's gates map to (0 without gates): the candidate is what a comparison decides on.
    pub fn candidate_readiness_exit(&self) -> u8 {
        self.gates.as_ref().and_then(|g| g.get("candidate")).map_or(0, Gates::exit_code)
    }
}

/// The baseline's health from its overall SR (the < 20% rule of docs/formats.md#compare).
pub fn baseline_health(sr: Option<f64>) -> BaselineHealth {
    let (status, warnings) = match sr {
        None => ("unknown", vec![]),
        Some(b) if b < WEAK_BASELINE => (
            "warning",
            vec![format!(
                "weak baseline: baseline SR {b:.2}% is below {WEAK_BASELINE:.0}%; review the task suite before \
                 trusting the delta"
            )],
        ),
        Some(_) => ("healthy", vec![]),
    };
    BaselineHealth { status: status.to_string(), baseline_sr: sr, threshold: WEAK_BASELINE, warnings }
}

/// Apply one gates file to both sides (each summarised as `report --allow-partial` would).
pub fn apply_gates(c: &mut Comparison, set: &GateSet, base: &Analysis, cand: &Analysis) {
    let mut out = BTreeMap::new();
    for (side, a) in [("baseline", base), ("candidate", cand)] {
        // A partial side is summarised anyway, as compare itself does not refuse one.
        let gates = match summarise(a, true) {
            Ok(b) => evaluate(set, &b.summary, &a.usage),
            Err(_) => Gates::not_determined(),
        };
        out.insert(side.to_string(), gates);
    }
    c.gates = Some(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_and_newcombe_known_values() {
        // Newcombe (1998) example: 56/70 vs 48/80 -> 0.2 with 95% CI 0.0524 to 0.3339.
        let (lo, hi) = unpaired_interval(56, 70, 48, 80);
        assert!((lo - 0.0524).abs() < 5e-4 && (hi - 0.3339).abs() < 5e-4, "{lo} {hi}");
        // Paired example a=12, b=9, c=2, d=21: delta 0.1591, CI 0.0112 to 0.2954 (Newcombe's method 10
        // with the continuity-adjusted phi, as in Altman et al., Statistics with Confidence).
        let (lo, hi) = paired_interval(12, 9, 2, 21);
        assert!((lo - 0.0112).abs() < 5e-4 && (hi - 0.2954).abs() < 5e-4, "{lo} {hi}");
        // All pairs discordant in the candidate's favour: the interval excludes 0 but is not a point.
        let (lo, hi) = paired_interval(0, 5, 0, 0);
        assert!(lo > 0.0 && lo < 0.8 && hi == 1.0, "{lo} {hi}");
        // No discordant pair: the interval spans 0.
        let (lo, hi) = paired_interval(3, 0, 0, 3);
        assert!(lo < 0.0 && hi > 0.0);
        let (lo, hi) = wilson(0, 10);
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 5e-4);
    }
}
