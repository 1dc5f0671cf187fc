//! The site manager: where each (site, version) lives, how it is reset and how
//! a fresh browser logs in to it.
//!
//! The [`SiteManager`] trait is the seam; the backends here reach sites by URL:
//! * [`EnvCtrl`]: containers reached by URL. With an entry's `env_ctrl` URL,
//!   WebArena-Verified's protocol: its env-ctrl server runs on a port of its
//!   own (the site's port + 1 in WebArena-Verified's table); a reset is
//!   `POST <env_ctrl>/reset` (or, on images whose server has no such route,
//!   `POST <env_ctrl>/restart?wait=1`), then the site is health-gated: `GET
//!   <env_ctrl>/health` (or `/status`) is polled until it answers
//!   `"success": true`, within `reset_timeout_s`. Without `env_ctrl`, the
//!   fixture sites' form: `POST <base><control_path>/reset`.
//! * [`External`]: base URLs plus a reset command run with `sh -c`.
//!
//! The embedded fixture sites, served in-process, are a backend of the
//! experiment crate (`skillshift_experiment::embedded`), so this library does
//! not depend on the fixture sites.
//!
//! [`ResetPolicy`] decides when the run loop resets: before each attempt, only
//! after an attempt that changed state (`require_reset` tasks), or never. Each
//! backend keeps the set of sites that may have changed in a [`DirtySites`] of
//! its own and answers [`SiteManager::needs_reset`] from it.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use skillshift_common::skills::Step;
use skillshift_common::task::{SiteBases, SiteKey};
use skillshift_common::{Site, Version};

mod error;

pub use error::{ConfigError, EnvCtrlError, SiteError, StorageStateError, UnknownResetPolicy};

/// Cookies as (name, value).
pub type Cookies = Vec<(String, String)>;

/// When to reset a site before an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ResetPolicy {
    BeforeEach,
    /// Reset only when an earlier attempt on the site ran a `require_reset` task.
    #[default]
    AfterMutation,
    Never,
}

impl std::str::FromStr for ResetPolicy {
    type Err = UnknownResetPolicy;
    fn from_str(s: &str) -> Result<Self, UnknownResetPolicy> {
        match s {
            "before-each" => Ok(ResetPolicy::BeforeEach),
            "after-mutation" => Ok(ResetPolicy::AfterMutation),
            "never" => Ok(ResetPolicy::Never),
            _ => Err(UnknownResetPolicy(s.to_string())),
        }
    }
}

/// Where a site-version is and what it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub base_url: String,
    /// Image name, e.g. `gitlab-v1`.
    pub image: String,
    pub digest: Option<String>,
}

pub trait SiteManager: Send + Sync + 'static {
    fn hosts(&self) -> Vec<(Site, Version)>;
    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError>;
    fn reset(&self, site: Site, version: Version) -> BoxFuture<'_, Result<(), SiteError>>;
    /// Steps that log in from a fresh browser (placeholders as in task files, or `__SITE__`).
    fn login_steps(&self, site: Site, version: Version) -> Vec<Step>;
    fn policy(&self) -> ResetPolicy;
    /// The cookies of a fresh signed-in session, when this backend can sign in
    /// without a browser; `Ok(None)` means the browser runs the login steps.
    fn login_cookies(&self, _site: Site, _version: Version) -> BoxFuture<'_, Result<Option<Cookies>, SiteError>> {
        Box::pin(async { Ok(None) })
    }
    /// Headers every request of a signed-in browser carries (WebArena-Verified's
    /// auto-login, e.g. `X-M2-Admin-Auto-Login`); empty when the backend has none.
    fn login_headers(&self, _site: Site, _version: Version) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The base URLs of the sites an attempt on (`site`, `version`) may name, by WebArena's site keys:
    /// what WebArena-Verified's evaluators render a task's URL placeholders with. By default the
    /// site-version's own base URL under its grid key (`gitlab`, `magento`, `wordpress`).
    fn site_bases(&self, site: Site, version: Version) -> SiteBases {
        let mut bases = SiteBases::default();
        if let Ok(e) = self.endpoint(site, version) {
            bases.insert(SiteKey::from(site), &e.base_url);
        }
        bases
    }
    /// How long a skill's locator keeps looking for an element that is not there yet. A backend
    /// whose pages cannot change without an input (server-rendered, no timers, no fetches) gives
    /// none: a missing element is missing at the first look.
    fn locator_grace(&self, _site: Site, _version: Version) -> std::time::Duration {
        crate::skill_runtime::LOCATOR_GRACE
    }
    /// The backend's own record of which sites may have changed since their last reset.
    fn dirty_sites(&self) -> &DirtySites;
    /// Waits for this worker's turn on a site-version ([`DirtySites::turn`]).
    fn turn(&self, site: Site, version: Version) -> BoxFuture<'_, tokio::sync::OwnedMutexGuard<()>> {
        Box::pin(self.dirty_sites().turn(site, version))
    }
    /// Whether to reset before an attempt, given the policy and the site's state.
    fn needs_reset(&self, site: Site, version: Version) -> bool {
        self.dirty_sites().needs_reset(self.policy(), site, version)
    }
    /// Records that an attempt may have changed the site's state.
    fn mark_dirty(&self, site: Site, version: Version) {
        self.dirty_sites().mark_dirty(site, version);
    }
    /// Records that a reset cleaned the site.
    fn mark_clean(&self, site: Site, version: Version) {
        self.dirty_sites().mark_clean(site, version);
    }
}

/// The sites whose state may have changed since their last reset: the
/// bookkeeping behind [`SiteManager::needs_reset`], owned by each backend.
#[derive(Debug, Default)]
pub struct DirtySites {
    // A std mutex: held only to test, insert or remove one key, never across an await.
    dirty: Mutex<HashSet<(Site, Version)>>,
    // A std mutex around the map; the turn itself is a tokio mutex, held across the attempt.
    turns: Mutex<std::collections::HashMap<(Site, Version), Turn>>,
}

/// One site-version's turn: held by the attempt running on it.
type Turn = std::sync::Arc<tokio::sync::Mutex<()>>;

impl DirtySites {
    pub fn new() -> Self {
        DirtySites::default()
    }

    /// Whether `policy` resets the site before the next attempt.
    pub fn needs_reset(&self, policy: ResetPolicy, site: Site, version: Version) -> bool {
        match policy {
            ResetPolicy::BeforeEach => true,
            ResetPolicy::Never => false,
            // A poisoned lock only means another attempt panicked mid-update; reset to be safe.
            ResetPolicy::AfterMutation => self.dirty.lock().map(|d| d.contains(&(site, version))).unwrap_or(true),
        }
    }

    /// Waits for this worker's turn on a site-version and holds it until the guard is dropped: one
    /// attempt at a time per site-version, as another slot's reset or mutation would change what an
    /// attempt reads and what its score sees. Attempts on different site-versions run side by side.
    pub async fn turn(&self, site: Site, version: Version) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut turns = self.turns.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            turns.entry((site, version)).or_default().clone()
        };
        lock.lock_owned().await
    }

    pub fn mark_dirty(&self, site: Site, version: Version) {
        if let Ok(mut d) = self.dirty.lock() {
            d.insert((site, version));
        }
    }

    pub fn mark_clean(&self, site: Site, version: Version) {
        if let Ok(mut d) = self.dirty.lock() {
            d.remove(&(site, version));
        }
    }
}

/// The `--sites FILE` configuration of the `env-ctrl` and `external` backends.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SitesConfig {
    /// `env-ctrl` or `external`.
    pub backend: String,
    #[serde(default = "default_control_path")]
    pub control_path: String,
    #[serde(default)]
    pub reset_policy: ResetPolicy,
    #[serde(default = "default_reset_timeout")]
    pub reset_timeout_s: u64,
    /// Image name (`gitlab-v1`, ...) -> where it is.
    pub sites: BTreeMap<String, SiteEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteEntry {
    pub url: String,
    #[serde(default)]
    pub digest: Option<String>,
    /// Login steps; `__SITE__` is the entry's URL.
    #[serde(default)]
    pub login: Vec<Step>,
    /// `external` only: the command that resets this site (run with `sh -c`).
    #[serde(default)]
    pub reset_command: Option<String>,
    /// WebArena-Verified's env-ctrl server of this site, e.g. `http://host:8024` for GitLab on 8023.
    #[serde(default)]
    pub env_ctrl: Option<String>,
    /// Headers that sign a browser in, e.g. `{"X-M2-Admin-Auto-Login": "admin:admin1234"}`.
    #[serde(default)]
    pub auto_login: BTreeMap<String, String>,
    /// A Playwright `storage_state` file whose cookies sign a browser in.
    #[serde(default)]
    pub storage_state: Option<String>,
}

fn default_control_path() -> String {
    "/env-ctrl".into()
}

fn default_reset_timeout() -> u64 {
    120
}

fn parse_image(image: &str) -> Option<(Site, Version)> {
    let (s, v) = image.rsplit_once('-')?;
    Some((s.parse().ok()?, v.parse().ok()?))
}

/// Sites reached by URL: `env-ctrl` (HTTP reset) or `external` (reset command).
pub struct Remote {
    cfg: SitesConfig,
    entries: BTreeMap<(Site, Version), SiteEntry>,
    http: reqwest::Client,
    dirty: DirtySites,
}

/// The env-ctrl backend is a [`Remote`] with `backend: "env-ctrl"`.
pub type EnvCtrl = Remote;
/// The external backend is a [`Remote`] with `backend: "external"`.
pub type External = Remote;

impl Remote {
    pub fn load(path: &Path) -> Result<Remote, SiteError> {
        let p = path.display().to_string();
        let err = |message: String| SiteError::Config { path: p.clone(), message };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let cfg: SitesConfig = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
        Remote::new(cfg).map_err(|e| err(e.to_string()))
    }

    pub fn new(cfg: SitesConfig) -> Result<Remote, ConfigError> {
        if cfg.backend != "env-ctrl" && cfg.backend != "external" {
            return Err(ConfigError::Backend(cfg.backend.clone()));
        }
        let mut entries = BTreeMap::new();
        for (image, entry) in &cfg.sites {
            let key = parse_image(image).ok_or_else(|| ConfigError::Image { image: image.clone() })?;
            let not_http = |field: &'static str, url: &str| ConfigError::NotHttp {
                image: image.clone(),
                field,
                url: url.to_string(),
            };
            if !entry.url.starts_with("http://") && !entry.url.starts_with("https://") {
                return Err(not_http("url", &entry.url));
            }
            if let Some(u) = &entry.env_ctrl {
                if !u.starts_with("http://") && !u.starts_with("https://") {
                    return Err(not_http("env_ctrl", u));
                }
            }
            if cfg.backend == "external" && entry.reset_command.is_none() {
                return Err(ConfigError::NoResetCommand { image: image.clone() });
            }
            entries.insert(key, entry.clone());
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(cfg.reset_timeout_s))
            .build()
            .map_err(ConfigError::HttpClient)?;
        Ok(Remote { cfg, entries, http, dirty: DirtySites::new() })
    }

    /// The same sites under another reset policy than the file's (the task audit resets before each attempt).
    pub fn with_policy(mut self, policy: ResetPolicy) -> Remote {
        self.cfg.reset_policy = policy;
        self
    }

    fn entry(&self, site: Site, version: Version) -> Result<&SiteEntry, SiteError> {
        self.entries.get(&(site, version)).ok_or_else(|| SiteError::NotHosted { image: site.image(version) })
    }

    /// `GET <control_path>/status` of an env-ctrl site: its JSON, within a deadline.
    pub async fn status(&self, site: Site, version: Version) -> Result<serde_json::Value, SiteError> {
        let e = self.entry(site, version)?;
        let url = format!("{}{}/status", e.url.trim_end_matches('/'), self.cfg.control_path);
        let err = |message: String| SiteError::Reset { image: site.image(version), message };
        let r = self.http.get(&url).timeout(Duration::from_secs(10)).send().await.map_err(|x| err(x.to_string()))?;
        if !r.status().is_success() {
            return Err(err(format!("GET {url} answered {}", r.status())));
        }
        r.json().await.map_err(|x| err(format!("GET {url}: {x}")))
    }

    /// WebArena-Verified's reset: `POST /reset`, or `POST /restart?wait=1` where the server has no `/reset`.
    async fn env_ctrl_reset(&self, ctl: &str) -> Result<(), EnvCtrlError> {
        let post = |url: String| async move {
            match self.http.post(&url).send().await {
                Ok(r) => Ok((url, r)),
                Err(cause) => Err(EnvCtrlError::Request { method: "POST", url, cause }),
            }
        };
        let (mut url, mut r) = post(format!("{ctl}/reset")).await?;
        if r.status() == reqwest::StatusCode::NOT_FOUND {
            (url, r) = post(format!("{ctl}/restart?wait=1")).await?;
        }
        let status = r.status();
        let body: serde_json::Value = r.json().await.unwrap_or(serde_json::Value::Null);
        if !status.is_success() || body.get("success").and_then(serde_json::Value::as_bool) == Some(false) {
            let why =
                body.get("message").or_else(|| body.get("error")).and_then(serde_json::Value::as_str).unwrap_or("");
            return Err(EnvCtrlError::Refused { url, status, why: why.to_string() });
        }
        Ok(())
    }

    /// One health probe: `GET /health`, or `/status` where the server has no `/health`; true when it says `success`.
    pub async fn env_ctrl_healthy(&self, ctl: &str) -> Result<bool, EnvCtrlError> {
        let get = |url: String| async move {
            match self.http.get(&url).timeout(Duration::from_secs(10)).send().await {
                Ok(r) => Ok(r),
                Err(cause) => Err(EnvCtrlError::Request { method: "GET", url, cause }),
            }
        };
        let mut r = get(format!("{ctl}/health")).await?;
        if r.status() == reqwest::StatusCode::NOT_FOUND {
            r = get(format!("{ctl}/status")).await?;
        }
        let body: serde_json::Value = r.json().await.unwrap_or(serde_json::Value::Null);
        Ok(body.get("success").and_then(serde_json::Value::as_bool).unwrap_or(false))
    }

    /// Polls the health route until the site is healthy; the caller bounds the wait.
    async fn wait_healthy(&self, ctl: &str) {
        let mut pause = Duration::from_millis(100);
        loop {
            // A server still restarting may refuse connections: keep polling until the deadline.
            if let Ok(true) = self.env_ctrl_healthy(ctl).await {
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    /// Whether a site-version is up: its env-ctrl health route says `success`, or, without env-ctrl,
    /// its front page answers (any status below 500), within 10 s.
    pub async fn probe(&self, site: Site, version: Version) -> Result<(), SiteError> {
        let e = self.entry(site, version)?;
        let err = |message: String| SiteError::Reset { image: site.image(version), message };
        if let Some(ctl) = &e.env_ctrl {
            let ctl = ctl.trim_end_matches('/');
            return match self.env_ctrl_healthy(ctl).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(err(format!("{ctl}/health does not say success"))),
                Err(x) => Err(err(x.to_string())),
            };
        }
        let r = self.http.get(&e.url).timeout(Duration::from_secs(10)).send().await.map_err(|x| err(x.to_string()))?;
        if r.status().is_server_error() {
            return Err(err(format!("GET {} answered {}", e.url, r.status())));
        }
        Ok(())
    }

    /// `GET <env_ctrl>/config` of a site: its build configuration.
    pub async fn env_ctrl_config(&self, site: Site, version: Version) -> Result<serde_json::Value, SiteError> {
        let e = self.entry(site, version)?;
        let err = |message: String| SiteError::Reset { image: site.image(version), message };
        let ctl = e.env_ctrl.as_deref().ok_or_else(|| err("the entry has no env_ctrl URL".into()))?;
        let url = format!("{}/config", ctl.trim_end_matches('/'));
        let r = self.http.get(&url).timeout(Duration::from_secs(10)).send().await.map_err(|x| err(x.to_string()))?;
        if !r.status().is_success() {
            return Err(err(format!("GET {url} answered {}", r.status())));
        }
        r.json().await.map_err(|x| err(format!("GET {url}: {x}")))
    }
}

/// The cookies of a Playwright `storage_state` file (`{"cookies": [{"name", "value", ...}], "origins": [...]}`).
pub fn storage_state_cookies(path: &Path) -> Result<Cookies, StorageStateError> {
    let shown = || path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|cause| StorageStateError::Read { path: shown(), cause })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|cause| StorageStateError::Json { path: shown(), cause })?;
    let cookies = v
        .get("cookies")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| StorageStateError::NoCookies { path: shown() })?;
    cookies
        .iter()
        .map(|c| {
            let field = |k: &str| c.get(k).and_then(serde_json::Value::as_str).map(str::to_string);
            match (field("name"), field("value")) {
                (Some(n), Some(v)) => Ok((n, v)),
                _ => Err(StorageStateError::Cookie { path: shown() }),
            }
        })
        .collect()
}

impl SiteManager for Remote {
    fn hosts(&self) -> Vec<(Site, Version)> {
        self.entries.keys().copied().collect()
    }

    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
        let e = self.entry(site, version)?;
        Ok(Endpoint {
            base_url: e.url.trim_end_matches('/').to_string(),
            image: site.image(version),
            digest: e.digest.clone(),
        })
    }

    fn reset(&self, site: Site, version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
        Box::pin(async move {
            let e = self.entry(site, version)?;
            let image = site.image(version);
            let err = |message: String| SiteError::Reset { image: image.clone(), message };
            let limit = Duration::from_secs(self.cfg.reset_timeout_s);
            if let (true, Some(ctl)) = (self.cfg.backend == "env-ctrl", &e.env_ctrl) {
                let ctl = ctl.trim_end_matches('/');
                let work = async {
                    self.env_ctrl_reset(ctl).await?;
                    self.wait_healthy(ctl).await;
                    Ok::<(), EnvCtrlError>(())
                };
                match tokio::time::timeout(limit, work).await {
                    Err(_) => Err(err(format!("{ctl} was not healthy within {} s of the reset", limit.as_secs()))),
                    Ok(r) => r.map_err(|e| err(e.to_string())),
                }
            } else if self.cfg.backend == "env-ctrl" {
                let url = format!("{}{}/reset", e.url.trim_end_matches('/'), self.cfg.control_path);
                let r = self.http.post(&url).send().await.map_err(|x| err(x.to_string()))?;
                if !r.status().is_success() {
                    return Err(err(format!("POST {url} answered {}", r.status())));
                }
                Ok(())
            } else {
                let cmd = e.reset_command.clone().unwrap_or_default();
                let run = tokio::process::Command::new("sh")
                    .args(["-c", &cmd])
                    .env("SKILLSHIFT_SITE", site.as_str())
                    .env("SKILLSHIFT_VERSION", version.as_str())
                    .env("SKILLSHIFT_SITE_URL", &e.url)
                    .kill_on_drop(true)
                    .status();
                match tokio::time::timeout(limit, run).await {
                    Err(_) => Err(err(format!("reset command did not finish within {} s", limit.as_secs()))),
                    Ok(Err(x)) => Err(err(format!("cannot run reset command: {x}"))),
                    Ok(Ok(s)) if !s.success() => Err(err(format!("reset command exited with {s}"))),
                    Ok(Ok(_)) => Ok(()),
                }
            }
        })
    }

    fn login_steps(&self, site: Site, version: Version) -> Vec<Step> {
        self.entries.get(&(site, version)).map(|e| e.login.clone()).unwrap_or_default()
    }

    fn login_headers(&self, site: Site, version: Version) -> Vec<(String, String)> {
        self.entries
            .get(&(site, version))
            .map(|e| e.auto_login.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    fn login_cookies(&self, site: Site, version: Version) -> BoxFuture<'_, Result<Option<Cookies>, SiteError>> {
        Box::pin(async move {
            let Some(path) = self.entries.get(&(site, version)).and_then(|e| e.storage_state.clone()) else {
                return Ok(None);
            };
            storage_state_cookies(Path::new(&path))
                .map(Some)
                .map_err(|e| SiteError::Login { image: site.image(version), message: e.to_string() })
        })
    }

    fn policy(&self) -> ResetPolicy {
        self.cfg.reset_policy
    }

    fn dirty_sites(&self) -> &DirtySites {
        &self.dirty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_name_what_is_wrong() {
        let bad = |text: &str| {
            let cfg: SitesConfig = serde_json::from_str(text).unwrap();
            Remote::new(cfg).err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(bad(r#"{"backend": "docker", "sites": {}}"#).contains("backend"));
        assert!(bad(r#"{"backend": "env-ctrl", "sites": {"gitlab-v3": {"url": "http://x"}}}"#).contains("gitlab-v3"));
        assert!(
            bad(r#"{"backend": "external", "sites": {"gitlab-v1": {"url": "http://x"}}}"#).contains("reset_command")
        );
        let ok: SitesConfig =
            serde_json::from_str(r#"{"backend": "env-ctrl", "reset_policy": "before-each", "sites": {"magento-v2": {"url": "http://h:1/"}}}"#)
                .unwrap();
        let r = Remote::new(ok).unwrap();
        assert_eq!(r.hosts(), vec![(Site::Magento, Version::V2)]);
        assert_eq!(r.endpoint(Site::Magento, Version::V2).unwrap().base_url, "http://h:1");
        assert!(r.needs_reset(Site::Magento, Version::V2));
    }

    /// The grace the run loop passes to a skill's locators, unless a backend says otherwise.
    #[test]
    fn a_site_s_locator_grace_defaults_to_the_skills_grace() {
        let cfg: SitesConfig =
            serde_json::from_str(r#"{"backend": "env-ctrl", "sites": {"magento-v2": {"url": "http://h:1/"}}}"#)
                .unwrap();
        let r = Remote::new(cfg).unwrap();
        assert_eq!(r.locator_grace(Site::Magento, Version::V2), crate::skill_runtime::LOCATOR_GRACE, "the default");
    }

    #[tokio::test]
    async fn external_reset_runs_the_command_with_the_site_in_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("reset.txt");
        let text = format!(
            r#"{{"backend": "external", "sites": {{"wordpress-v1": {{"url": "http://h:1", "reset_command": "echo $SKILLSHIFT_SITE-$SKILLSHIFT_VERSION > {}"}}}}}}"#,
            out.display()
        );
        let r = Remote::new(serde_json::from_str(&text).unwrap()).unwrap();
        r.reset(Site::Wordpress, Version::V1).await.unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "wordpress-v1");
        let failing = Remote::new(
            serde_json::from_str(r#"{"backend": "external", "sites": {"wordpress-v1": {"url": "http://h:1", "reset_command": "exit 3"}}}"#)
                .unwrap(),
        )
        .unwrap();
        assert!(failing.reset(Site::Wordpress, Version::V1).await.unwrap_err().to_string().contains("exit"));
        // Policy bookkeeping.
        assert!(!r.needs_reset(Site::Wordpress, Version::V1));
        r.mark_dirty(Site::Wordpress, Version::V1);
        assert!(r.needs_reset(Site::Wordpress, Version::V1));
        r.mark_clean(Site::Wordpress, Version::V1);
        assert!(!r.needs_reset(Site::Wordpress, Version::V1));
    }
}
