//! The site manager's errors: a site not hosted or not reset, a sites config
//! that does not read, an env-ctrl server that refused, a `storage_state` file
//! that gives no cookies. Each prints the line a user reads.

#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("{image} is not hosted by this worker")]
    NotHosted { image: String },
    #[error("resetting {image} failed: {message}")]
    Reset { image: String, message: String },
    #[error("sites config {path}: {message}")]
    Config { path: String, message: String },
    #[error("starting the embedded sites: {0}")]
    Serve(String),
    #[error("signing in to {image}: {message}")]
    Login { image: String, message: String },
}

/// A `--reset-policy` (or a sites file's `reset_policy`) that names no policy.
#[derive(Debug, thiserror::Error)]
#[error("unknown reset policy '{0}' (expected before-each, after-mutation or never)")]
pub struct UnknownResetPolicy(pub String);

/// What is wrong with a sites config ([`Remote::new`](super::Remote::new)).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("backend is '{0}', expected env-ctrl or external")]
    Backend(String),
    #[error("sites.{image}: expected an image name like gitlab-v1")]
    Image { image: String },
    #[error("sites.{image}.{field} '{url}' is not an http(s) URL")]
    NotHttp { image: String, field: &'static str, url: String },
    #[error("sites.{image}.reset_command is required by the external backend")]
    NoResetCommand { image: String },
    #[error("http client: {0}")]
    HttpClient(reqwest::Error),
}

/// Why an env-ctrl server did not reset or answer its health route.
#[derive(Debug, thiserror::Error)]
pub enum EnvCtrlError {
    #[error("{method} {url}: {cause}")]
    Request { method: &'static str, url: String, cause: reqwest::Error },
    #[error("POST {url} answered {status}{}", because(.why))]
    Refused { url: String, status: reqwest::StatusCode, why: String },
}

/// `: why`, or nothing when the server gave no reason.
fn because(why: &str) -> String {
    if why.is_empty() {
        String::new()
    } else {
        format!(": {why}")
    }
}

/// Why a Playwright `storage_state` file gives no cookies ([`storage_state_cookies`](super::storage_state_cookies)).
#[derive(Debug, thiserror::Error)]
pub enum StorageStateError {
    #[error("storage_state {path}: {cause}")]
    Read { path: String, cause: std::io::Error },
    #[error("storage_state {path}: {cause}")]
    Json { path: String, cause: serde_json::Error },
    #[error("storage_state {path}: no \"cookies\" array")]
    NoCookies { path: String },
    #[error("storage_state {path}: a cookie without a name or value")]
    Cookie { path: String },
}
