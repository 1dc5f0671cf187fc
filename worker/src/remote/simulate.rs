//! The simulated executor behind `skillshift worker --simulate MS`: no
//! browser; each attempt waits about MS milliseconds and yields a
//! deterministic pseudo-random record drawn from a seed of the unit (sweep
//! seed, treatment, uid, condition, rep), so the distributed machinery can be
//! tested and benchmarked at full scale. It hosts every site and version.
//! Its numbers mean nothing about any agent.
//!
//! With [`SimulatedExecutor::with_llm`] (`worker --simulate MS --simulate-llm`)
//! an attempt of an LLM agent also makes its `llm_calls` real calls to the
//! configured chat endpoint, one per simulated step, through the cluster's LLM
//! budget, and records the tokens the endpoint reported: a load test of the
//! budget and of an endpoint's limits, still without a browser.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use skillshift_common::{AttemptSpec, ErrorReason, Outcome, Record, Site, Version};
use tokio_util::sync::CancellationToken;

use crate::agents::llm::{ChatMessage, ChatModel, LlmError, OpenAiClient};
use crate::executor::Executor;

pub struct SimulatedExecutor {
    duration: Duration,
    slots: usize,
    llm: Option<Arc<OpenAiClient>>,
}

impl SimulatedExecutor {
    pub fn new(duration: Duration, slots: usize) -> SimulatedExecutor {
        SimulatedExecutor { duration, slots: slots.max(1), llm: None }
    }

    /// Attempts of an LLM agent make their calls to `llm`'s endpoint for real, asking for the model and
    /// temperature their contract names (the endpoint's configured model only when it names none).
    pub fn with_llm(mut self, llm: Arc<OpenAiClient>) -> SimulatedExecutor {
        self.llm = Some(llm);
        self
    }
}

/// What the real calls of a simulated attempt used.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Used {
    tokens_in: u64,
    tokens_out: u64,
    /// The sum of the calls' prices; `None` when one call had none (its model is in no price table and
    /// `SKILLSHIFT_LLM_PRICE` is not set), as for a real agent.
    cost_usd: Option<f64>,
}

/// The client of one attempt: the endpoint asked for the contract's model and temperature.
fn client_for(llm: &OpenAiClient, spec: &AttemptSpec) -> OpenAiClient {
    let model = spec.model.as_deref().unwrap_or(llm.model());
    llm.with_model(model, spec.temperature.unwrap_or(llm.config().temperature))
}

/// Makes `calls` real calls for a simulated attempt; returns what they used or the first failure.
async fn real_calls(llm: &dyn ChatModel, spec: &AttemptSpec, calls: u32) -> Result<Used, LlmError> {
    let (mut tin, mut tout, mut cost) = (0, 0, Some(0.0));
    for step in 0..calls {
        let messages = [
            ChatMessage::system("skillshift --simulate-llm: a load test, not a task; answer with one word."),
            ChatMessage::user(format!("simulated step {step} of {} ({})", spec.uid, spec.condition.as_str())),
        ];
        let c = llm.complete(&messages).await?;
        tin += c.info.tokens_in;
        tout += c.info.tokens_out;
        cost = cost.zip(c.info.cost_usd).map(|(a, b)| a + b);
    }
    Ok(Used { tokens_in: tin, tokens_out: tout, cost_usd: cost })
}

/// splitmix64: a small, well-mixed deterministic generator.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

fn seed_of(parts: &[&str], seed: u64) -> u64 {
    // FNV-1a over the unit's identity, then mixed with the sweep seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0xff]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h ^ seed.rotate_left(17)
}

/// The record a simulated attempt yields (without timing fields).
pub fn simulated_record(spec: &AttemptSpec) -> Record {
    let rep = spec.rep.to_string();
    let uid = spec.uid.to_string();
    let mut unit = Mix(seed_of(&[&spec.treatment, &uid, spec.condition.as_str(), &rep], spec.seed));
    let attempt = spec.attempt.to_string();
    let mut this_attempt = Mix(seed_of(&[&spec.treatment, &uid, spec.condition.as_str(), &rep, &attempt], spec.seed));
    let mut r = Record::for_attempt(spec);
    // Made up, and says so: a summary built from it is refused by `leaderboard validate`.
    r.simulated = Some(true);
    // A few attempts hit an infrastructure fault, drawn per attempt so a retry can succeed.
    if this_attempt.chance(30) {
        r.outcome = Some(Outcome::Error);
        r.error = Some(ErrorReason::Browser.as_str().into());
        r.failure_category = made_up_category(&r, spec);
        return r;
    }
    let shifted = spec.condition.version() == Version::V2;
    let success = unit.chance(if shifted { 350 } else { 550 });
    let max_steps = spec.max_steps.max(1);
    let steps = 1 + unit.below(max_steps as u64) as u32;
    let outcome = if success {
        Outcome::Success
    } else if steps == max_steps {
        Outcome::Timeout
    } else {
        Outcome::Failure
    };
    r.success = Some(success);
    r.outcome = Some(outcome);
    r.steps = Some(steps);
    if spec.skills.is_some() {
        let calls = unit.below(steps as u64 + 1) as u32;
        let failures = if calls == 0 { 0 } else { unit.below(calls as u64 + 1) as u32 };
        r.skill_calls = Some(calls);
        r.skill_failures = Some(failures);
    }
    if spec.agent != "skills" {
        // An LLM agent: one call per step, with token counts and a cost at
        // gpt-4o-mini's list prices ($0.15 / $0.60 per million tokens), so
        // cost budgets can be exercised without a model.
        let tokens_in = steps as u64 * (1_500 + unit.below(500));
        let tokens_out = steps as u64 * (40 + unit.below(60));
        r.llm_calls = Some(steps);
        r.tokens_in = Some(tokens_in);
        r.tokens_out = Some(tokens_out);
        r.cost_usd = Some((tokens_in as f64 * 0.15 + tokens_out as f64 * 0.60) / 1e6);
    } else {
        // The skills agent calls no model: $0 is what it spent, a measurement spend gates can decide on.
        r.llm_calls = Some(0);
        r.tokens_in = Some(0);
        r.tokens_out = Some(0);
        r.cost_usd = Some(0.0);
    }
    r.answer = None;
    r.failure_category = made_up_category(&r, spec);
    r
}

/// A made-up failure category for a simulated record (which has no trajectory to derive one from),
/// drawn from the unit so the viewer's and the report's category columns have something to show:
/// `error` keeps its reason, `timeout` is the step budget, a failed skill is a skill failure, and the
/// rest are spread over the categories a real attempt can end in (perturbation only under a shift).
fn made_up_category(r: &Record, spec: &AttemptSpec) -> Option<String> {
    use skillshift_common::failure;
    match r.outcome? {
        Outcome::Failure if r.skill_failures.unwrap_or(0) > 0 => return Some(failure::SKILL_FAILURE.to_string()),
        Outcome::Failure => {}
        other => return failure::categorize(other, r.error.as_deref(), None),
    }
    let (uid, rep) = (spec.uid.to_string(), spec.rep.to_string());
    let mut mix = Mix(seed_of(&["category", &spec.treatment, &uid, spec.condition.as_str(), &rep], spec.seed));
    let shifted = spec.condition.shift() != skillshift_common::ids::Shift::None;
    if shifted && mix.chance(400) {
        return Some(failure::PERTURBATION.to_string());
    }
    let spread = [failure::WRONG_ANSWER, failure::WRONG_URL, failure::PAGE_CHECK, failure::AGENT_STOPPED_EARLY];
    Some(spread[mix.below(spread.len() as u64) as usize].to_string())
}

impl Executor for SimulatedExecutor {
    fn hosts(&self) -> Vec<(Site, Version)> {
        Site::ALL.iter().flat_map(|s| Version::ALL.iter().map(move |v| (*s, *v))).collect()
    }

    fn slots(&self) -> usize {
        self.slots
    }

    fn simulated(&self) -> bool {
        true
    }

    fn execute(&self, spec: AttemptSpec, cancel: CancellationToken) -> BoxFuture<'static, Record> {
        let base = self.duration;
        let llm = self.llm.as_deref().filter(|_| spec.agent != "skills").map(|l| client_for(l, &spec));
        Box::pin(async move {
            let started = Instant::now();
            let started_at = chrono::Utc::now();
            let mut rec = simulated_record(&spec);
            if let (Some(llm), Some(calls)) = (llm, rec.llm_calls) {
                let made = tokio::select! {
                    r = real_calls(&llm, &spec, calls) => Some(r),
                    _ = cancel.cancelled() => None,
                };
                match made {
                    Some(Ok(used)) => {
                        rec.tokens_in = Some(used.tokens_in);
                        rec.tokens_out = Some(used.tokens_out);
                        // Priced as a real call is: the configured price, else the answering model's list price.
                        rec.cost_usd = used.cost_usd;
                    }
                    Some(Err(e)) => {
                        rec = Record { success: None, steps: None, skill_calls: None, skill_failures: None, ..rec };
                        rec.outcome = Some(Outcome::Error);
                        tracing::warn!(uid = %spec.uid, error = %e, "simulated attempt's llm call failed");
                        rec.error = Some(ErrorReason::Agent.as_str().into());
                    }
                    None => {}
                }
            }
            // About MS: +/-10 %, drawn per attempt.
            let jitter = (seed_of(&[&spec.uid.to_string()], spec.seed ^ spec.attempt as u64) % 21) as i64 - 10;
            let wait = base.mul_f64(1.0 + jitter as f64 / 100.0);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = cancel.cancelled() => {
                    rec = Record { success: None, steps: None, skill_calls: None, skill_failures: None, ..rec };
                    rec.outcome = Some(Outcome::Error);
                    rec.error = Some(ErrorReason::Cancelled.as_str().into());
                }
            }
            // An attempt turned into an error above says why in its category too.
            rec.failure_category = made_up_category(&rec, &spec);
            rec.duration_ms = Some(started.elapsed().as_millis() as u64);
            rec.started_at = Some(started_at.to_rfc3339());
            rec.finished_at = Some(chrono::Utc::now().to_rfc3339());
            rec
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::Condition;

    fn spec(task: u32, attempt: u32) -> AttemptSpec {
        AttemptSpec {
            sweep: "sw".into(),
            uid: skillshift_common::Uid::new(Site::Gitlab, Version::V1, task),
            attempt,
            seed: 7,
            task_timeout_ms: 1000,
            ..AttemptSpec::example()
        }
    }

    #[test]
    fn records_are_deterministic_per_unit_and_valid() {
        let mut successes = 0;
        for task in 0..200 {
            let a = simulated_record(&spec(task, 0));
            assert_eq!(a, simulated_record(&spec(task, 0)));
            assert_eq!(a.simulated, Some(true), "every made-up record says so");
            if a.outcome != Some(Outcome::Error) {
                assert!(a.steps.is_some_and(|s| (1..=10).contains(&s)));
                successes += a.success.unwrap_or(false) as u32;
            }
            assert_eq!(a.skill_calls, None, "no library, no executable skills");
            assert_eq!(a.identity_mismatch(&spec(task, 0)), None, "identity stamped from the spec");
        }
        assert!((60..160).contains(&successes), "about half succeed: {successes}");
    }

    #[test]
    fn every_simulated_non_success_has_a_category_and_a_success_none() {
        let mut seen = std::collections::BTreeSet::new();
        for task in 0..300 {
            for condition in [Condition::Src, Condition::TgtExec] {
                let s = AttemptSpec { condition, ..spec(task, 0) };
                let r = simulated_record(&s);
                match r.outcome {
                    Some(Outcome::Success) => assert_eq!(r.failure_category, None),
                    Some(Outcome::Error) => {
                        assert_eq!(r.failure_category, r.error, "an error's category is its reason")
                    }
                    Some(Outcome::Timeout) => assert_eq!(r.failure_category.as_deref(), Some("step_budget")),
                    _ => {
                        let c = r.failure_category.clone().expect("a failure has a category");
                        assert!(condition != Condition::Src || c != "perturbation", "no perturbation without a shift");
                        seen.insert(c);
                    }
                }
            }
        }
        assert!(seen.contains("perturbation") && seen.contains("wrong_answer"), "categories spread: {seen:?}");
    }

    #[tokio::test]
    async fn cancel_ends_an_attempt_as_an_error() {
        let ex = SimulatedExecutor::new(Duration::from_secs(60), 1);
        let cancel = CancellationToken::new();
        let fut = ex.execute(spec(1, 0), cancel.clone());
        cancel.cancel();
        let r = fut.await;
        assert_eq!((r.outcome, ErrorReason::of(&r)), (Some(Outcome::Error), Some(ErrorReason::Cancelled)));
        assert_eq!(r.error.as_deref(), Some("cancelled"), "the text records carry");
    }
}
