//! The browser: a supervised chromedriver per slot and one fresh headless
//! Chromium session per attempt.
//!
//! * [`Driver`] owns one chromedriver process on a free loopback port, in its own
//!   process group (so the Chromium it starts dies with it), and restarts it when
//!   it has died.
//! * [`Session`] is one browser with a clean temporary profile, started by the
//!   worker itself (Debian's headless shell when installed, else the full
//!   Chromium headless) in chromedriver's process group, with one WebDriver
//!   session attached to it (`goog:chromeOptions.debuggerAddress`). An
//!   attempt takes one with [`Driver::checkout`] and gives it back with
//!   [`Driver::checkin`]: the browser is kept for the next attempt (up to
//!   [`BrowserConfig::reuse`] attempts). Each attempt runs in a browser context
//!   of its own (`Target.createBrowserContext`, as Playwright's contexts: own
//!   cookies, storage, cache and service workers), disposed when the attempt
//!   is checked in; the browser's first tab stays blank in the default context
//!   and keeps the browser open. Without the browser's DevTools socket (or with
//!   `SKILLSHIFT_CONTEXTS=0`, [`BrowserConfig::contexts`]) an attempt gets a fresh tab instead, with
//!   cookies, cache and the sites' storage cleared. Session
//!   lifecycle and navigation go through WebDriver (fantoccini), switched to the
//!   attempt's tab (chromedriver sees the targets of every context); observation,
//!   input, settling and injection go through Chrome DevTools on the browser's
//!   own WebSocket ([`crate::cdp`], one multiplexed connection per browser, the
//!   address from the session's `goog:chromeOptions.debuggerAddress`), or, when
//!   that socket cannot be opened, through chromedriver's vendor endpoint
//!   `POST /session/{id}/goog/cdp/execute`.
//!
//! Every call has a deadline. Errors say whether the browser is lost
//! ([`BrowserError::is_fatal`], decided on the error's [`Fault`]), which ends the attempt as
//! `error` / `browser`, or only the action failed, which the agent sees as `last_action_error`.
//!
//! The rooms, from the bottom up:
//! * `launch`: the launch policy: Chromium's flags, which binary, [`BrowserConfig`] with the
//!   environment's toggles read in one place;
//! * `error`: [`BrowserError`] and its [`Fault`], and [`deadline`];
//! * `process`: supervision of the chromedriver and Chromium processes (process groups, the
//!   warden; each group registered with [`crate::groups`]);
//! * `webdriver`: the WebDriver glue (fantoccini's errors turned into [`BrowserError`]s once,
//!   chromedriver's DevTools relay, WebDriver's windows);
//! * `session`: [`Session`], opening one, attaching DevTools to its tab, DevTools calls;
//! * `context`: the attempt's browser context, and a kept browser made clean without one;
//! * `targets`: the attempt's tabs as DevTools targets, and what every tab is set up with;
//! * `trace`: the attempt's network trace, read between steps;
//! * `navigate`: navigation, history, URL and title;
//! * `settle`: waiting until the page is done with an input;
//! * `screenshot`: what the page looks like (a screenshot, its scroll offsets);
//! * `pool`: [`Driver`], which hands sessions out and keeps browsers between attempts.

mod context;
mod error;
mod launch;
mod navigate;
mod pool;
mod process;
mod screenshot;
mod session;
mod settle;
mod targets;
mod trace;
mod webdriver;

pub use error::{deadline, BrowserError, Fault};
pub use launch::{BrowserConfig, BrowserEnv, Devtools, CHROMIUM_FLAGS, FULL_CHROMIUM, HEADLESS_SHELL};
pub use pool::Driver;
pub use session::Session;
pub use settle::InputMark;
