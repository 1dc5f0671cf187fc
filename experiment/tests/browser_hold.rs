//! A worker whose attempts' browser fails, over real gRPC to an in-process coordinator with a sled store on disk.
//! Its executor stands in for the browser (the real-Chromium case is `tests/browser_preflight.rs`): every attempt
//! ends an `error` with reason `browser`, and its check (does a browser start?) passes or fails as the test says.
//! * the check fails: one attempt errors, the worker takes no more work, is not ready and is named with the
//!   check's reason; no unit spends a second retry on it;
//! * the check passes each time: the worker takes work again after each failure, until `BROKEN_AFTER` failures in
//!   a row make it unavailable anyway.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use skillshift_common::ids::SweepId;
use skillshift_common::{AttemptSpec, Condition, Outcome, Record, Site, Version};
use skillshift_coordinator::client::Client;
use skillshift_coordinator::planner::{SweepSpec, TreatmentSpec};
use skillshift_coordinator::server;
use skillshift_coordinator::status::SweepStatus;
use skillshift_experiment::settings::Connect;
use skillshift_worker::executor::Executor;
use skillshift_worker::health::{Health, NotReady};
use skillshift_worker::preflight::PreflightError;
use skillshift_worker::remote::{self, RemoteConfig, BROKEN_AFTER};
use skillshift_worker::CancellationToken;

mod common;

const TOKEN: &str = "t0k3n-for-the-test";

/// Attempts that all lose their browser; checks that pass when `check_ok`.
struct FailingBrowser {
    check_ok: bool,
    checks: Arc<AtomicU32>,
    attempts: Arc<AtomicU32>,
}

impl Executor for FailingBrowser {
    fn hosts(&self) -> Vec<(Site, Version)> {
        vec![(Site::Gitlab, Version::V1)]
    }
    fn slots(&self) -> usize {
        1
    }
    fn execute(&self, spec: AttemptSpec, _: CancellationToken) -> BoxFuture<'static, Record> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let mut r = Record::for_attempt(&spec);
            r.outcome = Some(Outcome::Error);
            r.error = Some(skillshift_common::ErrorReason::Browser.as_str().into());
            r.error_detail = Some("the renderer crashed".into());
            r
        })
    }
    fn check(&self) -> BoxFuture<'static, Result<(), PreflightError>> {
        self.checks.fetch_add(1, Ordering::SeqCst);
        let ok = self.check_ok;
        Box::pin(async move {
            if ok {
                Ok(())
            } else {
                Err(PreflightError::Start("exit status: 1".into()))
            }
        })
    }
}

struct Bench {
    cancel: CancellationToken,
    stop: CancellationToken,
    client: Client,
    id: SweepId,
    health: Arc<Health>,
    checks: Arc<AtomicU32>,
    attempts: Arc<AtomicU32>,
    worker: tokio::task::JoinHandle<Result<remote::Summary, remote::RemoteError>>,
    coordinator: server::Running,
    _dir: tempfile::TempDir,
}

/// A coordinator, a worker on `FailingBrowser`, and a sweep of four GitLab units that may retry each five times.
async fn start(check_ok: bool) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let coordinator = common::coordinator(dir.path(), TOKEN, cancel.child_token()).await;
    let url = format!("http://{}", coordinator.grpc_addr);
    let mut cfg = RemoteConfig::new(&url, "wF", dir.path().join("outbox"));
    cfg.token = Some(TOKEN.into());
    let health = cfg.health.clone();
    let (checks, attempts) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let executor = FailingBrowser { check_ok, checks: checks.clone(), attempts: attempts.clone() };
    let stop = CancellationToken::new();
    let worker = tokio::spawn(remote::run(cfg, Arc::new(executor), stop.clone()));

    let mut spec = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    spec.sites = vec![Site::Gitlab];
    spec.conditions = vec![Condition::Src];
    spec.families = BTreeMap::from([(Site::Gitlab, vec![0, 1, 2, 3])]);
    spec.max_retries = 5;
    let mut client = Connect::plain(url, Some(TOKEN.into())).client().await.unwrap();
    let id = client.submit(&spec).await.unwrap();
    Bench { cancel, stop, client, id, health, checks, attempts, worker, coordinator, _dir: dir }
}

impl Bench {
    /// Waits (at most 30 s) until the worker says it takes no work, then 3 s more, and returns the sweep's status.
    async fn settled(&mut self) -> SweepStatus {
        let began = Instant::now();
        while !matches!(self.health.ready(), Err(NotReady::Unavailable(_))) {
            assert!(began.elapsed() < Duration::from_secs(30), "the worker never stopped taking work");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        self.client.get(&self.id).await.unwrap()
    }

    async fn unavailable(&mut self) -> Option<String> {
        let workers = self.client.workers().await.unwrap();
        workers.into_iter().find(|w| w.name == "wF").and_then(|w| w.unavailable)
    }

    async fn stop(self) {
        self.stop.cancel();
        let summary = self.worker.await.unwrap().unwrap();
        assert_eq!(summary.undelivered, 0);
        self.cancel.cancel();
        self.coordinator.wait().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_does_not_start_costs_one_attempt_not_a_units_retries() {
    let mut b = start(false).await;
    let st = b.settled().await;
    assert_eq!(b.attempts.load(Ordering::SeqCst), 1, "{st:?}");
    assert_eq!(b.checks.load(Ordering::SeqCst), 1, "one check, at once after the failure");
    assert_eq!((st.attempts.total, st.attempts.error, st.units.invalid), (1, 1, 0), "{st:?}");
    let why = b.unavailable().await.expect("the coordinator names the worker unavailable");
    assert_eq!(why, "browser: the browser does not start: exit status: 1");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_starts_but_fails_its_attempts_stops_the_worker_after_broken_after_in_a_row() {
    let mut b = start(true).await;
    let st = b.settled().await;
    // Each failure before the last was followed by a passing check and more work; the last made it unavailable.
    assert_eq!(b.attempts.load(Ordering::SeqCst), BROKEN_AFTER, "{st:?}");
    assert_eq!(b.checks.load(Ordering::SeqCst), BROKEN_AFTER - 1);
    assert_eq!(st.attempts.error, u64::from(BROKEN_AFTER), "{st:?}");
    assert_eq!(st.units.invalid, 0, "{st:?}");
    let why = b.unavailable().await.expect("the coordinator names the worker unavailable");
    assert_eq!(why, "browser: the renderer crashed");
    b.stop().await;
}
