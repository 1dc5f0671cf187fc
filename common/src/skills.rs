//! Skill libraries, `skillshift.skills/1` (docs/formats.md#skills), and the
//! accessibility-locator steps they are made of. Reference solutions of tasks
//! use the same step vocabulary.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bounded::MAX_FILE_BYTES;
use crate::ids::Site;
use crate::text::short;

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
///
/// In a table, `column` and `row` narrow the matches to cells, as Playwright's
/// `get_by_role("row").filter(has_text=...).get_by_role("cell")` does: `column`
/// keeps the elements in the column whose header is named so, `row` those in a
/// row one of whose cells' names contains the text; an empty `name` then
/// matches any name. This reads a value from a table whose cells are named only
/// by their contents (WordPress's list tables).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub role: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<String>,
    /// A regular expression the accessible name must match (searched, not anchored), in place of
    /// `name`, which must then be empty: Playwright's `get_by_role(role, name=re.compile(...))`,
    /// for an element known by the shape of its name ("2 items") rather than the name itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_pattern: Option<String>,
}

impl Target {
    /// Whether the target is narrowed to a table's column or row.
    pub fn in_table(&self) -> bool {
        self.column.is_some() || self.row.is_some()
    }

    /// Every string of the target that may hold placeholders.
    fn texts(&self) -> Vec<&str> {
        let mut out = vec![self.name.as_str()];
        out.extend(self.column.as_deref());
        out.extend(self.row.as_deref());
        out
    }
}

/// One step of a skill or a reference solution. Strings may hold `{{param}}`
/// placeholders and the site placeholders of docs/formats.md#task-files.
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
    /// the skill's (or solution's) answer. With `pattern`, a regular expression, the
    /// answer is its first capture group in the text (the whole match when it has
    /// none), and a text it does not match fails the step: a learned script that
    /// reads the number out of "1 approved comment". With `values`, a text read (after `pattern`)
    /// that is one of its keys is answered as that key's value: what a script learned of how the
    /// screen words a value, as a real WordPress writes a count of zero as "No comments".
    Read {
        target: Target,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        values: Option<std::collections::BTreeMap<String, String>>,
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
    #[error("{path}: {}", crate::text::json_error(.source))]
    Json { path: String, source: serde_json::Error },
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: LibraryProblem },
}

/// What is wrong with a library that reads as one ([`SkillLibrary::check`]); what it echoes is
/// clipped ([`short`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LibraryProblem {
    #[error("schema is '{0}', expected '{SKILLS_SCHEMA}'")]
    Schema(String),
    /// The skill at this 0-based position has a blank name.
    #[error("skill {0} (0-based) has an empty name")]
    EmptyName(usize),
    #[error("skill '{0}' is defined twice")]
    Twice(String),
    #[error("skill '{0}': a param has an empty name")]
    EmptyParam(String),
    /// The 0-based step `step` of the skill is wrong.
    #[error("skill '{skill}' step {step}: {problem}")]
    Step { skill: String, step: usize, problem: StepProblem },
}

/// What is wrong with one step of a skill.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepProblem {
    /// A `read` step's pattern that does not compile (or compiles past the size limit).
    #[error("pattern /{pattern}/: {cause}")]
    Pattern { pattern: String, cause: regex::Error },
    #[error("a target has both name and name_pattern")]
    NameAndPattern,
    #[error("name_pattern /{pattern}/: {cause}")]
    NamePattern { pattern: String, cause: regex::Error },
    /// A `{{` never closed, in this text.
    #[error("'{{{{' without a closing '}}}}' in '{0}'")]
    Unclosed(String),
    /// A `{{ }}` with no name, in this text.
    #[error("empty placeholder '{{{{}}}}' in '{0}'")]
    EmptyPlaceholder(String),
    /// A placeholder naming no param of the skill.
    #[error("placeholder '{{{{{0}}}}}' is not a declared param")]
    Undeclared(String),
}

impl SkillLibrary {
    /// Reads and checks a library of at most [`MAX_FILE_BYTES`] bytes.
    pub fn load(path: &Path) -> Result<Self, SkillLibraryError> {
        let p = path.display().to_string();
        let text = crate::bounded::read_to_string(path, MAX_FILE_BYTES)
            .map_err(|source| SkillLibraryError::Io { path: p.clone(), source })?;
        let lib: SkillLibrary =
            serde_json::from_str(&text).map_err(|source| SkillLibraryError::Json { path: p.clone(), source })?;
        lib.check().map_err(|problem| SkillLibraryError::Invalid { path: p, problem })?;
        Ok(lib)
    }

    /// Checks the schema tag; that every skill has a name, unique in the library, and
    /// named params; and that every step's `{{param}}` is closed, named and declared.
    /// A message names the skill and the step, and clips what it echoes.
    pub fn check(&self) -> Result<(), LibraryProblem> {
        if self.schema != SKILLS_SCHEMA {
            return Err(LibraryProblem::Schema(short(&self.schema).into_owned()));
        }
        let mut seen = std::collections::HashSet::new();
        for (n, skill) in self.skills.iter().enumerate() {
            if skill.name.trim().is_empty() {
                return Err(LibraryProblem::EmptyName(n));
            }
            let name = short(&skill.name);
            if !seen.insert(&skill.name) {
                return Err(LibraryProblem::Twice(name.into_owned()));
            }
            if skill.params.iter().any(|p| p.trim().is_empty()) {
                return Err(LibraryProblem::EmptyParam(name.into_owned()));
            }
            for (i, step) in skill.steps.iter().enumerate() {
                let wrong = |problem| LibraryProblem::Step { skill: name.to_string(), step: i, problem };
                if let Step::Read { pattern: Some(p), .. } = step {
                    // Bounded: a pattern that compiles past the regex crate's size limit is refused too.
                    if let Err(cause) = regex::Regex::new(p) {
                        return Err(wrong(StepProblem::Pattern { pattern: short(p).into_owned(), cause }));
                    }
                }
                if let Some(t) = step.target() {
                    if let Some(p) = &t.name_pattern {
                        if !t.name.is_empty() {
                            return Err(wrong(StepProblem::NameAndPattern));
                        }
                        if let Err(cause) = regex::Regex::new(p) {
                            return Err(wrong(StepProblem::NamePattern { pattern: short(p).into_owned(), cause }));
                        }
                    }
                }
                for text in step.texts() {
                    for param in scan(text).map_err(wrong)? {
                        if !skill.params.iter().any(|p| p == param) {
                            return Err(wrong(StepProblem::Undeclared(short(param).into_owned())));
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

/// The `{{param}}` names of a step's text, or why its placeholders are malformed:
/// a `{{` never closed, or `{{ }}` with no name.
fn scan(text: &str) -> Result<Vec<&str>, StepProblem> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(StepProblem::Unclosed(short(text).into_owned()));
        };
        let name = after[..end].trim();
        if name.is_empty() {
            return Err(StepProblem::EmptyPlaceholder(short(text).into_owned()));
        }
        out.push(name);
        rest = &after[end + 2..];
    }
    Ok(out)
}

impl Step {
    /// The step's target, when it has one.
    pub fn target(&self) -> Option<&Target> {
        match self {
            Step::Click { target }
            | Step::Check { target }
            | Step::Hover { target }
            | Step::Read { target, .. }
            | Step::Fill { target, .. }
            | Step::Select { target, .. }
            | Step::Press { target, .. } => Some(target),
            Step::Goto { .. } | Step::Answer { .. } => None,
        }
    }

    /// Every string of the step that may hold placeholders.
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Step::Goto { url } => vec![url],
            Step::Click { target } | Step::Check { target } | Step::Hover { target } | Step::Read { target, .. } => {
                target.texts()
            }
            Step::Fill { target, text } => [target.texts(), vec![text.as_str()]].concat(),
            Step::Select { target, option } => [target.texts(), vec![option.as_str()]].concat(),
            Step::Press { target, key } => [target.texts(), vec![key.as_str()]].concat(),
            Step::Answer { text } => vec![text],
        }
    }

    /// The step with `{{param}}` placeholders replaced by `args`.
    pub fn bind(&self, args: &BTreeMap<String, String>) -> Step {
        let sub = |s: &str| substitute(s, args);
        let tgt = |t: &Target| Target {
            role: t.role.clone(),
            name: sub(&t.name),
            nth: t.nth,
            column: t.column.as_deref().map(sub),
            row: t.row.as_deref().map(sub),
            name_pattern: t.name_pattern.clone(),
        };
        match self {
            Step::Goto { url } => Step::Goto { url: sub(url) },
            Step::Click { target } => Step::Click { target: tgt(target) },
            Step::Fill { target, text } => Step::Fill { target: tgt(target), text: sub(text) },
            Step::Select { target, option } => Step::Select { target: tgt(target), option: sub(option) },
            Step::Check { target } => Step::Check { target: tgt(target) },
            Step::Press { target, key } => Step::Press { target: tgt(target), key: sub(key) },
            Step::Hover { target } => Step::Hover { target: tgt(target) },
            Step::Read { target, pattern, values } => {
                Step::Read { target: tgt(target), pattern: pattern.clone(), values: values.clone() }
            }
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

    fn library(name: &str, url: &str) -> SkillLibrary {
        SkillLibrary {
            schema: SKILLS_SCHEMA.to_string(),
            method: "m".to_string(),
            skills: vec![Skill {
                name: name.to_string(),
                site: Site::Gitlab,
                params: vec!["project".to_string()],
                description: "d".to_string(),
                steps: vec![
                    Step::Click {
                        target: Target {
                            role: "link".into(),
                            name: "Issues".into(),
                            nth: None,
                            column: None,
                            row: None,
                            name_pattern: None,
                        },
                    },
                    Step::Goto { url: url.to_string() },
                ],
            }],
        }
    }

    #[test]
    fn an_empty_name_and_an_unclosed_placeholder_are_refused() {
        assert_eq!(library("open", "__GITLAB__/{{project}}").check(), Ok(()));
        let e = library("", "__GITLAB__/{{project}}").check().unwrap_err().to_string();
        assert!(e.contains("skill 0") && e.contains("empty name"), "{e}");
        let e = library(" ", "__GITLAB__/{{project}}").check().unwrap_err().to_string();
        assert!(e.contains("empty name"), "{e}");
        let e = library("open", "__GITLAB__/{{project").check().unwrap_err().to_string();
        assert_eq!(e, "skill 'open' step 1: '{{' without a closing '}}' in '__GITLAB__/{{project'");
        let e = library("open", "__GITLAB__/{{}}").check().unwrap_err().to_string();
        assert!(e.contains("skill 'open' step 1") && e.contains("empty placeholder"), "{e}");
    }

    #[test]
    fn errors_do_not_echo_a_megabyte_of_input() {
        let big = "n".repeat(1 << 20);
        let mut lib = library(&big, "__GITLAB__/{{project}}");
        lib.skills.push(lib.skills[0].clone());
        let e = lib.check().unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("bytes cut"), "{} bytes", e.len());
        let e = library("open", &format!("{{{{{big}}}}}")).check().unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("bytes cut"), "{} bytes", e.len());
        let e = library("open", &format!("{{{{{big}")).check().unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("bytes cut"), "{} bytes", e.len());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.json");
        std::fs::write(
            &path,
            format!(r#"{{"schema": "skillshift.skills/1", "method": "m", "{big}": 1, "skills": []}}"#),
        )
        .unwrap();
        let e = SkillLibrary::load(&path).unwrap_err().to_string();
        assert!(e.len() < 400 && e.contains("bytes cut"), "{} bytes", e.len());
    }

    #[test]
    fn the_shipped_libraries_pass_the_check() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/skills");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|x| x == "json") {
                let lib = SkillLibrary::load(&path).unwrap_or_else(|e| panic!("{e}"));
                assert!(!lib.skills.is_empty(), "{}", path.display());
            }
        }
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
