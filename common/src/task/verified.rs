//! WebArena-Verified's task format (`webarena_verified/types/task.py`), and
//! how one of its tasks becomes a [`Task`].
//!
//! A WebArena-Verified task has `sites`, `task_id`, `intent_template_id`,
//! `start_urls`, `intent`, `intent_template`, `instantiation_dict`,
//! `revision` and `eval`, a list of evaluator configurations: an
//! `AgentResponseEvaluator` (always one) and any number of
//! `NetworkEventEvaluator`s. The task model keeps WebArena's fields and
//! carries the evaluators, unchanged, in `eval.verified`; `eval_types` is
//! empty, so WebArena's evaluators never score such a task by mistake
//! (WebArena's `evaluate` calls it invalid).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::task::{Eval, SiteKey, Task, AND};

/// A WebArena-Verified task's own part of the task model (`eval.verified`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verified {
    /// The task's `revision` in the dataset.
    pub revision: u32,
    /// The task's `eval`, unchanged.
    pub evaluators: Vec<EvaluatorCfg>,
}

impl Verified {
    /// Whether a `NetworkEventEvaluator` reads the attempt's network trace.
    pub fn reads_network(&self) -> bool {
        self.evaluators.iter().any(|e| matches!(e, EvaluatorCfg::NetworkEventEvaluator(_)))
    }

    /// Whether a `NetworkEventEvaluator` reads a response's content: the attempt must then record
    /// response bodies (the assignment's `network_bodies`), which it otherwise leaves out.
    pub fn reads_response_content(&self) -> bool {
        self.evaluators.iter().any(|e| match e {
            EvaluatorCfg::NetworkEventEvaluator(n) => {
                n.expected.response_content.as_ref().is_some_and(|c| !c.is_empty())
            }
            EvaluatorCfg::AgentResponseEvaluator(_) => false,
        })
    }
}

/// One evaluator of a WebArena-Verified task, tagged by `evaluator`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "evaluator")]
pub enum EvaluatorCfg {
    AgentResponseEvaluator(AgentResponseCfg),
    NetworkEventEvaluator(Box<NetworkEventCfg>),
}

impl EvaluatorCfg {
    /// The evaluator's class name, as the package names it.
    pub fn name(&self) -> &'static str {
        match self {
            EvaluatorCfg::AgentResponseEvaluator(_) => "AgentResponseEvaluator",
            EvaluatorCfg::NetworkEventEvaluator(_) => "NetworkEventEvaluator",
        }
    }
}

/// `AgentResponseEvaluatorCfg`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentResponseCfg {
    /// `task_type` (or the legacy `performed_operation`), `status`, `retrieved_data`, `error_details`:
    /// kept as written, because which keys are present matters to the comparison.
    pub expected: Map<String, Value>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub ordered: bool,
    pub results_schema: Map<String, Value>,
}

/// `NetworkEventEvaluatorCfg`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkEventCfg {
    pub expected: NetworkEventSpec,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub last_event_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored_query_params: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored_query_params_patterns: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub decode_base64_query: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_params_schema: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_data_schema: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored_post_data_params_patterns: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub should_not_exist: bool,
}

/// `NetworkEventSpec`: what the matching request must show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkEventSpec {
    /// One URL, or several alternatives; `^...$` is a regular expression.
    pub url: OneOrMany,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// Each name with its values (a list of strings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_params: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_data: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_content: Option<Map<String, Value>>,
    #[serde(default = "ok_status")]
    pub response_status: i64,
    #[serde(default = "get")]
    pub http_method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_cookies: Option<Map<String, Value>>,
}

/// A string, or a list of strings (alternatives).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

fn is_false(b: &bool) -> bool {
    !*b
}
fn is_true(b: &bool) -> bool {
    *b
}
fn yes() -> bool {
    true
}
fn ok_status() -> i64 {
    200
}
fn get() -> String {
    "GET".to_string()
}

/// `MainObjectiveType`, upper-cased as the package reads it.
pub const TASK_TYPES: [&str; 3] = ["RETRIEVE", "MUTATE", "NAVIGATE"];
/// `Status`.
pub const STATUSES: [&str; 6] = [
    "SUCCESS",
    "ACTION_NOT_ALLOWED_ERROR",
    "PERMISSION_DENIED_ERROR",
    "NOT_FOUND_ERROR",
    "DATA_VALIDATION_ERROR",
    "UNKNOWN_ERROR",
];

/// Whether a task object is in WebArena-Verified's format (its `eval` is a list).
pub fn is_verified_task(v: &Value) -> bool {
    v.get("eval").is_some_and(Value::is_array) || v.get("start_urls").is_some()
}

/// `WebArenaSite(value)`: a site name, upper or lower case, surrounding underscores ignored.
fn site_of(s: &str) -> Option<SiteKey> {
    let stripped = s.trim_matches('_');
    [
        SiteKey::Gitlab,
        SiteKey::Map,
        SiteKey::Reddit,
        SiteKey::ShoppingAdmin,
        SiteKey::Shopping,
        SiteKey::Wikipedia,
        SiteKey::Homepage,
    ]
    .into_iter()
    .find(|k| k.as_str() == s || k.as_str() == stripped || k.as_str().to_ascii_uppercase() == stripped)
}

type Found = Vec<(String, String)>;

/// The task a WebArena-Verified task object stands for, or every (field, message) that refuses it.
pub fn task_from_value(v: &Value) -> Result<Task, Found> {
    let mut out = Found::new();
    let Value::Object(map) = v else {
        return Err(vec![(String::new(), "is not an object".to_string())]);
    };
    const FIELDS: [&str; 9] = [
        "sites",
        "task_id",
        "intent_template_id",
        "start_urls",
        "intent",
        "eval",
        "intent_template",
        "instantiation_dict",
        "revision",
    ];
    for key in map.keys() {
        if !FIELDS.contains(&key.as_str()) {
            out.push((
                key.clone(),
                format!("is not a field WebArena-Verified's tasks have (expected one of {})", FIELDS.join(", ")),
            ));
        }
    }
    for f in FIELDS {
        if !map.contains_key(f) {
            out.push((f.to_string(), "is missing".to_string()));
        }
    }
    if !out.is_empty() {
        return Err(out);
    }
    let int = |name: &str, out: &mut Found| -> u32 {
        match map.get(name).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()) {
            Some(n) => n,
            None => {
                out.push((name.to_string(), format!("is {}, expected a non-negative integer", map[name])));
                0
            }
        }
    };
    let text = |name: &str, out: &mut Found| -> String {
        match map.get(name).and_then(Value::as_str) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => {
                out.push((name.to_string(), "is not a non-empty string".to_string()));
                String::new()
            }
        }
    };
    let task_id = int("task_id", &mut out);
    let intent_template_id = int("intent_template_id", &mut out);
    let revision = int("revision", &mut out);
    if revision < 1 && map.get("revision").and_then(Value::as_u64).is_some() {
        out.push(("revision".into(), "must be at least 1".into()));
    }
    let intent = text("intent", &mut out);
    let intent_template = text("intent_template", &mut out);
    let mut sites = Vec::new();
    match &map["sites"] {
        Value::Array(items) => {
            for (i, s) in items.iter().enumerate() {
                match s.as_str().and_then(site_of) {
                    Some(k) => sites.push(k),
                    None => out.push((format!("sites[{i}]"), format!("is {s}, not a WebArena site"))),
                }
            }
        }
        other => out.push(("sites".into(), format!("is {other}, expected a list of sites"))),
    }
    let mut start_urls = Vec::new();
    match &map["start_urls"] {
        Value::Array(items) => {
            for (i, s) in items.iter().enumerate() {
                match s.as_str() {
                    Some(u) if !u.is_empty() => start_urls.push(u.to_string()),
                    _ => out.push((format!("start_urls[{i}]"), "is not a non-empty string".into())),
                }
            }
        }
        other => out.push(("start_urls".into(), format!("is {other}, expected a list of URLs"))),
    }
    let instantiation_dict = match &map["instantiation_dict"] {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        other => {
            out.push(("instantiation_dict".into(), format!("is {other}, expected an object")));
            Default::default()
        }
    };
    let mut evaluators = Vec::new();
    match &map["eval"] {
        Value::Array(items) => {
            for (i, e) in items.iter().enumerate() {
                match serde_json::from_value::<EvaluatorCfg>(e.clone()) {
                    Ok(cfg) => {
                        if let Err(m) = check_cfg(&cfg) {
                            out.push((format!("eval[{i}].{}", m.0), m.1));
                        }
                        evaluators.push(cfg);
                    }
                    Err(err) => out.push((format!("eval[{i}]"), err.to_string())),
                }
            }
        }
        other => out.push(("eval".into(), format!("is {other}, expected a list of evaluators"))),
    }
    if out.is_empty() && !evaluators.iter().any(|e| matches!(e, EvaluatorCfg::AgentResponseEvaluator(_))) {
        out.push(("eval".into(), "has no AgentResponseEvaluator (every task needs one)".into()));
    }
    if !out.is_empty() {
        return Err(out);
    }
    let mutates = evaluators.iter().any(|e| match e {
        EvaluatorCfg::AgentResponseEvaluator(a) => a
            .expected
            .get("task_type")
            .or(a.expected.get("performed_operation"))
            .and_then(Value::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case("mutate")),
        EvaluatorCfg::NetworkEventEvaluator(_) => false,
    });
    Ok(Task {
        task_id,
        sites,
        require_login: true,
        storage_state: None,
        start_url: start_urls.join(AND),
        geolocation: None,
        intent_template,
        instantiation_dict,
        intent,
        intent_template_id,
        require_reset: mutates,
        eval: Eval { verified: Some(Verified { revision, evaluators }), ..Eval::default() },
        string_note: None,
    })
}

/// What pydantic checks beyond the shape: the expected response's enums, a URL in every network spec.
fn check_cfg(cfg: &EvaluatorCfg) -> Result<(), (String, String)> {
    match cfg {
        EvaluatorCfg::AgentResponseEvaluator(a) => {
            let e = &a.expected;
            let task_type = e.get("task_type").or_else(|| e.get("performed_operation"));
            match task_type.and_then(Value::as_str) {
                Some(t) if TASK_TYPES.contains(&t.to_ascii_uppercase().as_str()) => {}
                _ => {
                    return Err((
                        "expected.task_type".into(),
                        format!("is {}, expected one of {}", task_type.unwrap_or(&Value::Null), TASK_TYPES.join(", ")),
                    ))
                }
            }
            match e.get("status").and_then(Value::as_str) {
                Some(s) if STATUSES.contains(&s.to_ascii_uppercase().as_str()) => {}
                _ => {
                    return Err((
                        "expected.status".into(),
                        format!(
                            "is {}, expected one of {}",
                            e.get("status").unwrap_or(&Value::Null),
                            STATUSES.join(", ")
                        ),
                    ))
                }
            }
            match e.get("retrieved_data") {
                None | Some(Value::Null) | Some(Value::Array(_)) => {}
                Some(other) => {
                    return Err(("expected.retrieved_data".into(), format!("is {other}, expected a list or null")))
                }
            }
            match e.get("error_details") {
                None | Some(Value::Null) | Some(Value::String(_)) => Ok(()),
                Some(other) => Err(("expected.error_details".into(), format!("is {other}, expected a string or null"))),
            }
        }
        EvaluatorCfg::NetworkEventEvaluator(n) => {
            let empty = match &n.expected.url {
                OneOrMany::One(u) => u.is_empty(),
                OneOrMany::Many(us) => us.iter().any(String::is_empty),
            };
            if empty {
                return Err(("expected.url".into(), "is empty".into()));
            }
            Ok(())
        }
    }
}

/// The URL-bearing strings of a verified task's evaluators, with their fields, for placeholder checks.
pub fn urls_of(evaluators: &[EvaluatorCfg]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, e) in evaluators.iter().enumerate() {
        if let EvaluatorCfg::NetworkEventEvaluator(n) = e {
            match &n.expected.url {
                OneOrMany::One(u) => out.push((format!("eval[{i}].expected.url"), u.clone())),
                OneOrMany::Many(us) => {
                    out.extend(us.iter().map(|u| (format!("eval[{i}].expected.url"), u.clone())));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_verified_task_becomes_a_task_and_round_trips() {
        let v = json!({"sites": ["gitlab"], "task_id": 44, "intent_template_id": 303, "start_urls": ["__GITLAB__"],
            "intent": "Open my todos page", "intent_template": "Open my todos page", "instantiation_dict": {},
            "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
                      "expected": {"task_type": "navigate", "status": "SUCCESS", "retrieved_data": null}},
                     {"evaluator": "NetworkEventEvaluator", "ignored_query_params_patterns": ["page", "sort"],
                      "expected": {"url": ["__GITLAB__/dashboard/todos", "__GITLAB__/dashboard/todos?state=pending"]}}],
            "revision": 2});
        assert!(is_verified_task(&v));
        let t = task_from_value(&v).unwrap();
        let verified = t.eval.verified.as_ref().unwrap();
        assert_eq!((t.task_id, t.sites.as_slice(), verified.revision), (44, &[SiteKey::Gitlab][..], 2));
        assert_eq!(verified.evaluators.len(), 2);
        assert!(t.eval.eval_types.is_empty());
        let again: Task = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(again, t);
    }

    #[test]
    fn unknown_fields_and_bad_enums_name_the_field() {
        let v = json!({"sites": ["gitlab"], "task_id": 1, "intent_template_id": 3, "start_urls": ["__GITLAB__"],
            "intent": "x", "intent_template": "x", "instantiation_dict": {}, "revision": 1,
            "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {}, "expected": {"task_type": "fly", "status": "SUCCESS"}},
                     {"evaluator": "NetworkEventEvaluator", "bogus": 1, "expected": {"url": "__GITLAB__"}}]});
        let e = task_from_value(&v).unwrap_err();
        assert_eq!(e[0].0, "eval[0].expected.task_type", "{e:?}");
        assert_eq!(e[1].0, "eval[1]", "{e:?}");
        assert!(e[1].1.contains("bogus"), "{e:?}");
    }
}
