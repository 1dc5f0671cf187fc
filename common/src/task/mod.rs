//! Tasks in WebArena's config format (see `docs/formats.md` and `docs/webarena.md`).
//!
//! [`Task`] holds every field WebArena's configs carry, so any WebArena
//! config (`config_files/<n>.json`, one object, or `test.raw.json`, an
//! array) loads as it is: several sites per task, ids as given, notes,
//! `prep_actions`, `fuzzy_match: "N/A"`. [`validate`] reports per file and
//! per task what could not be loaded or scored. The grid's own files,
//! `data/tasks/<site>.<version>.json`, load through [`load_task_file`], which
//! adds the grid's rules: dense ids equal to the index, one site.
//! [`site`] names the sites and their URL placeholders. WebArena-Verified's
//! tasks (`webarena-verified.json`: `start_urls`, `revision`, `eval` a list
//! of evaluators) load too, into the same model, their evaluators in
//! `eval.verified` ([`verified`]). [`check`] classifies a `program_html`
//! check's URL and locator once, as the task is read.

pub mod check;
pub mod site;
pub mod validate;
pub mod verified;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::{Site, Version};
pub use check::{CheckError, CheckUrl, Classified, Locator};
pub use site::{SiteBases, SiteKey};

/// One task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub task_id: u32,
    pub sites: Vec<SiteKey>,
    pub require_login: bool,
    pub storage_state: Option<String>,
    /// One URL, or several joined with ` |AND| ` (one tab each).
    pub start_url: String,
    pub geolocation: Option<serde_json::Value>,
    pub intent_template: String,
    pub instantiation_dict: BTreeMap<String, serde_json::Value>,
    pub intent: String,
    pub intent_template_id: u32,
    pub require_reset: bool,
    pub eval: Eval,
    /// A note one WebArena config carries at the top level instead of in `eval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string_note: Option<String>,
}

/// The evaluators of a task; it succeeds when every one in `eval_types` passes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Eval {
    pub eval_types: Vec<EvalType>,
    #[serde(default)]
    pub reference_answers: Option<ReferenceAnswers>,
    #[serde(default)]
    pub reference_url: Option<String>,
    #[serde(default)]
    pub program_html: Vec<ProgramHtml>,
    /// The URL matching rule; WebArena knows only `"GOLD in PRED"`, its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_note: Option<String>,
    /// Why the task is unachievable, for `fuzzy_match: "N/A"` (what the judge compares with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string_note: Option<String>,
    /// The annotator's raw answer (informative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_answer_raw_annotation: Option<String>,
    /// An annotator's note (informative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_note: Option<String>,
    /// A WebArena-Verified task's revision and evaluators (`eval_types` is then empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<verified::Verified>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalType {
    StringMatch,
    UrlMatch,
    ProgramHtml,
}

impl From<EvalType> for crate::score::EvaluatorKind {
    fn from(t: EvalType) -> Self {
        match t {
            EvalType::StringMatch => crate::score::EvaluatorKind::StringMatch,
            EvalType::UrlMatch => crate::score::EvaluatorKind::UrlMatch,
            EvalType::ProgramHtml => crate::score::EvaluatorKind::ProgramHtml,
        }
    }
}

/// Expected answers for `string_match`; every approach present must pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceAnswers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_include: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuzzy_match: Option<FuzzyMatch>,
}

/// `fuzzy_match`: `"N/A"` (the task is unachievable) or answers a judge compares with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FuzzyMatch {
    Unachievable,
    References(Vec<String>),
}

impl Serialize for FuzzyMatch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FuzzyMatch::Unachievable => s.serialize_str("N/A"),
            FuzzyMatch::References(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for FuzzyMatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            List(Vec<String>),
        }
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom("expected \"N/A\" or a list of strings"))? {
            Raw::Text(t) if t == "N/A" => Ok(FuzzyMatch::Unachievable),
            Raw::Text(t) => {
                Err(serde::de::Error::custom(format!("is the string {t:?}; only \"N/A\" or a list is scored")))
            }
            Raw::List(v) => Ok(FuzzyMatch::References(v)),
        }
    }
}

/// A `program_html` check: go to `url` (or stay, for `last`) and read `locator`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramHtml {
    /// A URL, `last`, or `func:<helper>(...)`.
    pub url: Classified<CheckUrl>,
    /// `''` for the page's HTML source, a `document.` expression, or `func:<helper>(...)`.
    pub locator: Classified<Locator>,
    pub required_contents: RequiredContents,
    /// Expressions run in the page before a `document.` locator is read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prep_actions: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredContents {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_include: Option<Vec<String>>,
}

/// The separator of several start URLs.
pub const AND: &str = " |AND| ";

/// The one matching rule WebArena knows (`eval.url_note`).
pub const GOLD_IN_PRED: &str = "GOLD in PRED";

/// Why a task file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TaskFileError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Json { path: String, source: serde_json::Error },
    #[error("{path}: task at index {index}: {message}")]
    Task { path: String, index: usize, message: String },
}

/// The path of a task file under `data_dir`, e.g. `data/tasks/gitlab.v1.json`.
pub fn task_file_path(data_dir: &Path, site: Site, version: Version) -> std::path::PathBuf {
    data_dir.join("tasks").join(format!("{site}.{version}.json"))
}

/// The task file a site-version runs from: on a real instance (`real`), the tasks adapted to the
/// real application, `tasks/real/<site>.<version>.json`, when `data_dir` has that file (the fixture's
/// tasks with the evaluators that hold on the real pages, `docs/real-sites.md`); else
/// [`task_file_path`].
pub fn task_file_path_on(data_dir: &Path, site: Site, version: Version, real: bool) -> std::path::PathBuf {
    let adapted = data_dir.join("tasks").join("real").join(format!("{site}.{version}.json"));
    if real && adapted.exists() {
        adapted
    } else {
        task_file_path(data_dir, site, version)
    }
}

/// Loads a grid task file and checks the grid's structural rules: dense ids
/// equal to the index, and the task's `sites` naming `site` alone.
pub fn load_task_file(path: &Path, site: Site) -> Result<Vec<Task>, TaskFileError> {
    let p = path.display().to_string();
    let text = crate::bounded::read_to_string(path, crate::bounded::MAX_FILE_BYTES)
        .map_err(|source| TaskFileError::Io { path: p.clone(), source })?;
    let tasks: Vec<Task> =
        serde_json::from_str(&text).map_err(|source| TaskFileError::Json { path: p.clone(), source })?;
    for (index, task) in tasks.iter().enumerate() {
        if task.task_id as usize != index {
            return Err(TaskFileError::Task {
                path: p,
                index,
                message: format!("task_id is {}, expected {index}", task.task_id),
            });
        }
        if task.sites != [SiteKey::from(site)] {
            return Err(TaskFileError::Task {
                path: p,
                index,
                message: format!("sites is {:?}, expected [\"{site}\"]", task.sites),
            });
        }
    }
    Ok(tasks)
}

/// Loads every task of any WebArena config file (one object or an array),
/// refusing the file if any task does not load; [`validate::validate_file`]
/// reports per task instead.
pub fn load_any(path: &Path) -> Result<Vec<Task>, TaskFileError> {
    let report = validate::validate_file(path)?;
    match report.problems.first() {
        None => Ok(report.into_tasks()),
        Some(p) => Err(TaskFileError::Task {
            path: path.display().to_string(),
            index: p.index,
            message: format!("{}: {}", p.field, p.message),
        }),
    }
}

impl Task {
    /// Replaces the site placeholder in a URL-bearing string with `base`.
    pub fn resolve_url(url: &str, site: Site, base: &str) -> String {
        url.replace(site.placeholder(), base.trim_end_matches('/'))
    }

    /// This task with `f` applied to every string it holds (keys excepted),
    /// as WebArena replaces placeholders across the whole config text.
    pub fn map_strings(&self, f: &dyn Fn(&str) -> String) -> Task {
        fn walk(v: &mut serde_json::Value, f: &dyn Fn(&str) -> String) {
            match v {
                serde_json::Value::String(s) => *s = f(s),
                serde_json::Value::Array(items) => items.iter_mut().for_each(|i| walk(i, f)),
                serde_json::Value::Object(map) => map.values_mut().for_each(|i| walk(i, f)),
                _ => {}
            }
        }
        let Ok(mut value) = serde_json::to_value(self) else { return self.clone() };
        // WebArena-Verified's evaluators keep their placeholders: they render and derender URLs themselves.
        let verified = value.get_mut("eval").and_then(|e| e.as_object_mut()).and_then(|e| e.remove("verified"));
        walk(&mut value, f);
        if let (Some(v), Some(e)) = (verified, value.get_mut("eval").and_then(|e| e.as_object_mut())) {
            e.insert("verified".to_string(), v);
        }
        // Sites are the one string field whose value is not free text: keep them.
        match serde_json::from_value::<Task>(value) {
            Ok(mut t) => {
                t.sites = self.sites.clone();
                t
            }
            Err(_) => self.clone(),
        }
    }

    /// This task with its placeholders resolved against `bases`.
    pub fn resolved(&self, bases: &SiteBases) -> Task {
        self.map_strings(&|s| bases.replace(s))
    }

    /// The start URLs (` |AND| ` separates several).
    pub fn start_urls(&self) -> Vec<&str> {
        self.start_url.split(AND).collect()
    }

    /// The task's `string_note`, wherever the config put it.
    pub fn string_note(&self) -> Option<&str> {
        self.eval.string_note.as_deref().or(self.string_note.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_tasks_round_trip_without_new_fields() {
        let json = r#"{"task_id":0,"sites":["gitlab"],"require_login":true,"storage_state":null,"start_url":"__GITLAB__","geolocation":null,"intent_template":"t","instantiation_dict":{},"intent":"i","intent_template_id":0,"require_reset":false,"eval":{"eval_types":["string_match"],"reference_answers":{"exact_match":"7"},"reference_url":null,"program_html":[]}}"#;
        let t: Task = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), json);
    }

    #[test]
    fn fuzzy_match_is_na_or_a_list() {
        let r: ReferenceAnswers = serde_json::from_str(r#"{"fuzzy_match":"N/A"}"#).unwrap();
        assert_eq!(r.fuzzy_match, Some(FuzzyMatch::Unachievable));
        assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"fuzzy_match":"N/A"}"#);
        let e = serde_json::from_str::<ReferenceAnswers>(r#"{"fuzzy_match":"maybe"}"#).unwrap_err();
        assert!(e.to_string().contains("only \"N/A\""), "{e}");
    }
}
