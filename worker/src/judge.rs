//! WebArena's LLM judge for `fuzzy_match`, over the OpenAI-compatible endpoint
//! the reference agent uses (docs/webarena.md#the-llm-judge).
//!
//! The prompts, the model (`gpt-4-1106-preview` unless
//! `SKILLSHIFT_JUDGE_MODEL` names another), temperature 0 and 768 tokens are
//! WebArena's `llm_fuzzy_match` and `llm_ua_match`; the replies are read by
//! `common::evaluate::judge`. With no endpoint configured (neither
//! `OPENAI_API_KEY` nor `OPENAI_BASE_URL`), there is no judge and
//! `fuzzy_match` scores `invalid`, as before.

use skillshift_common::evaluate::judge::{read_fuzzy_reply, read_ua_reply, BoxFuture, Judge, JudgeError};
use skillshift_common::task::Task;

use crate::agents::llm::{ChatMessage, ChatModel, LlmConfig, LlmError, OpenAiClient};

/// The model WebArena's judge asks.
pub const JUDGE_MODEL: &str = "gpt-4-1106-preview";
/// WebArena's `max_tokens` for a judgement.
pub const JUDGE_MAX_TOKENS: u32 = 768;

/// The judge over one chat model.
pub struct LlmJudge {
    model: Box<dyn ChatModel>,
}

impl LlmJudge {
    pub fn new(model: Box<dyn ChatModel>) -> Self {
        LlmJudge { model }
    }

    /// The judge over the process's endpoint, or `None` when no endpoint is configured.
    pub fn from_env() -> Option<Result<LlmJudge, LlmError>> {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        if !set("OPENAI_API_KEY") && !set("OPENAI_BASE_URL") {
            return None;
        }
        let model = std::env::var("SKILLSHIFT_JUDGE_MODEL").ok().filter(|m| !m.trim().is_empty());
        Some(judge_config(model.unwrap_or_else(|| JUDGE_MODEL.to_string())).and_then(|cfg| {
            let client = OpenAiClient::new(cfg)?;
            Ok(LlmJudge::new(Box::new(client)))
        }))
    }

    /// The requested model.
    pub fn model(&self) -> &str {
        self.model.model()
    }

    async fn ask(&self, messages: Vec<ChatMessage>) -> Result<String, JudgeError> {
        let done = self.model.complete(&messages).await.map_err(|e| JudgeError(format!("the judge's call: {e}")))?;
        Ok(done.content.to_lowercase())
    }
}

/// WebArena's judge settings over the endpoint of `OPENAI_BASE_URL`/`OPENAI_API_KEY`.
fn judge_config(model: String) -> Result<LlmConfig, LlmError> {
    let mut cfg = LlmConfig::from_env(Some(model))?;
    cfg.temperature = 0.0;
    cfg.max_tokens = Some(JUDGE_MAX_TOKENS);
    Ok(cfg)
}

/// Whether scoring `task` may ask a judge (a `fuzzy_match` of any kind).
pub fn needs_judge(task: &Task) -> bool {
    task.eval.reference_answers.as_ref().is_some_and(|r| r.fuzzy_match.is_some())
}

/// The messages of WebArena's `llm_fuzzy_match(pred, reference, question)`.
pub fn fuzzy_messages(question: &str, reference: &str, pred: &str) -> Vec<ChatMessage> {
    let mut m = String::from(
        "Help a teacher to grade the answer of a student given a question. Keep in mind that the student may use \
         different phrasing or wording to answer the question. The goal is to evaluate whether the answer is \
         semantically equivalent to the reference answer.\n",
    );
    m.push_str(&format!("question: {question}\n"));
    m.push_str(&format!("reference answer: {reference}\n"));
    m.push_str("all the string 'N/A' that you see is a special sequence that means 'not achievable'\n");
    m.push_str(&format!("student answer: {pred}\n"));
    m.push_str("Conclude the judgement by correct/incorrect/partially correct.");
    vec![ChatMessage::system("You are a helpful assistant"), ChatMessage::user(m)]
}

/// The messages of WebArena's `llm_ua_match(pred, reference, question)`.
pub fn ua_messages(question: &str, reason: &str, pred: &str) -> Vec<ChatMessage> {
    let mut m = String::new();
    m.push_str(&format!("task: {question}\n"));
    m.push_str(&format!("actual unachievable reason: {reason}\n"));
    m.push_str(&format!("reported unachievable reason: {pred}\n"));
    m.push_str(
        "The task described above is inherently unachievable due to the reason specified under 'actual \
         unachievable reason'. An individual previously attempted this task and was unable to complete it. They \
         provided a reason for their failure, which is listed under 'reported unachievable reason'. Your role is \
         to review both the actual and reported reasons. Determine if the reported reason aligns with the actual \
         reason, even if implicitly. If the stated reason is in line with the actual reason, respond with 'same'. \
         Otherwise, respond with 'different'.",
    );
    vec![ChatMessage::system("You are a helpful assistant"), ChatMessage::user(m)]
}

impl Judge for LlmJudge {
    fn fuzzy_match<'a>(
        &'a self,
        question: &'a str,
        reference: &'a str,
        answer: &'a str,
    ) -> BoxFuture<'a, Result<bool, JudgeError>> {
        Box::pin(async move { read_fuzzy_reply(&self.ask(fuzzy_messages(question, reference, answer)).await?) })
    }

    fn ua_match<'a>(
        &'a self,
        question: &'a str,
        reason: &'a str,
        answer: &'a str,
    ) -> BoxFuture<'a, Result<bool, JudgeError>> {
        Box::pin(async move { read_ua_reply(&self.ask(ua_messages(question, reason, answer)).await?) })
    }
}

/// The judge for scoring `task`: `None` when the task needs none or no endpoint is configured;
/// a configuration error is one line on the log and no judge (its `fuzzy_match` then scores
/// `invalid`, saying no judge is configured).
pub fn for_task(task: &Task) -> Option<LlmJudge> {
    if !needs_judge(task) {
        return None;
    }
    match LlmJudge::from_env()? {
        Ok(j) => Some(j),
        Err(e) => {
            tracing::warn!(error = %e, "no LLM judge for fuzzy_match");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompts_end_as_webarenas_do() {
        let m = fuzzy_messages("q?", "ref", "pred");
        assert_eq!(m.len(), 2);
        let text = &m[1].content;
        assert!(text.starts_with("Help a teacher"));
        assert!(text.ends_with("Conclude the judgement by correct/incorrect/partially correct."));
        assert!(text.contains("question: q?\nreference answer: ref\n"));
        let u = ua_messages("t", "r", "p");
        let text = &u[1].content;
        assert!(text.starts_with("task: t\nactual unachievable reason: r\nreported unachievable reason: p\n"));
    }
}
