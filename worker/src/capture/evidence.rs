//! The scorer's evidence as a trajectory keeps it: per evaluator its kind,
//! verdict, what it expected and what it got, each text clipped to
//! [`MAX_EVIDENCE_CHARS`] (a page source can be megabytes).

use skillshift_common::evaluate::verified::{EvalStatus, VerifiedScored};
use skillshift_common::evaluate::Scored;
use skillshift_common::score::{EvaluatorKind, ScoreVerdict};
use skillshift_common::trajectory::{EvaluatorEvidence, ScoreEvidence};

/// The most characters of one evaluator's `expected` or `got` a trajectory keeps (a page source can be megabytes).
pub const MAX_EVIDENCE_CHARS: usize = 16 * 1024;

/// `s`, or its first [`MAX_EVIDENCE_CHARS`] characters and how many bytes were left out.
pub(super) fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_EVIDENCE_CHARS {
        return s.to_string();
    }
    let kept: String = s.chars().take(MAX_EVIDENCE_CHARS).collect();
    format!("{kept}… [{} more bytes]", s.len() - kept.len())
}

/// WebArena's evaluators' evidence.
pub(super) fn of_scored(scored: &Scored) -> ScoreEvidence {
    ScoreEvidence {
        verdict: scored.verdict.word(),
        evaluators: scored
            .evaluators
            .iter()
            .map(|e| EvaluatorEvidence {
                kind: e.kind.into(),
                verdict: e.verdict.word(),
                expected: clip(&e.expected),
                got: clip(&e.got),
            })
            .collect(),
    }
}

/// WebArena-Verified's evaluators' evidence: per evaluator, its name as `type`, its expected
/// block, and what it read (the normalized response, or the normalized events it compared)
/// followed by why it did not pass; clipped as [`of_scored`] clips.
pub(super) fn of_verified(scored: &VerifiedScored) -> ScoreEvidence {
    let mut evaluators: Vec<EvaluatorEvidence> = scored
        .evaluators
        .iter()
        .map(|e| {
            let got = match e.messages.as_slice() {
                [] => e.actual.to_string(),
                why => format!("{} ({})", e.actual, why.join("; ")),
            };
            EvaluatorEvidence {
                kind: EvaluatorKind::parse(e.evaluator),
                verdict: e.status.verdict().word(),
                expected: clip(&e.expected.to_string()),
                got: clip(&got),
            }
        })
        .collect();
    if let (EvalStatus::Error(why), true) = (&scored.status, evaluators.is_empty()) {
        // Nothing was evaluated (a site without a base URL): the reason is the evidence.
        evaluators.push(EvaluatorEvidence {
            kind: EvaluatorKind::Scoring,
            verdict: ScoreVerdict::Invalid,
            expected: String::new(),
            got: why.clone(),
        });
    }
    ScoreEvidence { verdict: scored.verdict().word(), evaluators }
}

/// The scorer stopped before deciding: its reason is the evidence.
pub(super) fn stopped(reason: &str) -> ScoreEvidence {
    ScoreEvidence {
        verdict: ScoreVerdict::Fail,
        evaluators: vec![EvaluatorEvidence {
            kind: EvaluatorKind::Scoring,
            verdict: ScoreVerdict::Fail,
            expected: String::new(),
            got: reason.to_string(),
        }],
    }
}
