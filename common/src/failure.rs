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

use crate::perturbation::AppliedPerturbation;
use crate::record::Outcome;
use crate::trajectory::{Step, Trajectory};

pub const WRONG_ANSWER: &str = "wrong_answer";
pub const WRONG_URL: &str = "wrong_url";
pub const PAGE_CHECK: &str = "page_check";
/// WebArena-Verified's `NetworkEventEvaluator` did not find the request it expects in the attempt's trace.
pub const NETWORK_CHECK: &str = "network_check";
pub const SKILL_FAILURE: &str = "skill_failure";
pub const STEP_BUDGET: &str = "step_budget";
pub const AGENT_STOPPED_EARLY: &str = "agent_stopped_early";
pub const PERTURBATION: &str = "perturbation";
pub const SITE: &str = "site";
pub const WORKER_LOST: &str = "worker_lost";
pub const UNEXPLAINED: &str = "unexplained";

/// The category of an attempt that ended with `outcome` (and, for `error`,
/// the reason `error`), given what its trajectory shows; `None` on success.
pub fn categorize(outcome: Outcome, error: Option<&str>, trajectory: Option<&Trajectory>) -> Option<String> {
    let category = match outcome {
        Outcome::Success => return None,
        Outcome::Error => match error.unwrap_or("error") {
            "site" | "site_reset" | "site_login" => SITE,
            other => other,
        },
        Outcome::Failure | Outcome::Timeout => {
            let steps = trajectory.map_or(&[][..], |t| t.steps.as_slice());
            if blocked_by_perturbation(steps) {
                PERTURBATION
            } else if steps
                .iter()
                .any(|s| s.skill.as_ref().is_some_and(|k| !k.ok) || s.reported_skills.iter().any(|k| !k.ok))
            {
                SKILL_FAILURE
            } else if outcome == Outcome::Timeout {
                STEP_BUDGET
            } else if stopped_after_a_failure(steps) {
                AGENT_STOPPED_EARLY
            } else {
                trajectory.and_then(failing_evaluator).unwrap_or(UNEXPLAINED)
            }
        }
    };
    Some(category.to_string())
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

fn failing_evaluator(t: &Trajectory) -> Option<&'static str> {
    let score = t.score.as_ref()?;
    score.evaluators.iter().find(|e| e.verdict != "pass").map(|e| match e.kind.as_str() {
        "string_match" | "AgentResponseEvaluator" => WRONG_ANSWER,
        "url_match" => WRONG_URL,
        "program_html" => PAGE_CHECK,
        "NetworkEventEvaluator" => NETWORK_CHECK,
        _ => UNEXPLAINED,
    })
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
        let spec = AttemptSpec {
            sweep: "s".into(),
            treatment: "T".into(),
            uid,
            condition: Condition::TgtExec,
            rep: 0,
            attempt: 0,
            seed: 0,
            max_steps: 10,
            task_timeout_ms: 1,
            agent: "skills".into(),
            model: None,
            skills: None,
            perturbation_profile: None,
            config_digest: None,
            traceparent: None,
            temperature: None,
            prompt_version: None,
            evaluator: Default::default(),
            network_bodies: false,
        };
        let mut t = Trajectory::for_attempt(&spec, "do it", "http://x/", "skills");
        t.steps = steps;
        t.score = Some(ScoreEvidence {
            verdict: if failing.is_some() { "fail" } else { "pass" }.into(),
            evaluators: ["url_match", "string_match", "program_html"]
                .into_iter()
                .chain(failing.filter(|k| !["url_match", "string_match", "program_html"].contains(k)))
                .map(|k| EvaluatorEvidence {
                    kind: k.to_string(),
                    verdict: if Some(k) == failing { "fail" } else { "pass" }.into(),
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
