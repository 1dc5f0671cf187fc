//! Why a non-success attempt did not succeed: its `failure_category`
//! (docs/formats.md#records), derived from its outcome, its error reason and
//! its trajectory, by one pure function ([`categorize`]).
//!
//! The rules, first match wins:
//! * `error` attempts measured nothing: the category is their reason, with the
//!   site's faults (`site`, `site_reset`, `site_login`) as `site`.
//! * `perturbation`: the attempt was blocked by the condition's execution shift:
//!   the modal was still on the last page the agent saw, or a click the page
//!   swallowed was never tried again.
//! * `skill_failure`: a skill the harness ran failed (its trajectory step names
//!   the sub-step), or an external agent reported one of its own as failed.
//! * `step_budget`: the step budget ran out (`timeout`).
//! * `agent_stopped_early`: the agent stopped right after an action or skill of
//!   its own had failed.
//! * from the scorer's evidence, the first failing evaluator: `string_match` is
//!   `wrong_answer`, `url_match` `wrong_url`, `program_html` `page_check`;
//!   WebArena-Verified's `AgentResponseEvaluator` is `wrong_answer` and its
//!   `NetworkEventEvaluator` `network_check`.
//! * `unexplained` when none of these applies.

use serde::{Deserialize, Serialize};

use crate::error_reason::ErrorReason;
use crate::perturbation::AppliedPerturbation;
use crate::record::Outcome;
use crate::score::{EvaluatorKind, ScoreVerdict};
use crate::trajectory::{Step, Trajectory};

/// A category derived from what a `failure` or `timeout` attempt did, or `site` for an `error` attempt
/// the site caused; the other `error` attempts' category is their [`ErrorReason`]'s text. The serde
/// names are the record's `failure_category` texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCategory {
    WrongAnswer,
    WrongUrl,
    PageCheck,
    /// WebArena-Verified's `NetworkEventEvaluator` did not find the request it expects in the attempt's trace.
    NetworkCheck,
    SkillFailure,
    StepBudget,
    AgentStoppedEarly,
    Perturbation,
    Site,
    Unexplained,
}

impl FailureCategory {
    pub const ALL: [FailureCategory; 10] = [
        FailureCategory::WrongAnswer,
        FailureCategory::WrongUrl,
        FailureCategory::PageCheck,
        FailureCategory::NetworkCheck,
        FailureCategory::SkillFailure,
        FailureCategory::StepBudget,
        FailureCategory::AgentStoppedEarly,
        FailureCategory::Perturbation,
        FailureCategory::Site,
        FailureCategory::Unexplained,
    ];

    /// The text a record's `failure_category` carries.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureCategory::WrongAnswer => "wrong_answer",
            FailureCategory::WrongUrl => "wrong_url",
            FailureCategory::PageCheck => "page_check",
            FailureCategory::NetworkCheck => "network_check",
            FailureCategory::SkillFailure => "skill_failure",
            FailureCategory::StepBudget => "step_budget",
            FailureCategory::AgentStoppedEarly => "agent_stopped_early",
            FailureCategory::Perturbation => "perturbation",
            FailureCategory::Site => "site",
            FailureCategory::Unexplained => "unexplained",
        }
    }

    /// The category a text names, `None` for any other text (an error reason, say).
    pub fn parse(text: &str) -> Option<FailureCategory> {
        FailureCategory::ALL.into_iter().find(|c| c.as_str() == text)
    }

    /// The category of a scored failure whose first failing evaluator is of `kind`.
    pub fn of_evaluator(kind: &EvaluatorKind) -> FailureCategory {
        match kind {
            EvaluatorKind::StringMatch | EvaluatorKind::AgentResponse => FailureCategory::WrongAnswer,
            EvaluatorKind::UrlMatch => FailureCategory::WrongUrl,
            EvaluatorKind::ProgramHtml => FailureCategory::PageCheck,
            EvaluatorKind::NetworkEvent => FailureCategory::NetworkCheck,
            EvaluatorKind::Scoring | EvaluatorKind::Other(_) => FailureCategory::Unexplained,
        }
    }
}

impl std::fmt::Display for FailureCategory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub const WRONG_ANSWER: &str = FailureCategory::WrongAnswer.as_str();
pub const WRONG_URL: &str = FailureCategory::WrongUrl.as_str();
pub const PAGE_CHECK: &str = FailureCategory::PageCheck.as_str();
pub const NETWORK_CHECK: &str = FailureCategory::NetworkCheck.as_str();
pub const SKILL_FAILURE: &str = FailureCategory::SkillFailure.as_str();
pub const STEP_BUDGET: &str = FailureCategory::StepBudget.as_str();
pub const AGENT_STOPPED_EARLY: &str = FailureCategory::AgentStoppedEarly.as_str();
pub const PERTURBATION: &str = FailureCategory::Perturbation.as_str();
pub const SITE: &str = FailureCategory::Site.as_str();
pub const WORKER_LOST: &str = ErrorReason::WorkerLost.as_str();
pub const UNEXPLAINED: &str = FailureCategory::Unexplained.as_str();

/// The category of an attempt that ended with `outcome` (and, for `error`,
/// the reason `error`), given what its trajectory shows; `None` on success.
pub fn categorize(outcome: Outcome, error: Option<&str>, trajectory: Option<&Trajectory>) -> Option<String> {
    match outcome {
        Outcome::Success => None,
        Outcome::Error => {
            let reason = error.unwrap_or("error");
            Some(match ErrorReason::parse(reason) {
                Some(ErrorReason::Site | ErrorReason::SiteReset | ErrorReason::SiteLogin) => SITE.to_string(),
                _ => reason.to_string(),
            })
        }
        Outcome::Failure | Outcome::Timeout => Some(categorize_scored(outcome, trajectory).as_str().to_string()),
    }
}

/// The category of a `failure` or `timeout` attempt (`timeout` when `outcome` says so), given what its
/// trajectory shows.
pub fn categorize_scored(outcome: Outcome, trajectory: Option<&Trajectory>) -> FailureCategory {
    let steps = trajectory.map_or(&[][..], |t| t.steps.as_slice());
    if blocked_by_perturbation(steps) {
        FailureCategory::Perturbation
    } else if steps.iter().any(|s| s.skill.as_ref().is_some_and(|k| !k.ok) || s.reported_skills.iter().any(|k| !k.ok)) {
        FailureCategory::SkillFailure
    } else if outcome == Outcome::Timeout {
        FailureCategory::StepBudget
    } else if stopped_after_a_failure(steps) {
        FailureCategory::AgentStoppedEarly
    } else {
        trajectory.and_then(failing_evaluator).unwrap_or(FailureCategory::Unexplained)
    }
}

/// The modal was on the last page the agent saw, or a swallowed click was never retried.
fn blocked_by_perturbation(steps: &[Step]) -> bool {
    if steps.last().is_some_and(|s| s.applied_perturbations().any(|p| p == AppliedPerturbation::Modal)) {
        return true;
    }
    // A click swallowed at step i shows on the page of step i + 1; retried if the same action comes later.
    let mut seen: Vec<String> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        for p in step.applied_perturbations() {
            let AppliedPerturbation::SwallowedClick { element } = p else { continue };
            if seen.contains(&element) {
                continue;
            }
            seen.push(element);
            let Some(swallowed) = i.checked_sub(1).and_then(|j| steps[j].action.as_deref()) else { continue };
            if !steps[i..].iter().any(|s| s.action.as_deref() == Some(swallowed)) {
                return true;
            }
        }
    }
    false
}

/// The last step is a stop and the step before it failed.
fn stopped_after_a_failure(steps: &[Step]) -> bool {
    let Some(last) = steps.last() else { return false };
    let stopped = last.action.as_deref().is_some_and(|a| a.starts_with("stop"));
    stopped && last.last_action_error.is_some()
}

fn failing_evaluator(t: &Trajectory) -> Option<FailureCategory> {
    let score = t.score.as_ref()?;
    score.evaluators.iter().find(|e| e.verdict != ScoreVerdict::Pass).map(|e| FailureCategory::of_evaluator(&e.kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt::AttemptSpec;
    use crate::ids::{Condition, Uid};
    use crate::trajectory::{EvaluatorEvidence, ScoreEvidence, SkillCall, SkillSubStep};

    fn step(n: u32, action: Option<&str>) -> Step {
        Step {
            step: n,
            url: "http://x/".into(),
            title: "X".into(),
            observation: String::new(),
            action: action.map(str::to_string),
            skill: None,
            last_action_error: None,
            perturbations: Vec::new(),
            llm: None,
            duration_ms: 0,
            screenshot: None,
            reported_skills: Vec::new(),
            dialogs: Vec::new(),
        }
    }

    fn trajectory(steps: Vec<Step>, failing: Option<&str>) -> Trajectory {
        let uid: Uid = "skillshift.gitlab.v2.9".parse().expect("uid");
        let spec = AttemptSpec { uid, condition: Condition::TgtExec, task_timeout_ms: 1, ..AttemptSpec::example() };
        let mut t = Trajectory::for_attempt(&spec, "do it", "http://x/", "skills");
        t.steps = steps;
        t.score = Some(ScoreEvidence {
            verdict: if failing.is_some() { ScoreVerdict::Fail } else { ScoreVerdict::Pass },
            evaluators: ["url_match", "string_match", "program_html"]
                .into_iter()
                .chain(failing.filter(|k| !["url_match", "string_match", "program_html"].contains(k)))
                .map(|k| EvaluatorEvidence {
                    kind: k.into(),
                    verdict: if Some(k) == failing { ScoreVerdict::Fail } else { ScoreVerdict::Pass },
                    expected: "e".into(),
                    got: "g".into(),
                })
                .collect(),
        });
        t
    }

    fn failure(t: &Trajectory) -> Option<String> {
        categorize(Outcome::Failure, None, Some(t))
    }

    #[test]
    fn success_has_no_category() {
        assert_eq!(categorize(Outcome::Success, None, None), None);
    }

    #[test]
    fn error_attempts_are_their_reason_and_site_faults_are_site() {
        for (reason, category) in [
            ("worker_lost", "worker_lost"),
            ("task_timeout", "task_timeout"),
            ("browser", "browser"),
            ("agent", "agent"),
            ("site", "site"),
            ("site_reset", "site"),
            ("site_login", "site"),
        ] {
            assert_eq!(categorize(Outcome::Error, Some(reason), None).as_deref(), Some(category), "{reason}");
        }
    }

    #[test]
    fn the_first_failing_evaluator_names_a_scored_failure() {
        let stop = || vec![step(1, Some("click [3]")), step(2, Some("stop [x]"))];
        assert_eq!(failure(&trajectory(stop(), Some("string_match"))).as_deref(), Some(WRONG_ANSWER));
        assert_eq!(failure(&trajectory(stop(), Some("url_match"))).as_deref(), Some(WRONG_URL));
        assert_eq!(failure(&trajectory(stop(), Some("program_html"))).as_deref(), Some(PAGE_CHECK));
        let verified = |kind| failure(&trajectory(stop(), Some(kind)));
        assert_eq!(verified("AgentResponseEvaluator").as_deref(), Some(WRONG_ANSWER));
        assert_eq!(verified("NetworkEventEvaluator").as_deref(), Some(NETWORK_CHECK));
        assert_eq!(failure(&trajectory(stop(), None)).as_deref(), Some(UNEXPLAINED));
        assert_eq!(categorize(Outcome::Failure, None, None).as_deref(), Some(UNEXPLAINED));
    }

    #[test]
    fn a_failed_skill_outranks_the_scorer_and_the_budget() {
        let mut s = step(1, None);
        s.skill = Some(SkillCall {
            name: "create_issue".into(),
            args: serde_json::Map::new(),
            ok: false,
            error: Some("step 1 (click): no element".into()),
            steps: vec![SkillSubStep { action: "click".into(), target: None, ok: false, error: None }],
        });
        let t = trajectory(vec![s, step(2, Some("stop [x]"))], Some("url_match"));
        assert_eq!(failure(&t).as_deref(), Some(SKILL_FAILURE));
        assert_eq!(categorize(Outcome::Timeout, None, Some(&t)).as_deref(), Some(SKILL_FAILURE));
    }

    #[test]
    fn a_spent_budget_is_step_budget() {
        let t = trajectory(vec![step(1, Some("click [3]")), step(2, Some("click [4]"))], None);
        assert_eq!(categorize(Outcome::Timeout, None, Some(&t)).as_deref(), Some(STEP_BUDGET));
    }

    #[test]
    fn stopping_right_after_a_failed_action_is_stopping_early() {
        let mut last = step(2, Some("stop [N/A]"));
        last.last_action_error = Some("no element [9]".into());
        let t = trajectory(vec![step(1, Some("click [9]")), last], Some("string_match"));
        assert_eq!(failure(&t).as_deref(), Some(AGENT_STOPPED_EARLY));
    }

    #[test]
    fn a_modal_on_the_last_page_is_a_perturbation() {
        let mut last = step(2, Some("stop [x]"));
        last.perturbations = vec![AppliedPerturbation::Modal.to_string()];
        let t = trajectory(vec![step(1, Some("click [3]")), last], Some("url_match"));
        assert_eq!(failure(&t).as_deref(), Some(PERTURBATION));
        let mut first = step(1, Some("click [7]"));
        first.perturbations = vec![AppliedPerturbation::Modal.to_string()];
        let t = trajectory(vec![first, step(2, Some("stop [x]"))], Some("url_match"));
        assert_eq!(failure(&t).as_deref(), Some(WRONG_URL), "a modal dismissed before the end did not block");
    }

    #[test]
    fn a_swallowed_click_not_retried_is_a_perturbation_and_a_retried_one_is_not() {
        let swallowed = |n| {
            let mut s = step(n, Some("stop [x]"));
            s.perturbations = vec![AppliedPerturbation::SwallowedClick { element: "button Save".into() }.to_string()];
            s
        };
        let t = trajectory(vec![step(1, Some("click [5]")), swallowed(2)], Some("program_html"));
        assert_eq!(failure(&t).as_deref(), Some(PERTURBATION));
        let mut retry = swallowed(2);
        retry.action = Some("click [5]".into());
        let t = trajectory(vec![step(1, Some("click [5]")), retry, step(3, Some("stop [x]"))], Some("program_html"));
        assert_eq!(failure(&t).as_deref(), Some(PAGE_CHECK));
    }
}
