//! The worker: runs attempts and turns each into a per-task record.
//!
//! * [`executor`]: the seam between the run path and the gRPC client loop.
pub mod action;
pub mod agent;
pub mod executor;
