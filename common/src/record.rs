//! The per-task record of one attempt (docs/formats.md#records): one JSON object per line
//! of `per_task.jsonl`.
//!
//! This module holds the type and its serde shape. Validation of a whole file
//! (typing, cross-field rules, duplicate keys, line numbers) lives in
//! `records.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::attempt::AttemptSpec;
use crate::ids::{Condition, Site, Uid};

/// How an attempt ended (docs/formats.md#records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The task's evaluators passed.
    Success,
    /// The run ended and the evaluators failed.
    Failure,
    /// The step budget ran out: a measurement, counted as not successful.
    Timeout,
    /// No measurement: wall-clock ceiling, browser or site fault, worker lost.
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
        }
    }
}

/// The treatment a record belongs to when its `treatment` field is absent.
pub const DEFAULT_TREATMENT: &str = "default";

/// The longest `error_detail` a record keeps (docs/formats.md#records).
pub const MAX_ERROR_DETAIL_CHARS: usize = 200;

/// `message` as a record's `error_detail`: on one line (white space folded) and at most
/// [`MAX_ERROR_DETAIL_CHARS`] characters, the cut marked with `…`. Redact it first.
pub fn error_detail(message: &str) -> String {
    let folded = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= MAX_ERROR_DETAIL_CHARS {
        return folded;
    }
    let mut cut: String = folded.chars().take(MAX_ERROR_DETAIL_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// What an `error` record is counted under in summaries: `reason: detail`, or the reason alone.
pub fn error_key(r: &Record) -> String {
    let reason = r.error.as_deref().unwrap_or("error");
    match r.error_detail.as_deref() {
        Some(d) if !d.is_empty() => format!("{reason}: {d}"),
        _ => reason.to_string(),
    }
}

/// The `n` most frequent keys with their counts, most frequent first (ties by key).
pub fn most_frequent<K: Into<String>>(counts: impl IntoIterator<Item = (K, u64)>, n: usize) -> Vec<(String, u64)> {
    let mut top: Vec<(String, u64)> = counts.into_iter().map(|(k, c)| (k.into(), c)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(n);
    top
}

/// One attempt's record. Optional fields are omitted from JSON when unset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub uid: Uid,
    pub site: Site,
    pub condition: Condition,
    /// `None` only for `error` records, which measured nothing.
    pub success: Option<bool>,
    pub steps: Option<u32>,
    /// `None` when the method has no executable skills at all.
    pub skill_calls: Option<u32>,
    pub skill_failures: Option<u32>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub treatment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rep: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_calls: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// `Some(true)` on every record a `--simulate` worker made up: it measured nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated: Option<bool>,
    /// Why a non-success attempt did not succeed (`wrong_answer`, `step_budget`, `worker_lost`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_category: Option<String>,
    /// For an `error` attempt, what failed: at most [`MAX_ERROR_DETAIL_CHARS`] characters, redacted like
    /// its trajectory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_detail: Option<String>,
    /// The attempt's trajectory file, relative to the records file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<String>,
}

/// A record that names another attempt than the one it was sent for: the field that differs, what
/// the record says and what its attempt's spec says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("uid '{found}' is not the unit's '{expected}'")]
    Uid { found: Uid, expected: Uid },
    #[error("site '{found}' is not the unit's '{expected}'")]
    Site { found: Site, expected: Site },
    #[error("condition '{found}' is not the unit's '{expected}'")]
    Condition { found: Condition, expected: Condition },
    #[error("rep {found} is not the unit's {expected}")]
    Rep { found: u32, expected: u32 },
    #[error("attempt {found} is not the assignment's {expected}")]
    Attempt { found: u32, expected: u32 },
    #[error("treatment '{found}' is not the unit's '{expected}'")]
    Treatment { found: String, expected: String },
    #[error("sweep '{found}' is not the assignment's '{expected}'")]
    Sweep { found: String, expected: String },
    #[error("config_digest '{found}' is not the sweep's '{expected}'")]
    ConfigDigest { found: String, expected: String },
}

impl Record {
    /// A record with the seven required fields and nothing else.
    pub fn new(uid: Uid, condition: Condition) -> Self {
        Record {
            uid,
            site: uid.site,
            condition,
            success: None,
            steps: None,
            skill_calls: None,
            skill_failures: None,
            outcome: None,
            error: None,
            treatment: None,
            rep: None,
            attempt: None,
            sweep: None,
            config_digest: None,
            duration_ms: None,
            started_at: None,
            finished_at: None,
            llm_calls: None,
            tokens_in: None,
            tokens_out: None,
            cost_usd: None,
            answer: None,
            worker: None,
            images: None,
            trace_id: None,
            simulated: None,
            failure_category: None,
            error_detail: None,
            trajectory: None,
        }
    }

    /// The record of one attempt, its identity stamped from the spec: uid, site,
    /// condition, treatment, rep, attempt, sweep and `config_digest`. This is the
    /// one place a record's key fields are set; later layers only check them
    /// ([`Record::identity_mismatch`]).
    pub fn for_attempt(spec: &AttemptSpec) -> Self {
        let mut r = Record::new(spec.uid, spec.condition);
        r.treatment = Some(spec.treatment.clone());
        r.rep = Some(spec.rep);
        r.attempt = Some(spec.attempt);
        r.sweep = Some(spec.sweep.clone());
        r.config_digest = spec.config_digest.clone();
        r
    }

    /// The first identity field that differs from what `spec` stamps, with the
    /// value found and the one expected; `None` when the record is the spec's attempt.
    pub fn identity_mismatch(&self, spec: &AttemptSpec) -> Option<Mismatch> {
        if self.uid != spec.uid {
            return Some(Mismatch::Uid { found: self.uid, expected: spec.uid });
        }
        if self.site != spec.uid.site {
            return Some(Mismatch::Site { found: self.site, expected: spec.uid.site });
        }
        if self.condition != spec.condition {
            return Some(Mismatch::Condition { found: self.condition, expected: spec.condition });
        }
        if self.treatment.as_deref() != Some(spec.treatment.as_str()) {
            return Some(Mismatch::Treatment { found: self.treatment().to_string(), expected: spec.treatment.clone() });
        }
        if self.rep != Some(spec.rep) {
            return Some(Mismatch::Rep { found: self.rep(), expected: spec.rep });
        }
        if self.attempt != Some(spec.attempt) {
            return Some(Mismatch::Attempt { found: self.attempt(), expected: spec.attempt });
        }
        if self.sweep.as_deref() != Some(spec.sweep.as_str()) {
            return Some(Mismatch::Sweep {
                found: self.sweep.clone().unwrap_or_default(),
                expected: spec.sweep.clone(),
            });
        }
        if self.config_digest != spec.config_digest {
            return Some(Mismatch::ConfigDigest {
                found: self.config_digest.clone().unwrap_or_default(),
                expected: spec.config_digest.clone().unwrap_or_default(),
            });
        }
        None
    }

    /// The outcome, derived from `success` when the field is absent.
    pub fn outcome(&self) -> Outcome {
        match (self.outcome, self.success) {
            (Some(o), _) => o,
            (None, Some(true)) => Outcome::Success,
            (None, Some(false)) => Outcome::Failure,
            (None, None) => Outcome::Error,
        }
    }

    pub fn treatment(&self) -> &str {
        self.treatment.as_deref().unwrap_or(DEFAULT_TREATMENT)
    }

    pub fn rep(&self) -> u32 {
        self.rep.unwrap_or(0)
    }

    pub fn attempt(&self) -> u32 {
        self.attempt.unwrap_or(0)
    }
}
