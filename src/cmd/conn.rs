//! The connection flags shared by every distributed command.

use std::path::PathBuf;

use skillshift_experiment::settings::Connect;

/// How to reach the coordinator.
#[derive(clap::Args, Clone, Debug)]
pub struct Connection {
    /// Coordinator URL.
    #[arg(long, global = true, env = "SKILLSHIFT_COORDINATOR", default_value = "http://127.0.0.1:50051")]
    pub coordinator: String,
    /// Shared token, sent as `authorization: Bearer <token>`.
    #[arg(long, global = true, env = "SKILLSHIFT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// PEM CA certificate to verify the coordinator's TLS certificate (implies TLS).
    #[arg(long, global = true)]
    pub ca: Option<PathBuf>,
    /// PEM client certificate, for a coordinator that requires mutual TLS (with --tls-key).
    #[arg(long, global = true, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, global = true, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl Connection {
    pub fn settings(&self) -> Connect {
        Connect {
            coordinator: self.coordinator.clone(),
            token: self.token.clone().filter(|t| !t.is_empty()),
            ca: self.ca.clone(),
            identity: self.tls_cert.clone().zip(self.tls_key.clone()),
        }
    }
}
