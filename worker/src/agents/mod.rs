//! The agents the run loop can drive (see [`crate::agent::Agent`]).
pub mod cmd;
pub mod llm;
pub mod prompt;
pub mod reference;
pub mod scripted_llm;
pub mod skills;

use std::sync::Arc;

use skillshift_common::skills::SkillLibrary;
use skillshift_common::task::Task;

use crate::agent::{Agent, AgentError};
use crate::llm_permit::PermitGate;

/// What a contract fixes of an LLM agent's calls: the model, the temperature and the prompt template's digest
/// (`None`: the agent's default; for the prompt version, no check).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmChoice {
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub prompt_version: Option<String>,
}

/// The reference agent's LLM configuration under `choice`: the endpoint from the environment, the model and
/// temperature the contract names. Refuses a prompt version other than this build's own template.
pub fn reference_config(choice: &LlmChoice) -> Result<llm::LlmConfig, AgentError> {
    if let Some(want) = choice.prompt_version.as_deref() {
        let own = prompt::template_digest();
        if want != own {
            return Err(AgentError::Process(format!(
                "the contract's prompt version is {want}, but this worker builds prompt {own}: it runs another \
                 prompt template"
            )));
        }
    }
    let mut config = llm::LlmConfig::from_env(choice.model.clone()).map_err(|e| AgentError::Llm(e.to_string()))?;
    if let Some(t) = choice.temperature {
        config.temperature = t;
    }
    Ok(config)
}

/// Builds the agent named by `--agent`: `skills`, `reference` or `cmd:<command line>`; an LLM agent
/// asks `permits` (when given) for a permit before each call.
pub fn build(
    agent: &str,
    choice: &LlmChoice,
    task: &Task,
    library: Option<&SkillLibrary>,
    permits: Option<Arc<PermitGate>>,
) -> Result<Box<dyn Agent>, AgentError> {
    match agent {
        "skills" => Ok(Box::new(skills::SkillsAgent::new(task.clone(), library.cloned()))),
        "reference" => {
            let client =
                llm::OpenAiClient::new(reference_config(choice)?).map_err(|e| AgentError::Llm(e.to_string()))?;
            Ok(Box::new(reference::ReferenceAgent::with_chat_model(Box::new(client.with_permits(permits)))))
        }
        other => match other.strip_prefix("cmd:") {
            Some(cmd) if !cmd.trim().is_empty() => Ok(Box::new(cmd::CmdAgent::spawn(cmd)?)),
            _ => Err(AgentError::Process(format!(
                "unknown agent '{other}' (expected skills, reference or cmd:<command line>)"
            ))),
        },
    }
}
