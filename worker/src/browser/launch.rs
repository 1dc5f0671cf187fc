//! The launch policy: the flags Chromium runs with, which binary, and [`BrowserConfig`], whose
//! defaults take the browser's toggles in the environment ([`BrowserEnv`], read in one place).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

#[cfg(doc)]
use super::Session;

/// The Chromium flags that work as root on a closed network, with what chromedriver would add for
/// automation had it launched the browser (the worker launches it: see [`Session::open`]).
/// `--in-process-gpu` runs the compositor (software, with `--disable-gpu`) on a thread of the
/// browser process instead of a GPU process of its own: every frame crossed a process boundary,
/// and the calibration set took 13-15% less CPU without it (`docs/performance.md`).
/// `RenderDocument` off: a navigation within a site keeps the tab's frame host instead of making a
/// new one per document, which nothing a page sees depends on; the calibration set took about 5%
/// less CPU (`docs/performance.md#render-document`). Chromium reads only the last
/// `--disable-features`, so a flag of that name in `SKILLSHIFT_CHROMIUM_ARGS` replaces this list.
/// `--renderer-process-limit=1`: past the limit, a new tab reuses a renderer of the same browser
/// context and site instead of starting one, so the scorer's page and the agent's own new tabs share
/// the attempt's renderer. Chromium never shares a renderer between browser contexts nor, with site
/// isolation, between sites, so an attempt's pages still never meet another attempt's; the
/// calibration set took about 5% less CPU (`docs/performance.md#renderer-limit`).
/// `--disable-back-forward-cache`, as Playwright launches Chromium for WebArena and BrowserGym: a
/// `go_back` loads the page anew (its scripts run again) instead of thawing it as it was left. The
/// headless shell never caches; the full Chromium did (`tests/launch_parity.rs`).
/// `HttpsUpgrades` off, as Playwright has it: an `http://` address is loaded over HTTP, never first
/// tried over HTTPS on port 443 of its host, which the full Chromium did for any public-looking name
/// (the headless shell has no such upgrade; `worker/tests/http_not_upgraded.rs`).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--no-sandbox",
    "--disable-gpu",
    "--in-process-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-background-timer-throttling",
    "--disable-back-forward-cache",
    "--disable-backgrounding-occluded-windows",
    "--disable-client-side-phishing-detection",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-features=HttpsUpgrades,IgnoreDuplicateNavs,Prewarm,RenderDocument",
    "--disable-hang-monitor",
    "--renderer-process-limit=1",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--disable-sync",
    "--allow-pre-commit-input",
    "--enable-automation",
    "--no-first-run",
    "--no-service-autorun",
    "--password-store=basic",
    "--use-mock-keychain",
    "--test-type=webdriver",
];

/// Debian's headless shell (`chromium-headless-shell`): Chromium's content layer without the
/// browser UI, what Playwright runs for headless by default. Preferred when installed: per
/// attempt it costs a quarter of the full browser's CPU (no window, no top-chrome WebUI).
pub const HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// The full Chromium, run with `--headless=new` when the headless shell is not installed.
pub const FULL_CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// The browser's toggles in the environment, read in one place ([`BrowserEnv::from_env`]) into
/// a [`BrowserConfig`]'s defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserEnv {
    /// `SKILLSHIFT_CHROMIUM`: the browser binary (unset or empty: the default one).
    pub chromium: Option<PathBuf>,
    /// `SKILLSHIFT_CHROMIUM_ARGS`: extra flags, split on whitespace.
    pub chromium_args: Vec<String>,
    /// `SKILLSHIFT_CONTEXTS`: `0` serves attempts in fresh tabs instead of browser contexts.
    pub contexts: bool,
    /// `SKILLSHIFT_DEVTOOLS`: `websocket` or `chromedriver`; anything else is the pipe.
    pub devtools: Devtools,
}

impl BrowserEnv {
    /// The toggles as the environment sets them now.
    pub fn from_env() -> BrowserEnv {
        BrowserEnv::from_vars(|name| std::env::var_os(name))
    }

    /// The toggles as `var` gives the variables (a test hands in its own). A value that is not
    /// UTF-8 counts as unset, except the binary's path.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> BrowserEnv {
        let text = |name: &str| var(name).and_then(|v| v.into_string().ok());
        BrowserEnv {
            chromium: var("SKILLSHIFT_CHROMIUM").filter(|p| !p.is_empty()).map(PathBuf::from),
            chromium_args: text("SKILLSHIFT_CHROMIUM_ARGS")
                .map(|v| v.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            contexts: text("SKILLSHIFT_CONTEXTS").as_deref() != Some("0"),
            devtools: match text("SKILLSHIFT_DEVTOOLS").as_deref() {
                Some("websocket") => Devtools::WebSocket,
                Some("chromedriver") => Devtools::Chromedriver,
                _ => Devtools::Pipe,
            },
        }
    }
}

/// What carries DevTools to the browsers the worker starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Devtools {
    /// The browser's pipe, in CBOR (the default): Chrome then sends every answer in its own
    /// binary form instead of converting it to JSON, which was a quarter of an accessibility
    /// tree's time (`docs/performance.md`).
    #[default]
    Pipe,
    /// The browser's own WebSocket (JSON).
    WebSocket,
    /// Chromedriver's relay (`goog/cdp/execute`), for comparisons.
    Chromedriver,
}

/// The browser binary: `SKILLSHIFT_CHROMIUM` when set, else the headless shell when installed,
/// else the full Chromium.
fn default_chromium(env: &BrowserEnv) -> PathBuf {
    if let Some(p) = &env.chromium {
        return p.clone();
    }
    if std::path::Path::new(HEADLESS_SHELL).exists() {
        return PathBuf::from(HEADLESS_SHELL);
    }
    PathBuf::from(FULL_CHROMIUM)
}

/// True for the headless shell, which is headless by construction (it takes no `--headless`).
pub(super) fn is_headless_shell(binary: &std::path::Path) -> bool {
    binary
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("headless-shell") || n.contains("headless_shell"))
}

#[derive(Debug, Clone)]
pub struct BrowserConfig {
    pub chromedriver: PathBuf,
    /// The browser binary ([`HEADLESS_SHELL`] when installed, else [`FULL_CHROMIUM`];
    /// `SKILLSHIFT_CHROMIUM` overrides).
    pub chromium: PathBuf,
    /// Deadline of one WebDriver or CDP call that is not a navigation.
    pub call_timeout: Duration,
    /// Deadline of a navigation (goto, back, forward).
    pub nav_timeout: Duration,
    /// Deadline of starting chromedriver or a session.
    pub start_timeout: Duration,
    pub window: (u32, u32),
    /// Flags added after [`CHROMIUM_FLAGS`] (`SKILLSHIFT_CHROMIUM_ARGS`, split on whitespace, by default).
    pub extra_args: Vec<String>,
    /// Attempts one browser serves before it is replaced; 1 starts a new browser for every attempt.
    pub reuse: u32,
    /// Attempts run in browser contexts of their own (the default); `false`
    /// (`SKILLSHIFT_CONTEXTS=0`) keeps the older fresh-tab path, for comparisons.
    pub contexts: bool,
    /// What carries DevTools ([`Devtools::Pipe`] by default; `SKILLSHIFT_DEVTOOLS=websocket` the
    /// browser's WebSocket, `chromedriver` its relay).
    pub devtools: Devtools,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig::from_env(&BrowserEnv::from_env())
    }
}

impl BrowserConfig {
    /// The default configuration with the environment's toggles `env`.
    pub fn from_env(env: &BrowserEnv) -> BrowserConfig {
        BrowserConfig {
            chromedriver: PathBuf::from("/usr/bin/chromedriver"),
            chromium: default_chromium(env),
            call_timeout: Duration::from_secs(15),
            nav_timeout: Duration::from_secs(30),
            start_timeout: Duration::from_secs(30),
            window: (1280, 720),
            extra_args: env.chromium_args.clone(),
            reuse: 50,
            contexts: env.contexts,
            devtools: env.devtools,
        }
    }

    /// True when the worker speaks DevTools to the browsers it starts over their pipe.
    pub(super) fn devtools_pipe(&self) -> bool {
        self.devtools == Devtools::Pipe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> BrowserEnv {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        BrowserEnv::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v)))
    }

    #[test]
    fn the_toggles_default_to_contexts_and_the_pipe() {
        let none = env(&[]);
        assert!(none.contexts);
        assert_eq!(none.devtools, Devtools::Pipe);
        assert!(none.chromium_args.is_empty());
        let set = env(&[
            ("SKILLSHIFT_CONTEXTS", "0"),
            ("SKILLSHIFT_DEVTOOLS", "websocket"),
            ("SKILLSHIFT_CHROMIUM_ARGS", " --a  --b "),
        ]);
        assert!(!set.contexts);
        assert_eq!(set.devtools, Devtools::WebSocket);
        assert_eq!(set.chromium_args, ["--a", "--b"]);
        assert_eq!(env(&[("SKILLSHIFT_DEVTOOLS", "chromedriver")]).devtools, Devtools::Chromedriver);
        assert_eq!(env(&[("SKILLSHIFT_DEVTOOLS", "pipe")]).devtools, Devtools::Pipe);
        assert!(env(&[("SKILLSHIFT_CONTEXTS", "1")]).contexts);
    }
}
