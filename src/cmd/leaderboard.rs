//! `skillshift leaderboard validate FILE...` and `render DIR --out FILE`
//! (docs/formats.md#leaderboard).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::Value;
use skillshift_analysis::leaderboard::{render, validate, Entry};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Check entries (summary JSON files); one line per refusal naming the rule and the value.
    Validate {
        /// Entries to check: summary JSON files (docs/formats.md#leaderboard).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write a static, sortable HTML page of the admissible entries in DIR.
    Render {
        /// A directory of entries (summary JSON files).
        dir: PathBuf,
        /// The HTML page to write.
        #[arg(long)]
        out: PathBuf,
    },
}

/// The entries of one file: a summary object or an array of them.
fn read_entries(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = skillshift_common::bounded::read_to_string(path, skillshift_common::bounded::MAX_FILE_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let v: Value = serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", path.display()))?;
    Ok(match v {
        Value::Array(items) => items,
        other => vec![other],
    })
}

fn label(path: &Path, v: &Value, i: usize, n: usize) -> String {
    let method = v.get("method").and_then(Value::as_str).unwrap_or("?");
    if n > 1 {
        format!("{}[{i}] ({method})", path.display())
    } else {
        format!("{} ({method})", path.display())
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Validate { files } => {
            // Read everything first: unreadable input is exit 2 before any verdict.
            let mut all = Vec::new();
            for f in &files {
                all.push((f, read_entries(f)?));
            }
            let mut refused = false;
            for (f, entries) in &all {
                for (i, e) in entries.iter().enumerate() {
                    let name = label(f, e, i, entries.len());
                    let r = validate(e);
                    if r.is_empty() {
                        super::out!("{name}: accepted");
                    }
                    for x in &r {
                        refused = true;
                        super::out!("{name}: refused: {x}");
                    }
                }
            }
            Ok(if refused { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Render { dir, out } => {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
                .with_context(|| format!("cannot read directory {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            paths.sort();
            let mut entries = Vec::new();
            for p in &paths {
                let values = read_entries(p)?;
                let n = values.len();
                for (i, v) in values.into_iter().enumerate() {
                    let name = label(p, &v, i, n);
                    let r = validate(&v);
                    if r.is_empty() {
                        entries.push(Entry { file: name, value: v });
                    } else {
                        let why: Vec<String> = r.iter().map(ToString::to_string).collect();
                        eprintln!("skillshift: skipped {name}: refused: {}", why.join("; "));
                    }
                }
            }
            std::fs::write(&out, render(&entries)).with_context(|| format!("cannot write {}", out.display()))?;
            let word = if entries.len() == 1 { "entry" } else { "entries" };
            super::out!("wrote {} with {} {word}", out.display(), entries.len());
            Ok(ExitCode::SUCCESS)
        }
    }
}
