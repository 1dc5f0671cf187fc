//! `skillshift`: one binary for every subcommand. It parses arguments, sets up
//! logging and hands over to a command module; the logic lives in the
//! workspace's library crates.
//!
//! Exit codes (docs/cli.md#exit-codes): 0 done, 1 a finding, 2 could not do it. Every
//! error ends as one line on stderr.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)
#![warn(clippy::print_stdout)] // command output goes through `cmd::write_stdout`, which a closed pipe does not panic

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "skillshift",
    version,
    about = "Measures whether an LLM web agent's learned skills survive distribution shift"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The embedded default: coordinator, fixture sites and workers on this machine, full grid.
    Local(cmd::local::Args),
    /// Run the coordinator.
    Coordinator(cmd::coordinator::Args),
    /// Run one worker.
    Worker(cmd::worker::Args),
    /// Sweeps on a running coordinator.
    Sweep(cmd::sweep::Args),
    /// Run one attempt and print its trajectory.
    Run(cmd::run::Args),
    /// Turn per_task.jsonl into the Table 1 shape.
    Report(cmd::report::Args),
    /// Compare two treatments or two runs: deltas, intervals and a verdict.
    Compare(cmd::compare::Args),
    /// Grade a deployment against the published anchor.
    Calibrate(cmd::calibrate::Args),
    /// Validate and render leaderboard entries.
    Leaderboard(cmd::leaderboard::Args),
    /// Validate, list and show task files.
    Tasks(cmd::tasks::Args),
    /// Serve the fixture sites.
    Sites(cmd::sites::Args),
    /// Measure the harness's own cost per step on a page.
    Bench(cmd::bench::Args),
    /// Score one task's evaluators against a final state given by hand, with no agent.
    Score(cmd::score::Args),
    /// Serve the trajectory viewer over an export directory.
    View(cmd::view::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors; a bad flag is exit 2, on one line as every refusal.
            if !e.use_stderr() {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            eprintln!("skillshift: {}", flag_error_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Local(a) => cmd::local::run(a),
        Command::Coordinator(a) => cmd::coordinator::run(a),
        Command::Worker(a) => cmd::worker::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Calibrate(a) => cmd::calibrate::run(a),
        Command::Leaderboard(a) => cmd::leaderboard::run(a),
        Command::Tasks(a) => cmd::tasks::run(a),
        Command::Sites(a) => cmd::sites::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Score(a) => cmd::score::run(a),
        Command::View(a) => cmd::view::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("skillshift: error: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// clap's account of a bad flag on one line: its lines joined, less the pointer to `--help`.
fn flag_error_line(rendered: &str) -> String {
    let lines: Vec<&str> =
        rendered.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("For more information")).collect();
    lines.join(" ")
}

/// An error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every flag and argument of every command, nested ones included, that `--help` does not hide.
    fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version");
            if !arg.is_hide_set() && !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                out.push(format!("{path} {}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            undocumented(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_flag_of_every_command_has_a_help_line() {
        let mut missing = Vec::new();
        undocumented(&super::Cli::command(), "skillshift", &mut missing);
        assert!(missing.is_empty(), "flags without a help line:\n{}", missing.join("\n"));
    }
}
