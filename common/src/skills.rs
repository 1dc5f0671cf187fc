//! Skill libraries, `skillshift.skills/1` (formats §9), and the
//! accessibility-locator steps they are made of. Reference solutions of tasks
//! use the same step vocabulary.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ids::Site;

pub const SKILLS_SCHEMA: &str = "skillshift.skills/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillLibrary {
    pub schema: String,
    pub method: String,
    pub skills: Vec<Skill>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skill {
    pub name: String,
    pub site: Site,
    pub params: Vec<String>,
    pub description: String,
    pub steps: Vec<Step>,
}

/// An accessibility locator: role and accessible name, optionally the `nth`
/// (0-based) of several matches. Without `nth`, several matches is an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub role: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u32>,
}

/// One step of a skill or a reference solution. Strings may hold `{{param}}`
/// placeholders and the site placeholders of formats §2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    Goto {
        url: String,
    },
    Click {
        target: Target,
    },
    Fill {
        target: Target,
        text: String,
    },
    /// Choose an option (by its label) in a combobox / `<select>`.
    Select {
        target: Target,
        option: String,
    },
    Check {
        target: Target,
    },
    Press {
        target: Target,
        key: String,
    },
    Hover {
        target: Target,
    },
    /// Read the text content of the located element; the last value read is
    /// the skill's (or solution's) answer.
    Read {
        target: Target,
    },
    /// End with a literal answer.
    Answer {
        text: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SkillLibraryError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Json { path: String, source: serde_json::Error },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl SkillLibrary {
    pub fn load(path: &Path) -> Result<Self, SkillLibraryError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SkillLibraryError::Io { path: p.clone(), source })?;
        let lib: SkillLibrary =
            serde_json::from_str(&text).map_err(|source| SkillLibraryError::Json { path: p.clone(), source })?;
        lib.check().map_err(|message| SkillLibraryError::Invalid { path: p, message })?;
        Ok(lib)
    }

    /// Checks the schema tag, unique names and that every `{{param}}` is declared.
    pub fn check(&self) -> Result<(), String> {
        if self.schema != SKILLS_SCHEMA {
            return Err(format!("schema is '{}', expected '{SKILLS_SCHEMA}'", self.schema));
        }
        let mut seen = std::collections::HashSet::new();
        for skill in &self.skills {
            if !seen.insert(&skill.name) {
                return Err(format!("skill '{}' is defined twice", skill.name));
            }
            for (i, step) in skill.steps.iter().enumerate() {
                for text in step.texts() {
                    for param in placeholders(text) {
                        if !skill.params.iter().any(|p| p == param) {
                            return Err(format!(
                                "skill '{}' step {i}: placeholder '{{{{{param}}}}}' is not a declared param",
                                skill.name
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }
}

impl Step {
    /// Every string of the step that may hold placeholders.
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Step::Goto { url } => vec![url],
            Step::Click { target } | Step::Check { target } | Step::Hover { target } | Step::Read { target } => {
                vec![&target.name]
            }
            Step::Fill { target, text } => vec![&target.name, text],
            Step::Select { target, option } => vec![&target.name, option],
            Step::Press { target, key } => vec![&target.name, key],
            Step::Answer { text } => vec![text],
        }
    }

    /// The step with `{{param}}` placeholders replaced by `args`.
    pub fn bind(&self, args: &BTreeMap<String, String>) -> Step {
        let sub = |s: &str| substitute(s, args);
        let tgt = |t: &Target| Target { role: t.role.clone(), name: sub(&t.name), nth: t.nth };
        match self {
            Step::Goto { url } => Step::Goto { url: sub(url) },
            Step::Click { target } => Step::Click { target: tgt(target) },
            Step::Fill { target, text } => Step::Fill { target: tgt(target), text: sub(text) },
            Step::Select { target, option } => Step::Select { target: tgt(target), option: sub(option) },
            Step::Check { target } => Step::Check { target: tgt(target) },
            Step::Press { target, key } => Step::Press { target: tgt(target), key: sub(key) },
            Step::Hover { target } => Step::Hover { target: tgt(target) },
            Step::Read { target } => Step::Read { target: tgt(target) },
            Step::Answer { text } => Step::Answer { text: sub(text) },
        }
    }
}

/// The names of the `{{param}}` placeholders in `text`.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        out.push(after[..end].trim());
        rest = &after[end + 2..];
    }
    out
}

/// Replaces every `{{param}}` in `text` with its value; unknown ones stay.
pub fn substitute(text: &str, args: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let key = after[..end].trim();
                match args.get(key) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitute_fills_known_and_keeps_unknown() {
        let args = BTreeMap::from([("project".to_string(), "a11y/web".to_string())]);
        assert_eq!(
            substitute("__GITLAB__/{{project}}/-/issues/{{ id }}", &args),
            "__GITLAB__/a11y/web/-/issues/{{ id }}"
        );
        assert_eq!(placeholders("{{a}} and {{ b }}"), vec!["a", "b"]);
    }

    #[test]
    fn the_formats_example_parses() {
        let text = r#"{"schema": "skillshift.skills/1", "method": "ASI",
 "skills": [{"name": "create_issue", "site": "gitlab", "params": ["project", "title"],
             "description": "Open a new issue in a project",
             "steps": [{"action": "goto", "url": "__GITLAB__/{{project}}/-/issues/new"},
                       {"action": "fill", "target": {"role": "textbox", "name": "Title"}, "text": "{{title}}"},
                       {"action": "click", "target": {"role": "button", "name": "Create issue"}}]}]}"#;
        let lib: SkillLibrary = serde_json::from_str(text).unwrap();
        lib.check().unwrap();
        assert_eq!(lib.skills[0].steps.len(), 3);
    }
}
