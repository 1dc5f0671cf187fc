//! Capability versus reliability over repeated runs (docs/formats.md#reliability, docs/formats.md#summary).
//!
//! Per (family, condition) with n evaluable reps and c successes:
//! pass@k = 1 - C(n-c, k) / C(n, k) (at least one of k attempts succeeds) and
//! pass^k = C(c, k) / C(n, k) (all k succeed; the unbiased form, which equals
//! the seed's "1 if c == n" at k = n). k runs over {1, 2, 5} up to the number
//! of reps; a (family, condition) with fewer than k evaluable reps is left out
//! for that k. Each is averaged over a cell's families, then macro-marginalised
//! like SR, in percent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::outcome::Unit;
use crate::shape::{marginals, Grid, TenNumbers};

/// The seed's warning when there is only one rep.
pub const ONE_REP_WARNING: &str =
    "Only 1 run per treatment — pass@k/pass^k for k>1 need ≥2 runs to be meaningful. Use --count 5.";

/// C(n-c, k) / C(n, k) as a product, without overflow.
fn ratio_of_binomials(top: u32, n: u32, k: u32) -> f64 {
    if k > n {
        return f64::NAN;
    }
    if k > top {
        return 0.0;
    }
    (0..k).map(|i| f64::from(top - i) / f64::from(n - i)).product()
}

/// Unbiased pass@k: probability that at least one of k attempts drawn from n succeeds.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    1.0 - ratio_of_binomials(n - c, n, k)
}

/// Unbiased pass^k: probability that all k attempts drawn from n succeed.
pub fn pass_hat_k(n: u32, c: u32, k: u32) -> f64 {
    ratio_of_binomials(c, n, k)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reliability {
    pub reps: u32,
    pub k: Vec<u32>,
    #[serde(rename = "pass@k")]
    pub pass_at_k: BTreeMap<String, TenNumbers>,
    #[serde(rename = "pass^k")]
    pub pass_hat_k: BTreeMap<String, TenNumbers>,
    pub gap: BTreeMap<String, Option<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// The k values reported for `reps` repetitions.
pub fn ks(reps: u32) -> Vec<u32> {
    let k: Vec<u32> = [1, 2, 5].into_iter().filter(|&k| k <= reps).collect();
    if k.is_empty() {
        vec![1]
    } else {
        k
    }
}

/// Compute the block from units sorted by (site, family, condition, rep).
pub fn reliability(units: &[Unit], reps: u32) -> Reliability {
    let ks = ks(reps);
    // Per k: per cell (sum of pass@k, sum of pass^k, families counted).
    let mut acc = vec![Grid::<(f64, f64, u32)>::default(); ks.len()];
    let mut i = 0;
    while i < units.len() {
        let head = units[i];
        let (mut n, mut c) = (0u32, 0u32);
        while i < units.len()
            && (units[i].site, units[i].task_id, units[i].condition) == (head.site, head.task_id, head.condition)
        {
            if let Some(m) = units[i].measured {
                n += 1;
                c += u32::from(m.success());
            }
            i += 1;
        }
        for (ki, &k) in ks.iter().enumerate() {
            if n >= k && n > 0 {
                let cell = &mut acc[ki].0[head.site.index()][head.condition.index()];
                cell.0 += pass_at_k(n, c, k);
                cell.1 += pass_hat_k(n, c, k);
                cell.2 += 1;
            }
        }
    }
    let mut pass_at = BTreeMap::new();
    let mut pass_hat = BTreeMap::new();
    let mut gap = BTreeMap::new();
    for (ki, &k) in ks.iter().enumerate() {
        let at = marginals(&acc[ki].map(|&(s, _, n)| (n > 0).then(|| 100.0 * s / f64::from(n))));
        let hat = marginals(&acc[ki].map(|&(_, s, n)| (n > 0).then(|| 100.0 * s / f64::from(n))));
        gap.insert(k.to_string(), at.overall.zip(hat.overall).map(|(a, h)| a - h));
        pass_at.insert(k.to_string(), at);
        pass_hat.insert(k.to_string(), hat);
    }
    Reliability {
        reps,
        k: ks,
        pass_at_k: pass_at,
        pass_hat_k: pass_hat,
        gap,
        warning: (reps < 2).then(|| ONE_REP_WARNING.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Measured;
    use skillshift_common::ids::{Condition, Site};
    use skillshift_common::record::Outcome;

    #[test]
    fn unbiased_estimators_match_closed_forms() {
        // n = 5, c = 2: pass@1 = 0.4, pass@2 = 1 - C(3,2)/C(5,2) = 0.7, pass^2 = C(2,2)/C(5,2) = 0.1.
        assert!((pass_at_k(5, 2, 1) - 0.4).abs() < 1e-12);
        assert!((pass_at_k(5, 2, 2) - 0.7).abs() < 1e-12);
        assert!((pass_hat_k(5, 2, 2) - 0.1).abs() < 1e-12);
        // At k = n, pass^k is the seed's "1 if c == n else 0".
        assert_eq!(pass_hat_k(5, 5, 5), 1.0);
        assert_eq!(pass_hat_k(5, 4, 5), 0.0);
        assert_eq!(pass_at_k(5, 0, 5), 0.0);
        assert_eq!(pass_at_k(5, 1, 5), 1.0);
    }

    #[test]
    fn k_is_clamped_to_reps_and_one_rep_warns() {
        assert_eq!(ks(1), [1]);
        assert_eq!(ks(3), [1, 2]);
        assert_eq!(ks(5), [1, 2, 5]);
        let u = |rep, ok| Unit {
            site: Site::Gitlab,
            task_id: 0,
            condition: Condition::Src,
            rep,
            attempts: 1,
            first_attempt_success: ok,
            measured: Some(Measured {
                outcome: if ok { Outcome::Success } else { Outcome::Failure },
                steps: 1,
                skill_calls: None,
                skill_failures: None,
            }),
        };
        let r = reliability(&[u(0, true)], 1);
        assert_eq!(r.warning.as_deref(), Some(ONE_REP_WARNING));
        assert_eq!(r.pass_at_k["1"].overall, Some(100.0));
        let r = reliability(&[u(0, true), u(1, false)], 2);
        assert_eq!(r.warning, None);
        assert_eq!(r.pass_at_k["2"].overall, Some(100.0));
        assert_eq!(r.pass_hat_k["2"].overall, Some(0.0));
        assert_eq!(r.gap["2"], Some(100.0));
        assert_eq!(r.pass_at_k["1"].overall, Some(50.0));
    }
}
