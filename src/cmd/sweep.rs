//! `skillshift sweep start|status|watch|list|cancel|resume|export`: sweeps on a
//! running coordinator (docs/cli.md#sweep). The work is `skillshift_experiment`'s.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use skillshift_common::ids::SweepId;
use skillshift_coordinator::status::SweepState;
use skillshift_experiment::errors::ErrorSummary;
use skillshift_experiment::{export, follow, progress, reuse, spec};

use super::conn::Connection;
use super::flags::SweepArgs;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub conn: Connection,
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process; boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(clap::Subcommand)]
pub enum Command {
    /// Submit a sweep; prints its id alone.
    Start(StartArgs),
    /// One status snapshot.
    Status {
        /// The sweep's id (`sw-...`).
        id: SweepId,
        /// {"id","state","units":{...},"attempts":{...}}
        #[arg(long)]
        json: bool,
    },
    /// Live progress of the 18 cells until done (exit 0) or cancelled (exit 1).
    Watch {
        /// The sweep's id (`sw-...`), as `sweep start` printed it.
        id: SweepId,
    },
    /// Every sweep the coordinator knows.
    List,
    /// Stop assigning a sweep's units and cancel its running attempts.
    Cancel {
        /// The sweep's id (`sw-...`).
        id: SweepId,
    },
    /// Resume a cancelled sweep.
    Resume {
        /// The sweep's id (`sw-...`).
        id: SweepId,
    },
    /// Write per_task.jsonl (every attempt) and contract.json beside it.
    Export {
        /// The sweep's id (`sw-...`).
        id: SweepId,
        /// Where to write per_task.jsonl; contract.json and trajectories/ go beside it.
        #[arg(long, default_value = "per_task.jsonl")]
        out: PathBuf,
        /// The earlier run `sweep start --reuse-baseline` named: its records of the treatments this sweep did
        /// not run are appended, after the same contract check.
        #[arg(long, value_name = "FILE")]
        reuse_baseline: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// A sweep for `worker --simulate` workers, whose records are made up (load tests, demos): its contract
    /// says `simulated` and only simulated workers take its units; without it only real workers do.
    #[arg(long)]
    pub simulated: bool,
}

/// Exit code of a finished watch: 0 done, 1 cancelled.
fn final_code(state: SweepState) -> ExitCode {
    if follow::finished_ok(state) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let conn = args.conn.settings();
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        match args.command {
            Command::Start(s) => {
                let settings = s.sweep.settings(s.simulated)?;
                spec::check_families_in_sites(&settings)?;
                let planned = spec::build(&settings)?;
                let spec = match &settings.reuse_baseline {
                    Some(path) => {
                        let b = reuse::for_spec(path, &planned)?;
                        eprintln!("{}", b.describe());
                        b.remaining(&planned)?
                    }
                    None => planned,
                };
                let id = conn.client().await?.submit(&spec).await?;
                if let Some(path) = &settings.reuse_baseline {
                    eprintln!(
                        "export with: skillshift sweep export {id} --out FILE --reuse-baseline {}",
                        path.display()
                    );
                }
                super::print_line(id.as_str())?;
            }
            Command::Status { id, json } => {
                let mut client = conn.client().await?;
                let st = client.get(&id).await?;
                let workers = client.workers().await?;
                let unavailable: Vec<_> = workers.iter().filter(|w| w.unavailable.is_some()).collect();
                if json {
                    let mut v = st.to_json();
                    if let (false, Some(obj)) = (unavailable.is_empty(), v.as_object_mut()) {
                        let list: Vec<serde_json::Value> = unavailable
                            .iter()
                            .map(|w| serde_json::json!({"id": w.id, "name": w.name, "unavailable": w.unavailable}))
                            .collect();
                        obj.insert("workers_unavailable".into(), list.into());
                    }
                    super::print_line(&v.to_string())?;
                } else {
                    super::print_line(&follow::one_line(&st))?;
                    for line in ErrorSummary::of_status(&st).lines() {
                        super::print_line(&line)?;
                    }
                    for w in unavailable {
                        super::print_line(&format!(
                            "worker {} ({}) takes no work: {}",
                            w.name,
                            w.id,
                            w.unavailable.as_deref().unwrap_or("")
                        ))?;
                    }
                }
            }
            Command::Watch { id } => {
                let st = follow::follow(&conn, &id, progress::interactive()).await?;
                let errors = ErrorSummary::of_status(&st);
                if errors.failing() {
                    // First, so a sweep that measured (almost) nothing cannot be mistaken for a result.
                    for line in errors.lines() {
                        eprintln!("skillshift: {line}");
                    }
                    super::print_line(&follow::one_line(&st))?;
                    return Ok(ExitCode::from(1));
                }
                super::print_line(&follow::one_line(&st))?;
                for line in errors.lines() {
                    eprintln!("{line}");
                }
                return Ok(final_code(st.state));
            }
            Command::List => {
                for st in conn.client().await?.list().await? {
                    super::print_line(&follow::one_line(&st))?;
                }
            }
            Command::Cancel { id } => super::print_line(&follow::one_line(&conn.client().await?.cancel(&id).await?))?,
            Command::Resume { id } => {
                let st = conn.client().await?.resume(&id).await?;
                if let (SweepState::Cancelled, Some(reason)) = (st.state, &st.stopped) {
                    bail!("sweep {id} cannot resume: {reason}");
                }
                super::print_line(&follow::one_line(&st))?;
            }
            Command::Export { id, out, reuse_baseline } => {
                let mut client = conn.client().await?;
                let mut n = export::export(&mut client, &id, &out).await?;
                if let Some(path) = &reuse_baseline {
                    let contract = export::read_contract(&out)?;
                    let b = reuse::for_export(path, &contract)?;
                    n += reuse::merge(&out, &b)?;
                    eprintln!("{}", b.describe());
                }
                eprintln!("wrote {n} records to {} and {}", out.display(), export::contract_path(&out).display());
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}
