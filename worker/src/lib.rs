//! The worker: runs attempts and turns each into a per-task record.
//!
//! The run path, bottom up:
//! * [`preflight`]: the browser and its driver start once before a worker takes work, or it says what is missing.
//! * [`browser`]: supervised chromedriver, one Chromium per slot kept across attempts, a clean tab per attempt.
//! * [`cdp`]: DevTools over the browser's own WebSocket, one multiplexed connection per browser.
//! * [`axtree`]: the observation, Chrome's accessibility tree in WebArena's text form.
//! * [`action`] and [`actions`]: WebArena's action syntax, executed with trusted input events.
//! * [`skill_runtime`] and [`recorder`]: skills on role-and-name locators, and their counts.
//! * [`perturb`]: the perception and execution shifts, injected into every page.
//! * [`scorer`]: WebArena's evaluators at the end of an attempt.
//! * [`sites`]: the site manager seam and its URL backends (env-ctrl containers, external URLs); the
//!   embedded fixture sites are assembled elsewhere (`skillshift_experiment::embedded`).
//! * [`attempt`]: one attempt in rooms: task source, prepare (reset, login, set-up), step (observe/act),
//!   skill call, finish (score, record), and the journal its events go through.
//! * [`network`]: the attempt's network trace (HAR), folded from DevTools' events of every tab.
//! * [`capture`]: the attempt's trajectory as it happens, redacted, with its failure category.
//! * [`executor`]: the seam between running an attempt and asking for it; [`run_executor`] is the real
//!   one, [`attempt`] behind a pool of browsers.
//! * [`agent`] and [`agents`]: the agent seam and its implementations.
//! * [`health`]: `/healthz` and `/readyz` beside `/metrics` for an orchestrator's probes.
//! * [`llm_permit`]: the worker's side of the cluster's LLM budget, a permit per LLM call.
//! * [`groups`]: the process groups of the browsers and external agents, killed at once on an abrupt exit.
//! * [`remote`]: the coordinator client loop, its wire edge, the outbox and the simulated executor.
//!
//! Every task this crate spawns belongs to a `skillshift_taskcenter::TaskCenter`.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod action;
pub mod actions;
pub mod agent;
pub mod agents;
pub mod attempt;
pub mod axtree;
pub mod bench;
pub mod bench_pages;
pub mod browser;
pub mod capture;
pub mod cdp;
pub mod executor;
pub mod floors;
pub mod groups;
pub mod health;
pub mod judge;
pub mod llm_permit;
pub mod network;
pub mod perturb;
pub mod preflight;
pub mod recorder;
pub mod remote;
pub mod run_executor;
pub mod scorer;
pub mod sites;
pub mod skill_runtime;

pub use tokio_util::sync::CancellationToken;
pub mod keyboard;
pub mod tabs;
