//! `skillshift tasks generate`: renders every generated data file from code,
//! deterministically, so a test can assert that regeneration reproduces the
//! committed files byte for byte:
//!
//! * `tasks/<site>.<version>.json` (docs/formats.md#grid-task-files),
//! * `solutions/<site>.<version>.json` (an array indexed by task_id of step arrays),
//! * `skills/example.json` (docs/formats.md#skills, method `example`),
//! * `DIGESTS.json` (image name -> `sha256:` digest).
//!
//! A site whose module has no tasks yet is skipped (and reported), so a
//! half-built workspace never writes empty task files.

use std::path::{Path, PathBuf};

use skillshift_common::skills::{SkillLibrary, SKILLS_SCHEMA};
use skillshift_common::{Site, Version};

/// Why the files could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("cannot serialise {what}: {source}")]
    Json { what: String, source: serde_json::Error },
    #[error("{site} {version}: the module generated {found} tasks, expected {expected}")]
    Count { site: Site, version: Version, found: usize, expected: usize },
}

/// One rendered file: its path relative to the data directory and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    pub path: PathBuf,
    pub content: String,
}

/// What [`render`] produced, and which sites it skipped.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub files: Vec<DataFile>,
    pub skipped: Vec<Site>,
}

fn pretty<T: serde::Serialize>(value: &T, what: &str) -> Result<String, GenerateError> {
    let mut text =
        serde_json::to_string_pretty(value).map_err(|source| GenerateError::Json { what: what.to_string(), source })?;
    text.push('\n');
    Ok(text)
}

/// The solutions file compacts each step to one line, which keeps it readable and diffable.
fn solutions_json(solutions: &[Vec<skillshift_common::skills::Step>], what: &str) -> Result<String, GenerateError> {
    let mut out = String::from("[\n");
    for (i, steps) in solutions.iter().enumerate() {
        out.push_str("  [\n");
        for (j, step) in steps.iter().enumerate() {
            let line =
                serde_json::to_string(step).map_err(|source| GenerateError::Json { what: what.to_string(), source })?;
            out.push_str("    ");
            out.push_str(&line);
            out.push_str(if j + 1 < steps.len() { ",\n" } else { "\n" });
        }
        out.push_str(if i + 1 < solutions.len() { "  ],\n" } else { "  ]\n" });
    }
    out.push_str("]\n");
    Ok(out)
}

/// Renders every data file in memory.
pub fn render() -> Result<Rendered, GenerateError> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut skills = Vec::new();
    for &site in Site::ALL {
        let mut per_version = Vec::new();
        for &version in Version::ALL {
            per_version.push((version, crate::tasks(site, version)));
        }
        if per_version.iter().all(|(_, t)| t.is_empty()) {
            skipped.push(site);
            continue;
        }
        for (version, generated) in per_version {
            if generated.len() != site.n_tasks() {
                return Err(GenerateError::Count { site, version, found: generated.len(), expected: site.n_tasks() });
            }
            let tasks: Vec<_> = generated.iter().map(|g| &g.task).collect();
            let solutions: Vec<_> = generated.iter().map(|g| g.solution.clone()).collect();
            let name = format!("{site}.{version}.json");
            files.push(DataFile { path: Path::new("tasks").join(&name), content: pretty(&tasks, &name)? });
            files.push(DataFile {
                path: Path::new("solutions").join(&name),
                content: solutions_json(&solutions, &name)?,
            });
        }
        skills.extend(crate::skills(site));
    }
    let library = SkillLibrary { schema: SKILLS_SCHEMA.to_string(), method: "example".to_string(), skills };
    files.push(DataFile { path: Path::new("skills").join("example.json"), content: pretty(&library, "skills")? });
    let digests: serde_json::Map<String, serde_json::Value> = crate::digest::all_digests()
        .into_iter()
        .map(|(image, digest)| (image, serde_json::Value::String(digest)))
        .collect();
    files.push(DataFile { path: PathBuf::from("DIGESTS.json"), content: pretty(&digests, "DIGESTS.json")? });
    Ok(Rendered { files, skipped })
}

/// Renders and writes every data file under `out`; returns what was rendered.
pub fn write(out: &Path) -> Result<Rendered, GenerateError> {
    let rendered = render()?;
    for file in &rendered.files {
        let path = out.join(&file.path);
        let io = |source| GenerateError::Io { path: path.display().to_string(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        std::fs::write(&path, &file.content).map_err(io)?;
    }
    Ok(rendered)
}
