//! Client side of the wire shared by workers and control clients: connecting
//! a channel (plain or TLS) and attaching the shared token to every call as
//! `authorization: Bearer <token>`.

use std::path::PathBuf;
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Request, Status};

/// Why a channel could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("coordinator url '{url}': {message}")]
    Url { url: String, message: String },
    #[error("reading CA certificate {path}: {source}")]
    Ca { path: PathBuf, source: std::io::Error },
    #[error("reading client certificate or key {path}: {source}")]
    Identity { path: PathBuf, source: std::io::Error },
    #[error("token: {0}")]
    Token(String),
    #[error("coordinator at {url} is unreachable: {message}")]
    Unreachable { url: String, message: String },
}

/// Adds the bearer token (when there is one) to every request.
#[derive(Clone, Debug, Default)]
pub struct BearerAuth {
    value: Option<MetadataValue<Ascii>>,
}

impl BearerAuth {
    pub fn new(token: Option<&str>) -> Result<BearerAuth, ConnectError> {
        let value = token
            .map(|t| {
                format!("Bearer {t}")
                    .parse::<MetadataValue<Ascii>>()
                    .map_err(|_| ConnectError::Token("the token must be printable ASCII".into()))
            })
            .transpose()?;
        Ok(BearerAuth { value })
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.value {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// A client's TLS settings: the CA it verifies the coordinator against (else
/// the web PKI roots) and, for mutual TLS, its own certificate and key.
#[derive(Debug, Clone, Default)]
pub struct ClientTls {
    pub ca: Option<PathBuf>,
    /// (certificate, key), both PEM.
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl ClientTls {
    pub fn is_set(&self) -> bool {
        self.ca.is_some() || self.identity.is_some()
    }
}

/// Builds an endpoint for `url` (`http://` or `https://`); TLS is used for
/// `https://` or when `tls` names a CA or a client certificate.
pub fn endpoint(url: &str, tls: &ClientTls) -> Result<Endpoint, ConnectError> {
    let bad = |message: String| ConnectError::Url { url: url.to_string(), message };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(bad("expected http://HOST:PORT or https://HOST:PORT".into()));
    }
    let mut ep = Endpoint::from_shared(url.to_string())
        .map_err(|e| bad(e.to_string()))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(20));
    if tls.is_set() || url.starts_with("https://") {
        let mut config = ClientTlsConfig::new();
        if let Some(path) = &tls.ca {
            let pem = std::fs::read(path).map_err(|source| ConnectError::Ca { path: path.clone(), source })?;
            config = config.ca_certificate(Certificate::from_pem(pem));
        } else {
            config = config.with_enabled_roots();
        }
        if let Some((cert, key)) = &tls.identity {
            let read =
                |p: &PathBuf| std::fs::read(p).map_err(|source| ConnectError::Identity { path: p.clone(), source });
            config = config.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        ep = ep.tls_config(config).map_err(|e| bad(e.to_string()))?;
    }
    Ok(ep)
}

/// Connects now, failing with a clear error when nothing answers.
pub async fn connect(url: &str, tls: &ClientTls) -> Result<Channel, ConnectError> {
    let ep = endpoint(url, tls)?;
    ep.connect().await.map_err(|e| {
        let mut message = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            message = format!("{message}: {s}");
            src = s.source();
        }
        ConnectError::Unreachable { url: url.to_string(), message }
    })
}
