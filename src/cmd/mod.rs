//! One module per subcommand. Each has an `Args` (clap) and a
//! `run(Args) -> anyhow::Result<ExitCode>`; an `Err` is printed as one line
//! and exits 2.

pub mod calibrate;
pub mod compare;
pub mod coordinator;
pub mod leaderboard;
pub mod local;
pub mod report;
pub mod run;
pub mod sites;
pub mod sweep;
pub mod tasks;
pub mod worker;
