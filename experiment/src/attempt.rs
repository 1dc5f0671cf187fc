//! `skillshift run`: one attempt, for debugging. The attempt spec is built by
//! hand from the settings, run against the embedded sites or a `--sites`
//! file, and its trajectory is shown as it happens, summarised per step at
//! the end ([`summary`]) and, when asked, written to a file with its
//! screenshots beside it ([`write_trajectory`]).

use std::path::PathBuf;

use anyhow::{bail, Context};
use skillshift_common::blob::Blob;
use skillshift_common::evaluate::{verified, Mode};
use skillshift_common::trajectory::{ScreenshotPolicy, Trajectory};
use skillshift_common::{AttemptSpec, Condition, Uid};
use skillshift_worker::attempt::{run_attempt_traced, Event, EventSink, Finished, RunContext};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::perturb::Profile;
use skillshift_worker::run_executor::factory_for;
use skillshift_worker::sites::ResetPolicy;
use skillshift_worker::CancellationToken;

use crate::settings::Skills;
use crate::webarena::WebArenaTask;
use crate::workers::SiteChoice;

/// One attempt to run by hand.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub uid: Uid,
    pub condition: Condition,
    pub agent: String,
    pub model: Option<String>,
    /// The provider the reference agent's endpoint must be (`run --provider`); `None` takes any.
    pub provider: Option<String>,
    /// The reference agent's sampling temperature (`run --temperature`; default 0).
    pub temperature: Option<f64>,
    pub max_steps: u32,
    pub task_timeout_s: u64,
    pub seed: u64,
    pub rep: u32,
    pub skills: Skills,
    pub data: PathBuf,
    pub profile: Option<PathBuf>,
    /// A `--sites` file; `None` serves the fixture sites in this process.
    pub sites: Option<PathBuf>,
    pub reset_policy: ResetPolicy,
    pub screenshots: Option<PathBuf>,
    /// `--tasks FILE --site NAME=URL...`: a task of any WebArena config file instead of the grid's.
    pub webarena: Option<WebArenaTask>,
    /// `--evaluator`: WebArena's rules or strict.
    pub mode: Mode,
    /// Which steps of the trajectory keep a screenshot (`all` by default for one attempt).
    pub screenshot_policy: ScreenshotPolicy,
}

/// Refuses an unknown agent, or a `reference` agent without an LLM endpoint configured,
/// before a browser is started: bad input is exit 2, not an `error` record.
/// A `provider` the reference agent's endpoint is not is refused too.
pub fn check_agent(agent: &str, model: Option<String>, provider: Option<&str>) -> anyhow::Result<()> {
    match agent {
        "skills" => Ok(()),
        "reference" => {
            let cfg = skillshift_worker::agents::llm::LlmConfig::from_env(model).context("--agent reference")?;
            crate::spec::check_provider(provider, &cfg)?;
            Ok(())
        }
        other => match other.strip_prefix("cmd:") {
            Some(cmd) if !cmd.trim().is_empty() => Ok(()),
            _ => bail!("--agent '{other}': expected skills, reference or cmd:<command line>"),
        },
    }
}

/// The spec of the attempt, checked against the task files before anything starts.
pub fn spec(s: &RunSettings) -> anyhow::Result<AttemptSpec> {
    let uid = s.uid;
    if uid.version != s.condition.version() {
        bail!("uid {uid} is a {} task but --condition {} runs {}", uid.version, s.condition, s.condition.version());
    }
    if let Some(t) = s.temperature.filter(|t| !t.is_finite() || *t < 0.0) {
        bail!("--temperature must be a non-negative number, got {t}");
    }
    if s.max_steps == 0 {
        bail!("--max-steps must be at least 1");
    }
    check_agent(&s.agent, s.model.clone(), s.provider.as_deref())?;
    if let Some(w) = &s.webarena {
        return Ok(AttemptSpec {
            sweep: "local-run".into(),
            treatment: "CONTROL".into(),
            uid,
            condition: s.condition,
            rep: s.rep,
            attempt: 0,
            seed: s.seed,
            max_steps: s.max_steps,
            task_timeout_ms: s.task_timeout_s.saturating_mul(1000),
            agent: s.agent.clone(),
            model: s.model.clone(),
            skills: None,
            perturbation_profile: None,
            config_digest: None,
            traceparent: None,
            temperature: s.temperature,
            prompt_version: None,
            evaluator: s.mode,
            // Response bodies are recorded only for a task whose evaluators read them.
            network_bodies: verified::scoring(&w.task, s.mode).is_some_and(verified::Verified::reads_response_content),
        });
    }
    let task_file = skillshift_common::task::task_file_path(&s.data, uid.site, uid.version);
    let tasks: Vec<skillshift_common::task::Task> = if task_file.exists() {
        skillshift_common::task::load_task_file(&task_file, uid.site)?
    } else {
        skillshift_sites::tasks(uid.site, uid.version).into_iter().map(|g| g.task).collect()
    };
    let Some(task) = tasks.get(uid.task_id as usize) else {
        let n = tasks.len();
        bail!("uid {uid}: {}.{} has {n} tasks (ids 0..{})", uid.site, uid.version, n.saturating_sub(1));
    };
    let network_bodies = verified::scoring(task, s.mode).is_some_and(verified::Verified::reads_response_content);
    let skills = match &s.skills {
        // The example library, limited to the uid's site when it comes from the fixture sites.
        Skills::Example if !s.data.join("skills").join("example.json").exists() => {
            Some(skillshift_common::skills::SkillLibrary {
                schema: skillshift_common::skills::SKILLS_SCHEMA.into(),
                method: "example".into(),
                skills: skillshift_sites::skills(uid.site),
            })
        }
        other => crate::spec::library(other, &s.data)?,
    };
    Ok(AttemptSpec {
        sweep: "local-run".into(),
        treatment: skills.as_ref().map(|l| l.method.clone()).unwrap_or_else(|| "CONTROL".into()),
        uid,
        condition: s.condition,
        rep: s.rep,
        attempt: 0,
        seed: s.seed,
        max_steps: s.max_steps,
        task_timeout_ms: s.task_timeout_s.saturating_mul(1000),
        agent: s.agent.clone(),
        model: s.model.clone(),
        skills,
        perturbation_profile: None,
        config_digest: None,
        traceparent: None,
        temperature: s.temperature,
        prompt_version: None,
        evaluator: s.mode,
        network_bodies,
    })
}

/// Runs the attempt, handing every trajectory event to `sink`, and returns its record and trajectory.
pub async fn run(s: &RunSettings, spec: &AttemptSpec, sink: EventSink) -> anyhow::Result<Finished> {
    let profile = match &s.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default_profile(),
    };
    let choice = match &s.sites {
        Some(path) => SiteChoice::File(path.clone()),
        None => SiteChoice::Embedded(s.reset_policy),
    };
    let mut ctx = match &s.webarena {
        Some(w) => RunContext::new(w.sites(), w.source(), "local"),
        None => RunContext::new(
            crate::workers::open_sites(&choice).await?,
            crate::workers::tasks_for(&choice, &s.data)?,
            "local",
        ),
    };
    ctx.profile = profile;
    ctx.screenshots = s.screenshots.clone();
    ctx.screenshot_policy = s.screenshot_policy;
    let driver = Driver::new(BrowserConfig::default());
    let finished =
        run_attempt_traced(&ctx, &driver, spec, factory_for(spec), Some(sink), CancellationToken::new()).await;
    driver.shutdown().await;
    Ok(finished)
}

/// Writes the trajectory as JSON at `path` and its screenshots under `screenshots/` beside it,
/// the layout of an export's `trajectories/` directory.
pub fn write_trajectory(blob: &Blob, path: &std::path::Path) -> anyhow::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    for (digest, png) in &blob.screenshots {
        let shot = dir.join(skillshift_common::trajectory::screenshot_name(digest));
        if let Some(d) = shot.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        std::fs::write(&shot, png).with_context(|| format!("writing {}", shot.display()))?;
    }
    let json = serde_json::to_string_pretty(&blob.trajectory)? + "\n";
    std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
}

/// The trajectory in a few lines per step: page, move (a skill with its sub-steps, the failing
/// one marked), the error the agent was shown, perturbations, LLM call; then the scorer's
/// evidence and the outcome with its failure category.
pub fn summary(t: &Trajectory) -> Vec<String> {
    let mut out = vec![format!("trajectory: {} steps, {}", t.steps.len(), t.key.uid)];
    for s in &t.steps {
        let mv = match (&s.action, &s.skill) {
            (Some(a), _) => a.clone(),
            (None, Some(k)) => format!("skill {} {}", k.name, if k.ok { "ok" } else { "FAILED" }),
            (None, None) => "(no move)".into(),
        };
        out.push(format!("#{:<2} {mv}  [{}] {} ms", s.step, s.url, s.duration_ms));
        if let Some(e) = &s.last_action_error {
            out.push(format!("    shown error: {e}"));
        }
        if let Some(k) = &s.skill {
            for (i, sub) in k.steps.iter().enumerate() {
                let target = sub.target.as_ref().map(|t| t.to_string()).unwrap_or_default();
                let mark = if sub.ok { "ok" } else { "FAILED" };
                out.push(format!(
                    "    {i}. {} {target} {mark}{}",
                    sub.action,
                    sub.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default()
                ));
            }
        }
        if !s.perturbations.is_empty() {
            out.push(format!("    perturbations: {}", s.perturbations.join(", ")));
        }
        if let Some(l) = &s.llm {
            out.push(format!("    llm {}: {} in, {} out, {} ms", l.model, l.tokens_in, l.tokens_out, l.latency_ms));
        }
        if let Some(shot) = &s.screenshot {
            out.push(format!("    screenshot: {shot}"));
        }
    }
    if let Some(score) = &t.score {
        for e in &score.evaluators {
            out.push(format!("score {} {}: expected {}, got {}", e.kind, e.verdict, clip(&e.expected), clip(&e.got)));
        }
    }
    out.push(format!(
        "outcome: {}{}{}",
        t.outcome.as_str(),
        t.failure_category.as_deref().map(|c| format!(" ({c})")).unwrap_or_default(),
        t.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default()
    ));
    out
}

fn clip(s: &str) -> String {
    skillshift_common::text::clip(s, 200).into_owned()
}

/// One trajectory event as the terminal shows it; observations only when asked for.
pub fn show(e: &Event, observations: bool) -> Option<String> {
    Some(match e {
        Event::Observation { step, text } => {
            if !observations {
                return None;
            }
            format!("observation {step}:\n{text}")
        }
        Event::Step { step, url, action, error } => match error {
            Some(err) => format!("step {step:>2}  {action}  [{url}]\n         error: {err}"),
            None => format!("step {step:>2}  {action}  [{url}]"),
        },
        Event::Skill { step, name, ok, error, answer } => {
            let mut s = format!("step {step:>2}  skill {name}: {}", if *ok { "ok" } else { "FAILED" });
            if let Some(e) = error {
                s.push_str(&format!("\n         error: {e}"));
            }
            if let Some(a) = answer {
                s.push_str(&format!("\n         read: {a:?}"));
            }
            s
        }
        Event::Reported { step, name, ok, error } => {
            format!(
                "step {step:>2}  reported skill {name}: {}{}",
                if *ok { "ok" } else { "FAILED" },
                error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default()
            )
        }
        Event::Score { details } => details.iter().map(|d| format!("score    {d}")).collect::<Vec<_>>().join("\n"),
        Event::Note(n) => format!("note     {n}"),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use skillshift_common::task::SiteKey;

    /// The spec of `run ID --tasks FILE` for a WebArena-Verified task whose network evaluator reads
    /// (or does not read) a response's content, under `mode`.
    fn spec_of(reads_content: bool, mode: Mode) -> AttemptSpec {
        let dir = tempfile::tempdir().unwrap();
        let mut expected = serde_json::json!({"url": "__GITLAB__/-/profile", "http_method": "POST"});
        if reads_content {
            expected["response_content"] = serde_json::json!({"bio": "x"});
        }
        let task = serde_json::json!({"sites": ["gitlab"], "task_id": 4, "intent_template_id": 1,
            "start_urls": ["__GITLAB__"], "intent": "Change the bio", "intent_template": "Change the bio",
            "instantiation_dict": {}, "revision": 1,
            "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
                      "expected": {"task_type": "mutate", "status": "SUCCESS", "retrieved_data": null}},
                     {"evaluator": "NetworkEventEvaluator", "expected": expected}]});
        let file = dir.path().join("t.json");
        std::fs::write(&file, serde_json::json!([task]).to_string()).unwrap();
        let sites = [(SiteKey::Gitlab, "http://h:8023".to_string())];
        let w = WebArenaTask::load(&file, 4, &sites, skillshift_common::Version::V1).unwrap();
        let s = RunSettings {
            uid: w.uid,
            condition: Condition::Src,
            agent: "skills".into(),
            model: None,
            provider: None,
            temperature: None,
            max_steps: 5,
            task_timeout_s: 60,
            seed: 0,
            rep: 0,
            skills: Skills::None,
            data: dir.path().into(),
            profile: None,
            sites: None,
            reset_policy: ResetPolicy::Never,
            screenshots: None,
            webarena: Some(w),
            mode,
            screenshot_policy: ScreenshotPolicy::None,
        };
        spec(&s).unwrap()
    }

    #[test]
    fn run_tasks_asks_for_response_bodies_only_when_the_task_s_evaluators_read_them() {
        assert!(spec_of(true, Mode::WebArenaVerified).network_bodies);
        assert!(!spec_of(false, Mode::WebArenaVerified).network_bodies);
        assert!(!spec_of(true, Mode::WebArena).network_bodies, "webarena cannot score the task: no bodies");
    }
}
