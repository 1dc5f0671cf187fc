//! The HTTP pieces the coordinator's `--http` port and `skillshift view` share,
//! so the viewer needs nothing of the coordinator to serve its pages:
//!
//! * [`server`]: the bounded server, [`serve()`] ([`HttpLimits`]: a connection
//!   cap, header and idle timeouts), and [`peer`], the address a request came from.
//! * [`token`]: the token check both ports answer with, as a middleware
//!   ([`require_token`]), and the constant-time comparison ([`token::same`])
//!   the coordinator's gRPC check uses too.
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod server;
pub mod token;

pub use server::{peer, serve, HttpLimits, HEADER_TIMEOUT, IDLE_TIMEOUT, MAX_HTTP_CONNECTIONS};
pub use token::{presents, require_token};
