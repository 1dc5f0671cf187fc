//! The skillshift domain, shared by every other crate: what a task, an
//! attempt and its record are. Nothing here does I/O beyond reading files.
//!
//! * [`ids`]: sites, versions, conditions, task uids and families (docs/formats.md#identifiers); sweep
//!   ids and attempt keys.
//! * [`task`]: tasks in WebArena's config format: any WebArena config loads as-is, the grid's own
//!   files add their rules; per-task validation reports (docs/webarena.md).
//! * [`evaluate`]: WebArena's evaluators, exactly, over a final state and a page reader, shared by
//!   the browser scorer and the fixture sites' HTTP checker (docs/webarena.md).
//! * [`record`]: the per-task record of one attempt, stamped from its spec (docs/formats.md#records).
//! * [`error_reason`]: why an `error` record measured nothing (`task_timeout`, `browser`, ...).
//! * [`attempt`]: the attempt spec, what a worker is asked to run.
//! * [`skills`]: skill libraries and accessibility-locator steps (docs/formats.md#skills).
//! * [`html`]: the one HTML escaper.
//! * [`text`]: input echoed in error messages, clipped to one short line.
//! * [`bounded`]: reading whole files and lines with a stated bound on their size.
//! * [`har`]: an attempt's network trace as a HAR 1.2 document (the trajectory's `network` part).
//! * [`trajectory`]: an attempt's steps and the scorer's evidence (docs/formats.md#trajectories).
//! * [`perturbation`]: the perturbations on a page the agent saw, and the phrase a trajectory step
//!   carries for each.
//! * [`score`]: the scorer's words as the evidence carries them: a verdict and an evaluator's kind.
//! * [`failure`]: a non-success attempt's failure category, from its outcome and trajectory.
//! * [`blob`]: a trajectory with its screenshots, compressed, as the outbox, the wire and exports carry it.
//!
//! Reading whole record files and turning them into numbers is the `skillshift-analysis` crate.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod attempt;
pub mod bounded;
pub mod error_reason;
pub mod evaluate;
pub mod har;
pub mod html;
pub mod ids;
pub mod perturbation;
pub mod record;
pub mod score;
pub mod skills;
pub mod task;
pub mod text;
pub mod trajectory;

pub use attempt::AttemptSpec;
pub use error_reason::ErrorReason;
pub use ids::{Condition, Site, Uid, Version};
pub use record::{Outcome, Record};

pub mod blob;
pub mod failure;
