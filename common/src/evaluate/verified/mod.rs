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
//!   string and regex behaviour).
//!
//! [`evaluate_verified`] runs every evaluator of a task: the task succeeds
//! when all do; an evaluator that raised in the package is an error here
//! too, and makes the task an error ([`EvalStatus::Error`]).

pub mod compare;
pub mod config;
pub mod jsonpath;
pub mod network;
pub mod normalize;
pub mod parse;
pub mod pytext;
pub mod response;
pub mod types;
pub mod urlnorm;

pub use config::{EvaluatorCfg, Verified};
pub use urlnorm::Sites;

use serde_json::Value;

use super::Verdict;
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
            .map(|e| format!("{} {}: {}", e.evaluator, e.status.as_str(), e.messages.join("; ")))
            .collect()
    }
}

/// Scores a WebArena-Verified task (placeholders not resolved) on the agent's final answer
/// (`""` when it gave none) and the attempt's network trace, the sites at `bases`.
pub fn evaluate_verified(task: &Task, response_text: &str, har: &Har, bases: &SiteBases) -> VerifiedScored {
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
                network::evaluate(n, har, &network::Cx { sites: &sites, navigate_task: task_type == "NAVIGATE" })
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
