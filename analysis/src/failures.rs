//! Why attempts did not succeed: every non-success attempt of a treatment
//! grouped by its `failure_category` per (site, condition) cell, with the
//! count and up to [`REPRESENTATIVES`] representative trajectory files per
//! category (docs/formats.md#failure-categories).
//!
//! Grouping is over attempts, not units: every `failure`, `timeout` and
//! `error` record counts once, retried attempts included, because each is a
//! failure someone may want to look at. A record that carries no
//! `failure_category` (written before the field existed) is grouped under
//! [`UNRECORDED`]. The representatives are the first trajectories of the
//! category in file order, so the choice is stable from run to run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::records::FailureRef;
use crate::shape::{PerCondition, PerSite};

/// How many trajectory files are kept per category of a cell.
pub const REPRESENTATIVES: usize = 3;

/// The group of non-success records that carry no `failure_category`.
pub const UNRECORDED: &str = "unrecorded";

/// The categories a run derives (docs/formats.md#failure-categories), in the order a report lists them
/// when counts tie. Any other value a record carries is kept as it is.
pub const KNOWN: &[&str] = &[
    "wrong_answer",
    "wrong_url",
    "page_check",
    "network_check",
    "skill_failure",
    "step_budget",
    "agent_stopped_early",
    "perturbation",
    "agent",
    "browser",
    "site",
    "task_timeout",
    "worker_lost",
    "unexplained",
];

/// One category of one cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CategoryGroup {
    /// Non-success attempts of this category in the cell.
    pub count: u64,
    /// Up to [`REPRESENTATIVES`] trajectory files, relative to the records file.
    pub trajectories: Vec<String>,
}

/// Category name -> group, for one cell.
pub type CellFailures = BTreeMap<String, CategoryGroup>;

/// The summary's `failure_categories` block: per site, per condition, per category.
pub type FailureCategories = PerSite<PerCondition<CellFailures>>;

/// Group `failures` (one treatment's non-success attempts, in file order).
pub fn group(failures: &[FailureRef]) -> FailureCategories {
    let mut out = FailureCategories::default();
    for f in failures {
        let cell = out.get_mut(f.site).get_mut(f.condition);
        let name = f.category.clone().unwrap_or_else(|| UNRECORDED.to_string());
        let g = cell.entry(name).or_default();
        g.count += 1;
        if let Some(t) = &f.trajectory {
            if g.trajectories.len() < REPRESENTATIVES {
                g.trajectories.push(t.clone());
            }
        }
    }
    out
}

/// A cell's categories in reading order: most frequent first, ties in the
/// order of [`KNOWN`], then by name.
pub fn ordered(cell: &CellFailures) -> Vec<(&str, &CategoryGroup)> {
    let rank = |name: &str| KNOWN.iter().position(|k| *k == name).unwrap_or(KNOWN.len());
    let mut v: Vec<(&str, &CategoryGroup)> = cell.iter().map(|(k, g)| (k.as_str(), g)).collect();
    v.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(rank(a.0).cmp(&rank(b.0))).then(a.0.cmp(b.0)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::ids::{Condition, Site};
    use skillshift_common::record::Outcome;

    fn f(condition: Condition, category: Option<&str>, trajectory: Option<&str>) -> FailureRef {
        FailureRef {
            site: Site::Gitlab,
            condition,
            outcome: Outcome::Failure,
            category: category.map(str::to_string),
            trajectory: trajectory.map(str::to_string),
        }
    }

    #[test]
    fn every_known_category_is_counted_in_its_own_cell_and_group() {
        let fs: Vec<FailureRef> = KNOWN.iter().map(|k| f(Condition::TgtExec, Some(k), None)).collect();
        let g = group(&fs);
        let cell = g.gitlab.get(Condition::TgtExec);
        assert_eq!(cell.len(), KNOWN.len());
        for k in KNOWN {
            assert_eq!(cell.get(*k).map(|g| g.count), Some(1), "{k}");
        }
        assert!(g.gitlab.get(Condition::Src).is_empty());
        let names: Vec<&str> = ordered(cell).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, KNOWN, "ties are listed in the documented order");
    }

    #[test]
    fn at_most_three_representatives_in_file_order_and_missing_categories_are_unrecorded() {
        let fs = vec![
            f(Condition::Src, Some("wrong_url"), Some("t/a.json")),
            f(Condition::Src, Some("wrong_url"), None),
            f(Condition::Src, Some("wrong_url"), Some("t/b.json")),
            f(Condition::Src, Some("wrong_url"), Some("t/c.json")),
            f(Condition::Src, Some("wrong_url"), Some("t/d.json")),
            f(Condition::Src, None, Some("t/e.json")),
            f(Condition::Src, Some("zz_custom"), None),
        ];
        let g = group(&fs);
        let cell = g.gitlab.get(Condition::Src);
        let url = &cell["wrong_url"];
        assert_eq!(url.count, 5);
        assert_eq!(url.trajectories, ["t/a.json", "t/b.json", "t/c.json"]);
        assert_eq!(cell[UNRECORDED].count, 1);
        let order: Vec<&str> = ordered(cell).iter().map(|(n, _)| *n).collect();
        assert_eq!(order, ["wrong_url", "unrecorded", "zz_custom"]);
    }
}
