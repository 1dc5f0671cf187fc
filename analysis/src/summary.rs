//! The summary object, `skillshift.summary/1` (docs/formats.md#summary): ten numbers per
//! metric, `n`, a reason for every null, the eighteen cells, the ledger and
//! the reliability block. An entry computed from a run and one transcribed
//! from a paper are the same object.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::cells::{invocations, Analysis, CellStats};
use crate::failures::FailureCategories;
use crate::interval::{intervals, Intervals};
use crate::ledger::Ledger;
use crate::readiness::Gates;
use crate::reliability::Reliability;
use crate::shape::{marginals, Grid, PerCondition, PerSite, TenNumbers};
use crate::usage::{partial_note, Cost};
use skillshift_common::ids::{Condition, Site};

pub const SCHEMA: &str = "skillshift.summary/1";

/// The four metrics; a metric that does not apply at all is `null`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    #[serde(rename = "SR")]
    pub sr: Option<TenNumbers>,
    #[serde(rename = "AS")]
    pub as_: Option<TenNumbers>,
    #[serde(rename = "ASC")]
    pub asc: Option<TenNumbers>,
    #[serde(rename = "SFR")]
    pub sfr: Option<TenNumbers>,
}

/// The number of skill invocations each SFR value rests on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillCalls {
    pub websites: PerSite<u64>,
    pub conditions: PerCondition<u64>,
    pub overall: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct N {
    pub tasks: PerSite<u32>,
    pub reps: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_calls: Option<SkillCalls>,
}

/// One (site, condition) cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    #[serde(rename = "SR")]
    pub sr: Option<f64>,
    #[serde(rename = "AS")]
    pub as_: Option<f64>,
    #[serde(rename = "ASC")]
    pub asc: Option<f64>,
    #[serde(rename = "SFR")]
    pub sfr: Option<f64>,
    pub evaluable: u32,
    pub invalid: u32,
    pub skill_calls: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub method: String,
    pub source: String,
    pub config_digest: Option<String>,
    /// `Some(true)` when any record it was built from was made up by a `--simulate` worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated: Option<bool>,
    pub metrics: Metrics,
    /// 95% intervals beside SR and the ledger rates (docs/formats.md#intervals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Intervals>,
    pub n: N,
    pub reasons: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<PerSite<PerCondition<Cell>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<Ledger>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reliability: Option<Reliability>,
    /// Totals of cost, tokens and LLM calls over every attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// Readiness: the evaluated gates, or what is missing to decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<Gates>,
    /// Non-success attempts by `failure_category` per cell, with representative
    /// trajectories (docs/formats.md#failure-categories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_categories: Option<FailureCategories>,
}

/// Why a summary could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SummaryError {
    #[error(
        "treatment '{treatment}' is partial: {site} has {low} task families in {low_cond} but {high} in \
         {high_cond}; pass --allow-partial to report it anyway"
    )]
    Partial { treatment: String, site: Site, low: u32, low_cond: Condition, high: u32, high_cond: Condition },
}

/// A summary plus what a reader must be told beside it.
#[derive(Debug, Clone)]
pub struct Built {
    pub summary: Summary,
    /// Notes for the reader (partial run, several contracts).
    pub notes: Vec<String>,
}

/// The metric names in table order.
pub const METRICS: [&str; 4] = ["SR", "AS", "ASC", "SFR"];

/// Build the summary of one analysed treatment.
pub fn summarise(a: &Analysis, allow_partial: bool) -> Result<Built, SummaryError> {
    let mut notes = Vec::new();
    let tasks = PerSite::from_fn(|s| {
        let counts: Vec<(u32, Condition)> = Condition::ALL.iter().map(|&c| (a.cells.get(s, c).families, c)).collect();
        let (lo, lo_c) = counts.iter().copied().min_by_key(|x| x.0).unwrap_or((0, Condition::Src));
        let (hi, hi_c) = counts.iter().copied().max_by_key(|x| x.0).unwrap_or((0, Condition::Src));
        (s, lo, lo_c, hi, hi_c)
    });
    for &s in Site::ALL {
        let (_, lo, lo_c, hi, hi_c) = *tasks.get(s);
        if lo != hi {
            if !allow_partial {
                return Err(SummaryError::Partial {
                    treatment: a.treatment.clone(),
                    site: s,
                    low: lo,
                    low_cond: lo_c,
                    high: hi,
                    high_cond: hi_c,
                });
            }
            notes.push(format!(
                "partial run: {s} has {lo} task families in {lo_c} but {hi} in {hi_c}; n.tasks shows {hi}"
            ));
        }
    }
    let known = a.skill_calls_known;
    let grids: [Grid<Option<f64>>; 4] = [
        a.cells.map(CellStats::sr),
        a.cells.map(CellStats::as_),
        a.cells.map(|c| c.asc(known)),
        a.cells.map(|c| c.sfr(known)),
    ];
    let mut reasons = BTreeMap::new();
    let mut metric_values: [Option<TenNumbers>; 4] = [None; 4];
    let any_evaluable = a.cells.0.iter().flatten().any(|c| c.evaluable > 0);
    for (i, name) in METRICS.iter().enumerate() {
        let ten = marginals(&grids[i]);
        let whole = if !known && (*name == "ASC" || *name == "SFR") {
            Some(format!(
                "every non-error record of treatment '{}' has skill_calls: null: the method has no executable \
                 skills, so {name} does not apply",
                a.treatment
            ))
        } else if ten.values().iter().all(Option::is_none) {
            Some(if any_evaluable {
                "no skill was invoked in any cell (ASC = 0), so SFR has no denominator; 0 would claim that no \
                 skill ever failed"
                    .to_string()
            } else {
                format!("no evaluable record: every unit of treatment '{}' is invalid or absent", a.treatment)
            })
        } else {
            None
        };
        if let Some(w) = whole {
            reasons.insert(name.to_string(), w);
            continue;
        }
        for &s in Site::ALL {
            if ten.websites.get(s).is_none() {
                let cells: Vec<CellStats> = Condition::ALL.iter().map(|&c| a.cells.get(s, c)).collect();
                reasons.insert(format!("{name}.websites.{s}"), marginal_reason(&cells, &format!("{s}'s six cells")));
            }
        }
        for &c in Condition::ALL {
            if ten.conditions.get(c).is_none() {
                let cells: Vec<CellStats> = Site::ALL.iter().map(|&s| a.cells.get(s, c)).collect();
                reasons
                    .insert(format!("{name}.conditions.{c}"), marginal_reason(&cells, &format!("{c}'s three cells")));
            }
        }
        for &s in Site::ALL {
            for &c in Condition::ALL {
                if grids[i].get(s, c).is_none() {
                    let cell = a.cells.get(s, c);
                    let why = if cell.evaluable == 0 {
                        format!("no evaluable record in this cell ({} invalid units)", cell.invalid)
                    } else {
                        "no skill was invoked in this cell (ASC = 0), so SFR has no denominator".to_string()
                    };
                    reasons.insert(format!("{name}.cells.{s}.{c}"), why);
                }
            }
        }
        metric_values[i] = Some(ten);
    }
    let (w, c, o) = invocations(&a.cells);
    let digest = match a.config_digests.len() {
        1 => a.config_digests.iter().next().cloned(),
        0 => None,
        n => {
            notes.push(format!(
                "the records carry {n} different config digests ({}): they were not run under one contract",
                a.config_digests.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
            None
        }
    };
    let cells = PerSite::from_fn(|s| {
        PerCondition::from_fn(|cond| {
            let st = a.cells.get(s, cond);
            Cell {
                sr: st.sr(),
                as_: st.as_(),
                asc: st.asc(known),
                sfr: st.sfr(known),
                evaluable: st.evaluable,
                invalid: st.invalid,
                skill_calls: st.calls_sum,
            }
        })
    });
    let [sr, as_, asc, sfr] = metric_values;
    let summary = Summary {
        schema: SCHEMA.to_string(),
        method: a.treatment.clone(),
        source: "run".to_string(),
        config_digest: digest,
        simulated: a.simulated.then_some(true),
        metrics: Metrics { sr, as_, asc, sfr },
        intervals: Some(intervals(&a.cells, &a.ledger)),
        n: N {
            tasks: PerSite::from_fn(|s| tasks.get(s).3),
            reps: a.reps,
            skill_calls: Some(SkillCalls { websites: w, conditions: c, overall: o }),
        },
        reasons,
        cells: Some(cells),
        ledger: Some(a.ledger.clone()),
        reliability: Some(a.reliability.clone()),
        cost: Some(Cost::from_populations(&a.usage)),
        gates: Some(Gates::not_determined()),
        failure_categories: Some(a.failures.clone()),
    };
    notes.extend(partial_note(&a.usage));
    Ok(Built { summary, notes })
}

fn marginal_reason(cells: &[CellStats], what: &str) -> String {
    if cells.iter().all(|c| c.evaluable == 0) {
        format!("no evaluable record in any of {what}")
    } else {
        format!("no skill was invoked in any of {what} (ASC = 0 there), so SFR has no denominator")
    }
}

/// Distinct digests, for footers.
pub fn digests_line(d: &BTreeSet<String>) -> String {
    if d.is_empty() {
        "none recorded".to_string()
    } else {
        d.iter().cloned().collect::<Vec<_>>().join(", ")
    }
}
