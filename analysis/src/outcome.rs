//! The unit outcome rule and the evaluable set (docs/formats.md#numbers).
//!
//! A unit is (treatment, family, condition, rep). Its outcome is its
//! non-`error` record with the lowest `attempt`; a unit whose attempts are all
//! `error` is *invalid*: it appears in the ledger and in `n`, never as a
//! failure. The evaluable records are the outcomes of valid units.

use crate::records::Row;
use skillshift_common::ids::{Condition, Site};
use skillshift_common::record::Outcome;

/// What a valid unit measured: its lowest non-error attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub outcome: Outcome,
    pub steps: u32,
    pub skill_calls: Option<u32>,
    pub skill_failures: Option<u32>,
}

impl Measured {
    pub fn success(&self) -> bool {
        self.outcome == Outcome::Success
    }
}

/// One run unit of a treatment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    pub site: Site,
    pub task_id: u32,
    pub condition: Condition,
    pub rep: u32,
    /// Number of attempt records.
    pub attempts: u32,
    /// Whether the lowest attempt (whatever its outcome) succeeded.
    pub first_attempt_success: bool,
    /// `None` when every attempt was an `error`: the unit is invalid.
    pub measured: Option<Measured>,
}

impl Unit {
    pub fn is_valid(&self) -> bool {
        self.measured.is_some()
    }
}

/// A row's position in (site, family, condition, rep, attempt) order: a tuple, each part compared on its own.
type SortKey = (Site, u32, Condition, u32, u32);

fn sort_key(r: &Row) -> SortKey {
    (r.site, r.task_id, r.condition, r.rep, r.attempt)
}

/// Group rows into units, sorted by (site, family, condition, rep).
pub fn units(rows: &[Row]) -> Vec<Unit> {
    // Sort small (key, index) pairs rather than whole rows.
    let mut order: Vec<(SortKey, usize)> = rows.iter().enumerate().map(|(i, r)| (sort_key(r), i)).collect();
    order.sort_unstable();
    let sorted = order.iter().map(|&(_, i)| &rows[i]);
    let mut out: Vec<Unit> = Vec::new();
    for r in sorted {
        let same = out
            .last()
            .is_some_and(|u| (u.site, u.task_id, u.condition, u.rep) == (r.site, r.task_id, r.condition, r.rep));
        if !same {
            out.push(Unit {
                site: r.site,
                task_id: r.task_id,
                condition: r.condition,
                rep: r.rep,
                attempts: 0,
                first_attempt_success: r.success(),
                measured: None,
            });
        }
        let Some(u) = out.last_mut() else { continue };
        u.attempts += 1;
        // Rows are sorted by attempt, so the first non-error one is the lowest.
        if u.measured.is_none() && r.outcome != Outcome::Error {
            u.measured = Some(Measured {
                outcome: r.outcome,
                steps: r.steps.unwrap_or(0),
                skill_calls: r.skill_calls,
                skill_failures: r.skill_failures,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(task_id: u32, attempt: u32, outcome: Outcome, steps: u32) -> Row {
        Row {
            site: Site::Gitlab,
            task_id,
            condition: Condition::Src,
            rep: 0,
            attempt,
            outcome,
            steps: (outcome != Outcome::Error).then_some(steps),
            skill_calls: Some(0),
            skill_failures: Some(0),
            duration_ms: None,
            usage: Default::default(),
            simulated: false,
            line: 0,
        }
    }

    #[test]
    fn lowest_valid_attempt_wins_regardless_of_file_order() {
        // Attempt 2 (success) arrives before attempt 1 (failure); attempt 0 was an error.
        let rows = [row(4, 2, Outcome::Success, 3), row(4, 0, Outcome::Error, 0), row(4, 1, Outcome::Failure, 9)];
        let u = units(&rows);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].attempts, 3);
        assert!(!u[0].first_attempt_success);
        let m = u[0].measured.unwrap();
        assert_eq!((m.outcome, m.steps), (Outcome::Failure, 9));
    }

    #[test]
    fn units_sort_by_site_family_condition_rep_whatever_the_values() {
        let mut big = row(u32::MAX, 0, Outcome::Success, 1);
        big.condition = Condition::Src;
        let mut perc = row(0, 0, Outcome::Failure, 1);
        perc.condition = Condition::TgtExec;
        let mut late = row(0, u32::MAX, Outcome::Success, 1);
        late.rep = u32::MAX;
        let mut magento = row(0, 0, Outcome::Success, 1);
        magento.site = Site::Magento;
        let u = units(&[magento, big, late, perc, row(0, 0, Outcome::Success, 1)]);
        let order: Vec<_> = u.iter().map(|u| (u.site, u.task_id, u.condition, u.rep)).collect();
        assert_eq!(
            order,
            [
                (Site::Gitlab, 0, Condition::Src, 0),
                (Site::Gitlab, 0, Condition::Src, u32::MAX),
                (Site::Gitlab, 0, Condition::TgtExec, 0),
                (Site::Gitlab, u32::MAX, Condition::Src, 0),
                (Site::Magento, 0, Condition::Src, 0),
            ]
        );
    }

    #[test]
    fn all_error_unit_is_invalid_not_a_failure() {
        let u = units(&[row(1, 0, Outcome::Error, 0), row(1, 1, Outcome::Error, 0), row(2, 0, Outcome::Success, 2)]);
        assert_eq!(u.len(), 2);
        assert!(!u[0].is_valid());
        assert!(u[1].is_valid() && u[1].first_attempt_success);
    }
}
