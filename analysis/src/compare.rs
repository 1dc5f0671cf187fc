//! Baseline versus candidate (seeds 003 and 004): per-cell and overall SR
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
//!   share one contract; otherwise `inconclusive` (seed 003). Seed 004's simple
//!   `delta >= 0` verdict is reported beside it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::cells::Analysis;
use skillshift_common::ids::{Condition, Site};

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;
/// Below this baseline SR (percent), warn of a weak baseline (seed 004).
pub const WEAK_BASELINE: f64 = 20.0;

/// Wilson score interval for c successes of n, as fractions.
pub fn wilson(c: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p, z2) = (f64::from(n), f64::from(c) / f64::from(n), Z95 * Z95);
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
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
pub struct Contract {
    /// `same`, `differs` or `unknown`.
    pub status: String,
    /// Contract fields whose values differ (dotted paths).
    pub differing: Vec<String>,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    pub file: String,
    pub treatment: String,
    pub records: usize,
    pub config_digests: BTreeSet<String>,
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
    /// Seed 004's rule: `pass` when delta >= 0, else `fail`.
    pub seed004_verdict: Option<String>,
    pub directional_only: bool,
    pub contract: Contract,
    pub warnings: Vec<String>,
    /// Overall pass@k / pass^k of each side (seed 001): informational, not a gate.
    pub reliability: BTreeMap<String, SideReliability>,
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

/// Flatten a JSON value to dotted paths.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&p, x, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), v.clone());
        }
    }
}

/// Fields whose values differ between two contracts.
pub fn contract_diff(a: &Value, b: &Value) -> Vec<String> {
    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
    flatten("", a, &mut fa);
    flatten("", b, &mut fb);
    let keys: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter().filter(|k| fa.get(*k) != fb.get(*k)).cloned().collect()
}

/// Read `contract.json` beside a records file, if there is one.
pub fn contract_beside(records: &Path) -> Result<Option<Value>, String> {
    let path = records.parent().unwrap_or(Path::new(".")).join("contract.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            serde_json::from_str(&text).map(Some).map_err(|e| format!("{}: not valid JSON: {e}", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Decide whether the two runs share one frozen contract.
pub fn check_contract(
    base: Option<&Value>,
    cand: Option<&Value>,
    base_digests: &BTreeSet<String>,
    cand_digests: &BTreeSet<String>,
    same_file: bool,
) -> Contract {
    if let (Some(a), Some(b)) = (base, cand) {
        let differing = contract_diff(a, b);
        return if differing.is_empty() {
            Contract { status: "same".into(), differing, detail: "contract.json is identical on both sides".into() }
        } else {
            let detail = format!("contract.json differs in: {}", differing.join(", "));
            Contract { status: "differs".into(), differing, detail }
        };
    }
    let one = |d: &BTreeSet<String>| (d.len() == 1).then(|| d.iter().next().cloned()).flatten();
    match (one(base_digests), one(cand_digests)) {
        (Some(a), Some(b)) if a == b => Contract {
            status: "same".into(),
            differing: vec![],
            detail: format!("both sides recorded config_digest {a}"),
        },
        (Some(a), Some(b)) => Contract {
            status: "differs".into(),
            differing: vec!["config_digest".into()],
            detail: format!(
                "config_digest differs ({a} vs {b}); without contract.json beside both files the differing fields \
                 cannot be listed"
            ),
        },
        _ if base_digests.len() > 1 || cand_digests.len() > 1 => Contract {
            status: "differs".into(),
            differing: vec!["config_digest".into()],
            detail: "a side's records carry several config digests: they were not run under one contract".into(),
        },
        _ if same_file => Contract {
            status: "unknown".into(),
            differing: vec![],
            detail: "both treatments come from one file, but no contract or digest was recorded".into(),
        },
        _ => Contract {
            status: "unknown".into(),
            differing: vec![],
            detail: "no contract.json beside the records and no config_digest in them: equivalence is unverified"
                .into(),
        },
    }
}

/// Compare two analysed treatments.
pub fn compare(
    base: &Analysis,
    cand: &Analysis,
    base_info: SideInfo,
    cand_info: SideInfo,
    contract: Contract,
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
    let macro_sr = |a: &Analysis| crate::cells::mean(a.cells.0.iter().flatten().map(crate::cells::CellStats::sr));
    let overall = if m > 0 {
        let d = sum_d / m as f64;
        let half = Z95 * sum_var.sqrt() / m as f64;
        Overall {
            baseline: macro_sr(base),
            candidate: macro_sr(cand),
            delta: Some(d),
            interval: Some([d - half, d + half]),
            cells: m,
        }
    } else {
        Overall { baseline: macro_sr(base), candidate: macro_sr(cand), delta: None, interval: None, cells: 0 }
    };
    let mut warnings = Vec::new();
    if let Some(b) = overall.baseline {
        if b < WEAK_BASELINE {
            warnings.push(format!(
                "weak baseline: baseline SR {b:.2}% is below {WEAK_BASELINE:.0}%; review the task suite before \
                 trusting the delta"
            ));
        }
    }
    if !missing.is_empty() {
        warnings.push(format!("cells with records on only one side: {}", missing.join(", ")));
    }
    if base.reps < 2 || cand.reps < 2 {
        warnings.push(crate::reliability::ONE_REP_WARNING.to_string());
    }
    let directional_only = contract.status == "differs";
    let (verdict, reason) = match (overall.delta, overall.interval) {
        (None, _) | (_, None) => ("inconclusive", "no cell has evaluable records on both sides".to_string()),
        _ if !missing.is_empty() => {
            ("inconclusive", "data is missing: some cells have records on only one side".to_string())
        }
        _ if directional_only => (
            "inconclusive",
            format!("the runs do not share one contract ({}): a directional observation only", contract.detail),
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
    }
}

fn signed(v: Option<f64>) -> String {
    v.map_or_else(|| "--".into(), |v| format!("{v:+.2}"))
}

/// The comparison as aligned text.
pub fn render_text(c: &Comparison) -> String {
    use crate::report::{num, text::table, Cell};
    let mut out = format!(
        "skillshift compare: baseline {} ({}) vs candidate {} ({})\n\nSR by cell (successes/evaluable), delta in percentage points\n",
        c.baseline.treatment, c.baseline.file, c.candidate.treatment, c.candidate.file
    );
    let header: Vec<String> =
        ["cell", "baseline", "candidate", "delta", "95% interval", "pairing"].iter().map(|s| s.to_string()).collect();
    let side = |s: &SideCell| format!("{} ({}/{})", num(s.sr), s.successes, s.evaluable);
    let interval = |i: Option<[f64; 2]>| i.map_or_else(|| "--".into(), |[a, b]| format!("[{a:+.2}, {b:+.2}]"));
    let mut rows: Vec<Vec<Cell>> = c
        .cells
        .iter()
        .map(|x| {
            vec![
                format!("{} {}", x.site, x.condition).into(),
                side(&x.baseline).into(),
                side(&x.candidate).into(),
                signed(x.delta).into(),
                interval(x.interval).into(),
                x.pairing.clone().into(),
            ]
        })
        .collect();
    rows.push(vec![
        "overall (macro)".into(),
        num(c.overall.baseline).into(),
        num(c.overall.candidate).into(),
        signed(c.overall.delta).into(),
        interval(c.overall.interval).into(),
        format!("{} cells", c.overall.cells).into(),
    ]);
    out.push_str(&table(&header, &rows));
    out.push_str(&format!("\nverdict: {} ({})\n", c.verdict, c.verdict_reason));
    if let Some(v) = &c.seed004_verdict {
        out.push_str(&format!("seed-004 verdict (delta >= 0): {v}\n"));
    }
    out.push_str(&format!("contract: {} ({})\n", c.contract.status, c.contract.detail));
    if c.directional_only {
        out.push_str(
            "directional only: the runs differ in their contract; do not claim the change caused the difference\n",
        );
    }
    out.push_str("\npass@k / pass^k, capability vs reliability (overall, %; informational, not a gate)\n");
    let ks: BTreeSet<&String> = c.reliability.values().flat_map(|r| r.pass_at_k.keys()).collect();
    let mut header = vec!["side".to_string(), "reps".to_string()];
    for k in &ks {
        header.extend([format!("pass@{k}"), format!("pass^{k}"), format!("gap@{k}")]);
    }
    let rows: Vec<Vec<Cell>> = c
        .reliability
        .iter()
        .map(|(side, r)| {
            let mut row: Vec<Cell> = vec![side.clone().into(), r.reps.to_string().into()];
            for k in &ks {
                let (at, hat) = (r.pass_at_k.get(*k).copied().flatten(), r.pass_hat_k.get(*k).copied().flatten());
                row.extend([num(at).into(), num(hat).into(), num(at.zip(hat).map(|(a, h)| a - h)).into()]);
            }
            row
        })
        .collect();
    out.push_str(&table(&header, &rows));
    for w in &c.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn contract_fields_that_differ_are_listed() {
        let a = json!({"model": {"name": "gpt", "provider": "x"}, "max_steps": 10, "temperature": 0});
        let b = json!({"model": {"name": "gpt", "provider": "y"}, "max_steps": 15, "temperature": 0});
        assert_eq!(contract_diff(&a, &b), ["max_steps", "model.provider"]);
        let none = BTreeSet::new();
        assert_eq!(check_contract(Some(&a), Some(&b), &none, &none, false).status, "differs");
        assert_eq!(check_contract(Some(&a), Some(&a), &none, &none, false).status, "same");
        let d1: BTreeSet<String> = ["sha256:1".to_string()].into();
        let d2: BTreeSet<String> = ["sha256:2".to_string()].into();
        assert_eq!(check_contract(None, None, &d1, &d2, false).status, "differs");
        assert_eq!(check_contract(None, None, &d1, &d1, false).status, "same");
        assert_eq!(check_contract(None, None, &none, &none, false).status, "unknown");
    }
}
