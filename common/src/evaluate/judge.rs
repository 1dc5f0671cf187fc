//! The LLM judge behind `fuzzy_match`, as an interface: WebArena asks it two
//! questions, whether an answer is semantically the reference answer
//! (`llm_fuzzy_match`) and whether an "unachievable" answer gives the actual
//! reason (`llm_ua_match`). A judge over the OpenAI-compatible endpoint
//! implements [`Judge`]; without one, `fuzzy_match` (other than `"N/A"`) is
//! invalid. [`read_fuzzy_reply`] and [`read_ua_reply`] read a reply the way
//! WebArena reads it.

use std::future::Future;
use std::pin::Pin;

/// A boxed future, so that a judge can be held as `&dyn Judge`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The judge could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JudgeError(pub String);

/// An LLM judge. `answer` is the agent's answer as WebArena hands it over:
/// cleaned once (trimmed, one quote pair removed, lowercased).
pub trait Judge: Send + Sync {
    /// Is `answer` to `question` semantically the `reference` answer?
    fn fuzzy_match<'a>(
        &'a self,
        question: &'a str,
        reference: &'a str,
        answer: &'a str,
    ) -> BoxFuture<'a, Result<bool, JudgeError>>;

    /// The task is unachievable for `reason`; does `answer` report the same reason?
    fn ua_match<'a>(
        &'a self,
        question: &'a str,
        reason: &'a str,
        answer: &'a str,
    ) -> BoxFuture<'a, Result<bool, JudgeError>>;
}

/// WebArena's reading of a `fuzzy_match` reply: "partially correct" or
/// "incorrect" anywhere fails, else "correct" passes, else it is no verdict.
pub fn read_fuzzy_reply(reply: &str) -> Result<bool, JudgeError> {
    let r = reply.to_lowercase();
    if r.contains("partially correct") || r.contains("incorrect") {
        Ok(false)
    } else if r.contains("correct") {
        Ok(true)
    } else {
        Err(JudgeError(format!("the judge's reply says neither correct nor incorrect: {reply:?}")))
    }
}

/// WebArena's reading of an unachievable-reason reply: "different" fails, else "same" passes.
pub fn read_ua_reply(reply: &str) -> Result<bool, JudgeError> {
    let r = reply.to_lowercase();
    if r.contains("different") {
        Ok(false)
    } else if r.contains("same") {
        Ok(true)
    } else {
        Err(JudgeError(format!("the judge's reply says neither same nor different: {reply:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_read_as_webarena_reads_them() {
        assert_eq!(read_fuzzy_reply("Correct."), Ok(true));
        assert_eq!(read_fuzzy_reply("partially correct"), Ok(false));
        assert_eq!(read_fuzzy_reply("The answer is incorrect"), Ok(false));
        assert!(read_fuzzy_reply("maybe").is_err());
        assert_eq!(read_ua_reply("SAME"), Ok(true));
        assert_eq!(read_ua_reply("same? no, different"), Ok(false));
    }
}
