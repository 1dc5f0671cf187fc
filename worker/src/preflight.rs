//! Before a worker registers or takes work: its browser and driver start, once, within a deadline.
//! Without them every attempt would end as an `error` in a second and burn its retries, so a
//! worker that cannot start a browser says what is missing and how to install it, and stops.

use std::path::Path;
use std::time::Duration;

use crate::browser::{BrowserConfig, Driver};

/// The command that installs what the browser needs.
pub const INSTALL_HINT: &str =
    "install it with `bash scripts/install-deps.sh` (Debian: `apt-get install -y chromium chromium-driver`)";

/// How long the one real start may take.
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(45);

#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error("no browser: {what} {path} is not installed; {INSTALL_HINT}")]
    Missing { what: &'static str, path: String },
    #[error("the browser does not start: {0}")]
    Start(String),
    #[error("the browser did not start within {0} s")]
    Timeout(u64),
}

fn present(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Checks that `cfg`'s chromedriver and browser exist, then starts them once (a session in a
/// fresh browser context) and closes them again, all within `limit`.
pub async fn check(cfg: &BrowserConfig, limit: Duration) -> Result<(), PreflightError> {
    if !present(&cfg.chromedriver) {
        return Err(PreflightError::Missing { what: "ChromeDriver", path: cfg.chromedriver.display().to_string() });
    }
    if !present(&cfg.chromium) {
        return Err(PreflightError::Missing { what: "Chromium", path: cfg.chromium.display().to_string() });
    }
    let driver = Driver::new(cfg.clone());
    let started = tokio::time::timeout(limit, driver.checkout()).await;
    let result = match started {
        Ok(Ok(session)) => {
            session.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(PreflightError::Start(e.to_string())),
        Err(_) => Err(PreflightError::Timeout(limit.as_secs())),
    };
    driver.shutdown().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_driver_is_named_with_the_install_command() {
        let cfg = BrowserConfig { chromedriver: "/nonexistent/chromedriver".into(), ..BrowserConfig::default() };
        let e = check(&cfg, Duration::from_secs(5)).await.expect_err("refused");
        let line = e.to_string();
        assert!(line.contains("/nonexistent/chromedriver"), "{line}");
        assert!(line.contains("scripts/install-deps.sh"), "{line}");
    }
}
