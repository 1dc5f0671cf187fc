//! The trajectory of one attempt as it happens (docs/formats.md#trajectories):
//! the run loop hands each observation, move, skill call, LLM call and the
//! scorer's evidence to a [`Capture`], which the attempt owns beside its
//! record. [`Capture::finish`] stamps the outcome and the failure category on
//! both, keeps the screenshots the policy asks for, and redacts every secret
//! it was told about (site passwords, session cookies, API tokens) before the
//! trajectory leaves the worker.
//!
//! A step is opened by [`Capture::observed`] and kept once the agent answered
//! ([`Capture::replied`]), exactly when the record counts it, so a
//! trajectory's steps equal the record's `steps`.
//!
//! * [`evidence`]: the scorer's evidence, clipped.
//! * [`skill_call`](mod@skill_call): a skill call's sub-steps.
//! * The perturbations on a page come typed ([`AppliedPerturbation`], from [`crate::perturb::shown`])
//!   and are written as their phrases.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;
use skillshift_common::blob::{self, Blob};
use skillshift_common::evaluate::verified::VerifiedScored;
use skillshift_common::evaluate::Scored;
use skillshift_common::failure;
use skillshift_common::perturbation::AppliedPerturbation;
use skillshift_common::skills::Step as SkillStep;
use skillshift_common::trajectory::{
    redact, screenshot_name, DialogNote, LlmCall, ReportedSkill, ScreenshotPolicy, SkillCall, Step, Trajectory,
};
use skillshift_common::{AttemptSpec, Outcome, Record};

mod evidence;
mod skill_call;

pub use evidence::MAX_EVIDENCE_CHARS;
pub use skill_call::skill_call;

use evidence::clip;

/// Environment variables whose values are secrets wherever they appear.
const SECRET_VARS: &[&str] = &["OPENAI_API_KEY", "SKILLSHIFT_TOKEN", "ANTHROPIC_API_KEY"];

/// When a step's screenshot is taken ([`Capture::wants_screenshot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shoot {
    /// Beside the agent's reply, however soon it comes.
    Always,
    /// Beside the agent's reply if it is not ready at once; else not at all.
    WhileTheAgentThinks,
}

pub struct Capture {
    policy: ScreenshotPolicy,
    trajectory: Trajectory,
    screenshots: BTreeMap<String, Vec<u8>>,
    secrets: Vec<String>,
    /// The step observed and not yet answered.
    pending: Option<Step>,
    /// When the current step's observation began.
    step_started: Instant,
    /// The page of the attempt's last screenshot ([`Capture::reuse_screenshot`]).
    last_shot: Option<Shot>,
    /// Screenshots taken from the browser.
    taken: u32,
}

/// A screenshot's page, as far as the run loop can tell two pages apart without taking one: its
/// address, the observation the agent was shown (text, values, focus, what is hidden) and the scroll
/// offsets of the window and of every scrolled element.
struct Shot {
    url: String,
    observation: String,
    scroll: String,
    name: String,
}

impl Capture {
    pub fn new(spec: &AttemptSpec, policy: ScreenshotPolicy) -> Self {
        let mut t = Trajectory::for_attempt(spec, "", "", &spec.agent);
        t.model = spec.model.clone();
        let secrets = SECRET_VARS.iter().filter_map(|v| std::env::var(v).ok()).filter(|s| !s.is_empty()).collect();
        Capture {
            policy,
            trajectory: t,
            screenshots: BTreeMap::new(),
            secrets,
            pending: None,
            step_started: Instant::now(),
            last_shot: None,
            taken: 0,
        }
    }

    pub fn policy(&self) -> ScreenshotPolicy {
        self.policy
    }

    /// Screenshots handed to this capture, kept or not.
    pub fn taken(&self) -> u32 {
        self.taken
    }

    /// Whether, and when, the page about to be shown is photographed. Under `all`, every page, at
    /// once. Under `failures` (kept only if the attempt fails) the pages that show an action's error,
    /// only while the agent thinks: an agent whose reply is not ready at once (a model's call) hides
    /// the screenshot; one that answers at once (the `skills` agent) gives no time to hide it, and
    /// its failures keep the last page alone ([`Capture::wants_final_screenshot`]).
    pub fn wants_screenshot(&self, after_an_error: bool) -> Option<Shoot> {
        match self.policy {
            ScreenshotPolicy::None => None,
            ScreenshotPolicy::Failures => after_an_error.then_some(Shoot::WhileTheAgentThinks),
            ScreenshotPolicy::All => Some(Shoot::Always),
        }
    }

    /// Whether the page the agent ended on is photographed, for a last step that has none.
    pub fn wants_final_screenshot(&self) -> bool {
        self.policy == ScreenshotPolicy::Failures
            && self.trajectory.steps.last().is_some_and(|s| s.screenshot.is_none())
    }

    /// Whether the page the agent ended on is the page of the attempt's last screenshot, unchanged
    /// (the last move was a stop, so that page is the one last observed): then that screenshot is
    /// the last step's, and none is taken.
    pub fn reuse_final_screenshot(&mut self, scroll: &str) -> bool {
        let Some(step) = self.trajectory.steps.last_mut() else { return false };
        let stopped = step.action.as_deref().is_some_and(|a| a.starts_with("stop ["));
        stopped && reuse(step, self.last_shot.as_ref(), scroll)
    }

    /// The screenshot of the page the agent ended on, attached to the last step.
    pub fn final_screenshot(&mut self, png: Vec<u8>) {
        if self.trajectory.steps.is_empty() {
            return;
        }
        let name = self.store(png);
        if let Some(step) = self.trajectory.steps.last_mut() {
            step.screenshot = Some(name);
        }
    }

    /// Keeps a screenshot taken from the browser, once per content digest; its name.
    fn store(&mut self, png: Vec<u8>) -> String {
        self.taken += 1;
        let digest = blob::digest(&png);
        let name = screenshot_name(&digest);
        self.screenshots.entry(digest).or_insert(png);
        name
    }

    /// The task, once known.
    pub fn task(&mut self, intent: &str, start_url: &str) {
        self.trajectory.intent = intent.to_string();
        self.trajectory.start_url = start_url.to_string();
    }

    /// Values never to store: the site's password fields, cookie values, tokens.
    pub fn secrets(&mut self, values: impl IntoIterator<Item = String>) {
        self.secrets.extend(values.into_iter().filter(|s| s.len() >= 3));
    }

    /// The passwords a list of login steps types.
    pub fn login_secrets(steps: &[SkillStep]) -> Vec<String> {
        steps
            .iter()
            .filter_map(|s| match s {
                SkillStep::Fill { target, text } if target.name.to_lowercase().contains("pass") => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// A new step: the page the agent is about to be shown, with the perturbations on it.
    pub fn observed(
        &mut self,
        step: u32,
        url: &str,
        title: &str,
        observation: &str,
        perturbations: Vec<AppliedPerturbation>,
    ) {
        self.step_started = Instant::now();
        self.pending = Some(Step {
            step: step + 1,
            url: url.to_string(),
            title: title.to_string(),
            observation: observation.to_string(),
            action: None,
            skill: None,
            last_action_error: None,
            perturbations: perturbations.iter().map(ToString::to_string).collect(),
            llm: None,
            duration_ms: 0,
            screenshot: None,
            reported_skills: Vec::new(),
            dialogs: Vec::new(),
        });
    }

    /// Whether the pending step shows the page of the attempt's last screenshot, unchanged (the same
    /// address, observation and scroll offsets `scroll`): then that screenshot is the step's, and
    /// none is taken. An agent retrying on a page that did not move is shown the same page again.
    pub fn reuse_screenshot(&mut self, scroll: &str) -> bool {
        self.pending.as_mut().is_some_and(|step| reuse(step, self.last_shot.as_ref(), scroll))
    }

    /// The screenshot of the pending step's page, taken at scroll offsets `scroll` (`None` when
    /// they could not be read: the next step then takes its own).
    pub fn screenshot(&mut self, png: Vec<u8>, scroll: Option<String>) {
        if self.pending.is_none() {
            return;
        }
        let name = self.store(png);
        let Some(step) = self.pending.as_mut() else { return };
        step.screenshot = Some(name.clone());
        self.last_shot =
            scroll.map(|scroll| Shot { url: step.url.clone(), observation: step.observation.clone(), scroll, name });
    }

    /// The agent answered the pending step (with the error it was shown, and its LLM call, if any).
    pub fn replied(&mut self, last_action_error: Option<String>, llm: Option<LlmCall>) {
        if let Some(mut step) = self.pending.take() {
            step.last_action_error = last_action_error;
            step.llm = llm;
            self.trajectory.steps.push(step);
        }
    }

    /// The move of the last step was this action (`click [12]`, `stop [answer]`).
    pub fn action(&mut self, action: String) {
        if let Some(step) = self.trajectory.steps.last_mut() {
            step.action = Some(action);
            step.duration_ms = self.step_started.elapsed().as_millis() as u64;
        }
    }

    /// The move of the last step was this skill call.
    pub fn skill(&mut self, call: SkillCall) {
        if let Some(step) = self.trajectory.steps.last_mut() {
            step.skill = Some(call);
            step.duration_ms = self.step_started.elapsed().as_millis() as u64;
        }
    }

    /// The agent reported a skill it ran by itself during the last step.
    pub fn reported(&mut self, name: &str, ok: bool, error: Option<&str>) {
        if let Some(step) = self.trajectory.steps.last_mut() {
            step.reported_skills.push(ReportedSkill { name: clip(name), ok, error: error.map(clip) });
        }
    }

    /// JavaScript dialogs the page opened during the last step (answered by WebArena's rule, crate::cdp),
    /// their messages clipped like evidence.
    pub fn dialogs(&mut self, dialogs: Vec<crate::cdp::Dialog>) {
        let Some(step) = self.trajectory.steps.last_mut() else { return };
        for d in dialogs {
            let action = if d.accepted { "accepted" } else { "dismissed" };
            step.dialogs.push(DialogNote { kind: d.kind, message: clip(&d.message), action: action.into() });
        }
    }

    /// The attempt's network trace (redacted with the rest at [`Capture::finish`]).
    pub fn network(&mut self, har: skillshift_common::har::Har) {
        self.trajectory.network = Some(har);
    }

    /// The scorer's evidence, each evaluator's `expected` and `got` clipped to [`MAX_EVIDENCE_CHARS`].
    pub fn score(&mut self, scored: &Scored) {
        self.trajectory.score = Some(evidence::of_scored(scored));
    }

    /// WebArena-Verified's evaluators' evidence ([`evidence::of_verified`]).
    pub fn score_verified(&mut self, scored: &VerifiedScored) {
        self.trajectory.score = Some(evidence::of_verified(scored));
    }

    /// The scorer stopped before deciding (its reason is the evidence).
    pub fn score_stopped(&mut self, reason: &str) {
        self.trajectory.score = Some(evidence::stopped(reason));
    }

    /// Ends the capture: stamps outcome, error and failure category on `record`
    /// and the trajectory, keeps the screenshots the policy wants, redacts.
    pub fn finish(mut self, record: &mut Record, error_message: Option<&str>) -> Blob {
        let mut t = self.trajectory;
        let outcome = record.outcome.unwrap_or(Outcome::Error);
        t.outcome = outcome;
        t.error = record.error.clone().map(|reason| match error_message {
            Some(m) => format!("{reason}: {m}"),
            None => reason,
        });
        record.failure_category = failure::categorize(outcome, record.error.as_deref(), Some(&t));
        t.failure_category = record.failure_category.clone();
        let keep = match self.policy {
            ScreenshotPolicy::None => false,
            ScreenshotPolicy::Failures => outcome != Outcome::Success,
            ScreenshotPolicy::All => true,
        };
        if !keep {
            self.screenshots.clear();
            for s in &mut t.steps {
                s.screenshot = None;
            }
        }
        self.secrets.sort();
        self.secrets.dedup();
        t.redact(&self.secrets);
        // The record's free texts are redacted as its trajectory is: the record may be published where the
        // trajectory is not.
        record.error_detail = match (&record.error, error_message) {
            (Some(_), Some(m)) => Some(skillshift_common::record::error_detail(&redact(m, &self.secrets))),
            _ => None,
        };
        record.answer = record.answer.as_deref().map(|a| redact(a, &self.secrets));
        Blob { trajectory: t, screenshots: self.screenshots }
    }
}

/// Names `last` as `step`'s screenshot when it shows `step`'s page at scroll offsets `scroll`.
fn reuse(step: &mut Step, last: Option<&Shot>, scroll: &str) -> bool {
    match last {
        Some(last) if last.url == step.url && last.scroll == scroll && last.observation == step.observation => {
            step.screenshot = Some(last.name.clone());
            true
        }
        _ => false,
    }
}

/// The perturbations on the observed page, from what the page script reports it applied
/// ([`crate::perturb::shown`]).
pub fn perturbations(applied: &Value, observation: &str, modal_title: Option<&str>) -> Vec<AppliedPerturbation> {
    crate::perturb::shown(applied, observation, modal_title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use skillshift_common::skills::Target;
    use skillshift_common::{Condition, Uid};

    fn spec() -> AttemptSpec {
        AttemptSpec {
            sweep: "sw".into(),
            uid: "skillshift.gitlab.v2.3".parse::<Uid>().expect("uid"),
            condition: Condition::TgtExec,
            seed: 1,
            max_steps: 5,
            task_timeout_ms: 1000,
            ..AttemptSpec::example()
        }
    }

    #[test]
    fn steps_are_kept_once_answered_and_secrets_and_success_screenshots_go() {
        let mut c = Capture::new(&spec(), ScreenshotPolicy::Failures);
        c.secrets(Capture::login_secrets(&[SkillStep::Fill {
            target: Target {
                role: "textbox".into(),
                name: "Password".into(),
                nth: None,
                column: None,
                row: None,
                name_pattern: None,
            },
            text: "hunter2pw".into(),
        }]));
        c.observed(0, "http://x/", "X", "textbox 'hunter2pw'", vec![]);
        c.screenshot(b"png".to_vec(), None);
        c.replied(None, None);
        c.action("stop [done]".into());
        c.observed(1, "http://x/", "X", "never answered", vec![]);
        let mut r = Record::for_attempt(&spec());
        r.outcome = Some(Outcome::Failure);
        let blob = c.finish(&mut r, None);
        assert_eq!(blob.trajectory.steps.len(), 1);
        assert_eq!(blob.trajectory.steps[0].observation, "textbox '[redacted]'");
        assert_eq!(blob.screenshots.len(), 1, "a failure keeps its screenshots");
        assert_eq!(r.failure_category.as_deref(), Some("unexplained"));
        assert_eq!(blob.trajectory.failure_category, r.failure_category);

        let mut c = Capture::new(&spec(), ScreenshotPolicy::Failures);
        c.observed(0, "http://x/", "X", "", vec![]);
        c.screenshot(b"png".to_vec(), None);
        c.replied(None, None);
        let mut r = Record::for_attempt(&spec());
        r.outcome = Some(Outcome::Success);
        let blob = c.finish(&mut r, None);
        assert!(blob.screenshots.is_empty() && blob.trajectory.steps[0].screenshot.is_none());
        assert_eq!(r.failure_category, None);
    }

    #[test]
    fn webarena_verified_evidence_names_each_evaluator_and_why_it_failed() {
        use skillshift_common::evaluate::verified::{EvalStatus, EvaluatorOutcome, VerifiedScored};
        let outcome = |evaluator, status, messages: &[&str]| EvaluatorOutcome {
            evaluator,
            status,
            expected: json!({"url": "__GITLAB__/-/profile"}),
            actual: json!([]),
            messages: messages.iter().map(|m| m.to_string()).collect(),
        };
        let mut c = Capture::new(&spec(), ScreenshotPolicy::None);
        c.observed(0, "http://x/", "X", "", vec![]);
        c.replied(None, None);
        c.action("stop [done]".into());
        c.score_verified(&VerifiedScored {
            status: EvalStatus::Failure,
            evaluators: vec![
                outcome("AgentResponseEvaluator", EvalStatus::Success, &[]),
                outcome("NetworkEventEvaluator", EvalStatus::Failure, &["no matching network event found"]),
            ],
        });
        let mut r = Record::for_attempt(&spec());
        r.outcome = Some(Outcome::Failure);
        let t = c.finish(&mut r, None).trajectory;
        let score = t.score.expect("the score part");
        assert_eq!(score.verdict, "fail");
        let e = &score.evaluators;
        assert_eq!(
            (e[0].kind.as_str(), e[0].verdict.as_str(), e[0].got.as_str()),
            ("AgentResponseEvaluator", "pass", "[]")
        );
        assert_eq!((e[1].kind.as_str(), e[1].verdict.as_str()), ("NetworkEventEvaluator", "fail"));
        assert_eq!(e[1].expected, r#"{"url":"__GITLAB__/-/profile"}"#);
        assert_eq!(e[1].got, "[] (no matching network event found)");
        assert_eq!(r.failure_category.as_deref(), Some("network_check"));
    }

    /// Observes, answers and moves one step; `shot` is a screenshot of its page (taken at scroll "0,0").
    fn step(c: &mut Capture, n: u32, url: &str, observation: &str, shot: Option<&[u8]>, action: &str) -> bool {
        c.observed(n, url, "T", observation, vec![]);
        let reused = c.reuse_screenshot("0,0");
        if !reused {
            if let Some(png) = shot {
                c.screenshot(png.to_vec(), Some("0,0".into()));
            }
        }
        c.replied(None, None);
        c.action(action.into());
        reused
    }

    #[test]
    fn an_unchanged_page_keeps_the_last_screenshot_and_any_change_takes_a_new_one() {
        let mut c = Capture::new(&spec(), ScreenshotPolicy::All);
        assert!(!step(&mut c, 0, "http://x/a", "button 'Save'", Some(b"one"), "click [1]"), "nothing to reuse yet");
        assert!(step(&mut c, 1, "http://x/a", "button 'Save'", Some(b"two"), "click [1]"), "same page, same shot");
        assert!(!step(&mut c, 2, "http://x/a", "button 'Saved'", Some(b"three"), "click [1]"), "the text changed");
        assert!(
            !step(&mut c, 3, "http://x/b", "button 'Saved'", Some(b"four"), "scroll [down]"),
            "the address changed"
        );
        // The same address and text, scrolled: a new screenshot.
        c.observed(4, "http://x/b", "T", "button 'Saved'", vec![]);
        assert!(!c.reuse_screenshot("0,720"));
        c.screenshot(b"five".to_vec(), None);
        c.replied(None, None);
        // Offsets that could not be read reuse nothing afterwards.
        c.observed(5, "http://x/b", "T", "button 'Saved'", vec![]);
        assert!(!c.reuse_screenshot("0,720"), "the last shot's offsets were unknown");
        c.replied(None, None);
        assert_eq!(c.taken(), 4);
        let mut r = Record::for_attempt(&spec());
        r.outcome = Some(Outcome::Failure);
        let blob = c.finish(&mut r, None);
        let names: Vec<Option<&str>> = blob.trajectory.steps.iter().map(|s| s.screenshot.as_deref()).collect();
        assert_eq!(names[0], names[1], "the reused step shows the first screenshot");
        assert_ne!(names[1], names[2]);
        assert_eq!(names[5], None);
        assert_eq!(blob.screenshots.len(), 4, "each taken screenshot stored once");
    }

    #[test]
    fn the_final_page_reuses_a_screenshot_only_after_a_stop_on_the_page_last_shot() {
        let mut c = Capture::new(&spec(), ScreenshotPolicy::Failures);
        step(&mut c, 0, "http://x/a", "text '42'", Some(b"one"), "click [3]");
        c.observed(1, "http://x/a", "T", "text '42'", vec![]);
        c.replied(None, None);
        c.action("stop [42]".into());
        assert!(c.wants_final_screenshot());
        assert!(!c.reuse_final_screenshot("0,300"), "scrolled since");
        assert!(c.reuse_final_screenshot("0,0"));
        assert!(!c.wants_final_screenshot(), "the last step has its screenshot");

        // After a click the page the agent ended on was never observed: it is photographed.
        let mut c = Capture::new(&spec(), ScreenshotPolicy::Failures);
        step(&mut c, 0, "http://x/a", "text '42'", Some(b"one"), "click [3]");
        c.observed(1, "http://x/a", "T", "text '42'", vec![]);
        c.replied(None, None);
        c.action("click [3]".into());
        assert!(!c.reuse_final_screenshot("0,0"));
        c.final_screenshot(b"two".to_vec());
        assert_eq!(c.taken(), 2);
    }
}
