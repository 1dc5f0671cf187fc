//! Cells (docs/formats.md#cells), and [`analyse`], which computes everything
//! one treatment's records hold: units, cells, ledger, reliability, usage and
//! failure categories.
//!
//! A cell is (site, condition). Over its evaluable records, pooled across
//! reps: SR = 100 x successes / evaluable; AS = mean steps over every
//! evaluable record (failed ones included); ASC = mean skill calls; SFR = 100
//! x sum failures / sum calls, `None` when no skill was invoked. The macro
//! marginals over cells are in [`crate::shape::marginals`].

use std::collections::BTreeSet;

use crate::failures::{self, FailureCategories};
use crate::ledger::{ledger, Ledger};
use crate::outcome::{units, Unit};
use crate::records::TreatmentRecords;
use crate::reliability::{reliability, Reliability};
use crate::shape::{Grid, PerCondition, PerSite};
use crate::usage::{populations, Populations};
use skillshift_common::ids::{Condition, Site};

/// Sums over one cell's units.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CellStats {
    /// Distinct families scheduled in this cell (valid or not).
    pub families: u32,
    /// Valid units (evaluable records).
    pub evaluable: u32,
    /// Units whose attempts were all `error`.
    pub invalid: u32,
    pub successes: u32,
    pub steps_sum: u64,
    pub steps_sq: f64,
    pub calls_sum: u64,
    pub calls_sq: f64,
    pub failures_sum: u64,
}

impl CellStats {
    fn mean(&self, sum: u64) -> Option<f64> {
        (self.evaluable > 0).then(|| sum as f64 / self.evaluable as f64)
    }

    pub fn sr(&self) -> Option<f64> {
        (self.evaluable > 0).then(|| 100.0 * self.successes as f64 / self.evaluable as f64)
    }

    pub fn as_(&self) -> Option<f64> {
        self.mean(self.steps_sum)
    }

    /// `known` is false when the method has no executable skills at all.
    pub fn asc(&self, known: bool) -> Option<f64> {
        if known {
            self.mean(self.calls_sum)
        } else {
            None
        }
    }

    pub fn sfr(&self, known: bool) -> Option<f64> {
        (known && self.evaluable > 0 && self.calls_sum > 0)
            .then(|| 100.0 * self.failures_sum as f64 / self.calls_sum as f64)
    }

    /// Sample standard deviation of steps (n - 1 in the denominator).
    pub fn steps_sd(&self) -> Option<f64> {
        sample_sd(self.evaluable, self.steps_sum as f64, self.steps_sq)
    }

    pub fn calls_sd(&self) -> Option<f64> {
        sample_sd(self.evaluable, self.calls_sum as f64, self.calls_sq)
    }
}

fn sample_sd(n: u32, sum: f64, sq: f64) -> Option<f64> {
    if n < 2 {
        return (n == 1).then_some(0.0);
    }
    let n = n as f64;
    let var = (sq - sum * sum / n) / (n - 1.0);
    Some(var.max(0.0).sqrt())
}

/// Everything computed from one treatment's records.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub treatment: String,
    pub records: usize,
    pub units: Vec<Unit>,
    pub cells: Grid<CellStats>,
    /// False when every non-error record has `skill_calls: null`.
    pub skill_calls_known: bool,
    /// Number of distinct reps.
    pub reps: u32,
    pub config_digests: BTreeSet<String>,
    pub ledger: Ledger,
    pub reliability: Reliability,
    /// LLM calls, tokens and cost by population.
    pub usage: Populations,
    /// Some record says a `--simulate` worker made it up.
    pub simulated: bool,
    /// Non-success attempts by failure category, per cell.
    pub failures: FailureCategories,
}

/// Analyse one treatment.
pub fn analyse(t: &TreatmentRecords) -> Analysis {
    let units = units(&t.rows);
    let cells = cell_stats(&units);
    let reps: BTreeSet<u32> = units.iter().map(|u| u.rep).collect();
    Analysis {
        treatment: t.name.clone(),
        records: t.rows.len(),
        cells,
        // No non-error record at all: nothing is known either way; every cell is null anyway.
        skill_calls_known: t.skill_calls_known.unwrap_or(true),
        reps: reps.len() as u32,
        config_digests: t.config_digests.clone(),
        ledger: ledger(&t.rows, &units),
        reliability: reliability(&units, reps.len() as u32),
        usage: populations(&t.rows, units.len() as u64),
        simulated: t.rows.iter().any(|r| r.simulated),
        failures: failures::group(&t.failures),
        units,
    }
}

/// Sum units into cells. `units` must be sorted by (site, family, condition, rep).
pub fn cell_stats(units: &[Unit]) -> Grid<CellStats> {
    let mut g: Grid<CellStats> = Grid::default();
    let mut last_family: [[Option<u32>; 6]; 3] = [[None; 6]; 3];
    for u in units {
        let (s, c) = (u.site.index(), u.condition.index());
        let cell = &mut g.0[s][c];
        if last_family[s][c] != Some(u.task_id) {
            last_family[s][c] = Some(u.task_id);
            cell.families += 1;
        }
        let Some(m) = u.measured else {
            cell.invalid += 1;
            continue;
        };
        cell.evaluable += 1;
        cell.successes += u32::from(m.success());
        cell.steps_sum += u64::from(m.steps);
        cell.steps_sq += f64::from(m.steps) * f64::from(m.steps);
        let calls = m.skill_calls.unwrap_or(0);
        cell.calls_sum += u64::from(calls);
        cell.calls_sq += f64::from(calls) * f64::from(calls);
        cell.failures_sum += u64::from(m.skill_failures.unwrap_or(0));
    }
    g
}

/// Invocation counts behind each SFR value: per website, per condition, overall.
pub fn invocations(cells: &Grid<CellStats>) -> (PerSite<u64>, PerCondition<u64>, u64) {
    let websites = PerSite::from_fn(|s| Condition::ALL.iter().map(|&c| cells.get(s, c).calls_sum).sum());
    let conditions = PerCondition::from_fn(|c| Site::ALL.iter().map(|&s| cells.get(s, c).calls_sum).sum());
    let overall = cells.0.iter().flatten().map(|c| c.calls_sum).sum();
    (websites, conditions, overall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Measured;
    use skillshift_common::record::Outcome;

    fn unit(site: Site, task_id: u32, condition: Condition, m: Option<(Outcome, u32, u32, u32)>) -> Unit {
        Unit {
            site,
            task_id,
            condition,
            rep: 0,
            attempts: 1,
            first_attempt_success: false,
            measured: m.map(|(outcome, steps, calls, fails)| Measured {
                outcome,
                steps,
                skill_calls: Some(calls),
                skill_failures: Some(fails),
            }),
        }
    }

    #[test]
    fn as_averages_failed_tasks_too_and_sfr_counts_runtime_errors() {
        let us = [
            unit(Site::Gitlab, 0, Condition::Src, Some((Outcome::Success, 2, 1, 0))),
            unit(Site::Gitlab, 1, Condition::Src, Some((Outcome::Failure, 10, 2, 2))),
            unit(Site::Gitlab, 2, Condition::Src, Some((Outcome::Timeout, 9, 1, 1))),
        ];
        let c = cell_stats(&us).get(Site::Gitlab, Condition::Src);
        assert_eq!(c.sr(), Some(100.0 / 3.0));
        // (2 + 10 + 9) / 3, not 2 (successes only).
        assert_eq!(c.as_(), Some(7.0));
        assert_eq!(c.asc(true), Some(4.0 / 3.0));
        // 3 of 4 invocations failed (runtime errors are failures).
        assert_eq!(c.sfr(true), Some(75.0));
    }

    #[test]
    fn invalid_units_are_not_failures_and_zero_calls_make_sfr_null_not_zero() {
        let us = [
            unit(Site::Magento, 0, Condition::Tgt, Some((Outcome::Success, 3, 0, 0))),
            unit(Site::Magento, 1, Condition::Tgt, None),
        ];
        let c = cell_stats(&us).get(Site::Magento, Condition::Tgt);
        assert_eq!((c.families, c.evaluable, c.invalid), (2, 1, 1));
        assert_eq!(c.sr(), Some(100.0));
        assert_eq!(c.asc(true), Some(0.0));
        assert_eq!(c.sfr(true), None);
        assert_eq!(c.asc(false), None);
    }
}
