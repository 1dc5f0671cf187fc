//! LLM calls, tokens and cost: the summary's `cost` block and the populations
//! behind it (docs/formats.md#cost).
//!
//! Like latency, spend is kept apart by population: successful attempts,
//! attempts that reached a terminal failure (`failure` or `timeout`), `error`
//! attempts, the evaluable ones (success + failure + timeout) and all of them.
//! Each figure is summed over the attempts whose record carries the field, and
//! says how many did: a total over a population where some records carry no
//! cost is a lower bound, never a complete figure.

use serde::{Deserialize, Serialize};

use crate::records::Row;
use skillshift_common::record::Outcome;

/// One field summed over a population.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// Attempts in the population.
    pub attempts: u64,
    /// Attempts whose record carries the field.
    pub recorded: u64,
    /// Sum over those; `None` when none carries it.
    pub total: Option<f64>,
    /// Mean per attempt that carries it; `None` when none does.
    pub per_attempt: Option<f64>,
}

impl Tally {
    fn of(values: impl Iterator<Item = Option<f64>>) -> Tally {
        let (mut attempts, mut recorded, mut sum) = (0u64, 0u64, 0.0);
        for v in values {
            attempts += 1;
            if let Some(v) = v {
                recorded += 1;
                sum += v;
            }
        }
        Tally {
            attempts,
            recorded,
            total: (recorded > 0).then_some(sum),
            per_attempt: (recorded > 0).then(|| sum / recorded as f64),
        }
    }

    /// Some attempt of the population carries the field and some does not.
    pub fn is_partial(&self) -> bool {
        self.recorded > 0 && self.recorded < self.attempts
    }

    /// How many attempts carry no value for the field.
    pub fn missing(&self) -> u64 {
        self.attempts - self.recorded
    }
}

/// The LLM use of one population of attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Population {
    pub attempts: u64,
    pub llm_calls: Tally,
    pub tokens_in: Tally,
    pub tokens_out: Tally,
    pub cost_usd: Tally,
}

impl Population {
    fn of<'a>(rows: impl Iterator<Item = &'a Row> + Clone) -> Population {
        let int = |v: Option<u64>| v.map(|x| x as f64);
        Population {
            attempts: rows.clone().count() as u64,
            llm_calls: Tally::of(rows.clone().map(|r| int(r.usage.llm_calls))),
            tokens_in: Tally::of(rows.clone().map(|r| int(r.usage.tokens_in))),
            tokens_out: Tally::of(rows.clone().map(|r| int(r.usage.tokens_out))),
            cost_usd: Tally::of(rows.map(|r| r.usage.cost_usd)),
        }
    }

    /// The four fields with their names, in table order.
    pub fn fields(&self) -> [(&'static str, &Tally); 4] {
        [
            ("llm_calls", &self.llm_calls),
            ("tokens_in", &self.tokens_in),
            ("tokens_out", &self.tokens_out),
            ("cost_usd", &self.cost_usd),
        ]
    }
}

/// Per-unit figures: a population's total over every scheduled unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerUnit {
    pub llm_calls: Option<f64>,
    pub tokens_in: Option<f64>,
    pub tokens_out: Option<f64>,
    pub cost_usd: Option<f64>,
}

/// LLM use of one treatment, by population.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Populations {
    /// Scheduled units (valid or not): the denominator of `per_unit`.
    pub units: u64,
    /// Every attempt's total (retries and errors included) over `units`.
    pub per_unit: PerUnit,
    /// Successful attempts.
    pub success: Population,
    /// `failure` and `timeout` attempts.
    pub non_success: Population,
    /// `error` attempts.
    pub error: Population,
    /// success + failure + timeout: the per-evaluable-attempt figures.
    pub evaluable: Population,
    /// Every attempt.
    pub all: Population,
}

impl Populations {
    /// Whether any record carries any of the fields.
    pub fn any_recorded(&self) -> bool {
        self.all.fields().iter().any(|(_, t)| t.recorded > 0)
    }

    /// The populations with their display labels, in table order.
    pub fn labelled(&self) -> [(&'static str, &Population); 5] {
        [
            ("success", &self.success),
            ("failure or timeout", &self.non_success),
            ("error", &self.error),
            ("evaluable", &self.evaluable),
            ("all", &self.all),
        ]
    }
}

/// Build the populations of one treatment from its attempts and its unit count.
pub fn populations(rows: &[Row], units: u64) -> Populations {
    let of = |keep: fn(Outcome) -> bool| Population::of(rows.iter().filter(move |r| keep(r.outcome)));
    let all = Population::of(rows.iter());
    let per = |t: &Tally| t.total.filter(|_| units > 0).map(|v| v / units as f64);
    Populations {
        units,
        per_unit: PerUnit {
            llm_calls: per(&all.llm_calls),
            tokens_in: per(&all.tokens_in),
            tokens_out: per(&all.tokens_out),
            cost_usd: per(&all.cost_usd),
        },
        success: of(|o| o == Outcome::Success),
        non_success: of(|o| matches!(o, Outcome::Failure | Outcome::Timeout)),
        error: of(|o| o == Outcome::Error),
        evaluable: of(|o| o != Outcome::Error),
        all,
    }
}

/// The summary's `cost` block: totals over every attempt, `null` where no
/// record carries the field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub total_usd: Option<f64>,
    pub per_unit_usd: Option<f64>,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub llm_calls: Option<u64>,
}

impl Cost {
    pub fn from_populations(p: &Populations) -> Cost {
        let int = |t: &Tally| t.total.map(|v| v.round() as u64);
        Cost {
            total_usd: p.all.cost_usd.total,
            per_unit_usd: p.per_unit.cost_usd,
            tokens_in: int(&p.all.tokens_in),
            tokens_out: int(&p.all.tokens_out),
            llm_calls: int(&p.all.llm_calls),
        }
    }
}

/// The tally behind a `cost.*` path of the summary, to tell a complete total
/// from a lower bound.
pub fn tally_of_cost_path<'a>(p: &'a Populations, key: &str) -> Option<&'a Tally> {
    Some(match key {
        "total_usd" | "per_unit_usd" => &p.all.cost_usd,
        "tokens_in" => &p.all.tokens_in,
        "tokens_out" => &p.all.tokens_out,
        "llm_calls" => &p.all.llm_calls,
        _ => return None,
    })
}

/// A line for the reader when a total rests on only some attempts.
pub fn partial_note(p: &Populations) -> Option<String> {
    let partial: Vec<String> = p
        .all
        .fields()
        .iter()
        .filter(|(_, t)| t.is_partial())
        .map(|(name, t)| format!("{name} on {} of {}", t.missing(), t.attempts))
        .collect();
    (!partial.is_empty()).then(|| {
        format!("some attempts record no LLM use, so these totals are lower bounds: missing {}", partial.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Usage;
    use skillshift_common::ids::{Condition, Site};

    fn row(outcome: Outcome, calls: Option<u64>, cost: Option<f64>) -> Row {
        Row {
            site: Site::Gitlab,
            task_id: 0,
            condition: Condition::Src,
            rep: 0,
            attempt: 0,
            outcome,
            steps: Some(1),
            skill_calls: None,
            skill_failures: None,
            duration_ms: None,
            usage: Usage { llm_calls: calls, tokens_in: calls.map(|c| 100 * c), tokens_out: None, cost_usd: cost },
            simulated: false,
            line: 0,
        }
    }

    #[test]
    fn populations_keep_successes_and_failures_apart_and_say_what_is_missing() {
        let rows = [
            row(Outcome::Success, Some(2), Some(0.02)),
            row(Outcome::Success, Some(4), Some(0.04)),
            row(Outcome::Failure, Some(10), Some(0.10)),
            row(Outcome::Timeout, Some(10), None),
            row(Outcome::Error, None, None),
        ];
        let p = populations(&rows, 4);
        assert_eq!(p.success.llm_calls.total, Some(6.0));
        assert_eq!(p.success.llm_calls.per_attempt, Some(3.0));
        assert_eq!(p.non_success.llm_calls.per_attempt, Some(10.0));
        assert_eq!((p.evaluable.attempts, p.evaluable.llm_calls.total), (4, Some(26.0)));
        assert_eq!(p.error.llm_calls.total, None);
        // 26 calls over 4 units; cost 0.16 over the 3 attempts that carry it, a lower bound.
        assert_eq!(p.per_unit.llm_calls, Some(6.5));
        assert!(p.all.cost_usd.is_partial() && p.all.cost_usd.missing() == 2);
        assert!((p.all.cost_usd.total.unwrap() - 0.16).abs() < 1e-12);
        let note = partial_note(&p).unwrap();
        assert!(note.ends_with("missing llm_calls on 1 of 5, tokens_in on 1 of 5, cost_usd on 2 of 5"), "{note}");
        let c = Cost::from_populations(&p);
        assert_eq!((c.llm_calls, c.tokens_in, c.tokens_out), (Some(26), Some(2600), None));
        assert!((c.per_unit_usd.unwrap() - 0.04).abs() < 1e-12);
        // Nothing recorded anywhere: every figure is null, never 0.
        let none = populations(&[row(Outcome::Success, None, None)], 1);
        assert!(!none.any_recorded());
        assert_eq!(Cost::from_populations(&none), Cost::default());
    }
}
