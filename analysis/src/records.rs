//! Streaming parse and validation of a whole `per_task.jsonl`
//! (docs/formats.md#record-validation).
//!
//! A file is read line by line, each line at most [`MAX_LINE_BYTES`] long (a
//! longer one, or a file without line breaks, is refused once the bound is
//! passed, before more is read); each line is deserialised into a borrowed,
//! typed view (no `serde_json::Value` per record) and reduced to a compact
//! [`Row`] holding only the numbers the analysis needs. The first line that
//! breaks a rule stops the read with a [`RecordsError`] naming the file and
//! the line. When the fast typed parse fails, the line is parsed a second time
//! as a `Value` only to say precisely which field is wrong.
//!
//! Rules checked: valid JSON object; required fields present (missing is not
//! null) and typed; known site, condition and outcome; `site` agrees with the
//! uid; the uid's task id exists (below the site's task count); the uid's
//! version is the condition's version; `steps >= 0`;
//! `skill_failures <= skill_calls`; `success` agrees with `outcome`; among a
//! treatment's non-`error` records `skill_calls` is always an integer or
//! always `null`; no two lines share (`treatment`, `uid`, `condition`, `rep`,
//! `attempt`). Values echoed in errors are clipped ([`skillshift_common::text`]).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

use skillshift_common::bounded::{self, Line as ReadLine};
use skillshift_common::ids::{Condition, Site, Uid};
use skillshift_common::record::{Outcome, DEFAULT_TREATMENT};
use skillshift_common::text::{clip, json_error, short};

/// The longest record line read, its line break not counted: 1 MiB.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Why a records file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("cannot read {path}: {source}")]
    Open { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Invalid { path: PathBuf, line: u64, message: String },
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
}

/// One attempt, reduced to what the analysis uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    pub site: Site,
    pub task_id: u32,
    pub condition: Condition,
    pub rep: u32,
    pub attempt: u32,
    pub outcome: Outcome,
    /// `None` only on `error` records.
    pub steps: Option<u32>,
    pub skill_calls: Option<u32>,
    pub skill_failures: Option<u32>,
    pub duration_ms: Option<u64>,
    /// LLM calls, tokens and cost, as the record states them.
    pub usage: Usage,
    /// The record says a `--simulate` worker made it up.
    pub simulated: bool,
    /// 1-based line number in the file.
    pub line: u64,
}

/// One attempt's LLM use, as its record states it (`None`: not recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub llm_calls: Option<u64>,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub cost_usd: Option<f64>,
}

impl Row {
    pub fn success(&self) -> bool {
        self.outcome == Outcome::Success
    }
}

/// The records of one treatment, in file order.
#[derive(Debug, Clone, Default)]
pub struct TreatmentRecords {
    pub name: String,
    pub rows: Vec<Row>,
    /// Every distinct `config_digest` seen.
    pub config_digests: BTreeSet<String>,
    /// `Some(true)` when the non-error records carry integer `skill_calls`,
    /// `Some(false)` when they carry `null`, `None` when there is no non-error record.
    pub skill_calls_known: Option<bool>,
    /// Every non-success attempt's `failure_category` and `trajectory`, in file order.
    pub failures: Vec<FailureRef>,
}

/// A non-success attempt, as the failure categories of a summary group it.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureRef {
    pub site: Site,
    pub condition: Condition,
    pub outcome: Outcome,
    /// `None` when the record carries no `failure_category` (records written before it existed).
    pub category: Option<String>,
    /// The trajectory file, relative to the records file, as the record names it.
    pub trajectory: Option<String>,
}

/// A whole validated file.
#[derive(Debug, Clone)]
pub struct RecordSet {
    pub path: PathBuf,
    /// Treatments in order of first appearance.
    pub treatments: Vec<TreatmentRecords>,
}

impl RecordSet {
    /// Total number of records across treatments.
    pub fn len(&self) -> usize {
        self.treatments.iter().map(|t| t.rows.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn names(&self) -> Vec<&str> {
        self.treatments.iter().map(|t| t.name.as_str()).collect()
    }

    /// The treatment names for a message, each and the list clipped.
    fn name_list(&self) -> String {
        let names: Vec<_> = self.treatments.iter().map(|t| short(&t.name)).collect();
        clip(&names.join(", "), 4 * skillshift_common::text::CLIP_CHARS).into_owned()
    }

    /// The treatment to analyse: the named one, or the only one. Several
    /// treatments without a name is an error listing them.
    pub fn select(&self, name: Option<&str>) -> Result<&TreatmentRecords, RecordsError> {
        let file_err = |message: String| RecordsError::File { path: self.path.clone(), message };
        match name {
            Some(n) => self.treatments.iter().find(|t| t.name == n).ok_or_else(|| {
                file_err(format!("no records of treatment '{}' (treatments: {})", short(n), self.name_list()))
            }),
            None => match self.treatments.as_slice() {
                [] => Err(file_err("holds no records".to_string())),
                [one] => Ok(one),
                _ => Err(file_err(format!(
                    "holds several treatments ({}); choose one with --treatment",
                    self.name_list()
                ))),
            },
        }
    }
}

/// A string borrowed from the line when it has no escapes, owned otherwise.
/// (serde's own `Cow<str>` inside an `Option` always allocates.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// `None` when absent, `Some(None)` when `null`, `Some(Some(v))` otherwise.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The typed, borrowed view of one line. Unknown fields are skipped.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    uid: Option<Option<Text<'a>>>,
    #[serde(default, borrow, deserialize_with = "present")]
    site: Option<Option<Text<'a>>>,
    #[serde(default, borrow, deserialize_with = "present")]
    condition: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    success: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    steps: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    skill_calls: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    skill_failures: Option<Option<i64>>,
    #[serde(default, borrow)]
    outcome: Option<Text<'a>>,
    #[serde(default, borrow)]
    treatment: Option<Text<'a>>,
    #[serde(default)]
    rep: Option<i64>,
    #[serde(default)]
    attempt: Option<i64>,
    #[serde(default, borrow)]
    config_digest: Option<Text<'a>>,
    #[serde(default)]
    duration_ms: Option<i64>,
    #[serde(default)]
    llm_calls: Option<u64>,
    #[serde(default)]
    tokens_in: Option<u64>,
    #[serde(default)]
    tokens_out: Option<u64>,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    simulated: Option<bool>,
    #[serde(default, borrow)]
    failure_category: Option<Text<'a>>,
    #[serde(default, borrow)]
    trajectory: Option<Text<'a>>,
}

/// Fields whose type the slow path checks, with the type they must have.
const FIELD_TYPES: &[(&str, Kind, bool)] = &[
    ("uid", Kind::Str, true),
    ("site", Kind::Str, true),
    ("condition", Kind::Str, true),
    ("success", Kind::Bool, true),
    ("steps", Kind::Int, true),
    ("skill_calls", Kind::Int, true),
    ("skill_failures", Kind::Int, true),
    ("outcome", Kind::Str, false),
    ("treatment", Kind::Str, false),
    ("rep", Kind::Int, false),
    ("attempt", Kind::Int, false),
    ("config_digest", Kind::Str, false),
    ("duration_ms", Kind::Int, false),
    ("llm_calls", Kind::Int, false),
    ("tokens_in", Kind::Int, false),
    ("tokens_out", Kind::Int, false),
    ("cost_usd", Kind::Num, false),
    ("simulated", Kind::Bool, false),
    ("failure_category", Kind::Str, false),
    ("trajectory", Kind::Str, false),
];

#[derive(Clone, Copy)]
enum Kind {
    Str,
    Bool,
    Int,
    Num,
}

/// Read and validate a whole file.
pub fn read_file(path: &Path) -> Result<RecordSet, RecordsError> {
    let file = File::open(path).map_err(|source| RecordsError::Open { path: path.to_path_buf(), source })?;
    read(BufReader::with_capacity(1 << 20, file), path)
}

/// Read and validate records from any reader; `path` names it in errors.
pub fn read(mut reader: impl BufRead, path: &Path) -> Result<RecordSet, RecordsError> {
    let mut reader_state = Reader::new(path);
    let mut buf = Vec::with_capacity(1024);
    let mut line_no = 0u64;
    loop {
        let got = bounded::read_line(&mut reader, &mut buf, MAX_LINE_BYTES)
            .map_err(|source| RecordsError::Open { path: path.to_path_buf(), source })?;
        line_no += 1;
        match got {
            ReadLine::End => break,
            ReadLine::TooLong => {
                return Err(reader_state.err(
                    line_no,
                    format!(
                        "line is longer than {}, the bound on one record line (is this a per_task.jsonl file?)",
                        bounded::bytes(MAX_LINE_BYTES as u64)
                    ),
                ))
            }
            ReadLine::Read => {}
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // One UTF-8 check per line; serde_json then skips its per-string checks.
        let text = std::str::from_utf8(&buf).map_err(|e| reader_state.err(line_no, format!("not valid UTF-8: {e}")))?;
        reader_state.line(text, line_no)?;
    }
    Ok(RecordSet { path: path.to_path_buf(), treatments: reader_state.treatments })
}

/// A checked line: its row, its treatment, its config digest, and for a
/// non-success attempt its failure category and trajectory.
type Checked<'a> = (Row, Cow<'a, str>, Option<Cow<'a, str>>, Option<(Option<String>, Option<String>)>);

/// The record key (docs/formats.md#record-validation), with the treatment as
/// its index in the file. Each part is a field of its own: no part can spill
/// into another, whatever its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RecordKey {
    treatment: usize,
    site: Site,
    condition: Condition,
    task_id: u32,
    rep: u32,
    attempt: u32,
}

/// A fast hasher for [`RecordKey`] (trusted, fixed-width integers): a
/// multiply-xorshift mix of each integer written.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        let x = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn write_isize(&mut self, v: isize) {
        // An enum's discriminant.
        self.write_u64(v as u64);
    }
}

/// Per-file validation state.
struct Reader<'p> {
    path: &'p Path,
    treatments: Vec<TreatmentRecords>,
    /// Per treatment: first line of a non-error record with integer / null `skill_calls`.
    kind_lines: Vec<(Option<u64>, Option<u64>)>,
    /// Duplicate-key detection: key -> line.
    seen: HashMap<RecordKey, u64, BuildHasherDefault<KeyHasher>>,
}

impl<'p> Reader<'p> {
    fn new(path: &'p Path) -> Self {
        Reader { path, treatments: Vec::new(), kind_lines: Vec::new(), seen: HashMap::default() }
    }

    fn err(&self, line: u64, message: impl Into<String>) -> RecordsError {
        RecordsError::Invalid { path: self.path.to_path_buf(), line, message: message.into() }
    }

    fn line(&mut self, text: &str, line_no: u64) -> Result<(), RecordsError> {
        let parsed: Line = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(e) => return Err(self.err(line_no, diagnose(text.as_bytes(), &e))),
        };
        let (row, treatment, digest, failure) = self.check(parsed, line_no)?;
        let t = match self.treatments.iter().position(|t| t.name == treatment) {
            Some(i) => i,
            None => {
                self.treatments.push(TreatmentRecords { name: treatment.to_string(), ..Default::default() });
                self.kind_lines.push((None, None));
                self.treatments.len() - 1
            }
        };
        if row.outcome != Outcome::Error {
            let known = row.skill_calls.is_some();
            let (int_line, null_line) = &mut self.kind_lines[t];
            let (mine, other) = if known { (int_line, *null_line) } else { (null_line, *int_line) };
            if let Some(other) = other {
                let (this, that) = if known { ("an integer", "null") } else { ("null", "an integer") };
                return Err(self.err(
                    line_no,
                    format!(
                        "skill_calls is {this} but line {other} of treatment '{}' has {that}: \
                         a treatment's non-error records must not mix integer and null skill_calls",
                        short(&treatment)
                    ),
                ));
            }
            mine.get_or_insert(line_no);
            self.treatments[t].skill_calls_known = Some(known);
        }
        let key = RecordKey {
            treatment: t,
            site: row.site,
            condition: row.condition,
            task_id: row.task_id,
            rep: row.rep,
            attempt: row.attempt,
        };
        if let Some(first) = self.seen.insert(key, line_no) {
            return Err(self.err(
                line_no,
                format!(
                    "duplicate record: line {first} has the same (treatment '{}', uid {}, condition {}, \
                     rep {}, attempt {})",
                    short(&treatment),
                    Uid::new(row.site, row.condition.version(), row.task_id),
                    row.condition,
                    row.rep,
                    row.attempt
                ),
            ));
        }
        let tr = &mut self.treatments[t];
        if let Some(d) = digest {
            if !tr.config_digests.contains(d.as_ref()) {
                tr.config_digests.insert(d.into_owned());
            }
        }
        if let Some((category, trajectory)) = failure {
            tr.failures.push(FailureRef {
                site: row.site,
                condition: row.condition,
                outcome: row.outcome,
                category,
                trajectory,
            });
        }
        tr.rows.push(row);
        Ok(())
    }

    /// Turn a typed line into a row, checking every per-line rule.
    fn check<'a>(&self, l: Line<'a>, n: u64) -> Result<Checked<'a>, RecordsError> {
        let missing = |f: &str| self.err(n, format!("missing required field '{f}'"));
        let null = |f: &str| self.err(n, format!("field '{f}' is null, expected a string"));
        let uid_s = l.uid.ok_or_else(|| missing("uid"))?.ok_or_else(|| null("uid"))?.0;
        let site_s = l.site.ok_or_else(|| missing("site"))?.ok_or_else(|| null("site"))?.0;
        let cond_s = l.condition.ok_or_else(|| missing("condition"))?.ok_or_else(|| null("condition"))?.0;
        let success = l.success.ok_or_else(|| missing("success"))?;
        let steps = l.steps.ok_or_else(|| missing("steps"))?;
        let calls = l.skill_calls.ok_or_else(|| missing("skill_calls"))?;
        let failures = l.skill_failures.ok_or_else(|| missing("skill_failures"))?;

        let uid: Uid = uid_s.parse().map_err(|e| self.err(n, format!("{e}")))?;
        let site: Site = site_s.parse().map_err(|e| self.err(n, format!("{e}")))?;
        let condition: Condition = cond_s.parse().map_err(|e| self.err(n, format!("{e}")))?;
        if uid.site != site {
            return Err(self.err(n, format!("site '{site}' does not match uid {uid}")));
        }
        if uid.task_id as usize >= site.n_tasks() {
            return Err(self.err(
                n,
                format!(
                    "uid {uid} names no task: {site} has {} tasks, ids 0 to {}",
                    site.n_tasks(),
                    site.n_tasks() - 1
                ),
            ));
        }
        if uid.version != condition.version() {
            return Err(self.err(
                n,
                format!(
                    "uid {uid} is a {} task but condition '{condition}' runs {} (src* loads v1, tgt* loads v2)",
                    uid.version,
                    condition.version()
                ),
            ));
        }
        let outcome = match l.outcome.as_ref().map(|t| t.0.as_ref()) {
            None => match success {
                Some(true) => Outcome::Success,
                Some(false) => Outcome::Failure,
                None => return Err(self.err(n, "success is null but outcome is not 'error'")),
            },
            Some("success") => Outcome::Success,
            Some("failure") => Outcome::Failure,
            Some("timeout") => Outcome::Timeout,
            Some("error") => Outcome::Error,
            Some(other) => {
                return Err(self.err(
                    n,
                    format!("unknown outcome '{}' (expected success, failure, timeout or error)", short(other)),
                ))
            }
        };
        if outcome != Outcome::Error {
            let expect = outcome == Outcome::Success;
            match success {
                None => return Err(self.err(n, format!("success is null but outcome is '{}'", outcome.as_str()))),
                Some(s) if s != expect => {
                    return Err(self.err(n, format!("success is {s} but outcome is '{}'", outcome.as_str())))
                }
                _ => {}
            }
        }
        let nonneg = |f: &str, v: i64| -> Result<u32, RecordsError> {
            u32::try_from(v).map_err(|_| self.err(n, format!("{f} must be a non-negative integer, found {v}")))
        };
        let steps = steps.map(|v| nonneg("steps", v)).transpose()?;
        let calls = calls.map(|v| nonneg("skill_calls", v)).transpose()?;
        let failures = failures.map(|v| nonneg("skill_failures", v)).transpose()?;
        if outcome != Outcome::Error && steps.is_none() {
            return Err(self.err(n, format!("steps is null but outcome is '{}'", outcome.as_str())));
        }
        match (calls, failures) {
            (Some(c), Some(f)) if f > c => {
                return Err(self.err(n, format!("skill_failures ({f}) is greater than skill_calls ({c})")))
            }
            (Some(c), None) if outcome != Outcome::Error => {
                return Err(self.err(n, format!("skill_failures is null but skill_calls is {c}")))
            }
            (None, Some(f)) if outcome != Outcome::Error => {
                return Err(self.err(n, format!("skill_calls is null but skill_failures is {f}")))
            }
            _ => {}
        }
        let rep = l.rep.map(|v| nonneg("rep", v)).transpose()?.unwrap_or(0);
        let attempt = l.attempt.map(|v| nonneg("attempt", v)).transpose()?.unwrap_or(0);
        let duration_ms = match l.duration_ms {
            Some(v) => Some(
                u64::try_from(v)
                    .map_err(|_| self.err(n, format!("duration_ms must be a non-negative integer, found {v}")))?,
            ),
            None => None,
        };
        let row = Row {
            site,
            task_id: uid.task_id,
            condition,
            rep,
            attempt,
            outcome,
            steps,
            skill_calls: calls,
            skill_failures: failures,
            duration_ms,
            usage: Usage {
                llm_calls: l.llm_calls,
                tokens_in: l.tokens_in,
                tokens_out: l.tokens_out,
                cost_usd: l.cost_usd,
            },
            simulated: l.simulated == Some(true),
            line: n,
        };
        let treatment = l.treatment.map_or(Cow::Borrowed(DEFAULT_TREATMENT), |t| t.0);
        let failure = (outcome != Outcome::Success)
            .then(|| (l.failure_category.map(|t| t.0.into_owned()), l.trajectory.map(|t| t.0.into_owned())));
        Ok((row, treatment, l.config_digest.map(|t| t.0), failure))
    }
}

/// The slow path: say which field of a line that failed the typed parse is wrong.
fn diagnose(bytes: &[u8], typed_err: &serde_json::Error) -> String {
    let value: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return format!("not valid JSON: {}", json_error(&e)),
    };
    let Some(obj) = value.as_object() else {
        return format!("expected a JSON object, found {}", type_name(&value));
    };
    for (field, kind, required) in FIELD_TYPES {
        let Some(v) = obj.get(*field) else {
            if *required {
                return format!("missing required field '{field}'");
            }
            continue;
        };
        let ok = match kind {
            _ if v.is_null() => true,
            Kind::Str => v.is_string(),
            Kind::Bool => v.is_boolean(),
            Kind::Int => v.is_i64() || v.is_u64(),
            Kind::Num => v.is_number(),
        };
        if !ok {
            let expected = match kind {
                Kind::Str => "a string",
                Kind::Bool => "true, false or null",
                Kind::Int => "an integer",
                Kind::Num => "a number",
            };
            return format!("field '{field}' must be {expected}, found {}", short(&v.to_string()));
        }
    }
    format!("invalid record: {}", json_error(typed_err))
}

fn type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RecordSet, RecordsError> {
        read(text.as_bytes(), Path::new("per_task.jsonl"))
    }

    fn err(text: &str) -> String {
        match parse(text) {
            Ok(_) => panic!("expected an error for {text}"),
            Err(e) => e.to_string(),
        }
    }

    const OK: &str = r#"{"uid": "skillshift.gitlab.v2.9", "site": "gitlab", "condition": "tgt-exec", "success": false, "steps": 10, "skill_calls": 1, "skill_failures": 1}"#;

    #[test]
    fn reads_the_seed_shape_with_defaults() {
        let set = parse(&format!("{OK}\n\n")).unwrap();
        let t = set.select(None).unwrap();
        assert_eq!(t.name, "default");
        let r = t.rows[0];
        assert_eq!((r.task_id, r.rep, r.attempt, r.outcome), (9, 0, 0, Outcome::Failure));
        assert_eq!((r.steps, r.skill_calls, r.skill_failures, r.line), (Some(10), Some(1), Some(1), 1));
    }

    #[test]
    fn each_broken_rule_names_the_line() {
        let cases = [
            ("{\"uid\": ", "per_task.jsonl:2: not valid JSON"),
            (&OK.replace("tgt-exec", "target"), "per_task.jsonl:2: unknown condition 'target'"),
            (&OK.replace("v2.9", "v1.9"), "per_task.jsonl:2: uid skillshift.gitlab.v1.9 is a v1 task"),
            (
                &OK.replace("\"skill_calls\": 1", "\"skill_calls\": 0"),
                "skill_failures (1) is greater than skill_calls (0)",
            ),
            (&OK.replace("\"steps\": 10, ", ""), "per_task.jsonl:2: missing required field 'steps'"),
            (&OK.replace("\"steps\": 10", "\"steps\": null"), "steps is null but outcome is 'failure'"),
            (&OK.replace("\"steps\": 10", "\"steps\": \"10\""), "field 'steps' must be an integer, found \"10\""),
            (&OK.replace("\"steps\": 10", "\"steps\": -1"), "steps must be a non-negative integer, found -1"),
            (&OK.replace("\"site\": \"gitlab\"", "\"site\": \"magento\""), "site 'magento' does not match"),
            (&OK.replace("\"success\": false", "\"success\": null"), "success is null but outcome is not 'error'"),
            ("[1, 2]", "expected a JSON object, found an array"),
            (OK, "per_task.jsonl:2: duplicate record: line 1 has the same"),
        ];
        for (line, want) in cases {
            let text = if want.contains("duplicate") {
                format!("{OK}\n{line}\n")
            } else {
                format!("{}\n{line}\n", OK.replace("v2.9", "v2.8"))
            };
            let e = err(&text);
            assert!(e.contains(want), "{e:?} should contain {want:?}");
            assert!(!e.contains('\n'), "one line: {e:?}");
        }
    }

    #[test]
    fn error_records_may_carry_nulls_and_success_must_agree_with_outcome() {
        let error = r#"{"uid": "skillshift.gitlab.v1.1", "site": "gitlab", "condition": "src", "success": null, "steps": null, "skill_calls": null, "skill_failures": null, "outcome": "error", "error": "task_timeout"}"#;
        let set = parse(error).unwrap();
        assert_eq!(set.treatments[0].rows[0].outcome, Outcome::Error);
        assert_eq!(set.treatments[0].skill_calls_known, None);
        let timeout = OK.replace("\"skill_failures\": 1}", "\"skill_failures\": 1, \"outcome\": \"timeout\"}");
        assert_eq!(parse(&timeout).unwrap().treatments[0].rows[0].outcome, Outcome::Timeout);
        let wrong = OK.replace("\"skill_failures\": 1}", "\"skill_failures\": 1, \"outcome\": \"success\"}");
        assert!(err(&wrong).contains("success is false but outcome is 'success'"));
    }

    #[test]
    fn mixing_null_and_integer_skill_calls_in_a_treatment_is_refused() {
        let null = OK
            .replace("v2.9", "v2.3")
            .replace("\"skill_calls\": 1, \"skill_failures\": 1", "\"skill_calls\": null, \"skill_failures\": null");
        let e = err(&format!("{OK}\n{null}\n"));
        assert!(e.starts_with("per_task.jsonl:2: skill_calls is null but line 1"), "{e}");
        // Another treatment may differ.
        let other = null.replace("}", ", \"treatment\": \"AWM\"}");
        let set = parse(&format!("{OK}\n{other}\n")).unwrap();
        assert_eq!(set.names(), ["default", "AWM"]);
        assert!(set.select(None).unwrap_err().to_string().contains("several treatments (default, AWM)"));
        assert_eq!(set.select(Some("AWM")).unwrap().skill_calls_known, Some(false));
    }

    #[test]
    fn duplicate_key_includes_rep_and_attempt() {
        let a1 = OK.replace("}", ", \"attempt\": 1}");
        let r1 = OK.replace("}", ", \"rep\": 1}");
        assert_eq!(parse(&format!("{OK}\n{a1}\n{r1}\n")).unwrap().len(), 3);
        assert!(err(&format!("{OK}\n{a1}\n{a1}\n")).contains(":3: duplicate record: line 2"));
    }

    #[test]
    fn a_task_id_beyond_the_sites_tasks_is_refused() {
        for (site, n) in [("gitlab", 162), ("magento", 114), ("wordpress", 79)] {
            let last = OK.replace("gitlab", site).replace("v2.9", &format!("v2.{}", n - 1));
            let beyond = OK.replace("gitlab", site).replace("v2.9", &format!("v2.{n}"));
            let e = err(&format!("{last}\n{beyond}\n"));
            assert!(e.starts_with("per_task.jsonl:2: ") && e.contains(&format!("{site} has {n} tasks")), "{e}");
        }
    }

    #[test]
    fn large_task_ids_do_not_collide_with_site_or_condition() {
        // 2^24 sets the bit a packed key gave to the condition: it must not read as a duplicate of task 0.
        let big = OK.replace("v2.9", "v2.16777216").replace("tgt-exec", "tgt");
        let zero = OK.replace("v2.9", "v2.0").replace("tgt-exec", "tgt-perc");
        let e = err(&format!("{big}\n{zero}\n"));
        assert!(!e.contains("duplicate"), "{e}");
        assert!(e.starts_with("per_task.jsonl:1: "), "{e}");
    }

    /// Counts the bytes a reader hands out.
    struct Counting<R> {
        inner: R,
        read: u64,
    }

    impl<R: std::io::Read> std::io::Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn a_line_without_end_is_refused_at_the_bound() {
        use std::io::Read;
        let mut src = Counting { inner: std::io::repeat(0).take(8 << 20), read: 0 };
        let e = read(BufReader::new(&mut src), Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero:1: ") && e.contains("longer than 1048576 bytes"), "{e}");
        assert!(src.read < 2 << 20, "read {} bytes of an endless line", src.read);
        // A line just at the bound is read.
        let pad = " ".repeat((1 << 20) - OK.len());
        assert_eq!(parse(&format!("{OK}{pad}\n")).unwrap().len(), 1);
    }

    #[test]
    fn errors_do_not_echo_a_megabyte_of_input() {
        // Nearly a megabyte: the longest value a record line (1 MiB) can hold.
        let big = "x".repeat(1_000_000);
        let cases = [
            OK.replace("\"skill_failures\": 1}", &format!("\"skill_failures\": 1, \"outcome\": \"{big}\"}}")),
            OK.replace("skillshift.gitlab.v2.9", &big),
            OK.replace("tgt-exec", &big),
            OK.replace("\"gitlab\"", &format!("\"{big}\"")),
            OK.replace("\"steps\": 10", &format!("\"steps\": \"{big}\"")),
        ];
        for line in cases {
            let e = err(&line);
            assert!(e.len() < 400, "{} bytes: {}...", e.len(), &e[..200]);
            assert!(e.contains("bytes cut"), "{}...", &e[..e.len().min(300)]);
        }
        let e = err(&OK.replace("\"steps\": 10", &format!("\"steps\": 1{}", "0".repeat(1 << 19))));
        assert!(e.len() < 400, "{} bytes", e.len());
        let mixed = OK.replace("}", &format!(", \"treatment\": \"{big}\"}}"));
        let null = mixed
            .replace("v2.9", "v2.3")
            .replace("\"skill_calls\": 1, \"skill_failures\": 1", "\"skill_calls\": null, \"skill_failures\": null");
        let e = err(&format!("{mixed}\n{null}\n"));
        assert!(e.len() < 400, "{} bytes", e.len());
    }

    #[test]
    fn missing_file_is_one_line() {
        let e = read_file(Path::new("/nonexistent/per_task.jsonl")).unwrap_err().to_string();
        assert!(e.starts_with("cannot read /nonexistent/per_task.jsonl"), "{e}");
    }
}
