//! Readiness gates, `skillshift.gates/1` (docs/formats.md#gates): thresholds
//! declared before the results are read, mapped to `pass`, `fail` or
//! `inconclusive`.
//!
//! * A gate names a dotted path into the summary that ends at a number, and
//!   one bound, `min` or `max`. A gates file is checked whole before anything
//!   is evaluated: an unknown path, both or neither bound, a bound that is not
//!   a finite number or a rate threshold outside [0, 1] is bad input.
//! * A gate is inconclusive when its value is null (a zero denominator, no
//!   cost recorded) and when the 95% interval beside the value contains the
//!   threshold (Wilson for `ledger.rates.*` and cell SRs, stratified Wilson for
//!   SR's macro values): the data cannot tell. A total that rests on only some
//!   attempts (cost missing on a few records) is a lower bound: it can fail a
//!   `max` or pass a `min`, never the other way round.
//! * Readiness is `fail` when any gate fails, else `inconclusive` when any is,
//!   else `pass`. Without gates it is `not determined`, and the summary lists
//!   the kinds of gate a decision needs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::readiness::{GateResult, Gates, Verdict};
use crate::schema::{self, Node};
use crate::shape::Pair;
use crate::summary::Summary;
use crate::usage::{tally_of_cost_path, Populations};

pub const SCHEMA: &str = "skillshift.gates/1";

/// Largest gates file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most gates in one file.
pub const MAX_GATES: usize = 1000;

/// Which side of the threshold passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Min(f64),
    Max(f64),
}

impl Bound {
    pub fn threshold(self) -> f64 {
        match self {
            Bound::Min(t) | Bound::Max(t) => t,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Bound::Min(_) => "min",
            Bound::Max(_) => "max",
        }
    }

    fn passes(self, v: f64) -> bool {
        match self {
            Bound::Min(t) => v >= t,
            Bound::Max(t) => v <= t,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub name: String,
    pub metric: String,
    pub bound: Bound,
}

/// A checked gates file.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSet {
    pub path: PathBuf,
    pub gates: Vec<Gate>,
}

#[derive(Debug, thiserror::Error)]
pub enum GatesError {
    #[error("cannot read gates file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("gates file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Read and check a gates file.
pub fn load(path: &Path) -> Result<GateSet, GatesError> {
    let read = |source| GatesError::Read { path: path.to_path_buf(), source };
    // The bounded reader: a device (`/dev/zero`) says its size is 0, so only reading up to the bound holds.
    let text = skillshift_common::bounded::read_to_string(path, MAX_FILE_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => GatesError::Invalid { path: path.to_path_buf(), message: e.to_string() },
        _ => read(e),
    })?;
    parse(&text, path)
}

/// Whether a path names a rate that is a fraction in [0, 1].
fn is_fraction(metric: &str) -> bool {
    metric.strip_prefix("ledger.rates.").is_some_and(|r| r != "retry_rate")
}

/// Whether a path names a percentage in [0, 100].
fn is_percentage(metric: &str) -> bool {
    let p: Vec<&str> = metric.split('.').collect();
    matches!(
        p.as_slice(),
        ["metrics", "SR" | "SFR", ..] | ["cells", _, _, "SR" | "SFR"] | ["reliability", "pass@k" | "pass^k", ..]
    )
}

/// Check a gates file's text; `path` names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<GateSet, GatesError> {
    let bad = |message: String| GatesError::Invalid { path: path.to_path_buf(), message };
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let Some(top) = v.as_object() else { return Err(bad("expected a JSON object".into())) };
    if let Some(k) = top.keys().find(|k| *k != "schema" && *k != "gates") {
        return Err(bad(format!("unknown key '{k}' (a gates file holds schema and gates)")));
    }
    match top.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => {}
        other => {
            let found = other.map_or_else(|| "missing".to_string(), |s| format!("\"{s}\""));
            return Err(bad(format!("schema is {found}, expected \"{SCHEMA}\"")));
        }
    }
    let Some(list) = top.get("gates").and_then(Value::as_array) else {
        return Err(bad("'gates' must be a list of gates".into()));
    };
    if list.is_empty() {
        return Err(bad("declares no gate".into()));
    }
    if list.len() > MAX_GATES {
        return Err(bad(format!("declares {} gates, more than {MAX_GATES}", list.len())));
    }
    let tree = schema::summary();
    let mut gates: Vec<Gate> = Vec::with_capacity(list.len());
    for (i, g) in list.iter().enumerate() {
        let name = g.get("name").and_then(Value::as_str).unwrap_or("");
        let at = if name.is_empty() { format!("gate {}", i + 1) } else { format!("gate {} ('{name}')", i + 1) };
        let bad = |message: String| bad(format!("{at}: {message}"));
        let Some(obj) = g.as_object() else { return Err(bad("expected an object".into())) };
        if let Some(k) = obj.keys().find(|k| !["name", "metric", "min", "max"].contains(&k.as_str())) {
            return Err(bad(format!("unknown key '{k}' (a gate holds name, metric and min or max)")));
        }
        if name.trim().is_empty() {
            return Err(bad("'name' must be a non-empty string".into()));
        }
        if gates.iter().any(|x| x.name == name) {
            return Err(bad("another gate has the same name".into()));
        }
        let Some(metric) = obj.get("metric").and_then(Value::as_str) else {
            return Err(bad("'metric' must be a dotted path into the summary, e.g. ledger.rates.timeout".into()));
        };
        match schema::at(&tree, metric) {
            Ok(Node::Num) => {}
            Ok(other) => {
                return Err(bad(format!(
                    "metric '{metric}' is not a number of the summary (it is {})",
                    other.describe()
                )));
            }
            Err(why) => return Err(bad(format!("metric '{metric}' is not in the summary: {why}"))),
        }
        let number = |key: &str| -> Result<Option<f64>, GatesError> {
            match obj.get(key) {
                None => Ok(None),
                Some(x) => match x.as_f64().filter(|f| f.is_finite()) {
                    Some(f) => Ok(Some(f)),
                    None => Err(bad(format!("'{key}' must be a finite number, found {x}"))),
                },
            }
        };
        let bound = match (number("min")?, number("max")?) {
            (Some(t), None) => Bound::Min(t),
            (None, Some(t)) => Bound::Max(t),
            (Some(_), Some(_)) => return Err(bad("has both min and max; declare two gates".into())),
            (None, None) => return Err(bad("has neither min nor max".into())),
        };
        let t = bound.threshold();
        if is_fraction(metric) && !(0.0..=1.0).contains(&t) {
            return Err(bad(format!(
                "{} {t} is outside [0, 1], but {metric} is a fraction (0.4 means 40%)",
                bound.name()
            )));
        }
        if is_percentage(metric) && !(0.0..=100.0).contains(&t) {
            return Err(bad(format!("{} {t} is outside [0, 100], but {metric} is a percentage", bound.name())));
        }
        gates.push(Gate { name: name.to_string(), metric: metric.to_string(), bound });
    }
    Ok(GateSet { path: path.to_path_buf(), gates })
}

/// The value at a dotted path: `None` when it or a parent is null or absent.
fn resolve<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |here, seg| here.get(seg)).filter(|x| !x.is_null())
}

/// The path of the interval the summary puts beside a metric, if any.
fn interval_path(metric: &str) -> Option<String> {
    let p: Vec<&str> = metric.split('.').collect();
    match p.as_slice() {
        ["ledger", "rates", r] if *r != "retry_rate" => Some(format!("intervals.ledger.{r}")),
        ["metrics", "SR", rest @ ..] => Some(format!("intervals.SR.{}", rest.join("."))),
        ["cells", s, c, "SR"] => Some(format!("intervals.SR.cells.{s}.{c}")),
        _ => None,
    }
}

/// A number for a reason: integers plainly, others to four decimals.
pub fn show(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Why a value is null, from the summary's own reasons where it has one.
fn null_reason(s: &Summary, metric: &str) -> String {
    let p: Vec<&str> = metric.split('.').collect();
    let reason_key = match p.as_slice() {
        ["metrics", m, rest @ ..] => {
            Some(if rest.is_empty() { m.to_string() } else { format!("{m}.{}", rest.join(".")) })
        }
        ["cells", site, cond, m] => Some(format!("{m}.cells.{site}.{cond}")),
        _ => None,
    };
    if let Some(k) = reason_key {
        let whole = k.split('.').next().unwrap_or_default().to_string();
        if let Some(r) = s.reasons.get(&k).or_else(|| s.reasons.get(&whole)) {
            return format!("the value is null: {r}");
        }
    }
    match p.as_slice() {
        ["ledger", "rates", r] => match s.ledger.as_ref().and_then(|l| crate::interval::rate_counts(l, r)) {
            Some((_, 0)) | None => format!("the value is null: the denominator of {r} is 0"),
            Some(_) => "the value is null".to_string(),
        },
        ["ledger", "latency_ms", pop, _] => format!("the value is null: no {pop} attempt records duration_ms"),
        ["cost", key] => format!("the value is null: no record carries {}", cost_field(key)),
        _ => "the value is null: the records hold nothing to compute it from".to_string(),
    }
}

fn cost_field(key: &str) -> &str {
    match key {
        "total_usd" | "per_unit_usd" => "cost_usd",
        other => other,
    }
}

/// Evaluate one gate against a summary (and the usage populations behind its `cost` block).
fn evaluate_one(g: &Gate, s: &Summary, v: &Value, usage: &Populations) -> GateResult {
    let observed = resolve(v, &g.metric).and_then(Value::as_f64);
    let interval: Option<Pair> = interval_path(&g.metric)
        .and_then(|p| resolve(v, &p).cloned())
        .and_then(|x| serde_json::from_value::<Pair>(x).ok());
    let t = g.bound.threshold();
    let bound_text = format!("{} {}", g.bound.name(), show(t));
    let counts = g
        .metric
        .strip_prefix("ledger.rates.")
        .and_then(|r| s.ledger.as_ref().and_then(|l| crate::interval::rate_counts(l, r)))
        .map(|(c, n)| format!(" ({c}/{n})"))
        .unwrap_or_default();
    let (verdict, reason) = match observed {
        None => (Verdict::Inconclusive, null_reason(s, &g.metric)),
        Some(x) => {
            let seen = format!("observed {}{counts}", show(x));
            let partial =
                g.metric.strip_prefix("cost.").and_then(|k| tally_of_cost_path(usage, k)).filter(|t| t.is_partial());
            match (interval, partial) {
                (Some([lo, hi]), _) if lo <= t && t <= hi => (
                    Verdict::Inconclusive,
                    format!(
                        "{seen}; the 95% interval [{}, {}] contains the threshold ({bound_text}): the data cannot tell",
                        show(lo),
                        show(hi)
                    ),
                ),
                (_, Some(tally)) => {
                    let lower = format!(
                        "{seen} is a lower bound ({} of {} attempts carry no {})",
                        tally.missing(),
                        tally.attempts,
                        cost_field(g.metric.trim_start_matches("cost."))
                    );
                    // A lower bound that already breaks a max, or already meets a min, settles the gate.
                    match g.bound {
                        Bound::Max(_) if !g.bound.passes(x) => (Verdict::Fail, format!("{lower}, above {bound_text}")),
                        Bound::Min(_) if g.bound.passes(x) => (Verdict::Pass, format!("{lower}, meeting {bound_text}")),
                        _ => (Verdict::Inconclusive, format!("{lower}: it cannot show {bound_text} holds")),
                    }
                }
                _ => {
                    let within = interval.map_or(String::new(), |[lo, hi]| {
                        format!("; the 95% interval [{}, {}] excludes the threshold", show(lo), show(hi))
                    });
                    if g.bound.passes(x) {
                        (Verdict::Pass, format!("{seen} meets {bound_text}{within}"))
                    } else {
                        (Verdict::Fail, format!("{seen} breaks {bound_text}{within}"))
                    }
                }
            }
        }
    };
    let (min, max) = match g.bound {
        Bound::Min(t) => (Some(t), None),
        Bound::Max(t) => (None, Some(t)),
    };
    GateResult { name: g.name.clone(), metric: g.metric.clone(), observed, min, max, interval, verdict, reason }
}

/// Evaluate every gate against a summary.
pub fn evaluate(set: &GateSet, s: &Summary, usage: &Populations) -> Gates {
    // The summary as JSON, without any gates block of its own, is what paths point into.
    let mut plain = s.clone();
    plain.gates = None;
    let v = serde_json::to_value(&plain).unwrap_or(Value::Null);
    let results: Vec<GateResult> = set.gates.iter().map(|g| evaluate_one(g, s, &v, usage)).collect();
    let readiness = if results.iter().any(|r| r.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if results.iter().any(|r| r.verdict == Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    Gates { readiness: readiness.as_str().to_string(), results: Some(results), missing: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::NOT_DETERMINED;

    fn parse_err(text: &str) -> String {
        parse(text, Path::new("g.json")).unwrap_err().to_string()
    }

    fn one(gate: &str) -> String {
        format!(r#"{{"schema": "skillshift.gates/1", "gates": [{gate}]}}"#)
    }

    #[test]
    fn a_gates_file_is_checked_whole_and_each_fault_names_the_file_and_gate() {
        let ok = parse(&one(r#"{"name": "t", "metric": "ledger.rates.timeout", "max": 0.1}"#), Path::new("g.json"));
        assert_eq!(ok.unwrap().gates[0].bound, Bound::Max(0.1));
        let cases = [
            (r#"{"name": "t", "metric": "ledger.rates.timout", "max": 0.1}"#, "gate 1 ('t'): metric 'ledger.rates.timout' is not in the summary: 'timout' is not a key of ledger.rates"),
            (r#"{"name": "t", "metric": "ledger.rates", "max": 0.1}"#, "gate 1 ('t'): metric 'ledger.rates' is not a number"),
            (r#"{"name": "t", "metric": "method", "max": 0.1}"#, "is not a number"),
            (r#"{"name": "t", "metric": "ledger.rates.timeout", "min": 0.1, "max": 0.2}"#, "has both min and max"),
            (r#"{"name": "t", "metric": "ledger.rates.timeout"}"#, "has neither min nor max"),
            (r#"{"name": "t", "metric": "ledger.rates.timeout", "max": "NaN"}"#, "'max' must be a finite number, found \"NaN\""),
            (r#"{"name": "t", "metric": "ledger.rates.attempt_success", "min": 40}"#, "min 40 is outside [0, 1]"),
            (r#"{"name": "t", "metric": "metrics.SR.overall", "min": 140}"#, "outside [0, 100]"),
            (r#"{"name": "", "metric": "cost.total_usd", "max": 1}"#, "gate 1: 'name' must be a non-empty string"),
            (r#"{"name": "t", "metric": "cost.total_usd", "max": 1, "maximum": 2}"#, "unknown key 'maximum'"),
        ];
        for (gate, want) in cases {
            let e = parse_err(&one(gate));
            assert!(e.starts_with("gates file g.json: ") && e.contains(want), "{e:?} should contain {want:?}");
        }
        assert!(parse_err(
            r#"{"schema": "skillshift.gates/1", "gates": [{"name": "t", "metric": "cost.total_usd", "max": NaN}]}"#
        )
        .contains("not valid JSON"));
        assert!(
            parse_err(r#"{"schema": "skillshift.gates/2", "gates": []}"#).contains("expected \"skillshift.gates/1\"")
        );
        assert!(parse_err(r#"{"schema": "skillshift.gates/1", "gates": []}"#).contains("declares no gate"));
        let two = r#"{"name": "t", "metric": "cost.total_usd", "max": 1}, {"name": "t", "metric": "cost.llm_calls", "max": 1}"#;
        assert!(parse_err(&one(two)).contains("gate 2 ('t'): another gate has the same name"));
    }

    /// One gitlab `src` record; `cost` is written only when given.
    fn rec(task: u32, attempt: u32, outcome: &str, ms: u64, cost: Option<f64>) -> String {
        let success = match outcome {
            "success" => "true",
            "error" => "null",
            _ => "false",
        };
        let steps = if outcome == "error" { "null" } else { "3" };
        let cost = cost.map_or(String::new(), |c| format!(r#", "cost_usd": {c}"#));
        format!(
            r#"{{"uid": "skillshift.gitlab.v1.{task}", "site": "gitlab", "condition": "src", "success": {success}, "steps": {steps}, "skill_calls": null, "skill_failures": null, "outcome": "{outcome}", "attempt": {attempt}, "duration_ms": {ms}{cost}}}"#
        )
    }

    fn summary_of(lines: &[String]) -> (Summary, Populations) {
        let set = crate::records::read(lines.join("\n").as_bytes(), Path::new("per_task.jsonl")).unwrap();
        let a = crate::cells::analyse(set.select(None).unwrap());
        (crate::summary::summarise(&a, true).unwrap().summary, a.usage)
    }

    fn verdicts(gates: &str, lines: &[String]) -> Gates {
        let (s, u) = summary_of(lines);
        evaluate(&parse(&one(gates), Path::new("g.json")).unwrap(), &s, &u)
    }

    /// Ten families: 8 successes, a failure, and an error retried into a timeout; every evaluable attempt
    /// costs 0.01 and the error records no cost.
    fn ten() -> Vec<String> {
        let mut v: Vec<String> = (0..8).map(|t| rec(t, 0, "success", 100 + u64::from(t), Some(0.01))).collect();
        v.push(rec(8, 0, "failure", 200, Some(0.01)));
        v.push(rec(9, 0, "error", 900, None));
        v.push(rec(9, 1, "timeout", 300, Some(0.01)));
        v
    }

    #[test]
    fn each_gate_rule_pass_fail_and_inconclusive() {
        let g = verdicts(
            r#"{"name": "clear", "metric": "ledger.rates.attempt_success", "min": 0.3},
               {"name": "straddles", "metric": "ledger.rates.attempt_success", "min": 0.5},
               {"name": "short", "metric": "ledger.rates.attempt_success", "min": 0.95},
               {"name": "timeouts", "metric": "ledger.rates.timeout", "max": 0.5},
               {"name": "over budget", "metric": "cost.total_usd", "max": 0.05},
               {"name": "within budget?", "metric": "cost.total_usd", "max": 1},
               {"name": "p90", "metric": "ledger.latency_ms.all.p90", "max": 10},
               {"name": "asc", "metric": "metrics.ASC.overall", "max": 2}"#,
            &ten(),
        );
        let r = g.results.as_ref().unwrap();
        let v: Vec<(&str, Verdict)> = r.iter().map(|x| (x.name.as_str(), x.verdict)).collect();
        use Verdict::*;
        assert_eq!(
            v,
            [
                ("clear", Pass),
                ("straddles", Inconclusive),
                ("short", Fail),
                ("timeouts", Pass),
                ("over budget", Fail),
                ("within budget?", Inconclusive),
                ("p90", Fail),
                ("asc", Inconclusive),
            ]
        );
        // 8 of 10 evaluable attempts: Wilson [0.490162, 0.943318] (p = 0.8, n = 10: centre (0.8 + 0.192073) / 1.384146
        // = 0.716740, half-width 1.959964 / 1.384146 * sqrt(0.016 + 0.009604) = 0.226578).
        let [lo, hi] = r[0].interval.unwrap();
        assert!((lo - 0.490162).abs() < 1e-6 && (hi - 0.943318).abs() < 1e-6, "{lo} {hi}");
        assert_eq!(r[0].observed, Some(0.8));
        assert!(
            r[1].reason.contains("(8/10); the 95% interval [0.4902, 0.9433] contains the threshold (min 0.5)"),
            "{}",
            r[1].reason
        );
        assert!(r[2].reason.contains("breaks min 0.95"), "{}", r[2].reason);
        // 1 timeout of 10 evaluable attempts: Wilson [0.017876, 0.404150] lies below 0.5.
        assert!((r[3].interval.unwrap()[1] - 0.404150).abs() < 1e-6);
        assert!(
            r[4].reason.contains("is a lower bound (1 of 11 attempts carry no cost_usd), above max 0.05"),
            "{}",
            r[4].reason
        );
        assert!(r[5].reason.contains("it cannot show max 1 holds"), "{}", r[5].reason);
        assert!(r[7].reason.contains("skill_calls: null"), "the summary's own reason: {}", r[7].reason);
        assert_eq!((r[4].max, r[4].min, r[4].interval), (Some(0.05), None, None));
        assert_eq!((g.readiness.as_str(), g.exit_code()), ("fail", 1));

        // No failing gate but an inconclusive one: readiness inconclusive, exit 2.
        let g = verdicts(
            r#"{"name": "clear", "metric": "ledger.rates.attempt_success", "min": 0.3},
               {"name": "straddles", "metric": "ledger.rates.attempt_success", "min": 0.5}"#,
            &ten(),
        );
        assert_eq!((g.readiness.as_str(), g.exit_code()), ("inconclusive", 2));
        // Every gate passes: exit 0; a complete cost total decides a budget.
        let complete: Vec<String> = ten().into_iter().filter(|l| !l.contains("\"error\"")).collect();
        let g = verdicts(
            r#"{"name": "clear", "metric": "ledger.rates.attempt_success", "min": 0.3},
               {"name": "budget", "metric": "cost.total_usd", "max": 1}"#,
            &complete,
        );
        assert_eq!((g.readiness.as_str(), g.exit_code()), ("pass", 0), "{g:?}");
    }

    #[test]
    fn a_zero_denominator_is_inconclusive_and_no_gates_is_not_determined() {
        let errors = vec![rec(0, 0, "error", 5, None), rec(0, 1, "error", 5, None)];
        let g = verdicts(
            r#"{"name": "success", "metric": "ledger.rates.attempt_success", "min": 0.1},
               {"name": "spend", "metric": "cost.total_usd", "max": 1}"#,
            &errors,
        );
        let r = g.results.as_ref().unwrap();
        assert_eq!((r[0].observed, r[0].verdict, r[0].interval), (None, Verdict::Inconclusive, None));
        assert_eq!(r[0].reason, "the value is null: the denominator of attempt_success is 0");
        assert_eq!(r[1].reason, "the value is null: no record carries cost_usd");
        assert_eq!((g.readiness.as_str(), g.exit_code()), ("inconclusive", 2));
        let (s, _) = summary_of(&errors);
        let nd = s.gates.unwrap();
        assert_eq!((nd.readiness.as_str(), nd.exit_code()), (NOT_DETERMINED, 0));
        let metrics: Vec<&str> = nd.missing.iter().flatten().map(|m| m.metric.as_str()).collect();
        assert_eq!(
            metrics,
            [
                "ledger.rates.attempt_success",
                "ledger.rates.timeout",
                "ledger.rates.invalid_attempt",
                "ledger.latency_ms.all.p90",
                "cost.total_usd"
            ]
        );
    }

    #[test]
    fn resolve_treats_null_parents_as_null() {
        let v = serde_json::json!({"metrics": {"ASC": null, "SR": {"overall": 3.5}}});
        assert_eq!(resolve(&v, "metrics.SR.overall").and_then(Value::as_f64), Some(3.5));
        assert_eq!(resolve(&v, "metrics.ASC.overall"), None);
        assert_eq!(interval_path("metrics.SR.websites.gitlab").as_deref(), Some("intervals.SR.websites.gitlab"));
        assert_eq!(interval_path("ledger.rates.retry_rate"), None);
        assert_eq!(show(0.4), "0.4");
        assert_eq!(show(120000.0), "120000");
    }
}
