//! The skillshift domain, shared by every other crate.
//!
//! * [`ids`]: sites, versions, conditions and task uids (formats §1).
//! * [`task`]: tasks in WebArena's config format: any WebArena config, and the grid's own files.
//! * [`evaluate`]: WebArena's evaluators, exactly (shared by the worker's scorer and the sites' checker).
//! * [`record`]: the per-task record of one attempt (formats §3).
//! * [`records`], [`outcome`], [`metrics`], [`ledger`], [`reliability`], [`summary`], [`report`]: the
//!   analysis core, from `per_task.jsonl` to the Table 1 shape (formats §3-5).
//! * [`skills`]: skill libraries and accessibility-locator steps (formats §9).
//!
//! Nothing here does I/O beyond reading and writing files.

pub mod attempt;
pub mod calibration;
pub mod compare;
pub mod evaluate;
pub mod html;
pub mod ids;
pub mod leaderboard;
pub mod ledger;
pub mod metrics;
pub mod outcome;
pub mod record;
pub mod records;
pub mod reliability;
pub mod report;
pub mod skills;
pub mod summary;
pub mod synth;
pub mod table1;
pub mod task;

pub use attempt::AttemptSpec;
pub use ids::{Condition, Site, Uid, Version};
pub use record::{Outcome, Record};
