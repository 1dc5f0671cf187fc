//! The agents the run loop can drive (see [`crate::agent::Agent`]).
pub mod cmd;
pub mod llm;
pub mod prompt;
pub mod reference;
pub mod scripted_llm;
pub mod skills;

use skillshift_common::skills::SkillLibrary;
use skillshift_common::task::Task;

use crate::agent::{Agent, AgentError};

/// Builds the agent named by `--agent`: `skills`, `reference` or `cmd:<command line>`.
pub fn build(
    agent: &str,
    model: Option<String>,
    task: &Task,
    library: Option<&SkillLibrary>,
) -> Result<Box<dyn Agent>, AgentError> {
    match agent {
        "skills" => Ok(Box::new(skills::SkillsAgent::new(task.clone(), library.cloned()))),
        "reference" => Ok(Box::new(reference::ReferenceAgent::from_env(model)?)),
        other => match other.strip_prefix("cmd:") {
            Some(cmd) if !cmd.trim().is_empty() => Ok(Box::new(cmd::CmdAgent::spawn(cmd)?)),
            _ => Err(AgentError::Process(format!(
                "unknown agent '{other}' (expected skills, reference or cmd:<command line>)"
            ))),
        },
    }
}
