//! Why attempts errored, in a few lines: the most frequent `error` reasons with their `error_detail`,
//! counted, so a sweep whose attempts all fail the same way says so at its end instead of printing a
//! table of dashes (`local`, `sweep watch`, `sweep status`).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use anyhow::Context;
use skillshift_common::record::error_key;
use skillshift_common::{Outcome, Record};

/// More than this share of a sweep's attempts errored: `local` and `sweep watch` exit 1.
pub const FAILING_ERROR_SHARE: f64 = 0.5;

/// How many distinct details a summary lists.
pub const TOP_ERRORS: usize = 5;

/// The errors of a set of attempts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorSummary {
    pub attempts: u64,
    pub errors: u64,
    /// `reason: detail` (or the reason alone) and its count, most frequent first, at most [`TOP_ERRORS`].
    pub top: Vec<(String, u64)>,
}

impl ErrorSummary {
    /// From `(attempts, [(key, count)])`, keeping the most frequent keys.
    pub fn new(attempts: u64, counts: impl IntoIterator<Item = (String, u64)>) -> ErrorSummary {
        let counts: Vec<(String, u64)> = counts.into_iter().collect();
        let errors = counts.iter().map(|(_, n)| n).sum();
        ErrorSummary { attempts, errors, top: skillshift_common::record::most_frequent(counts, TOP_ERRORS) }
    }

    /// What a coordinator's sweep status says of its errors.
    pub fn of_status(st: &skillshift_coordinator::status::SweepStatus) -> ErrorSummary {
        ErrorSummary { attempts: st.attempts.total, errors: st.attempts.error, top: st.top_errors.clone() }
    }

    pub fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> ErrorSummary {
        let mut attempts = 0;
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for r in records {
            attempts += 1;
            if r.outcome == Some(Outcome::Error) {
                *counts.entry(error_key(r)).or_default() += 1;
            }
        }
        ErrorSummary::new(attempts, counts)
    }

    /// Reads a `per_task.jsonl` written by an export (one record per line).
    pub fn read(path: &Path) -> anyhow::Result<ErrorSummary> {
        let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut records = Vec::new();
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.with_context(|| format!("reading {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let r: Record = serde_json::from_str(&line)
                .with_context(|| format!("{}: line {}: not a record", path.display(), i + 1))?;
            records.push(r);
        }
        Ok(ErrorSummary::of(&records))
    }

    /// Every attempt errored, or more than [`FAILING_ERROR_SHARE`] of them.
    pub fn failing(&self) -> bool {
        self.attempts > 0
            && (self.errors == self.attempts || self.errors as f64 > FAILING_ERROR_SHARE * self.attempts as f64)
    }

    /// The summary's lines: nothing when no attempt errored.
    pub fn lines(&self) -> Vec<String> {
        if self.errors == 0 {
            return Vec::new();
        }
        let share = 100.0 * self.errors as f64 / self.attempts.max(1) as f64;
        let mut out = vec![format!(
            "{} of {} attempts errored ({share:.1}%); the most frequent errors:",
            self.errors, self.attempts
        )];
        out.extend(self.top.iter().map(|(k, n)| format!("  {n:>6} × {k}")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::{Condition, Uid};

    fn rec(outcome: Outcome, detail: Option<&str>) -> Record {
        let uid: Uid = "skillshift.gitlab.v1.3".parse().expect("uid");
        let mut r = Record::new(uid, Condition::Src);
        r.outcome = Some(outcome);
        if outcome == Outcome::Error {
            r.error = Some("browser".into());
            r.error_detail = detail.map(str::to_string);
        }
        r
    }

    #[test]
    fn counts_details_most_frequent_first_and_fails_past_the_share() {
        let mut rs = vec![rec(Outcome::Success, None), rec(Outcome::Error, Some("chromedriver: cannot start"))];
        let s = ErrorSummary::of(&rs);
        assert_eq!((s.attempts, s.errors), (2, 1));
        assert!(!s.failing());
        rs.push(rec(Outcome::Error, Some("chromedriver: cannot start")));
        rs.push(rec(Outcome::Error, None));
        let s = ErrorSummary::of(&rs);
        assert_eq!(s.top, vec![("browser: chromedriver: cannot start".to_string(), 2), ("browser".to_string(), 1)]);
        assert!(s.failing());
        assert_eq!(s.lines()[0], "3 of 4 attempts errored (75.0%); the most frequent errors:");
        assert!(ErrorSummary::of(&[rec(Outcome::Success, None)]).lines().is_empty());
    }
}
