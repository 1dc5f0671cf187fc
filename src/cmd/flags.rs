//! The flags several commands share, each declared once (ripgrep's way): clap argument groups that
//! `local`, `sweep start`, `run`, `calibrate`, `tasks` and `worker` flatten, and the one place each group
//! turns into the libraries' settings.
//!
//! - [`AgentArgs`]: which agent runs and how it calls its model (`--agent`, `--model`, `--provider`,
//!   `--temperature`).
//! - [`AttemptArgs`]: the budget of one attempt (`--max-steps`, `--task-timeout`).
//! - [`RetryArgs`]: how often a sweep runs an errored unit again (`--max-retries`).
//! - [`SeedArgs`]: the sweep seed the perturbations derive theirs from (`--seed`; `local`, `sweep start`, `run`,
//!   `calibrate`, `tasks audit`).
//! - [`DataArgs`]: the data directory (`--data`; `local`, `sweep start`, `run`, `calibrate`, `tasks`, `worker`).
//! - [`SweepArgs`]: what a sweep plans (sites, conditions, treatments, counts, profile, evaluator), with the
//!   groups above; `local` and `sweep start` both submit one, so both read it through [`SweepArgs::settings`].
//!
//! A command that words a shared flag for its own context (a singular "the attempt", another default) says so
//! with clap's `mut_arg` and [`help`] beside its own flags; the flag's name, type and parser stay here.

use std::path::PathBuf;

use skillshift_common::evaluate::Mode;
use skillshift_common::{Condition, Site};
use skillshift_experiment::settings::{Skills, SweepSettings};

/// The step budget when a command gives none: `--max-steps`'s default.
pub const DEFAULT_MAX_STEPS: u32 = 10;

/// `--seed`'s default.
pub const DEFAULT_SEED: u64 = 0;

/// `--data`'s default: the shipped data directory, relative to where the command runs.
pub const DEFAULT_DATA: &str = "data";

/// `mut_arg`'s edit that rewords a shared flag's help line for one command.
pub fn help(text: &'static str) -> impl FnOnce(clap::Arg) -> clap::Arg {
    move |a| a.help(text)
}

/// The agent and its model.
#[derive(clap::Args, Debug, Clone)]
pub struct AgentArgs {
    /// skills, reference (needs OPENAI_API_KEY or OPENAI_BASE_URL) or cmd:<command line>.
    #[arg(long, default_value = "skills")]
    pub agent: String,
    /// The model an LLM agent calls (the reference agent's default: gpt-4o); a frozen contract field.
    #[arg(long)]
    pub model: Option<String>,
    /// The LLM provider the contract names (e.g. openai); refused when the endpoint of OPENAI_BASE_URL is another.
    #[arg(long)]
    pub provider: Option<String>,
    /// Sampling temperature of an LLM agent (default 0); a frozen contract field.
    #[arg(long)]
    pub temperature: Option<f64>,
}

/// The budget of one attempt.
#[derive(clap::Args, Debug, Clone)]
pub struct AttemptArgs {
    /// The step budget of each attempt; a frozen contract field.
    // An `Option` only for `calibrate`, which takes the anchor's budget when none is given and clears the default.
    #[arg(long, default_value = "10")]
    pub max_steps: Option<u32>,
    /// Wall-clock ceiling of one attempt, in seconds.
    #[arg(long, default_value_t = 600)]
    pub task_timeout: u64,
}

impl AttemptArgs {
    /// `--max-steps`, or its default for a command that clears it.
    pub fn max_steps(&self) -> u32 {
        self.max_steps.unwrap_or(DEFAULT_MAX_STEPS)
    }
}

/// A sweep's retry policy (`sweep start`, `local`, `calibrate`).
#[derive(clap::Args, Debug, Clone)]
pub struct RetryArgs {
    /// How often a unit whose attempt errored (measured nothing) runs again.
    #[arg(long, default_value_t = 2)]
    pub max_retries: u32,
}

/// The sweep seed.
#[derive(clap::Args, Debug, Clone)]
pub struct SeedArgs {
    /// Sweep seed; perturbations derive theirs from (seed, family, condition, rep).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
}

/// The data directory.
#[derive(clap::Args, Debug, Clone)]
pub struct DataArgs {
    /// Data directory (tasks/, skills/, DIGESTS.json).
    #[arg(long, default_value = DEFAULT_DATA)]
    pub data: PathBuf,
}

/// What a sweep runs: the flags `local` and `sweep start` share.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// Comma-separated sites.
    #[arg(long, value_delimiter = ',', default_value = "gitlab,magento,wordpress")]
    pub sites: Vec<Site>,
    /// Comma-separated conditions.
    #[arg(long, value_delimiter = ',', default_value = "src,src-perc,src-exec,tgt,tgt-perc,tgt-exec")]
    pub conditions: Vec<Condition>,
    /// JSON shaped like data/calibration_set.json: limits each listed site to its families.
    #[arg(long)]
    pub families: Option<PathBuf>,
    /// A treatment, NAME[=SKILLS_FILE], repeatable: every unit runs under each, interleaved. CONTROL alone has no
    /// library; another NAME alone takes --skills. Default: one treatment, --skills, named by its `method`.
    #[arg(long, value_name = "NAME[=SKILLS_FILE]")]
    pub treatment: Vec<String>,
    /// Skill library (docs/formats.md#skills); `none` for a treatment without skills. Default data/skills/example.json.
    #[arg(long)]
    pub skills: Option<String>,
    /// Records of an earlier run (per_task.jsonl, contract.json beside it) under the same frozen contract: its
    /// treatments named by --treatment are not run again (docs/cli.md#baseline-reuse).
    #[arg(long, value_name = "FILE")]
    pub reuse_baseline: Option<PathBuf>,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Repetitions of every unit (pass@k and pass^k need at least 2).
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    #[command(flatten)]
    pub attempt: AttemptArgs,
    #[command(flatten)]
    pub retry: RetryArgs,
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Stop when the sweep's LLM cost reaches this many USD.
    #[arg(long)]
    pub cost_budget: Option<f64>,
    /// Perturbation profile (default data/perturbations/default.json when present).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataArgs,
    /// Scoring rules: webarena (WebArena's own), strict (its plain bugs fixed) or webarena-verified
    /// (WebArena-Verified's evaluators for its tasks, WebArena's for the rest); a frozen contract field.
    #[arg(long, default_value = "webarena", value_name = "webarena|strict|webarena-verified")]
    pub evaluator: Mode,
}

impl SweepArgs {
    /// The sweep the flags describe, checked as far as it can be without reading a file; `simulated` is the
    /// caller's (`sweep start --simulated`, `local --simulate MS`).
    pub fn settings(&self, simulated: bool) -> anyhow::Result<SweepSettings> {
        let settings = SweepSettings {
            sites: self.sites.clone(),
            conditions: self.conditions.clone(),
            families: self.families.clone(),
            treatments: self.treatment.clone(),
            skills: Skills::from_flag(self.skills.as_deref()),
            agent: self.agent.agent.clone(),
            model: self.agent.model.clone(),
            provider: self.agent.provider.clone(),
            temperature: self.agent.temperature,
            evaluator: self.evaluator,
            count: self.count,
            max_steps: self.attempt.max_steps(),
            task_timeout_s: self.attempt.task_timeout,
            max_retries: self.retry.max_retries,
            seed: self.seed.seed,
            cost_budget_usd: self.cost_budget,
            profile: self.profile.clone(),
            data: self.data.data.clone(),
            reuse_baseline: self.reuse_baseline.clone(),
            simulated,
        };
        settings.validate()?;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Attempt {
        #[command(flatten)]
        attempt: AttemptArgs,
    }

    #[test]
    fn the_step_budget_defaults_to_its_constant() {
        let parsed = Attempt::try_parse_from(["x"]).expect("no flags");
        assert_eq!(parsed.attempt.max_steps, Some(DEFAULT_MAX_STEPS));
        let parsed = Attempt::try_parse_from(["x", "--max-steps", "3"]).expect("--max-steps 3");
        assert_eq!(parsed.attempt.max_steps(), 3);
    }
}
