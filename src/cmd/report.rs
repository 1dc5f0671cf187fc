//! `skillshift report FILE`: the Table 1 shape of one treatment's records
//! (docs/formats.md#summary), as an aligned table, Markdown, JSON or a self-contained HTML page;
//! with `--gates`, readiness under predeclared gates (docs/formats.md#gates).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use skillshift_analysis::gates;
use skillshift_analysis::report::{self, document};

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    Table,
    Markdown,
    Json,
    Html,
}

#[derive(clap::Args)]
pub struct Args {
    /// The records file, per_task.jsonl.
    pub file: PathBuf,
    /// The treatment to report; required when the file holds several.
    #[arg(long)]
    pub treatment: Option<String>,
    /// Output format: table, markdown, json (the summary) or html.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Report even when a site's six cells hold different numbers of task families.
    #[arg(long)]
    pub allow_partial: bool,
    /// Readiness gates (skillshift.gates/1): exit 0 all pass, 1 any fails, 2 some inconclusive.
    #[arg(long, value_name = "GATES.json")]
    pub gates: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A bad gates file is bad input before any record is read.
    let gates = args.gates.as_deref().map(gates::load).transpose()?;
    let mut r = report::build(&args.file, args.treatment.as_deref(), args.allow_partial)?;
    if let Some(g) = &gates {
        r.apply_gates(g);
    }
    let out = match args.format {
        Format::Table => report::text::render(&document(&r)),
        Format::Markdown => report::markdown::render(&document(&r)),
        Format::Html => report::html::render(&document(&r)),
        Format::Json => {
            for n in &r.notes {
                eprintln!("skillshift: note: {n}");
            }
            let mut s = serde_json::to_string_pretty(&r.summary).context("serialising the summary")?;
            s.push('\n');
            s
        }
    };
    super::write_stdout(&out)?;
    Ok(ExitCode::from(r.exit_code()))
}
