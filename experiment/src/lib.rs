//! The experiment: build a sweep from a data directory, run it (on a cluster
//! or in this process), follow it, export it and calibrate against the
//! anchor. The binary's commands turn flags into these settings and call in
//! here; tests call in here directly.
//!
//! * [`settings`]: validated settings, free of any CLI crate (connection, sweep).
//! * [`spec`]: the sweep spec from a data directory (library, families, profile, digests).
//! * [`export`]: `per_task.jsonl` and `contract.json` from a coordinator.
//! * [`follow`]: following a sweep to its end, retrying on the error's kind, never its text.
//! * [`progress`]: the terminal view of a running sweep.
//! * [`audit`]: `skillshift tasks audit`, every task's reference and doing nothing in real Chromium.
//! * [`attempt`]: `skillshift run`, one attempt by hand with its trajectory shown.
//! * [`calibration`]: the calibration run and its grading.
//! * [`webarena`]: `skillshift run --tasks`, one task of any WebArena config file against given sites.
//! * [`score`]: `skillshift score`, one task's evaluators on a final state given by hand.
//! * [`errors`]: why attempts errored, the most frequent details counted, for the end of a sweep.
//! * [`embedded`]: the fixture sites served in-process, as a site manager and task source.
//! * [`workers`]: the one worker builder, used by `worker`, `local` and `run`.
//! * [`local`]: `skillshift local`'s in-process cluster.
//! * [`reuse`]: baseline reuse, an earlier run's records standing in for a treatment.
//! * [`signals`]: Ctrl-C and SIGTERM to a cancellation token.
//!
//! This is the top layer of the workspace, so it reports errors with `anyhow`, as
//! the binary does.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod attempt;
pub mod audit;
pub mod calibration;
pub mod embedded;
pub mod errors;
pub mod export;
pub mod follow;
pub mod local;
pub mod progress;
pub mod real;
pub mod reuse;
pub mod score;
pub mod settings;
pub mod signals;
pub mod spec;
pub mod webarena;
pub mod workers;
