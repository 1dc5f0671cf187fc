//! `AgentResponseEvaluator` (`core/evaluation/evaluators/agent_response_evaluator.py`).
//!
//! The agent's final answer is read as the package reads it: the text is
//! stripped; the body of a fenced code block (```` ```json ... ``` ````), if
//! any, is taken; it is parsed as JSON where it is JSON, and kept as text
//! where it is not (plain text then fails: it is not the structured
//! response). An empty answer is `None`. From a JSON object, the keys the
//! expected response sets are read: `task_type` (or the legacy
//! `performed_operation`) and `status` as normalized strings, and, for a
//! retrieve task, `retrieved_data` normalized by `results_schema` (a missing
//! `retrieved_data` reads `None`). The expected response's keys must all be
//! there and no others; `task_type` and `status` must be equal; for a
//! retrieve task `retrieved_data` must match (in order if `ordered`).

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::compare::{self, Opts};
use super::config::AgentResponseCfg;
use super::error::VerifiedError;
use super::normalize::{self, Norm};
use super::pytext;
use super::types::{Ctx, Kind, Typed};
use super::urlnorm::{Sites, UrlOpts};
use super::{EvalStatus, EvaluatorOutcome};

static CODE_BLOCK: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"(?s)```(?:json)?\s*\n?(.*?)\n?```").expect("a valid pattern"));

/// `_get_actual_agent_response_dict`: the answer as JSON where it is JSON; `Null` for an empty one.
pub fn read_response(text: &str) -> Value {
    let mut value = pytext::strip(text).to_string();
    if let Some(c) = CODE_BLOCK.captures(text) {
        value = pytext::strip(c.get(1).map_or("", |m| m.as_str())).to_string();
    }
    let parsed = serde_json::from_str::<Value>(&value).unwrap_or(Value::String(value));
    if pytext::truthy(&parsed) {
        parsed
    } else {
        Value::Null
    }
}

/// Runs the evaluator on the agent's final answer (`""` when it gave none).
pub fn evaluate(cfg: &AgentResponseCfg, answer: &str, sites: &Sites, retrieve_task: bool) -> EvaluatorOutcome {
    let expected_json = Value::Object(cfg.expected.clone());
    let actual_raw = read_response(answer);
    match run(cfg, &actual_raw, sites, retrieve_task) {
        Ok((failures, actual)) => EvaluatorOutcome {
            evaluator: "AgentResponseEvaluator",
            status: if failures.is_empty() { EvalStatus::Success } else { EvalStatus::Failure },
            expected: expected_json,
            actual,
            messages: failures,
        },
        Err(e) => EvaluatorOutcome {
            evaluator: "AgentResponseEvaluator",
            status: EvalStatus::Error(e.to_string()),
            expected: expected_json,
            actual: actual_raw,
            messages: vec![e.to_string()],
        },
    }
}

fn string(s: &str) -> Result<Norm, VerifiedError> {
    let opts = UrlOpts::default();
    let sites = Sites::default();
    Typed::new(Kind::Str, &Value::String(s.to_string()), &Ctx { sites: &sites, derender: false, url: &opts })
        .map(Norm::Typed)
}

/// `_normalized_retrieved_data`.
fn retrieved(raw: &Value, schema: &Map<String, Value>, strict: bool, sites: &Sites) -> Result<Norm, VerifiedError> {
    if !pytext::truthy(raw) && !matches!(raw, Value::Number(_) | Value::Bool(_)) {
        return Ok(Norm::NONE);
    }
    let items = match raw {
        Value::Array(_) => raw.clone(),
        other => Value::Array(vec![other.clone()]),
    };
    let opts = UrlOpts { strict, ..UrlOpts::default() };
    normalize::normalize_array(&items, Some(schema), strict, &Ctx { sites, derender: true, url: &opts })
}

/// The expected response's set fields, by their field names.
fn fields_set(expected: &Map<String, Value>) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (k, name) in [
        ("task_type", "task_type"),
        ("performed_operation", "task_type"),
        ("status", "status"),
        ("retrieved_data", "retrieved_data"),
        ("error_details", "error_details"),
    ] {
        if expected.contains_key(k) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

fn run(
    cfg: &AgentResponseCfg,
    actual_raw: &Value,
    sites: &Sites,
    retrieve_task: bool,
) -> Result<(Vec<String>, Value), VerifiedError> {
    let e = &cfg.expected;
    let task_type = e.get("task_type").or_else(|| e.get("performed_operation")).and_then(Value::as_str).unwrap_or("");
    let status = e.get("status").and_then(Value::as_str).unwrap_or("");
    let expected = Norm::Map(vec![
        ("task_type".into(), string(&task_type.to_uppercase())?),
        ("status".into(), string(&status.to_uppercase())?),
        (
            "retrieved_data".into(),
            retrieved(e.get("retrieved_data").unwrap_or(&Value::Null), &cfg.results_schema, true, sites)?,
        ),
    ]);
    let actual = match actual_raw {
        Value::Object(value) => {
            let mut out: Vec<(String, Norm)> = Vec::new();
            for field in fields_set(e) {
                let mut key = field;
                if key == "task_type" && !value.contains_key(key) && value.contains_key("performed_operation") {
                    key = "performed_operation";
                }
                let Some(v) = value.get(key) else {
                    if key == "retrieved_data" {
                        out.push((key.into(), Norm::NONE));
                    }
                    continue;
                };
                let n = if key == "retrieved_data" {
                    if retrieve_task {
                        match retrieved(v, &cfg.results_schema, false, sites)? {
                            Norm::Seq(items) if items.is_empty() => Norm::NONE,
                            other => other,
                        }
                    } else {
                        Norm::NONE
                    }
                } else {
                    let Value::String(s) = v else {
                        return Err(VerifiedError::NotText { py_type: py_type(v), key });
                    };
                    let s = pytext::strip(s);
                    if s.is_empty() {
                        Norm::NONE
                    } else {
                        string(s)?
                    }
                };
                let name = if key == "performed_operation" { "task_type" } else { key };
                if out.iter().any(|(k, _)| k == name) {
                    return Err(VerifiedError::DuplicateKey(name));
                }
                out.push((name.into(), n));
            }
            Norm::Map(out)
        }
        other => Norm::Raw(other.clone()),
    };
    let actual_json = actual.to_json();
    let opts = Opts { ordered: false, ignored_values_keys: &["retrieved_data"], ignore_extra_keys: false, sites };
    let mut failures = compare::compare(&actual, &expected, "agent_response", &opts)?;
    let Norm::Map(entries) = &actual else { return Ok((failures, actual_json)) };
    if !retrieve_task || entries.is_empty() {
        return Ok((failures, actual_json));
    }
    let got = actual.get("retrieved_data").cloned().unwrap_or(Norm::NONE);
    let want = expected.get("retrieved_data").cloned().unwrap_or(Norm::NONE);
    match (want.is_none(), got.is_none()) {
        (true, true) => {}
        (true, false) => failures.push(format!("expected no retrieved_data, but got {}", got.to_json())),
        (false, true) => {
            failures.push(format!("expected retrieved_data to be {}, but got none or empty", want.to_json()))
        }
        (false, false) => {
            let o = Opts { ordered: cfg.ordered, ignored_values_keys: &[], ignore_extra_keys: false, sites };
            failures.extend(compare::compare(&got, &want, "retrieved_data", &o)?);
        }
    }
    Ok((failures, actual_json))
}

fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_from_code_blocks_json_or_text() {
        assert_eq!(read_response("```json\n{\"status\": \"SUCCESS\"}\n```"), json!({"status": "SUCCESS"}));
        assert_eq!(read_response("  the answer is 5 "), json!("the answer is 5"));
        assert_eq!(read_response("  "), Value::Null);
        assert_eq!(read_response("[]"), Value::Null);
    }
}
