//! The WebDriver glue: fantoccini's errors turned into [`BrowserError`]s, each with its
//! [`Fault`] decided here once; chromedriver's DevTools relay (`goog/cdp/execute`), used when the
//! browser's own DevTools cannot be reached; and WebDriver's windows, URL and title, for
//! attempts without DevTools tabs of their own.

use std::time::Duration;

use fantoccini::error::{CmdError, ErrorStatus};
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::Client;
use serde_json::{json, Value};

use super::{deadline, BrowserError, Fault, Session};

/// A WebDriver command's error. Where WebDriver's status says the session is gone, the status
/// decides; else the message does ([`Fault::of_message`]: chromedriver reports a lost Chrome as an
/// `unknown error`).
pub(super) fn cmd_error(e: CmdError) -> BrowserError {
    match e {
        CmdError::Standard(wd) => {
            let message = format!("{}: {}", wd.error, wd.message);
            let fault = match wd.error {
                ErrorStatus::InvalidSessionId => Fault::Gone,
                _ => Fault::of_message(&message),
            };
            BrowserError::WebDriver { message, fault }
        }
        CmdError::Failed(e) => BrowserError::Lost(e.to_string()),
        CmdError::FailedC(e) => BrowserError::Lost(e.to_string()),
        CmdError::Lost(e) => BrowserError::Lost(e.to_string()),
        other => {
            let message = other.to_string();
            BrowserError::WebDriver { fault: Fault::of_message(&message), message }
        }
    }
}

/// A WebDriver navigation's error: a command that failed is a failed navigation to `url`; a lost
/// browser stays what it is.
pub(super) fn nav_error(url: &str, e: CmdError) -> BrowserError {
    match cmd_error(e) {
        BrowserError::WebDriver { message, fault: Fault::Command } => {
            BrowserError::Navigation { url: url.to_string(), message: first_line(&message) }
        }
        other => other,
    }
}

pub(super) fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}

/// The browser's DevTools HTTP address (`127.0.0.1:PORT`), as the WebDriver session reports it.
pub(super) fn debugger_address(client: &Client) -> Option<String> {
    client
        .capabilities()
        .and_then(|c| c.get("goog:chromeOptions"))
        .and_then(|o| o.get("debuggerAddress"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A DevTools command sent through chromedriver's vendor endpoint.
#[derive(Debug)]
struct CdpCommand {
    cmd: String,
    params: Value,
}

impl WebDriverCompatibleCommand for CdpCommand {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/goog/cdp/execute", session_id.unwrap_or("")))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({"cmd": self.cmd, "params": self.params}).to_string()))
    }
}

impl Session {
    /// A DevTools command through chromedriver's `goog/cdp/execute`.
    pub(super) async fn relay_call(&self, cmd: &str, params: Value, limit: Duration) -> Result<Value, BrowserError> {
        let c = CdpCommand { cmd: cmd.to_string(), params };
        deadline(cmd, limit, async {
            self.client.issue_cmd(c).await.map_err(|e| match cmd_error(e) {
                BrowserError::WebDriver { message, fault } => {
                    BrowserError::Cdp { cmd: cmd.to_string(), message, fault }
                }
                other => other,
            })
        })
        .await
    }

    pub(super) async fn webdriver_url(&self) -> Result<String, BrowserError> {
        deadline("current url", self.cfg.call_timeout, async {
            self.client.current_url().await.map(|u| u.to_string()).map_err(cmd_error)
        })
        .await
    }

    pub(super) async fn webdriver_title(&self) -> Result<String, BrowserError> {
        deadline("title", self.cfg.call_timeout, async { self.client.title().await.map_err(cmd_error) }).await
    }

    /// WebDriver's window handles (the tabs of an attempt without a browser context of its own).
    pub async fn webdriver_windows(&self) -> Result<Vec<String>, BrowserError> {
        Ok(self.client.windows().await.map_err(cmd_error)?.into_iter().map(String::from).collect())
    }

    /// WebDriver's current window handle.
    pub async fn webdriver_window(&self) -> Result<String, BrowserError> {
        self.client.window().await.map(String::from).map_err(cmd_error)
    }

    /// Closes WebDriver's current window.
    pub async fn webdriver_close_window(&self) -> Result<(), BrowserError> {
        self.client.close_window().await.map_err(cmd_error)
    }
}
