//! The `reference` agent: WebArena's ReAct-style agent over any OpenAI-compatible chat API.
//!
//! Each step sends one chat completion (temperature 0) holding the objective, the URL, the accessibility tree,
//! the previous action and its error, and the skills when the attempt has any ([`super::prompt`]). The reply's
//! action becomes the step's [`Move`]. A reply that holds no usable action is asked for once more with the
//! parse error shown; a second failure is [`AgentError::Malformed`]. That retry is the only case in which a
//! step makes a second LLM call.
//!
//! Tokens and cost are summed into [`Usage`]; each call's [`LlmCallInfo`] is kept (see
//! [`ReferenceAgent::take_llm_calls`]) and handed to an optional hook as it completes, for telemetry.

use std::sync::Arc;

use futures::future::BoxFuture;
use skillshift_common::trajectory::LlmCall;

use crate::agent::{Agent, AgentError, Move, Observation, Reply, TaskBrief, Usage};

use super::llm::{ChatMessage, ChatModel, LlmCallInfo, LlmConfig, LlmError, OpenAiClient};
use super::prompt::{self, ReplyError, DEFAULT_MAX_OBS_CHARS};

/// What the frozen comparison contract (`docs/formats.md`) records of a reference-agent configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractFields {
    pub model: String,
    /// `gen_ai.provider.name` of the endpoint.
    pub provider: String,
    pub prompt_version: &'static str,
    pub temperature: f64,
}

/// The contract fields of `config`, e.g. `contract_fields(&LlmConfig::from_env(model)?)` when a sweep starts.
pub fn contract_fields(config: &LlmConfig) -> ContractFields {
    ContractFields {
        model: config.model.clone(),
        provider: config.provider().to_string(),
        prompt_version: prompt::PROMPT_VERSION,
        temperature: config.temperature,
    }
}

/// Called with each completed LLM call, inside the step's tracing span.
pub type LlmCallHook = Arc<dyn Fn(&LlmCallInfo) + Send + Sync>;

pub struct ReferenceAgent {
    model: Box<dyn ChatModel>,
    brief: Option<TaskBrief>,
    previous_action: Option<String>,
    /// The error of the last skill call, shown with the next observation when the page reports none.
    skill_error: Option<String>,
    max_obs_chars: usize,
    usage: Usage,
    /// False once a call had no known price: the attempt's cost is then unknown.
    cost_known: bool,
    calls: Vec<LlmCallInfo>,
    hook: Option<LlmCallHook>,
    /// The calls of the current step, for the trajectory.
    step_llm: Option<LlmCall>,
}

impl ReferenceAgent {
    /// The agent configured from `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `--model` (else `OPENAI_MODEL`, else
    /// [`super::llm::DEFAULT_MODEL`]); see [`LlmConfig::from_lookup`] for the rest.
    pub fn from_env(model: Option<String>) -> Result<ReferenceAgent, AgentError> {
        let config = LlmConfig::from_env(model).map_err(llm_error)?;
        ReferenceAgent::new(config)
    }

    pub fn new(config: LlmConfig) -> Result<ReferenceAgent, AgentError> {
        let client = OpenAiClient::new(config).map_err(llm_error)?;
        Ok(ReferenceAgent::with_chat_model(Box::new(client)))
    }

    /// The agent over any [`ChatModel`].
    pub fn with_chat_model(model: Box<dyn ChatModel>) -> ReferenceAgent {
        ReferenceAgent {
            model,
            brief: None,
            previous_action: None,
            skill_error: None,
            max_obs_chars: DEFAULT_MAX_OBS_CHARS,
            usage: Usage::default(),
            cost_known: true,
            calls: Vec::new(),
            hook: None,
            step_llm: None,
        }
    }

    /// Calls `hook` with each completed LLM call.
    pub fn on_llm_call(mut self, hook: LlmCallHook) -> ReferenceAgent {
        self.hook = Some(hook);
        self
    }

    /// Cuts each observation's tree to `chars` characters (default [`DEFAULT_MAX_OBS_CHARS`]).
    pub fn with_max_obs_chars(mut self, chars: usize) -> ReferenceAgent {
        self.max_obs_chars = chars;
        self
    }

    pub fn model_name(&self) -> &str {
        self.model.model()
    }

    /// The calls made since the last take, oldest first.
    pub fn take_llm_calls(&mut self) -> Vec<LlmCallInfo> {
        std::mem::take(&mut self.calls)
    }

    pub fn llm_calls(&self) -> &[LlmCallInfo] {
        &self.calls
    }

    async fn call(&mut self, messages: &[ChatMessage]) -> Result<String, AgentError> {
        let completion = self.model.complete(messages).await.map_err(llm_error)?;
        let info = completion.info;
        self.usage.llm_calls += 1;
        // The endpoint's counts are network data: sums saturate.
        self.usage.tokens_in = self.usage.tokens_in.saturating_add(info.tokens_in);
        self.usage.tokens_out = self.usage.tokens_out.saturating_add(info.tokens_out);
        match info.cost_usd {
            Some(c) if self.cost_known => self.usage.cost_usd = Some(self.usage.cost_usd.unwrap_or(0.0) + c),
            _ => {
                self.cost_known = false;
                self.usage.cost_usd = None;
            }
        }
        tracing::debug!(step_reply = %completion.content, tokens_in = info.tokens_in, tokens_out = info.tokens_out,
            "llm reply");
        if let Some(hook) = &self.hook {
            hook(&info);
        }
        let merged = self.step_llm.get_or_insert_with(LlmCall::default);
        merged.model = info.response_model.clone().unwrap_or_else(|| info.request_model.clone());
        merged.reply = completion.content.clone();
        merged.tokens_in = merged.tokens_in.saturating_add(info.tokens_in);
        merged.tokens_out = merged.tokens_out.saturating_add(info.tokens_out);
        merged.latency_ms = merged.latency_ms.saturating_add(info.latency.as_millis() as u64);
        self.calls.push(info);
        Ok(completion.content)
    }

    async fn step(&mut self, obs: Observation) -> Result<Reply, AgentError> {
        let brief = self
            .brief
            .clone()
            .ok_or_else(|| AgentError::Process("the reference agent got an observation before its task".into()))?;
        let error = obs.last_action_error.clone().or_else(|| self.skill_error.take());
        let mut messages =
            prompt::messages(&brief, &obs, self.previous_action.as_deref(), error.as_deref(), self.max_obs_chars);
        let first = self.call(&messages).await?;
        let mv = match prompt::parse_reply(&first, &brief.skills) {
            Ok(mv) => mv,
            Err(e) => {
                tracing::info!(uid = %brief.uid, step = obs.step, error = %e, "unusable llm reply, asking once more");
                messages.extend(prompt::correction(&first, &e));
                let second = self.call(&messages).await?;
                prompt::parse_reply(&second, &brief.skills).map_err(|e2| malformed(obs.step, &e, &e2))?
            }
        };
        self.previous_action = Some(describe_move(&mv));
        Ok(Reply { mv, skill_reports: Vec::new() })
    }
}

impl Agent for ReferenceAgent {
    fn start(&mut self, brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        self.brief = Some(brief);
        self.previous_action = None;
        self.skill_error = None;
        Box::pin(async { Ok(()) })
    }

    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        Box::pin(self.step(obs))
    }

    fn skill_result(&mut self, name: &str, ok: bool, error: Option<&str>) {
        self.skill_error = (!ok).then(|| format!("skill {name} failed: {}", error.unwrap_or("no detail")));
    }

    fn usage(&self) -> Usage {
        self.usage.clone()
    }

    fn take_llm(&mut self) -> Option<LlmCall> {
        self.step_llm.take()
    }
}

/// The move as the model would write it, for "PREVIOUS ACTION".
fn describe_move(mv: &Move) -> String {
    match mv {
        Move::Action(a) => a.to_string(),
        Move::Skill { name, args } => {
            let json = serde_json::to_string(args).unwrap_or_else(|_| "{}".into());
            format!("skill [{name}] [{json}]")
        }
    }
}

fn malformed(step: u32, first: &ReplyError, second: &ReplyError) -> AgentError {
    AgentError::Malformed(format!(
        "step {step}: the llm reply held no usable action twice (first: {first}; after the retry: {second})"
    ))
}

fn llm_error(e: LlmError) -> AgentError {
    AgentError::Llm(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_fields_name_model_provider_prompt_and_temperature() {
        let f = contract_fields(&LlmConfig::new("https://api.openai.com/v1/", "gpt-4o"));
        assert_eq!(
            f,
            ContractFields {
                model: "gpt-4o".into(),
                provider: "openai".into(),
                prompt_version: prompt::PROMPT_VERSION,
                temperature: 0.0
            }
        );
    }
}
