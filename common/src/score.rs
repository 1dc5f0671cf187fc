//! The scorer's words as they cross crates and files: a verdict ([`ScoreVerdict`],
//! `pass`, `fail` or `invalid`) and the kind of evaluator that gave it
//! ([`EvaluatorKind`], WebArena's `string_match`, `url_match`, `program_html`,
//! WebArena-Verified's evaluator names, or `scoring` when the scorer itself
//! decided). A trajectory's evidence carries them (docs/formats.md#trajectories);
//! the failure categories and the viewer read them. Their text is the wire
//! form and never changes; code matches the variants.
//!
//! A leaf: it names no other module of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A verdict as a trajectory records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoreVerdict {
    Pass,
    Fail,
    /// The evaluators could not decide: the attempt is never a pass.
    Invalid,
}

impl ScoreVerdict {
    /// `pass`, `fail` or `invalid`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScoreVerdict::Pass => "pass",
            ScoreVerdict::Fail => "fail",
            ScoreVerdict::Invalid => "invalid",
        }
    }
}

impl fmt::Display for ScoreVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ScoreVerdict {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The evaluator behind one piece of evidence; its text is the evidence's `type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum EvaluatorKind {
    /// WebArena's `string_match`.
    StringMatch,
    /// WebArena's `url_match`.
    UrlMatch,
    /// WebArena's `program_html`.
    ProgramHtml,
    /// WebArena-Verified's `AgentResponseEvaluator`.
    AgentResponse,
    /// WebArena-Verified's `NetworkEventEvaluator`.
    NetworkEvent,
    /// The scorer itself: it stopped, or had nothing to evaluate.
    Scoring,
    /// Any other name (an evaluator this project does not know), kept as written.
    Other(String),
}

impl EvaluatorKind {
    const KNOWN: [EvaluatorKind; 6] = [
        EvaluatorKind::StringMatch,
        EvaluatorKind::UrlMatch,
        EvaluatorKind::ProgramHtml,
        EvaluatorKind::AgentResponse,
        EvaluatorKind::NetworkEvent,
        EvaluatorKind::Scoring,
    ];

    /// The kind's text, the evidence's `type`.
    pub fn as_str(&self) -> &str {
        match self {
            EvaluatorKind::StringMatch => "string_match",
            EvaluatorKind::UrlMatch => "url_match",
            EvaluatorKind::ProgramHtml => "program_html",
            EvaluatorKind::AgentResponse => "AgentResponseEvaluator",
            EvaluatorKind::NetworkEvent => "NetworkEventEvaluator",
            EvaluatorKind::Scoring => "scoring",
            EvaluatorKind::Other(name) => name,
        }
    }

    /// Whether the kind has no name (an evaluator written with an empty `type`).
    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }

    /// The kind a text names; a text of no known kind is [`EvaluatorKind::Other`].
    pub fn parse(text: &str) -> EvaluatorKind {
        EvaluatorKind::KNOWN
            .into_iter()
            .find(|k| k.as_str() == text)
            .unwrap_or_else(|| EvaluatorKind::Other(text.to_string()))
    }
}

impl From<String> for EvaluatorKind {
    fn from(text: String) -> Self {
        EvaluatorKind::parse(&text)
    }
}

impl From<&str> for EvaluatorKind {
    fn from(text: &str) -> Self {
        EvaluatorKind::parse(text)
    }
}

impl From<EvaluatorKind> for String {
    fn from(kind: EvaluatorKind) -> Self {
        kind.as_str().to_string()
    }
}

impl fmt::Display for EvaluatorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texts_are_the_wire_forms_and_read_back() {
        for v in [ScoreVerdict::Pass, ScoreVerdict::Fail, ScoreVerdict::Invalid] {
            let text = serde_json::to_value(v).expect("json");
            assert_eq!(text, v.as_str());
            assert_eq!(serde_json::from_value::<ScoreVerdict>(text).expect("back"), v);
        }
        assert!(serde_json::from_str::<ScoreVerdict>("\"maybe\"").is_err());
        for k in EvaluatorKind::KNOWN.into_iter().chain([EvaluatorKind::Other("fuzzy_judge".into())]) {
            let text = serde_json::to_value(&k).expect("json");
            assert_eq!(text, k.as_str());
            assert_eq!(serde_json::from_value::<EvaluatorKind>(text).expect("back"), k);
        }
        assert_eq!(EvaluatorKind::parse("url_match"), EvaluatorKind::UrlMatch);
        assert_eq!(EvaluatorKind::parse("URL_MATCH"), EvaluatorKind::Other("URL_MATCH".into()));
    }
}
