//! skillshift's gRPC protocol, generated from `proto/skillshift.proto`.
//!
//! Only the coordinator's and the worker's edge modules use these types; they
//! convert to and from the domain types of `skillshift-common` at once, with
//! [`convert`].
//!
//! * [`v1`]: the generated messages and the Worker and Control services.
//! * [`channel`]: client channels (URL, TLS, bearer token) to the coordinator.
//! * [`convert`]: wire <-> domain conversions shared by both sides.
//! * [`chunks`]: blobs (trajectories) cut into bounded chunks and put back together.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

/// Package `skillshift.v1`: the Worker and Control services.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod v1 {
    tonic::include_proto!("skillshift.v1");
}

pub mod channel;
pub mod chunks;
pub mod convert;

pub use v1::*;
