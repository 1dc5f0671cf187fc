//! One module per subcommand. Each has an `Args` (clap) and a
//! `run(Args) -> anyhow::Result<ExitCode>` that turns the flags into the
//! libraries' settings and calls them; an `Err` is printed as one line and
//! exits 2.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod conn;
pub mod coordinator;
pub mod flags;
pub mod leaderboard;
pub mod local;
pub mod report;
pub mod run;
pub mod score;
pub mod sites;
pub mod sweep;
pub mod tasks;
pub mod worker;

pub mod view;

/// Set once stdout's reader has gone: every later write is dropped unattempted.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The one writer of command output: every command prints through it (or [`print_line`], [`out!`]), never
/// with `print!`, which panics on a closed pipe. A closed pipe (`| head`) is not an error: the output ends
/// quietly, the rest is dropped and the command's own exit code stands; any other write error is one.
pub fn write_stdout(s: &str) -> anyhow::Result<ExitCode> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(s.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(e).context("writing to stdout"),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

/// `println!` for command output: one line through [`print_line`], so a closed pipe (`| head -1`) ends the
/// output quietly instead of panicking; `?`s any other write error. (`println!` is refused in this crate by
/// `clippy::print_stdout`.)
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cmd::print_line(&format!($($arg)*))?
    };
}
pub(crate) use out;

/// One line on stdout, as [`write_stdout`] writes.
pub fn print_line(line: &str) -> anyhow::Result<()> {
    write_stdout(&format!("{line}\n")).map(|_| ())
}
