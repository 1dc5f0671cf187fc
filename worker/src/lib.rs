//! The worker: runs attempts and turns each into a per-task record.
//!
//! The run path, bottom up:
//! * [`browser`]: supervised chromedriver, one Chromium per slot kept across attempts, a clean tab per attempt.
//! * [`axtree`]: the observation, Chrome's accessibility tree in WebArena's text form.
//! * [`action`] and [`actions`]: WebArena's action syntax, executed with trusted input events.
//! * [`skill_runtime`] and [`recorder`]: skills on role-and-name locators, and their counts.
//! * [`perturb`]: the perception and execution shifts, injected into every page.
//! * [`scorer`]: WebArena's evaluators at the end of an attempt.
//! * [`sites`]: the site manager (embedded fixtures, env-ctrl containers, external URLs).
//! * [`runloop`]: reset, login, observe/act, score, record; [`run_executor`] wraps it as an [`executor::Executor`].
//! * [`agent`] and [`agents`]: the agent seam and its implementations.
//! * [`remote`]: the coordinator client loop, the outbox and the simulated executor.
pub mod action;
pub mod actions;
pub mod agent;
pub mod agents;
pub mod axtree;
pub mod browser;
pub mod executor;
pub mod perturb;
pub mod recorder;
pub mod remote;
pub mod run_executor;
pub mod runloop;
pub mod scorer;
pub mod sites;
pub mod skill_runtime;

pub use tokio_util::sync::CancellationToken;
