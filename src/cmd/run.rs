//! `skillshift run UID --condition C [--agent A]`: one attempt, for debugging.
//! Prints the trajectory (step, action, error, skill results, evaluator
//! verdicts) as it happens, then a summary of the trajectory per step, then the record as one JSON line
//! (docs/formats.md#records). The attempt is `skillshift_experiment::attempt`'s;
//! with `--tasks FILE --site NAME=URL...`, UID is a task id of any WebArena
//! config file (`skillshift_experiment::webarena`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use skillshift_common::evaluate::Mode;
use skillshift_common::task::SiteKey;
use skillshift_common::trajectory::ScreenshotPolicy;
use skillshift_common::{Condition, Uid};
use skillshift_experiment::attempt::{self, RunSettings};
use skillshift_experiment::settings::Skills;
use skillshift_experiment::webarena::WebArenaTask;
use skillshift_worker::attempt::Event;
use skillshift_worker::sites::ResetPolicy;

use super::flags::{help, AgentArgs, AttemptArgs, DataArgs, SeedArgs};

#[derive(clap::Args)]
#[command(
    mut_arg("agent", help("skills, reference or cmd:<command line>")),
    mut_arg("model", help("Model of the reference agent")),
    mut_arg(
        "provider",
        help(
            "The LLM provider the reference agent's endpoint must be (e.g. openai); refused when the endpoint of \
         OPENAI_BASE_URL is another"
        )
    ),
    mut_arg(
        "temperature",
        help("Sampling temperature of the reference agent (default 0), as `sweep start --temperature`")
    ),
    mut_arg("max_steps", help("The step budget of the attempt")),
    mut_arg("task_timeout", help("Wall-clock ceiling of the attempt, in seconds")),
    mut_arg(
        "data",
        help("Data directory with tasks/ and skills/; when its task file is missing the fixture sites' generated tasks are used")
    )
)]
pub struct Args {
    /// The task uid, e.g. skillshift.gitlab.v1.3 (v1 for src*, v2 for tgt*); with --tasks, a task_id of that file.
    pub uid: String,
    /// Any WebArena config file; UID is then one of its task ids, run against the --site URLs.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// With --tasks: a site's base URL, e.g. gitlab=http://localhost:8023 (one per site the task names).
    #[arg(long = "site")]
    pub site: Vec<String>,
    /// webarena (WebArena's rules, the default), strict (its plain bugs fixed) or webarena-verified
    /// (WebArena-Verified's evaluators for its tasks, WebArena's for the rest).
    #[arg(long, default_value = "webarena")]
    pub evaluator: String,
    /// src, src-perc, src-exec, tgt, tgt-perc or tgt-exec.
    #[arg(long)]
    pub condition: String,
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub attempt: AttemptArgs,
    #[command(flatten)]
    pub seed: SeedArgs,
    /// The repetition index, which seeds the perturbations with the rest.
    #[arg(long, default_value_t = 0)]
    pub rep: u32,
    /// Skill library (docs/formats.md#skills); default DATA/skills/example.json. `none` runs without skills.
    #[arg(long)]
    pub skills: Option<String>,
    #[command(flatten)]
    pub data: DataArgs,
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
    /// Which steps of the trajectory keep a screenshot: none, failures (only if the attempt fails) or all.
    #[arg(long, default_value = "all", value_parser = screenshot_policy)]
    pub screenshots: ScreenshotPolicy,
    /// Also save a PNG of every step under this directory, one folder per attempt.
    #[arg(long, value_name = "DIR")]
    pub screenshot_dir: Option<PathBuf>,
    /// Write the trajectory (docs/formats.md#trajectories) to this file, its screenshots under screenshots/ beside it.
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    #[command(flatten)]
    pub telemetry: skillshift_telemetry::TelemetryArgs,
}

/// `--screenshots` takes a policy; a directory (its meaning before the trajectory) is named as such.
fn screenshot_policy(text: &str) -> Result<ScreenshotPolicy, String> {
    ScreenshotPolicy::parse(text).map_err(|e| format!("{e} (PNG files of every step go under --screenshot-dir DIR)"))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let telemetry = args.telemetry.config("skillshift-run")?;
    let condition: Condition = args.condition.parse()?;
    let mode: Mode = args.evaluator.parse().map_err(anyhow::Error::msg)?;
    skillshift_worker::attempt::NetworkTrace::from_env().map_err(anyhow::Error::msg)?;
    let webarena = match &args.tasks {
        Some(file) => {
            let id: i64 =
                args.uid.parse().with_context(|| format!("with --tasks, UID '{}' must be a task_id", args.uid))?;
            let sites: Vec<(SiteKey, String)> = args
                .site
                .iter()
                .map(|s| skillshift_experiment::score::parse_site(s))
                .collect::<Result<_, _>>()
                .map_err(anyhow::Error::msg)?;
            Some(WebArenaTask::load(file, id, &sites, condition.version())?)
        }
        None if !args.site.is_empty() => anyhow::bail!("--site needs --tasks FILE"),
        None => None,
    };
    let uid: Uid = match &webarena {
        Some(w) => w.uid,
        None => args.uid.parse()?,
    };
    let reset_policy: ResetPolicy = args.reset_policy.parse().map_err(anyhow::Error::msg)?;
    let settings = RunSettings {
        uid,
        condition,
        agent: args.agent.agent.clone(),
        model: args.agent.model.clone(),
        provider: args.agent.provider.clone(),
        temperature: args.agent.temperature,
        max_steps: args.attempt.max_steps(),
        task_timeout_s: args.attempt.task_timeout,
        seed: args.seed.seed,
        rep: args.rep,
        skills: Skills::from_flag(args.skills.as_deref()),
        data: args.data.data.clone(),
        profile: args.profile.clone(),
        sites: args.sites.clone(),
        reset_policy,
        screenshots: args.screenshot_dir.clone(),
        webarena,
        mode,
        screenshot_policy: args.screenshots,
    };
    let spec = attempt::spec(&settings)?;
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let traces = skillshift_telemetry::init(&telemetry)?;
        let observations = args.observations;
        let sink = Box::new(move |e: &Event| {
            if let Some(line) = attempt::show(e, observations) {
                // A closed pipe only stops the printing, not the attempt.
                let _ = super::print_line(&line);
            }
        });
        let finished = attempt::run(&settings, &spec, sink).await?;
        if let Err(e) = traces.shutdown(Duration::from_secs(5)).await {
            eprintln!("skillshift: warning: {e}");
        }
        for line in attempt::summary(&finished.trajectory.trajectory) {
            super::print_line(&line)?;
        }
        let mut record = finished.record;
        if let Some(path) = &args.trajectory {
            attempt::write_trajectory(&finished.trajectory, path)?;
            record.trajectory = Some(path.display().to_string());
        }
        super::print_line(&serde_json::to_string(&record)?)?;
        Ok(ExitCode::SUCCESS)
    })
}
