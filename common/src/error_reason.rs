//! Why an attempt measured nothing: the `error` field of an `error` record
//! (`docs/formats.md`, records).
//!
//! The worker sets it when an attempt ends in a fault and the coordinator when
//! it gives up on a lost worker. Both build it from [`ErrorReason`] and decide
//! on the variant, never on the text; the text ([`ErrorReason::as_str`]) is what
//! records and the wire carry. A record may hold a reason this enum does not
//! know (written by another tool); [`ErrorReason::of`] is then `None`.

use crate::record::Record;

/// The reasons this project writes into a record's `error` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorReason {
    /// The attempt hit its wall-clock ceiling (`task_timeout`).
    TaskTimeout,
    /// The attempt was cancelled (by the coordinator, or a worker draining past its deadline).
    Cancelled,
    /// The worker running the attempt was lost (set by the coordinator).
    WorkerLost,
    /// The browser or its chromedriver failed.
    Browser,
    /// The site could not be reached or named.
    Site,
    /// Resetting the site failed.
    SiteReset,
    /// Signing in to the site failed.
    SiteLogin,
    /// The agent failed: could not start, broke its protocol, or did not answer.
    Agent,
    /// The task's evaluators could not decide.
    Evaluator,
    /// The attempt spec was inconsistent (a uid under another version's condition, a bad profile).
    Spec,
    /// The task could not be loaded.
    Task,
}

impl ErrorReason {
    pub const ALL: &'static [ErrorReason] = &[
        ErrorReason::TaskTimeout,
        ErrorReason::Cancelled,
        ErrorReason::WorkerLost,
        ErrorReason::Browser,
        ErrorReason::Site,
        ErrorReason::SiteReset,
        ErrorReason::SiteLogin,
        ErrorReason::Agent,
        ErrorReason::Evaluator,
        ErrorReason::Spec,
        ErrorReason::Task,
    ];

    /// The text records and the wire carry.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorReason::TaskTimeout => "task_timeout",
            ErrorReason::Cancelled => "cancelled",
            ErrorReason::WorkerLost => "worker_lost",
            ErrorReason::Browser => "browser",
            ErrorReason::Site => "site",
            ErrorReason::SiteReset => "site_reset",
            ErrorReason::SiteLogin => "site_login",
            ErrorReason::Agent => "agent",
            ErrorReason::Evaluator => "evaluator",
            ErrorReason::Spec => "spec",
            ErrorReason::Task => "task",
        }
    }

    /// The reason a text names, `None` for a text this project does not write.
    pub fn parse(text: &str) -> Option<ErrorReason> {
        ErrorReason::ALL.iter().copied().find(|r| r.as_str() == text)
    }

    /// The known reason of a record's `error` field.
    pub fn of(record: &Record) -> Option<ErrorReason> {
        record.error.as_deref().and_then(ErrorReason::parse)
    }
}

impl std::fmt::Display for ErrorReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Condition, Uid};

    #[test]
    fn every_reason_reads_back_from_its_text_and_unknown_text_is_none() {
        for r in ErrorReason::ALL {
            assert_eq!(ErrorReason::parse(r.as_str()), Some(*r));
        }
        let texts: std::collections::HashSet<&str> = ErrorReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(texts.len(), ErrorReason::ALL.len(), "no two reasons share a text");
        assert_eq!(ErrorReason::parse("Task_Timeout"), None);

        let uid: Uid = "skillshift.gitlab.v1.0".parse().expect("uid");
        let mut rec = Record::new(uid, Condition::Src);
        assert_eq!(ErrorReason::of(&rec), None);
        rec.error = Some("worker_lost".into());
        assert_eq!(ErrorReason::of(&rec), Some(ErrorReason::WorkerLost));
        rec.error = Some("disk full".into());
        assert_eq!(ErrorReason::of(&rec), None);
    }
}
