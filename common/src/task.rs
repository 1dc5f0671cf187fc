//! Task files in WebArena's config format (formats §2):
//! `data/tasks/<site>.<version>.json`, a JSON array whose element `i` has
//! `task_id == i`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ids::{Site, Version};

/// One task of a task file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub task_id: u32,
    pub sites: Vec<Site>,
    pub require_login: bool,
    pub storage_state: Option<String>,
    pub start_url: String,
    pub geolocation: Option<serde_json::Value>,
    pub intent_template: String,
    pub instantiation_dict: BTreeMap<String, serde_json::Value>,
    pub intent: String,
    pub intent_template_id: u32,
    pub require_reset: bool,
    pub eval: Eval,
}

/// The evaluators of a task; it succeeds when every one in `eval_types` passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Eval {
    pub eval_types: Vec<EvalType>,
    pub reference_answers: Option<ReferenceAnswers>,
    pub reference_url: Option<String>,
    pub program_html: Vec<ProgramHtml>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalType {
    StringMatch,
    UrlMatch,
    ProgramHtml,
}

/// Expected answers for `string_match`; exactly one kind is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceAnswers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_include: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuzzy_match: Option<Vec<String>>,
}

/// A `program_html` check: go to `url` (or stay, for `last`) and evaluate `locator`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramHtml {
    pub url: String,
    /// A JavaScript expression; `""` means the whole page text.
    pub locator: String,
    pub required_contents: RequiredContents,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredContents {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_include: Option<Vec<String>>,
}

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

/// Loads a task file and checks the structural rules: dense ids equal to the
/// index, and the task's `sites` naming `site`.
pub fn load_task_file(path: &Path, site: Site) -> Result<Vec<Task>, TaskFileError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TaskFileError::Io { path: p.clone(), source })?;
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
        if task.sites != [site] {
            return Err(TaskFileError::Task {
                path: p,
                index,
                message: format!("sites is {:?}, expected [\"{site}\"]", task.sites),
            });
        }
    }
    Ok(tasks)
}

impl Task {
    /// Replaces the site placeholder in a URL-bearing string with `base`.
    pub fn resolve_url(url: &str, site: Site, base: &str) -> String {
        url.replace(site.placeholder(), base.trim_end_matches('/'))
    }
}
