//! `skillshift run UID --condition C [--agent A]`: one attempt, for debugging.
//! Prints the trajectory (step, action, error, skill results, evaluator
//! verdicts) as it happens, then the formats §3 record as one JSON line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use skillshift_common::skills::{SkillLibrary, SKILLS_SCHEMA};
use skillshift_common::{AttemptSpec, Condition, Uid};
use skillshift_experiment::embedded::{generated_tasks, Embedded};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::perturb::Profile;
use skillshift_worker::run_executor::factory_for;
use skillshift_worker::runloop::{run_attempt, Event, RunContext, TaskSource};
use skillshift_worker::sites::{Remote, ResetPolicy, SiteManager};
use skillshift_worker::CancellationToken;

#[derive(clap::Args)]
pub struct Args {
    /// The task uid, e.g. skillshift.gitlab.v1.3 (v1 for src*, v2 for tgt*).
    pub uid: String,
    /// src, src-perc, src-exec, tgt, tgt-perc or tgt-exec.
    #[arg(long)]
    pub condition: String,
    /// skills, reference or cmd:<command line>.
    #[arg(long, default_value = "skills")]
    pub agent: String,
    /// Model of the reference agent.
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long, default_value_t = 10)]
    pub max_steps: u32,
    /// Wall-clock ceiling of the attempt, in seconds.
    #[arg(long, default_value_t = 600)]
    pub task_timeout: u64,
    /// Sweep seed; perturbations derive theirs from (seed, family, condition, rep).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 0)]
    pub rep: u32,
    /// Skill library (formats §9); default DATA/skills/example.json. `none` runs without skills.
    #[arg(long)]
    pub skills: Option<String>,
    /// Data directory with tasks/ and skills/; when its task file is missing the fixture sites' generated tasks are used.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Perturbation profile; default the built-in data/perturbations/default.json.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Sites config (env-ctrl or external backend); default: the embedded fixture sites.
    #[arg(long)]
    pub sites: Option<PathBuf>,
    /// before-each, after-mutation or never (embedded sites).
    #[arg(long, default_value = "before-each")]
    pub reset_policy: String,
    /// Also print the observation (the accessibility tree) shown at every step.
    #[arg(long)]
    pub observations: bool,
    /// Save a PNG of every step under this directory.
    #[arg(long)]
    pub screenshots: Option<PathBuf>,
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let telemetry = args.telemetry.config("skillshift-run")?;
    let uid: Uid = args.uid.parse()?;
    let condition: Condition = args.condition.parse()?;
    if uid.version != condition.version() {
        bail!("uid {uid} is a {} task but --condition {condition} runs {}", uid.version, condition.version());
    }
    if args.max_steps == 0 {
        bail!("--max-steps must be at least 1");
    }
    check_agent(&args.agent, args.model.clone())?;
    let policy: ResetPolicy = args.reset_policy.parse().map_err(anyhow::Error::msg)?;
    let skills = load_skills(&args, uid)?;
    let profile = match &args.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default_profile(),
    };
    let task_file = skillshift_common::task::task_file_path(&args.data, uid.site, uid.version);
    let (tasks, n_tasks) = if task_file.exists() {
        let n = skillshift_common::task::load_task_file(&task_file, uid.site)?.len();
        (TaskSource::Dir(args.data.clone()), n)
    } else {
        (generated_tasks(), skillshift_sites::tasks(uid.site, uid.version).len())
    };
    if uid.task_id as usize >= n_tasks {
        bail!("uid {uid}: {}.{} has {n_tasks} tasks (ids 0..{})", uid.site, uid.version, n_tasks.saturating_sub(1));
    }
    let spec = AttemptSpec {
        sweep: "local-run".into(),
        treatment: skills.as_ref().map(|l| l.method.clone()).unwrap_or_else(|| "CONTROL".into()),
        uid,
        condition,
        rep: args.rep,
        attempt: 0,
        seed: args.seed,
        max_steps: args.max_steps,
        task_timeout_ms: args.task_timeout.saturating_mul(1000),
        agent: args.agent.clone(),
        model: args.model.clone(),
        skills,
        perturbation_profile: None,
        config_digest: None,
        traceparent: None,
    };
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let traces = skillshift_telemetry::init(&telemetry)?;
        let sites: Arc<dyn SiteManager> = match &args.sites {
            Some(path) => Arc::new(Remote::load(path)?),
            None => Arc::new(Embedded::start(policy).await?),
        };
        let mut ctx = RunContext::new(sites, tasks, "local");
        ctx.profile = profile;
        ctx.screenshots = args.screenshots.clone();
        let driver = Driver::new(BrowserConfig::default());
        let observations = args.observations;
        let sink = Box::new(move |e: &Event| {
            if let Some(line) = show(e, observations) {
                println!("{line}");
            }
        });
        let record = run_attempt(&ctx, &driver, &spec, factory_for(&spec), Some(sink), CancellationToken::new()).await;
        driver.shutdown().await;
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        println!("{}", serde_json::to_string(&record)?);
        Ok(ExitCode::SUCCESS)
    })
}

fn load_skills(args: &Args, uid: Uid) -> anyhow::Result<Option<SkillLibrary>> {
    match args.skills.as_deref() {
        Some("none") => Ok(None),
        Some(path) => Ok(Some(SkillLibrary::load(std::path::Path::new(path))?)),
        None => {
            let path = args.data.join("skills").join("example.json");
            if path.exists() {
                return Ok(Some(SkillLibrary::load(&path)?));
            }
            // The example library as the fixture sites define it.
            Ok(Some(SkillLibrary {
                schema: SKILLS_SCHEMA.into(),
                method: "example".into(),
                skills: skillshift_sites::skills(uid.site),
            }))
        }
    }
}

fn show(e: &Event, observations: bool) -> Option<String> {
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

/// Refuses an unknown agent, or a `reference` agent without an LLM endpoint
/// configured, before a browser is started: bad input is exit 2, not an
/// `error` record.
fn check_agent(agent: &str, model: Option<String>) -> anyhow::Result<()> {
    match agent {
        "skills" => Ok(()),
        "reference" => {
            skillshift_worker::agents::llm::LlmConfig::from_env(model).context("--agent reference")?;
            Ok(())
        }
        other => match other.strip_prefix("cmd:") {
            Some(cmd) if !cmd.trim().is_empty() => Ok(()),
            _ => bail!("--agent '{other}': expected skills, reference or cmd:<command line>"),
        },
    }
}
