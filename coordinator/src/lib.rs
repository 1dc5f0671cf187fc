//! The coordinator: it plans sweeps into run units, leases them to workers
//! that host their site and version, stores every record durably and serves
//! progress and exports to control clients.
//!
//! * [`planner`]: sweep spec -> units, contract and `config_digest`.
//! * [`scheduler`]: the assignment decision, a pure function.
//! * [`lease`]: lease deadlines, renewal, release and re-attachment.
//! * [`limits`]: every bound on what the coordinator is sent, with its default.
//! * [`engine`]: the state machine tying them together (no I/O; the clock
//!   and the id source are passed in).
//! * [`store`]: sled behind one module; group commit.
//! * [`server`]: starts the coordinator, runs the driver loop (group commit,
//!   then effects) and shuts down in order; every task it starts belongs to a
//!   `skillshift_taskcenter::TaskCenter`.
//! * [`service`]: the gRPC services (Worker, Control) and the token check.
//! * [`service_error`]: the one error of every gRPC service and its mapping to `tonic::Status`.
//! * [`wire`]: sweep specs, statuses and worker lists to and from the wire.
//! * [`status`]: what control clients see (sweep progress, the worker list).
//! * [`live`]: the running coordinator as the viewer reads it (the
//!   `skillshift_live::LiveCoordinator` trait), handed to the pages hook.
//! * [`http`]: the HTTP port (`/healthz`, `/api/status`, the HTML page), served
//!   by `skillshift_http`'s bounded server behind its token check.
//! * [`llm_budget`] and [`llm_service`]: the cluster's one LLM budget
//!   (permits per model endpoint, AIMD on 429) and its gRPC service.
//! * [`metrics`]: `/metrics` on the HTTP port (Prometheus text).
//! * [`client`]: the control client used by `skillshift sweep`.
//! * [`upload`]: a session's trajectory chunks put back together and decoded for the store.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod client;
pub mod engine;
pub mod http;
pub mod lease;
pub mod limits;
pub mod live;
pub mod llm_budget;
pub mod llm_service;
pub mod metrics;
pub mod planner;
pub mod scheduler;
pub mod server;
pub mod service;
pub mod service_error;
pub mod status;
pub mod store;
pub mod upload;
pub mod wire;
