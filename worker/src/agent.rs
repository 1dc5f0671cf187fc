//! The agent seam: what the run loop shows an agent and what it gets back.
//!
//! Implementations: `skills` (deterministic, calls the library's skills),
//! `reference` (ReAct over an OpenAI-compatible chat API) and `cmd:<command>`
//! (an external process speaking the agent protocol of `docs/formats.md` over stdio).

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use crate::action::Action;

/// What the agent is told once, at the start of an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskBrief {
    pub uid: String,
    pub intent: String,
    pub start_url: String,
    pub max_steps: u32,
    pub skills: Vec<SkillSummary>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SkillSummary {
    pub name: String,
    pub params: Vec<String>,
    pub description: String,
}

/// What the agent sees at each step.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// 0-based step index.
    pub step: u32,
    pub url: String,
    pub title: String,
    /// The accessibility tree in WebArena's text form.
    pub axtree: String,
    pub last_action_error: Option<String>,
}

/// The agent's move for one step.
#[derive(Debug, Clone, PartialEq)]
pub enum Move {
    Action(Action),
    Skill { name: String, args: BTreeMap<String, String> },
}

/// A skill the agent ran by itself and reports (`skill_report`, `docs/formats.md`, agent protocol).
#[derive(Debug, Clone, PartialEq)]
pub struct SkillReport {
    pub name: String,
    pub ok: bool,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub mv: Move,
    pub skill_reports: Vec<SkillReport>,
}

/// LLM usage accumulated over an attempt. The default is none at all: no call, so a cost of $0, a
/// measurement a spend gate decides on (`None` is an unknown cost: a call without a price, or an
/// external agent that may call a model of its own).
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub llm_calls: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: Option<f64>,
}

impl Default for Usage {
    fn default() -> Usage {
        Usage { llm_calls: 0, tokens_in: 0, tokens_out: 0, cost_usd: Some(0.0) }
    }
}

/// Why an agent could not produce a move. Any of these ends the attempt as
/// `error` with reason `agent` — an agent fault is not a task failure.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("agent reply malformed: {0}")]
    Malformed(String),
    #[error("agent process: {0}")]
    Process(String),
    #[error("llm: {0}")]
    Llm(String),
}

pub trait Agent: Send {
    /// Called once before the first observation.
    fn start(&mut self, brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>>;
    /// The move for this observation. Called at most `max_steps` times.
    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>>;
    /// The skill outcome of the last `Move::Skill`, so the agent can react to it
    /// (the skills agent falls back to primitive actions on failure).
    fn skill_result(&mut self, _name: &str, _ok: bool, _error: Option<&str>) {}
    /// The value a skill produced (its `answer` literal or last `read`), before
    /// [`Agent::skill_result`] for the same call.
    fn skill_answer(&mut self, _name: &str, _answer: &str) {}
    fn usage(&self) -> Usage;
    /// The LLM call behind the last move, for the trajectory (several calls of one step merged:
    /// tokens and latency summed, the last reply); `None` for an agent without a model.
    fn take_llm(&mut self) -> Option<skillshift_common::trajectory::LlmCall> {
        None
    }
}
