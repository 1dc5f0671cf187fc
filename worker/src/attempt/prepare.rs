//! Everything before the agent's first step: the task and its endpoint, the
//! site reset (per the site manager's policy), the login (the task's own
//! storage state, the site manager's cookies or headers, or its login steps
//! run in the browser), the condition's perturbations and the network trace
//! installed in every tab, the task's geolocation, the start URLs each in a
//! tab of its own, and the agent told its task.

use std::time::Duration;

use skillshift_common::evaluate::verified::{self, Verified};
use skillshift_common::task::Task;
use skillshift_common::{AttemptSpec, ErrorReason, Site, Uid, Version};
use skillshift_telemetry::spans;
use tracing::Instrument;

use super::journal::Journal;
use super::source::{NetworkTrace, RunContext};
use super::{browser_end, err, End, Progress};
use crate::agent::{Agent, SkillSummary, TaskBrief};
use crate::browser::{BrowserError, Session};
use crate::capture::Capture;
use crate::perturb::{Perturbation, Profile};
use crate::sites::SiteManager;
use crate::skill_runtime::{run_steps, Placeholders};
use crate::tabs::Tabs;

/// How long a login step waits for its element to appear.
const LOGIN_GRACE: Duration = Duration::from_secs(10);

/// The attempt's task, the placeholders of its site's address and the site's image (noted for the
/// record); or how the attempt ended.
pub(super) fn task_and_site(
    ctx: &RunContext,
    spec: &AttemptSpec,
    p: &mut Progress,
) -> Result<(Task, Placeholders, String), End> {
    let uid = spec.uid;
    if uid.version != spec.condition.version() {
        return Err(err(
            ErrorReason::Spec,
            format!("{uid} does not run under {} (a {} condition)", spec.condition, spec.condition.version()),
        ));
    }
    let task = ctx.task(uid.site, uid.version, uid.task_id).map_err(|e| err(ErrorReason::Task, e.to_string()))?;
    let endpoint = ctx.sites.endpoint(uid.site, uid.version).map_err(|e| err(ErrorReason::Site, e.to_string()))?;
    p.images.insert(endpoint.image.clone(), endpoint.digest.clone().unwrap_or_else(|| "unknown".into()));
    let ph = Placeholders(vec![
        (uid.site.placeholder().to_string(), endpoint.base_url.clone()),
        ("__SITE__".to_string(), endpoint.base_url.clone()),
    ]);
    Ok((task, ph, endpoint.image))
}

/// Resets the site-version (serving `image`) when the site manager's policy says it needs one.
pub(super) async fn reset(sites: &dyn SiteManager, uid: Uid, image: &str, journal: &mut Journal) -> Result<(), End> {
    if !sites.needs_reset(uid.site, uid.version) {
        return Ok(());
    }
    let span = spans::reset(uid.site.as_str(), uid.version.as_str());
    if let Err(e) = sites.reset(uid.site, uid.version).instrument(span.clone()).await {
        spans::record_error(&span, &e.to_string());
        return Err(err(ErrorReason::SiteReset, e.to_string()));
    }
    sites.mark_clean(uid.site, uid.version);
    journal.note(format!("reset {image}"));
    Ok(())
}

/// Readies the browser session for the attempt and signs in when the task requires it.
pub(super) async fn sign_in(
    sites: &dyn SiteManager,
    session: &Session,
    uid: Uid,
    task: &Task,
    ph: &Placeholders,
    capture: &mut Capture,
) -> Result<(), End> {
    // Dialogs of the browser's previous attempt are not this one's.
    session.take_dialogs();
    capture.secrets(Capture::login_secrets(&sites.login_steps(uid.site, uid.version)));
    // WebArena's own `storage_state` (a Playwright state file the task names), when it is on this machine.
    let task_state = task.storage_state.as_deref().map(std::path::Path::new).filter(|p| p.is_file());
    if let (true, Some(path)) = (task.require_login, task_state) {
        let cookies =
            crate::sites::storage_state_cookies(path).map_err(|e| err(ErrorReason::SiteLogin, e.to_string()))?;
        capture.secrets(cookies.iter().map(|(_, value)| value.clone()));
        return set_cookies(session, &ph.apply("__SITE__"), cookies).await.map_err(browser_end);
    }
    if task.require_login {
        let span = spans::login(uid.site.as_str());
        if let Some(end) = login(session, sites, uid.site, uid.version, ph, capture).instrument(span.clone()).await {
            if let End::Error { message, .. } = &end {
                spans::record_error(&span, message);
            }
            return Err(end);
        }
    }
    Ok(())
}

/// What the attempt set up in its browser.
pub(super) struct SetUp<'t> {
    pub perturbation: Perturbation,
    /// The perturbation script's id, when the pages are perturbed.
    pub script_id: Option<String>,
    /// How WebArena-Verified's evaluators score the task, when they do.
    pub verified: Option<&'t Verified>,
}

/// Installs the condition's perturbations and the network trace in every tab of the attempt, and
/// the task's geolocation.
pub(super) async fn set_up<'t>(
    ctx: &RunContext,
    session: &Session,
    spec: &AttemptSpec,
    task: &'t Task,
) -> Result<SetUp<'t>, End> {
    let profile = match &spec.perturbation_profile {
        Some(v) => Profile::from_value(v, "the attempt's perturbation profile")
            .map_err(|e| err(ErrorReason::Spec, e.to_string()))?,
        None => ctx.profile.clone(),
    };
    let perturbation = Perturbation::for_attempt(profile, spec.seed, spec.uid.family(), spec.condition, spec.rep);
    // Every later tab of the attempt gets the perturbations and joins the network trace. A task scored by
    // WebArena-Verified's evaluators gets the trace, and the response bodies, they read.
    let verified = verified::scoring(task, spec.evaluator);
    let trace = ctx.network_trace.records() || verified.is_some_and(Verified::reads_network);
    let bodies = spec.network_bodies
        || ctx.network_trace == NetworkTrace::Bodies
        || verified.is_some_and(Verified::reads_response_content);
    let installed = async {
        let script_id = perturbation.install(session).await?;
        session.begin_tabs(perturbation.script(), trace, bodies).await?;
        if let Some(geo) = &task.geolocation {
            geolocate(session, geo).await?;
        }
        Ok::<_, BrowserError>(script_id)
    };
    let script_id = installed.instrument(spans::setup()).await.map_err(browser_end)?;
    Ok(SetUp { perturbation, script_id, verified })
}

/// Opens the task's start URLs (WebArena opens each of ` |AND| `-joined start URLs in a tab of its
/// own); the attempt's tabs and its start URL, or how it ended.
pub(super) async fn open(
    sites: &dyn SiteManager,
    session: &Session,
    uid: Uid,
    task: &Task,
    ph: &Placeholders,
    capture: &mut Capture,
) -> Result<(Tabs, String), End> {
    let start_url = ph.apply(&task.start_url);
    capture.task(&task.intent, &start_url);
    let start_urls: Vec<String> = start_url.split(" |AND| ").map(str::to_string).collect();
    let start_span = spans::start(start_urls.len());
    let tabs = match open_start(session, sites, task, uid, &start_urls).instrument(start_span.clone()).await {
        Ok(t) => t,
        Err(end) => {
            if let End::Error { message, .. } = &end {
                spans::record_error(&start_span, message);
            }
            return Err(end);
        }
    };
    drop(start_span);
    if task.require_reset {
        sites.mark_dirty(uid.site, uid.version);
    }
    Ok((tabs, start_url))
}

/// Tells the agent its task, with the skills of the attempt's library for its site.
pub(super) async fn start_agent(
    agent: &mut dyn Agent,
    spec: &AttemptSpec,
    task: &Task,
    start_url: &str,
) -> Result<(), End> {
    let uid = spec.uid;
    let brief = TaskBrief {
        uid: uid.to_string(),
        intent: task.intent.clone(),
        start_url: start_url.to_string(),
        max_steps: spec.max_steps,
        skills: spec
            .skills
            .as_ref()
            .map(|l| {
                l.skills
                    .iter()
                    .filter(|s| s.site == uid.site)
                    .map(|s| SkillSummary {
                        name: s.name.clone(),
                        params: s.params.clone(),
                        description: s.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    agent.start(brief).await.map_err(|e| err(ErrorReason::Agent, e.to_string()))
}

/// Opens the task's start page in the attempt's tab, then each further start URL in a tab of its
/// own (WebArena's ` |AND| `), the first staying current; the attempt's tabs, or how it ended.
async fn open_start(
    session: &Session,
    sites: &dyn SiteManager,
    task: &Task,
    uid: Uid,
    start_urls: &[String],
) -> Result<Tabs, End> {
    let Some(first) = start_urls.first() else { return Err(err(ErrorReason::Task, "the task has no start URL")) };
    if let Err(e) = session.goto(first).await {
        return Err(if e.is_fatal() { browser_end(e) } else { err(ErrorReason::Site, e.to_string()) });
    }
    let tabs = Tabs::adopt(session).await.map_err(browser_end)?;
    let headers = if task.require_login { sites.login_headers(uid.site, uid.version) } else { Vec::new() };
    if !headers.is_empty() {
        // Auto-login headers hold for every tab of the attempt, as for every page of WebArena's context.
        tabs.set_headers(session, &headers).await.map_err(browser_end)?;
    }
    if let Err(e) = tabs.open_start_urls(session, start_urls).await {
        return Err(if e.is_fatal() { browser_end(e) } else { err(ErrorReason::Site, e.to_string()) });
    }
    Ok(tabs)
}

/// Signs in: with the site manager's session cookies when it has them, else
/// by running its login steps in the browser. `Some` ends the attempt.
async fn login(
    session: &Session,
    sites: &dyn SiteManager,
    site: Site,
    version: Version,
    ph: &Placeholders,
    capture: &mut Capture,
) -> Option<End> {
    let base_url = ph.apply("__SITE__");
    let headers = sites.login_headers(site, version);
    if !headers.is_empty() {
        // The headers' values are credentials, and the network trace carries them: redacted.
        capture.secrets(headers.iter().map(|(_, v)| v.clone()));
        // WebArena-Verified's auto-login: every request of the tab carries the headers.
        let map: serde_json::Map<String, serde_json::Value> =
            headers.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect();
        for (cmd, params) in [
            ("Network.enable", serde_json::json!({})),
            ("Network.setExtraHTTPHeaders", serde_json::json!({"headers": map})),
        ] {
            if let Err(e) = session.cdp(cmd, params).await {
                return Some(browser_end(e));
            }
        }
        return None;
    }
    match sites.login_cookies(site, version).await {
        Ok(Some(cookies)) => {
            // Session cookies are credentials: never stored in a trajectory.
            capture.secrets(cookies.iter().map(|(_, value)| value.clone()));
            return set_cookies(session, &base_url, cookies).await.err().map(browser_end);
        }
        Ok(None) => {}
        Err(e) => return Some(err(ErrorReason::SiteLogin, e.to_string())),
    }
    let steps = sites.login_steps(site, version);
    // Signing in is set-up, not a measured skill: a real application's next page (a form post, a
    // redirect, a confirmation screen) may take longer than a skill's grace to render.
    let ran = run_steps(session, &steps, ph, LOGIN_GRACE).await;
    match ran {
        Ok(o) if o.ok => None,
        Ok(o) => Some(err(ErrorReason::SiteLogin, o.error.unwrap_or_else(|| "login failed".into()))),
        Err(e) => Some(browser_end(e)),
    }
}

/// Sets session cookies for the site at `base_url`.
pub(crate) async fn set_cookies(
    session: &Session,
    base_url: &str,
    cookies: crate::sites::Cookies,
) -> Result<(), BrowserError> {
    for (name, value) in cookies {
        let params = serde_json::json!({"name": name, "value": value, "url": format!("{base_url}/"), "httpOnly": true});
        session.cdp("Network.setCookie", params).await?;
    }
    Ok(())
}

/// The task's `geolocation` (`{"latitude", "longitude", "accuracy"?}`), as WebArena's browser context sets it.
async fn geolocate(session: &Session, geo: &serde_json::Value) -> Result<(), BrowserError> {
    let mut params = serde_json::json!({"latitude": geo.get("latitude"), "longitude": geo.get("longitude"), "accuracy": geo.get("accuracy").cloned().unwrap_or(serde_json::json!(0))});
    if geo.get("latitude").is_none() || geo.get("longitude").is_none() {
        params = serde_json::json!({});
    }
    // A grant names the attempt's own browser context; without one it would go to the default context.
    let mut grant = serde_json::json!({"permissions": ["geolocation"]});
    if let Some(id) = session.context_id() {
        grant["browserContextId"] = serde_json::json!(id);
    }
    if let Err(e) = session.cdp("Browser.grantPermissions", grant).await {
        if e.is_fatal() {
            return Err(e);
        }
    }
    match session.cdp("Emulation.setGeolocationOverride", params).await {
        Err(e) if e.is_fatal() => Err(e),
        _ => Ok(()),
    }
}
