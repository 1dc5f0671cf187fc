//! WebArena-Verified's evaluators (ServiceNow's `webarena-verified` 1.2.3),
//! re-implemented: a task is judged on the agent's structured response and
//! on the attempt's network trace, not on pages (`docs/webarena.md`,
//! "WebArena-Verified").
//!
//! * [`config`]: the task format, and how a task becomes a [`Task`];
//! * [`response`]: `AgentResponseEvaluator`, on the final answer;
//! * [`network`]: `NetworkEventEvaluator`, on a HAR ([`crate::har`]);
//! * [`normalize`], [`types`], [`compare`]: the value normalizer, the data
//!   types and the comparator both evaluators share;
//! * [`urlnorm`], [`jsonpath`], [`parse`], [`pytext`]: what those rest on
//!   (URLs and site placeholders, JSONPath keys, the parsing libraries, Python's
//!   string and regex behaviour);
//! * [`error`]: why an evaluator raised ([`VerifiedError`]), in the package's words.
//!
//! [`evaluate_verified`] runs every evaluator of a task: the task succeeds
//! when all do; an evaluator that raised in the package is an error here
//! too, and makes the task an error ([`EvalStatus::Error`]). A run scores
//! with them when [`scoring`] says so (`--evaluator webarena-verified` and a
//! task of this format); an attempt that recorded no trace is scored by
//! [`evaluate_verified_untraced`], its network evaluators then errors.

pub mod compare;
pub use crate::task::verified as config;
pub mod error;
pub mod jsonpath;
pub mod network;
pub mod normalize;
pub mod parse;
pub mod pytext;
pub mod response;
pub mod types;
pub mod urlnorm;

pub use config::{EvaluatorCfg, Verified};
pub use error::VerifiedError;
pub use urlnorm::Sites;

use serde_json::Value;

use super::{Mode, Verdict};
use crate::har::Har;
use crate::task::{SiteBases, Task};

/// An evaluator's (or a task's) status, as the package reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalStatus {
    Success,
    Failure,
    /// The evaluator raised (an expected value that does not normalize, a response field of the wrong type...).
    Error(String),
}

impl EvalStatus {
    /// `success`, `failure` or `error`, the package's words.
    pub fn as_str(&self) -> &'static str {
        match self {
            EvalStatus::Success => "success",
            EvalStatus::Failure => "failure",
            EvalStatus::Error(_) => "error",
        }
    }

    /// The verdict a run records: an error cannot be decided, so it is `invalid`, never a pass.
    pub fn verdict(&self) -> Verdict {
        match self {
            EvalStatus::Success => Verdict::Pass,
            EvalStatus::Failure => Verdict::Fail,
            EvalStatus::Error(e) => Verdict::Invalid(e.clone()),
        }
    }
}

/// One evaluator's status and evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluatorOutcome {
    /// `AgentResponseEvaluator` or `NetworkEventEvaluator`.
    pub evaluator: &'static str,
    pub status: EvalStatus,
    /// The evaluator's `expected` block, as the task gives it.
    pub expected: Value,
    /// What was read: the normalized response, or the normalized events compared.
    pub actual: Value,
    /// Why it failed (one line per difference), or the error.
    pub messages: Vec<String>,
}

/// A task's status and its evaluators' outcomes.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedScored {
    pub status: EvalStatus,
    pub evaluators: Vec<EvaluatorOutcome>,
}

impl VerifiedScored {
    pub fn verdict(&self) -> Verdict {
        self.status.verdict()
    }

    /// One line per evaluator, for trajectories and logs.
    pub fn lines(&self) -> Vec<String> {
        self.evaluators
            .iter()
            .map(|e| match e.messages.as_slice() {
                [] => format!("{} {}", e.evaluator, e.status.as_str()),
                why => format!("{} {}: {}", e.evaluator, e.status.as_str(), why.join("; ")),
            })
            .collect()
    }
}

/// The WebArena-Verified evaluators that score `task` under `mode`: the task's own, under
/// `--evaluator webarena-verified`; `None` for a WebArena task, or under `webarena` and `strict`
/// (where such a task is invalid, [`super::evaluate`]).
pub fn scoring(task: &Task, mode: Mode) -> Option<&Verified> {
    task.eval.verified.as_ref().filter(|_| mode == Mode::WebArenaVerified)
}

/// Scores a WebArena-Verified task (placeholders not resolved) on the agent's final answer
/// (`""` when it gave none) and the attempt's network trace, the sites at `bases`.
pub fn evaluate_verified(task: &Task, response_text: &str, har: &Har, bases: &SiteBases) -> VerifiedScored {
    run(task, response_text, bases, |cfg, cx| network::evaluate(cfg, har, cx))
}

/// Scores a WebArena-Verified task whose attempt recorded no network trace (`why` says why): its
/// response is judged, and each `NetworkEventEvaluator` is an error, which makes the task one,
/// never a failure (a trace that was never recorded says nothing about what the agent did).
pub fn evaluate_verified_untraced(task: &Task, response_text: &str, bases: &SiteBases, why: &str) -> VerifiedScored {
    run(task, response_text, bases, |cfg, _| EvaluatorOutcome {
        evaluator: "NetworkEventEvaluator",
        status: EvalStatus::Error(why.to_string()),
        expected: serde_json::to_value(&cfg.expected).unwrap_or(Value::Null),
        actual: Value::Null,
        messages: vec![why.to_string()],
    })
}

/// Runs every evaluator of the task, the network ones through `network`, and combines their statuses.
fn run(
    task: &Task,
    response_text: &str,
    bases: &SiteBases,
    network: impl Fn(&config::NetworkEventCfg, &network::Cx) -> EvaluatorOutcome,
) -> VerifiedScored {
    let error = |e: String| VerifiedScored { status: EvalStatus::Error(e), evaluators: Vec::new() };
    let Some(verified) = &task.eval.verified else {
        return error(format!("task {} has no WebArena-Verified evaluators", task.task_id));
    };
    let mut sites = Sites::default();
    for key in &task.sites {
        match bases.0.get(key) {
            Some(base) => sites.0.push((*key, base.clone())),
            None => return error(format!("no base URL for the site {key} of task {}", task.task_id)),
        }
    }
    let task_type = verified
        .evaluators
        .iter()
        .find_map(|e| match e {
            EvaluatorCfg::AgentResponseEvaluator(a) => {
                a.expected.get("task_type").or_else(|| a.expected.get("performed_operation")).and_then(Value::as_str)
            }
            EvaluatorCfg::NetworkEventEvaluator(_) => None,
        })
        .unwrap_or("")
        .to_uppercase();
    let mut outcomes = Vec::new();
    for e in &verified.evaluators {
        outcomes.push(match e {
            EvaluatorCfg::AgentResponseEvaluator(a) => {
                response::evaluate(a, response_text, &sites, task_type == "RETRIEVE")
            }
            EvaluatorCfg::NetworkEventEvaluator(n) => {
                network(n, &network::Cx { sites: &sites, navigate_task: task_type == "NAVIGATE" })
            }
        });
    }
    let status = if let Some(EvalStatus::Error(e)) =
        outcomes.iter().map(|o| &o.status).find(|s| matches!(s, EvalStatus::Error(_)))
    {
        EvalStatus::Error(e.clone())
    } else if outcomes.iter().all(|o| o.status == EvalStatus::Success) {
        EvalStatus::Success
    } else {
        EvalStatus::Failure
    };
    VerifiedScored { status, evaluators: outcomes }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn task(network: Value) -> Task {
        let v = json!({"sites": ["gitlab"], "task_id": 3, "intent_template_id": 1, "start_urls": ["__GITLAB__"],
            "intent": "Change the bio", "intent_template": "Change the bio", "instantiation_dict": {}, "revision": 1,
            "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
                      "expected": {"task_type": "mutate", "status": "SUCCESS", "retrieved_data": null}},
                     {"evaluator": "NetworkEventEvaluator", "expected": network}]});
        config::task_from_value(&v).unwrap()
    }

    #[test]
    fn only_webarena_verified_scores_with_them_and_only_response_content_asks_for_bodies() {
        let post = task(json!({"url": "__GITLAB__/-/profile", "http_method": "POST"}));
        let body = task(json!({"url": "__GITLAB__/api/v4/user", "response_content": {"bio": "x"}}));
        assert!(scoring(&post, Mode::WebArena).is_none() && scoring(&post, Mode::Strict).is_none());
        let v = scoring(&post, Mode::WebArenaVerified).unwrap();
        assert!(v.reads_network() && !v.reads_response_content());
        assert!(scoring(&body, Mode::WebArenaVerified).unwrap().reads_response_content());
        let mut webarena = post.clone();
        webarena.eval.verified = None;
        assert!(scoring(&webarena, Mode::WebArenaVerified).is_none());
    }

    #[test]
    fn expected_post_data_left_empty_by_its_ignored_fields_is_an_error_as_the_package_raises() {
        let t = task(json!({"url": "__GITLAB__/-/profile", "http_method": "POST", "post_data": {"bio": "x"}}));
        let mut t_ignored = t.clone();
        if let Some(EvaluatorCfg::NetworkEventEvaluator(n)) =
            t_ignored.eval.verified.as_mut().unwrap().evaluators.get_mut(1)
        {
            n.ignored_post_data_params_patterns = Some(vec!["bio".into()]);
        }
        let mut bases = SiteBases::default();
        bases.insert(crate::task::SiteKey::Gitlab, "http://h:1");
        let har: Har = serde_json::from_value(json!({"log": {"entries": [{
            "request": {"method": "POST", "url": "http://h:1/-/profile", "headers": [],
                        "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "bio=x"}},
            "response": {"status": 200}}]}}))
        .unwrap();
        let answer = r#"{"task_type": "MUTATE", "status": "SUCCESS", "retrieved_data": null}"#;
        assert_eq!(evaluate_verified(&t, answer, &har, &bases).status, EvalStatus::Success);
        let s = evaluate_verified(&t_ignored, answer, &har, &bases);
        assert!(
            matches!(&s.evaluators[1].status, EvalStatus::Error(e) if e.contains("must have at least one key")),
            "{:?}",
            s.evaluators[1]
        );
        assert!(matches!(s.status, EvalStatus::Error(_)));
    }

    #[test]
    fn an_attempt_without_a_trace_is_an_error_never_a_failure() {
        let t = task(json!({"url": "__GITLAB__/-/profile", "http_method": "POST"}));
        let mut bases = SiteBases::default();
        bases.insert(crate::task::SiteKey::Gitlab, "http://h:1");
        let answer = r#"{"task_type": "MUTATE", "status": "SUCCESS", "retrieved_data": null}"#;
        let s = evaluate_verified_untraced(&t, answer, &bases, "no trace was recorded");
        assert_eq!(s.status, EvalStatus::Error("no trace was recorded".into()));
        assert_eq!(s.evaluators[0].status, EvalStatus::Success, "the response is still judged");
        assert_eq!(s.evaluators[1].messages, ["no trace was recorded"]);
        assert_eq!(s.evaluators[1].expected["url"], "__GITLAB__/-/profile");
        // With a trace that lacks the request, the same task fails.
        let traced = evaluate_verified(&t, answer, &Har::default(), &bases);
        assert_eq!(traced.status, EvalStatus::Failure);
    }
}
