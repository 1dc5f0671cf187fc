//! The browser's errors: [`BrowserError`], and the [`Fault`] each WebDriver or DevTools error
//! carries, decided once where the error is made ([`Fault::of_message`], the webdriver room's
//! `cmd_error`), so no caller reads an error's text to tell a lost browser from a failed command.
//! Also [`deadline`], which every call of the browser runs under.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("chromedriver: {0}")]
    Driver(String),
    #[error("browser session: {0}")]
    Session(String),
    #[error("{what} did not answer within {ms} ms")]
    Timeout { what: String, ms: u128 },
    #[error("browser connection lost: {0}")]
    Lost(String),
    #[error("devtools {cmd}: {message}")]
    Cdp { cmd: String, message: String, fault: Fault },
    #[error("webdriver: {message}")]
    WebDriver { message: String, fault: Fault },
    #[error("navigation to {url} failed: {message}")]
    Navigation { url: String, message: String },
}

/// What a WebDriver or DevTools error says about the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The browser, its session or the tab driven is gone or unreachable: the attempt cannot go on.
    Gone,
    /// Only the command failed; the browser is fine.
    Command,
}

/// What chromedriver and Chrome say when the browser, the session or the tab is gone. Neither
/// protocol gives these a kind of their own (chromedriver reports a lost Chrome as an `unknown
/// error`, DevTools every failure as the same code), so their words are read here, once.
const GONE: &[&str] = &[
    "invalid session id",
    "chrome not reachable",
    "disconnected",
    "session deleted",
    "target window already closed",
    "session with given id not found",
    "target closed",
];

impl Fault {
    /// The fault a protocol's error message `m` reports.
    pub fn of_message(m: &str) -> Fault {
        let m = m.to_ascii_lowercase();
        if GONE.iter().any(|s| m.contains(s)) {
            Fault::Gone
        } else {
            Fault::Command
        }
    }
}

impl BrowserError {
    /// A DevTools command `cmd` failed with `message` (its fault read from the message).
    pub fn cdp(cmd: impl Into<String>, message: impl Into<String>) -> BrowserError {
        let message = message.into();
        BrowserError::Cdp { cmd: cmd.into(), fault: Fault::of_message(&message), message }
    }

    /// True when the browser itself is gone or unresponsive: the attempt cannot
    /// go on and is recorded as `error` / `browser`.
    pub fn is_fatal(&self) -> bool {
        match self {
            BrowserError::Driver(_)
            | BrowserError::Session(_)
            | BrowserError::Timeout { .. }
            | BrowserError::Lost(_) => true,
            BrowserError::Cdp { fault, .. } | BrowserError::WebDriver { fault, .. } => *fault == Fault::Gone,
            BrowserError::Navigation { .. } => false,
        }
    }
}

/// Runs `fut` under a deadline, naming `what` when it is missed.
pub async fn deadline<T>(
    what: &str,
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, BrowserError>>,
) -> Result<T, BrowserError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(BrowserError::Timeout { what: what.to_string(), ms: limit.as_millis() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_browser_is_fatal_and_a_failed_command_is_not() {
        let gone = BrowserError::cdp("Runtime.evaluate", "Session with given id not found.");
        assert!(gone.is_fatal());
        let failed = BrowserError::cdp("Runtime.evaluate", "Cannot find context with specified id");
        assert!(!failed.is_fatal());
        assert_eq!(failed.to_string(), "devtools Runtime.evaluate: Cannot find context with specified id");
        let wd = BrowserError::WebDriver {
            message: "unknown error: chrome not reachable".into(),
            fault: Fault::of_message("unknown error: chrome not reachable"),
        };
        assert!(wd.is_fatal());
        assert_eq!(wd.to_string(), "webdriver: unknown error: chrome not reachable");
    }
}
