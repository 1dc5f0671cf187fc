//! The skillshift domain, shared by every other crate.
//!
//! * [`ids`]: sites, versions, conditions and task uids (formats §1).
//! * [`task`]: WebArena-style task files (formats §2).
//! * [`record`]: the per-task record of one attempt (formats §3).
//! * [`skills`]: skill libraries and accessibility-locator steps (formats §9).
//!
//! Nothing here does I/O beyond reading and writing files.

pub mod attempt;
pub mod evaluate;
pub mod ids;
pub mod record;
pub mod skills;
pub mod task;

pub use attempt::AttemptSpec;
pub use ids::{Condition, Site, Uid, Version};
pub use record::{Outcome, Record};
