//! Real environments as WebArena-Verified's images present them, against
//! stand-ins written here (the real containers cannot run in this test
//! environment): an env-ctrl server on a port of its own speaking the
//! protocol (`POST /reset`, `GET /health`, `GET /config`, or the shipped
//! server's `/restart?wait=1` and `/status`), resets gated on health with a
//! bounded wait, a failing reset recorded as `error` / `site_reset`; and, on
//! real Chromium, the auto-login header reaching the site, a `storage_state`
//! file's cookies, and the task's `geolocation`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::{get, post};
use axum::Json;
use futures::future::BoxFuture;
use serde_json::json;
use skillshift_common::{Condition, Outcome, Site, Uid, Version};
use skillshift_worker::action::Action;
use skillshift_worker::agent::{Agent, AgentError, Move, Observation, Reply, TaskBrief, Usage};
use skillshift_worker::attempt::{run_attempt, RunContext, TaskSource};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::sites::{Remote, SiteManager, SitesConfig};
use skillshift_worker::CancellationToken;

/// STAND-IN for the env-ctrl server inside a WebArena-Verified container.
#[derive(Default)]
struct EnvCtrl {
    resets: AtomicU32,
    health_polls: AtomicU32,
    /// Health probes that still answer "not ready" after a reset.
    unhealthy_after_reset: AtomicU32,
    fail_reset: bool,
    never_healthy: bool,
}

fn env_ctrl(state: Arc<EnvCtrl>, shipped_routes: bool) -> axum::Router {
    async fn reset(State(s): State<Arc<EnvCtrl>>) -> impl IntoResponse {
        s.resets.fetch_add(1, Ordering::SeqCst);
        if s.fail_reset {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"success": false, "message": "database restore failed"})),
            );
        }
        s.unhealthy_after_reset.store(3, Ordering::SeqCst);
        (StatusCode::OK, Json(json!({"success": true, "message": "reset", "details": {}})))
    }
    async fn health(State(s): State<Arc<EnvCtrl>>) -> Json<serde_json::Value> {
        s.health_polls.fetch_add(1, Ordering::SeqCst);
        let left = s.unhealthy_after_reset.load(Ordering::SeqCst);
        if left > 0 {
            s.unhealthy_after_reset.store(left - 1, Ordering::SeqCst);
        }
        Json(json!({"success": left == 0 && !s.never_healthy, "message": "", "details": {}}))
    }
    async fn config() -> Json<serde_json::Value> {
        Json(json!({"success": true, "details": {"env": "shopping_admin"}}))
    }
    let r = axum::Router::new();
    let r = if shipped_routes {
        r.route("/restart", post(reset)).route("/status", get(health))
    } else {
        r.route("/reset", post(reset)).route("/health", get(health)).route("/config", get(config))
    };
    r.with_state(state)
}

fn remote(site_url: &str, ctl: &str, timeout_s: u64, extra: serde_json::Value) -> Remote {
    let mut entry = json!({"url": site_url, "env_ctrl": ctl});
    if let (Some(e), Some(x)) = (entry.as_object_mut(), extra.as_object()) {
        e.extend(x.clone());
    }
    let cfg: SitesConfig = serde_json::from_value(json!({
        "backend": "env-ctrl", "reset_policy": "before-each", "reset_timeout_s": timeout_s,
        "sites": {"gitlab-v1": entry}
    }))
    .unwrap();
    Remote::new(cfg).unwrap()
}

#[tokio::test]
async fn a_reset_is_posted_to_env_ctrl_and_waits_until_healthy() {
    for shipped in [false, true] {
        let state = Arc::new(EnvCtrl::default());
        let ctl = common::serve(env_ctrl(state.clone(), shipped)).await;
        let r = remote("http://127.0.0.1:9", &ctl, 20, json!({}));
        r.reset(Site::Gitlab, Version::V1).await.unwrap();
        assert_eq!(state.resets.load(Ordering::SeqCst), 1, "shipped routes: {shipped}");
        assert_eq!(state.health_polls.load(Ordering::SeqCst), 4, "three 'not ready' answers, then healthy");
        if !shipped {
            let cfg = r.env_ctrl_config(Site::Gitlab, Version::V1).await.unwrap();
            assert_eq!(cfg["details"]["env"], "shopping_admin");
        }
    }
}

#[tokio::test]
async fn a_failing_or_never_healthy_reset_is_a_site_reset_error_record() {
    let failing = Arc::new(EnvCtrl { fail_reset: true, ..EnvCtrl::default() });
    let ctl = common::serve(env_ctrl(failing.clone(), false)).await;
    let r = remote("http://127.0.0.1:9", &ctl, 20, json!({}));
    let e = r.reset(Site::Gitlab, Version::V1).await.unwrap_err().to_string();
    assert!(e.contains("database restore failed"), "{e}");

    let stuck = Arc::new(EnvCtrl { never_healthy: true, ..EnvCtrl::default() });
    let ctl = common::serve(env_ctrl(stuck, false)).await;
    let r = remote("http://127.0.0.1:9", &ctl, 1, json!({}));
    let t = std::time::Instant::now();
    let e = r.reset(Site::Gitlab, Version::V1).await.unwrap_err().to_string();
    assert!(e.contains("not healthy within 1 s"), "{e}");
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "the wait is bounded: {:?}", t.elapsed());

    // In an attempt: error / site_reset, before any browser starts.
    let ctl = common::serve(env_ctrl(failing.clone(), false)).await;
    let dir = tempfile::tempdir().unwrap();
    common::write_tasks(dir.path(), &[common::answer_task(0, "/", "kiwi")]);
    let ctx = RunContext::new(
        common::arc(remote("http://127.0.0.1:9", &ctl, 20, json!({}))),
        TaskSource::Dir(dir.path().into()),
        "test",
    );
    let driver = Driver::new(BrowserConfig::default());
    let spec = common::spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src, 1, 30_000, None);
    let agent = Box::new(|_: &skillshift_common::task::Task| -> Result<Box<dyn Agent>, AgentError> {
        Err(AgentError::Process("never reached".into()))
    });
    let record = run_attempt(&ctx, &driver, &spec, agent, None, CancellationToken::new()).await;
    assert_eq!(record.outcome, Some(Outcome::Error));
    assert_eq!(record.error.as_deref(), Some("site_reset"));
    common::validate(&[record]);
}

/// Plays `moves`, then stops, keeping the observations it saw.
struct StopAgent {
    moves: Vec<String>,
    seen: Arc<Mutex<Vec<Observation>>>,
}

impl Agent for StopAgent {
    fn start(&mut self, _brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        let mv = match self.moves.get(obs.step as usize) {
            Some(text) => Action::parse_lenient(text),
            None => Action::Stop { answer: "kiwi".into() },
        };
        self.seen.lock().unwrap().push(obs);
        Box::pin(async move { Ok(Reply { mv: Move::Action(mv), skill_reports: vec![] }) })
    }
    fn usage(&self) -> Usage {
        Usage::default()
    }
}

const GEO_PAGE: &str = r#"<!doctype html><title>locating</title><script>
navigator.geolocation.getCurrentPosition(p => { document.title = p.coords.latitude + "," + p.coords.longitude; },
                                         e => { document.title = "no position: " + e.message; });
</script><main><h1>Home</h1></main>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_login_headers_storage_state_and_geolocation_reach_the_site() {
    // A fixture site that notes every auto-login header and cookie it is sent.
    let seen_headers = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen_headers.clone();
    let site = axum::Router::new().route(
        "/",
        get(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                log.lock().unwrap().push(format!("{}|{}", h("x-m2-admin-auto-login"), h("cookie")));
                Html(GEO_PAGE)
            }
        }),
    );
    let base = common::serve(site).await;
    let ctl = common::serve(env_ctrl(Arc::new(EnvCtrl::default()), false)).await;

    let run = |extra: serde_json::Value, geolocation: Option<serde_json::Value>, moves: Vec<String>| {
        let base = base.clone();
        let ctl = ctl.clone();
        async move {
            let dir = tempfile::tempdir().unwrap();
            let mut task = common::answer_task(0, "/", "kiwi");
            task.require_login = true;
            task.geolocation = geolocation;
            // The task's own storage_state file, as WebArena's configs name one.
            if let Some(state) = extra.get("task_storage_state") {
                let path = dir.path().join("task_state.json");
                std::fs::write(&path, state.to_string()).unwrap();
                task.storage_state = Some(path.display().to_string());
            }
            common::write_tasks(dir.path(), &[task]);
            let extra = match extra.get("storage_state").and_then(|v| v.as_object()) {
                Some(state) => {
                    let path = dir.path().join("state.json");
                    std::fs::write(&path, serde_json::to_string(state).unwrap()).unwrap();
                    json!({"storage_state": path})
                }
                None if extra.get("task_storage_state").is_some() => json!({}),
                None => extra,
            };
            let ctx = RunContext::new(
                common::arc(remote(&base, &ctl, 20, extra)),
                TaskSource::Dir(dir.path().into()),
                "test",
            );
            let driver = Driver::new(BrowserConfig::default());
            let spec = common::spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src, 1, 60_000, None);
            let seen = Arc::new(Mutex::new(Vec::new()));
            let agent_seen = seen.clone();
            let agent = Box::new(move |_: &skillshift_common::task::Task| -> Result<Box<dyn Agent>, AgentError> {
                Ok(Box::new(StopAgent { moves, seen: agent_seen }))
            });
            let record = run_attempt(&ctx, &driver, &spec, agent, None, CancellationToken::new()).await;
            driver.shutdown().await;
            let seen = seen.lock().unwrap().clone();
            (record, seen)
        }
    };

    let (record, seen) = run(
        json!({"auto_login": {"X-M2-Admin-Auto-Login": "admin:admin1234"}}),
        Some(json!({"latitude": 40.4433, "longitude": -79.9436})),
        vec!["new_tab".into(), format!("goto [{base}/]")],
    )
    .await;
    assert_eq!(record.outcome, Some(Outcome::Success), "{record:?}");
    let h = seen_headers.lock().unwrap().clone();
    assert_eq!(h.len(), 2, "the start page and the new tab's page: {h:?}");
    assert!(h.iter().all(|h| h.starts_with("admin:admin1234|")), "every tab carries the header: {h:?}");
    assert_eq!(seen[0].title, "40.4433,-79.9436", "the task's geolocation");
    assert!(seen[2].axtree.starts_with("Tab 0: 40.4433,-79.9436 | Tab 1 (current): "), "{}", seen[2].axtree);

    seen_headers.lock().unwrap().clear();
    let state = json!({"cookies": [{"name": "_gitlab_session", "value": "s3cr3t", "domain": "127.0.0.1", "path": "/"}], "origins": []});
    let (record, _) = run(json!({"storage_state": state.clone()}), None, vec![]).await;
    assert_eq!(record.outcome, Some(Outcome::Success), "{record:?}");
    let h = seen_headers.lock().unwrap().clone();
    assert!(h.iter().any(|h| h.contains("_gitlab_session=s3cr3t")), "{h:?}");
    assert!(h.iter().all(|h| h.starts_with('|')), "no auto-login header without one configured: {h:?}");

    // The task's own storage_state file signs in too.
    seen_headers.lock().unwrap().clear();
    let (record, _) = run(json!({"task_storage_state": state}), None, vec![]).await;
    assert_eq!(record.outcome, Some(Outcome::Success), "{record:?}");
    let h = seen_headers.lock().unwrap().clone();
    assert!(h.iter().any(|h| h.contains("_gitlab_session=s3cr3t")), "{h:?}");
}
