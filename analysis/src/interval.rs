//! 95% intervals beside the headline rates (docs/formats.md#intervals).
//!
//! * A cell's SR, and every ledger rate that is a proportion, gets Wilson's
//!   score interval.
//! * A macro value (a website, a condition, the overall SR) is the unweighted
//!   mean p̄ of k cell proportions, each cell weighing 1/k whatever its size.
//!   Its interval is a *stratified Wilson* interval: Wilson's score interval
//!   for p̄ with the effective sample size n_eff = 1 / Σ (w_i² / n_i) =
//!   k² / Σ (1 / n_i), which is what the variance of a weighted mean of
//!   proportions becomes when the cells share one variance p̄(1 − p̄). With
//!   equal cell sizes n_eff is the pooled count; a small cell widens the
//!   interval as its 1/k weight deserves. Null cells are left out, as they are
//!   of the mean.

use serde::{Deserialize, Serialize};

use crate::cells::CellStats;
use crate::ledger::Ledger;
use crate::shape::{Grid, Pair, PerCondition, PerSite};
use skillshift_common::ids::{Condition, Site};

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The confidence level of every interval the report prints.
pub const LEVEL: f64 = 0.95;

/// Name of the cell method, as the summary states it.
pub const CELL_METHOD: &str = "wilson";
/// Name of the macro-marginal method, as the summary states it.
pub const MARGINAL_METHOD: &str = "stratified-wilson";

/// The methods in one sentence, for the rendered report.
pub const METHODS_NOTE: &str = "95% intervals: Wilson score interval for a cell (successes/evaluable); for a \
    website, condition or overall value, a stratified Wilson interval: Wilson's score interval for the unweighted \
    mean of the k cells with effective n = k² / Σ(1/n_i), so each cell keeps its 1/k weight.";

/// Wilson's score interval for a proportion `p` observed over `n` trials
/// (`n` may be an effective, non-integer size), as fractions in [0, 1].
pub fn wilson_p(p: f64, n: f64) -> (f64, f64) {
    if n <= 0.0 || !n.is_finite() || !p.is_finite() {
        return (0.0, 1.0);
    }
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).max(0.0).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// Wilson's score interval for `c` successes of `n`, as fractions.
pub fn wilson(c: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    wilson_p(c as f64 / n as f64, n as f64)
}

/// The stratified Wilson interval of the unweighted mean of cell proportions,
/// each cell given as (successes, evaluable); cells with nothing evaluable are
/// left out. `None` over no cell. Fractions.
pub fn macro_interval(cells: impl IntoIterator<Item = (u64, u64)>) -> Option<(f64, f64)> {
    let (mut sum_p, mut sum_inv_n, mut k) = (0.0, 0.0, 0u32);
    for (c, n) in cells {
        if n == 0 {
            continue;
        }
        sum_p += c as f64 / n as f64;
        sum_inv_n += 1.0 / n as f64;
        k += 1;
    }
    if k == 0 {
        return None;
    }
    let k = f64::from(k);
    Some(wilson_p(sum_p / k, k * k / sum_inv_n))
}

fn percent((lo, hi): (f64, f64)) -> Pair {
    [100.0 * lo, 100.0 * hi]
}

/// The methods the intervals were computed with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Methods {
    pub cells: String,
    pub marginals: String,
}

/// The SR intervals, in percent: ten macro values and the eighteen cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SrIntervals {
    pub websites: PerSite<Option<Pair>>,
    pub conditions: PerCondition<Option<Pair>>,
    pub overall: Option<Pair>,
    pub cells: PerSite<PerCondition<Option<Pair>>>,
}

/// Wilson intervals of the ledger rates that are proportions, as fractions.
/// (`retry_rate` is attempts per unit, not a proportion, and has none.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerIntervals {
    pub attempt_success: Option<Pair>,
    pub invalid_attempt: Option<Pair>,
    pub timeout: Option<Pair>,
    pub first_attempt_completion: Option<Pair>,
    pub eventual_completion: Option<Pair>,
    pub operational_delivery: Option<Pair>,
}

/// The summary's `intervals` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    pub level: f64,
    pub method: Methods,
    #[serde(rename = "SR")]
    pub sr: SrIntervals,
    pub ledger: LedgerIntervals,
}

/// The (numerator, denominator) of a ledger rate that is a proportion;
/// `None` for a rate that is not one or is not a ledger rate.
pub fn rate_counts(l: &Ledger, rate: &str) -> Option<(u64, u64)> {
    let (a, u) = (&l.attempts, &l.units);
    Some(match rate {
        "attempt_success" => (a.success, a.evaluable),
        "invalid_attempt" => (a.error, a.all),
        "timeout" => (a.timeout, a.evaluable),
        "first_attempt_completion" => (u.first_attempt_success, u.all),
        "eventual_completion" => (u.eventual_success, u.all - u.invalid),
        "operational_delivery" => (u.eventual_success, u.all),
        _ => return None,
    })
}

fn rate_interval(l: &Ledger, rate: &str) -> Option<Pair> {
    let (c, n) = rate_counts(l, rate)?;
    (n > 0).then(|| {
        let (lo, hi) = wilson(c, n);
        [lo, hi]
    })
}

/// Every interval of one treatment's summary.
pub fn intervals(cells: &Grid<CellStats>, ledger: &Ledger) -> Intervals {
    let counts = |s: Site, c: Condition| {
        let st = cells.get(s, c);
        (u64::from(st.successes), u64::from(st.evaluable))
    };
    let sr = SrIntervals {
        websites: PerSite::from_fn(|s| macro_interval(Condition::ALL.iter().map(|&c| counts(s, c))).map(percent)),
        conditions: PerCondition::from_fn(|c| macro_interval(Site::ALL.iter().map(|&s| counts(s, c))).map(percent)),
        overall: macro_interval(Site::ALL.iter().flat_map(|&s| Condition::ALL.iter().map(move |&c| counts(s, c))))
            .map(percent),
        cells: PerSite::from_fn(|s| {
            PerCondition::from_fn(|c| {
                let (k, n) = counts(s, c);
                (n > 0).then(|| percent(wilson(k, n)))
            })
        }),
    };
    let ledger = LedgerIntervals {
        attempt_success: rate_interval(ledger, "attempt_success"),
        invalid_attempt: rate_interval(ledger, "invalid_attempt"),
        timeout: rate_interval(ledger, "timeout"),
        first_attempt_completion: rate_interval(ledger, "first_attempt_completion"),
        eventual_completion: rate_interval(ledger, "eventual_completion"),
        operational_delivery: rate_interval(ledger, "operational_delivery"),
    };
    Intervals {
        level: LEVEL,
        method: Methods { cells: CELL_METHOD.to_string(), marginals: MARGINAL_METHOD.to_string() },
        sr,
        ledger,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn wilson_matches_hand_derived_closed_forms() {
        let z2 = Z95 * Z95; // 3.841458820694124
                            // c = 0: lo = 0 and hi = z² / (n + z²); n = 10: 3.841459 / 13.841459 = 0.277533.
        let (lo, hi) = wilson(0, 10);
        assert_eq!(lo, 0.0);
        assert!(close(hi, z2 / (10.0 + z2)) && close(hi, 0.277533), "{hi}");
        // p = 1/2: centre 1/2, half-width z / (2 sqrt(n + z²)); n = 16: 1.959964 / (2 * 4.454375) = 0.220004.
        let (lo, hi) = wilson(8, 16);
        assert!(close(lo, 0.279996) && close(hi, 0.720004), "{lo} {hi}");
        // c = n: the mirror image of c = 0.
        let (lo, hi) = wilson(10, 10);
        assert!(close(lo, 1.0 - z2 / (10.0 + z2)) && close(hi, 1.0));
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    #[test]
    fn macro_interval_is_wilson_at_the_effective_size() {
        // Six cells of 4 with a mean of 1/2: n_eff = 36 / (6 / 4) = 24, the pooled count, and the interval is
        // Wilson's at p = 1/2, n = 24: 1/2 -+ 1.959964 / (2 sqrt(27.841459)) = 1/2 -+ 0.185726.
        let (lo, hi) = macro_interval([(0, 4), (4, 4), (1, 4), (3, 4), (2, 4), (2, 4)]).unwrap();
        assert!(close(lo, 0.314274) && close(hi, 0.685726), "{lo} {hi}");
        // Cells of 2 and 8, both at 1/2: n_eff = 4 / (1/2 + 1/8) = 6.4, narrower than the small cell alone
        // (n = 2) and wider than pooling (n = 10) would claim: 1/2 -+ 1.959964 / (2 sqrt(10.241459)) = 0.306223.
        let (lo, hi) = macro_interval([(1, 2), (4, 8)]).unwrap();
        assert!(close(lo, 0.5 - 0.306223) && close(hi, 0.5 + 0.306223), "{lo} {hi}");
        // A cell with nothing evaluable is left out; no cell at all is no interval.
        assert_eq!(macro_interval([(1, 2), (4, 8), (0, 0)]), macro_interval([(1, 2), (4, 8)]));
        assert_eq!(macro_interval([(0, 0)]), None);
        // Every cell at 0: the interval is not the point [0, 0].
        let (lo, hi) = macro_interval([(0, 5), (0, 5)]).unwrap();
        assert!(lo == 0.0 && close(hi, Z95 * Z95 / (10.0 + Z95 * Z95)));
    }
}
