//! What a worker is asked to run: one attempt of one unit, with everything the
//! run loop needs to produce its record. The coordinator builds these from a
//! sweep's plan; `skillshift run` builds one by hand; tests start from
//! [`AttemptSpec::example`].

use serde::{Deserialize, Serialize};

use crate::ids::{Condition, Site, Uid, Version};
use crate::skills::SkillLibrary;

/// One attempt of a run unit (sweep, treatment, family, condition, rep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptSpec {
    pub sweep: String,
    pub treatment: String,
    /// The uid of the family under this condition's version.
    pub uid: Uid,
    pub condition: Condition,
    pub rep: u32,
    pub attempt: u32,
    /// The sweep seed; perturbations derive theirs from (seed, family, condition, rep).
    pub seed: u64,
    pub max_steps: u32,
    pub task_timeout_ms: u64,
    /// `skills`, `reference` or `cmd:<command line>`.
    pub agent: String,
    pub model: Option<String>,
    /// The treatment's skill library; `None` for `CONTROL`-like treatments.
    pub skills: Option<SkillLibrary>,
    /// The perturbation profile (JSON of `data/perturbations/*.json`); `None` means the default.
    pub perturbation_profile: Option<serde_json::Value>,
    pub config_digest: Option<String>,
    /// W3C `traceparent` of the coordinator's attempt span, when tracing.
    pub traceparent: Option<String>,
    /// The sampling temperature an LLM agent sends (the contract's `temperature`); `None`: the agent's default.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The prompt template's digest the contract names; an LLM agent whose own template differs refuses to run.
    #[serde(default)]
    pub prompt_version: Option<String>,
    /// Which rules score the attempt (`--evaluator`): WebArena's own, or strict; a frozen contract field.
    #[serde(default)]
    pub evaluator: crate::evaluate::Mode,
    /// The attempt's network trace keeps response bodies (of what is not a static asset), for an
    /// evaluator that reads them; `false` by default, as bodies are the bulk of a trace.
    #[serde(default)]
    pub network_bodies: bool,
}

impl AttemptSpec {
    /// A plain attempt for tests and benches: sweep `s`, treatment `T`, skillshift.gitlab.v1.0 under `src`,
    /// rep, attempt and seed 0, 10 steps in 60 s, the `skills` agent without a library, and no model,
    /// profile, digest, trace context or temperature; WebArena's scoring rules, no response bodies. A test
    /// names what it is about: `AttemptSpec { max_steps: 3, ..AttemptSpec::example() }`.
    pub fn example() -> AttemptSpec {
        AttemptSpec {
            sweep: "s".into(),
            treatment: "T".into(),
            uid: Uid { site: Site::Gitlab, version: Version::V1, task_id: 0 },
            condition: Condition::Src,
            rep: 0,
            attempt: 0,
            seed: 0,
            max_steps: 10,
            task_timeout_ms: 60_000,
            agent: "skills".into(),
            model: None,
            skills: None,
            perturbation_profile: None,
            config_digest: None,
            traceparent: None,
            temperature: None,
            prompt_version: None,
            evaluator: crate::evaluate::Mode::WebArena,
            network_bodies: false,
        }
    }
}
