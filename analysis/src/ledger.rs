//! The outcome ledger (docs/formats.md#ledger): every attempt classified once,
//! the unit rollup, rates with their denominators, and latency populations.
//!
//! Attempt-level and unit-level counts are kept apart. A rate whose
//! denominator is 0 is `None`. Latency percentiles are nearest-rank over
//! per-record `duration_ms`, computed per population and never combined from
//! subgroup figures.

use serde::{Deserialize, Serialize};

use crate::outcome::Unit;
use crate::records::Row;
use skillshift_common::record::Outcome;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attempts {
    pub all: u64,
    pub evaluable: u64,
    pub success: u64,
    pub failure: u64,
    pub timeout: u64,
    pub error: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Units {
    pub all: u64,
    pub invalid: u64,
    pub first_attempt_success: u64,
    pub eventual_success: u64,
}

/// Rates as fractions in [0, 1]; `None` when the denominator is 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    pub attempt_success: Option<f64>,
    pub invalid_attempt: Option<f64>,
    /// Timeout attempts over evaluable attempts: the step budget ran out.
    pub timeout: Option<f64>,
    pub first_attempt_completion: Option<f64>,
    pub eventual_completion: Option<f64>,
    pub operational_delivery: Option<f64>,
    pub retry_rate: Option<f64>,
}

/// Nearest-rank percentiles of one population.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub n: u64,
    pub p50: Option<u64>,
    pub p90: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// Successful attempts.
    pub success: Latency,
    /// `failure` and `timeout` attempts: time to a terminal failure.
    pub non_success: Latency,
    /// Every attempt, `error` included.
    pub all: Latency,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    pub attempts: Attempts,
    pub units: Units,
    pub rates: Rates,
    pub latency_ms: Latencies,
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Nearest-rank percentile: the value at rank ceil(p/100 * n) of the sorted sample.
pub fn nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

fn latency(mut v: Vec<u64>) -> Latency {
    v.sort_unstable();
    Latency { n: v.len() as u64, p50: nearest_rank(&v, 50.0), p90: nearest_rank(&v, 90.0) }
}

/// Build the ledger of one treatment from its attempts and units.
pub fn ledger(rows: &[Row], units: &[Unit]) -> Ledger {
    let mut a = Attempts { all: rows.len() as u64, ..Default::default() };
    let (mut ok_ms, mut bad_ms, mut all_ms) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        match r.outcome {
            Outcome::Success => a.success += 1,
            Outcome::Failure => a.failure += 1,
            Outcome::Timeout => a.timeout += 1,
            Outcome::Error => a.error += 1,
        }
        if let Some(ms) = r.duration_ms {
            all_ms.push(ms);
            match r.outcome {
                Outcome::Success => ok_ms.push(ms),
                Outcome::Failure | Outcome::Timeout => bad_ms.push(ms),
                Outcome::Error => {}
            }
        }
    }
    a.evaluable = a.all - a.error;
    let u = Units {
        all: units.len() as u64,
        invalid: units.iter().filter(|u| !u.is_valid()).count() as u64,
        first_attempt_success: units.iter().filter(|u| u.first_attempt_success).count() as u64,
        eventual_success: units.iter().filter(|u| u.measured.is_some_and(|m| m.success())).count() as u64,
    };
    let rates = Rates {
        attempt_success: ratio(a.success, a.evaluable),
        invalid_attempt: ratio(a.error, a.all),
        timeout: ratio(a.timeout, a.evaluable),
        first_attempt_completion: ratio(u.first_attempt_success, u.all),
        eventual_completion: ratio(u.eventual_success, u.all - u.invalid),
        operational_delivery: ratio(u.eventual_success, u.all),
        retry_rate: ratio(a.all - u.all, u.all),
    };
    let latency_ms = Latencies { success: latency(ok_ms), non_success: latency(bad_ms), all: latency(all_ms) };
    Ledger { attempts: a, units: u, rates, latency_ms }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::units;
    use skillshift_common::ids::{Condition, Site};

    fn row(task_id: u32, attempt: u32, outcome: Outcome, ms: u64) -> Row {
        Row {
            site: Site::Wordpress,
            task_id,
            condition: Condition::SrcPerc,
            rep: 0,
            attempt,
            outcome,
            steps: Some(1),
            skill_calls: None,
            skill_failures: None,
            duration_ms: Some(ms),
            usage: Default::default(),
            simulated: false,
            line: 0,
        }
    }

    #[test]
    fn ledger_sums_and_rates_keep_invalid_out_of_the_evaluable_denominator() {
        let rows = [
            row(0, 0, Outcome::Error, 600_000),
            row(0, 1, Outcome::Success, 80),
            row(1, 0, Outcome::Failure, 90),
            row(2, 0, Outcome::Timeout, 100),
            row(3, 0, Outcome::Error, 5),
            row(3, 1, Outcome::Error, 7),
            row(4, 0, Outcome::Success, 70),
        ];
        let l = ledger(&rows, &units(&rows));
        assert_eq!(l.attempts, Attempts { all: 7, evaluable: 4, success: 2, failure: 1, timeout: 1, error: 3 });
        assert_eq!(l.units, Units { all: 5, invalid: 1, first_attempt_success: 1, eventual_success: 2 });
        assert_eq!(l.rates.attempt_success, Some(0.5));
        assert_eq!(l.rates.timeout, Some(0.25), "1 timeout of 4 evaluable attempts");
        assert_eq!(l.rates.eventual_completion, Some(0.5));
        assert_eq!(l.rates.operational_delivery, Some(0.4));
        assert_eq!(l.rates.retry_rate, Some(0.4));
        assert_eq!(l.latency_ms.success, Latency { n: 2, p50: Some(70), p90: Some(80) });
        assert_eq!(l.latency_ms.non_success, Latency { n: 2, p50: Some(90), p90: Some(100) });
        assert_eq!(l.latency_ms.all.n, 7);
        assert_eq!(ledger(&[], &[]).rates.attempt_success, None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(nearest_rank(&v, 50.0), Some(5));
        assert_eq!(nearest_rank(&v, 90.0), Some(9));
        assert_eq!(nearest_rank(&[42], 90.0), Some(42));
    }
}
