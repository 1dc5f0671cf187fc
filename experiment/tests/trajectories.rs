//! Trajectories end to end: one attempt in real headless Chromium on the
//! embedded fixture sites keeps a step per counted step, its failing skill
//! sub-step and no password; and a trajectory with a 10 MB observation goes
//! from a worker's outbox over real gRPC to an in-process coordinator and out
//! of its export in bounded chunks.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use skillshift_common::blob::Blob;
use skillshift_common::trajectory::{ScreenshotPolicy, Step, Trajectory};
use skillshift_common::{AttemptSpec, Condition, Outcome, Record, Site, Uid, Version};
use skillshift_coordinator::planner::{SweepSpec, TreatmentSpec};
use skillshift_experiment::embedded::{generated_tasks, Embedded};
use skillshift_experiment::export;
use skillshift_experiment::settings::Connect;
use skillshift_worker::attempt::{run_attempt_traced, RunContext};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::capture::Capture;
use skillshift_worker::executor::Executor;
use skillshift_worker::remote::{self, RemoteConfig};
use skillshift_worker::run_executor::factory_for;
use skillshift_worker::sites::{ResetPolicy, SiteManager};
use skillshift_worker::CancellationToken;

mod common;

/// The passwords the fixture sites' login steps type.
fn fixture_passwords(sites: &dyn SiteManager) -> Vec<String> {
    let mut out: Vec<String> = [Site::Gitlab, Site::Magento, Site::Wordpress]
        .iter()
        .flat_map(|s| Capture::login_secrets(&sites.login_steps(*s, Version::V1)))
        .collect();
    out.sort();
    out.dedup();
    assert!(!out.is_empty(), "the fixture sites sign in with a password");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_attempt_keeps_one_step_per_counted_step_its_failing_sub_step_and_no_password() {
    let sites = Arc::new(Embedded::start(ResetPolicy::BeforeEach).await.unwrap());
    let passwords = fixture_passwords(sites.as_ref());
    let mut ctx = RunContext::new(sites, generated_tasks(), "traj-test");
    ctx.screenshot_policy = ScreenshotPolicy::Failures;
    let driver = Driver::new(BrowserConfig::default());
    // GitLab v2 moved "Milestones": the example library's skill for this task fails on v2.
    let uid = Uid::new(Site::Gitlab, Version::V2, 3);
    let spec = common::spec(uid, Condition::TgtExec, 0, 120_000, Some(common::example_library(Site::Gitlab)));
    let done = run_attempt_traced(&ctx, &driver, &spec, factory_for(&spec), None, CancellationToken::new()).await;
    driver.shutdown().await;
    let (r, t) = (&done.record, &done.trajectory.trajectory);
    println!("{}", serde_json::to_string(r).unwrap());
    assert_ne!(r.outcome, Some(Outcome::Error), "{r:?}");
    assert_eq!(t.steps.len() as u32, r.steps.unwrap(), "a trajectory's steps equal the record's");
    assert_eq!(t.steps.iter().map(|s| s.step).collect::<Vec<_>>(), (1..=t.steps.len() as u32).collect::<Vec<_>>());
    let failed = t.steps.iter().filter_map(|s| s.skill.as_ref()).find(|k| !k.ok).expect("a failed skill call");
    let i = failed.failed_step().expect("the failing sub-step is named");
    assert_eq!(failed.steps[i].error, failed.error, "the sub-step carries the call's error");
    assert!(failed.steps[..i].iter().all(|s| s.ok));
    assert_eq!(r.failure_category.as_deref(), Some("skill_failure"));
    assert_eq!(t.failure_category, r.failure_category);
    assert_eq!(t.outcome, r.outcome.unwrap());
    let score = t.score.as_ref().expect("the scorer's evidence");
    assert!(score.evaluators.iter().all(|e| !e.kind.is_empty() && !e.expected.is_empty()), "{score:?}");
    // A failure keeps its last page, stored by digest. The pages that showed an error are
    // photographed only while the agent thinks, and the skills agent answers at once: none of
    // them is (screenshot_beside_reply.rs has an agent that thinks).
    assert!(t.steps.last().unwrap().screenshot.is_some(), "the last page of a failure is kept");
    assert!(t.steps.iter().any(|s| s.last_action_error.is_some()), "the premise: a page showed an error");
    for (i, s) in t.steps.iter().enumerate() {
        assert_eq!(s.screenshot.is_some(), i + 1 == t.steps.len(), "step {i}");
    }
    for s in t.steps.iter().filter(|s| s.screenshot.is_some()) {
        let name = s.screenshot.as_deref().unwrap();
        let digest = name.trim_start_matches("screenshots/").trim_end_matches(".png");
        assert!(done.trajectory.screenshots.get(digest).is_some_and(|png| png.starts_with(b"\x89PNG")));
    }
    let named: std::collections::BTreeSet<&str> = t.steps.iter().filter_map(|s| s.screenshot.as_deref()).collect();
    assert!(done.screenshots_taken as usize >= named.len(), "every kept screenshot was taken");
    let json = serde_json::to_string(t).unwrap();
    for p in &passwords {
        assert!(!json.contains(p.as_str()), "password {p:?} in the trajectory");
    }
}

/// Under `failures`, the page an attempt ended on is photographed only once the verdict is a
/// failure: a success takes no screenshot at all, whether its scoring reads only the answer and
/// URL (string_match) or pages of their own (program_html on another URL, read in a tab of the
/// scorer's, the agent's page left as it was).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_photographs_the_last_page_only_once_the_verdict_is_a_failure() {
    use skillshift_common::task::EvalType;
    let sites = Arc::new(Embedded::start(ResetPolicy::BeforeEach).await.unwrap());
    let mut ctx = RunContext::new(sites, generated_tasks(), "traj-test");
    ctx.screenshot_policy = ScreenshotPolicy::Failures;
    let driver = Driver::new(BrowserConfig::default());
    let run = |uid: Uid, condition: Condition| {
        let spec = common::spec(uid, condition, 0, 120_000, Some(common::example_library(uid.site)));
        let (ctx, driver) = (&ctx, &driver);
        async move { run_attempt_traced(ctx, driver, &spec, factory_for(&spec), None, CancellationToken::new()).await }
    };
    // GitLab v1 task 0 passes at the source in one skill call; GitLab v2 task 1 fails at the target,
    // its agent stopping with a wrong answer after skills that failed. Both are string_match.
    // GitLab task 11 (program_html on a merge request's page) passes at the source and fails under
    // the target's execution shift.
    let cases = [
        (Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src, EvalType::StringMatch),
        (Uid::new(Site::Gitlab, Version::V2, 1), Condition::Tgt, EvalType::StringMatch),
        (Uid::new(Site::Gitlab, Version::V1, 11), Condition::Src, EvalType::ProgramHtml),
        (Uid::new(Site::Gitlab, Version::V2, 11), Condition::TgtExec, EvalType::ProgramHtml),
    ];
    let mut done = Vec::new();
    for (uid, condition, eval_type) in cases {
        let task = skillshift_sites::tasks(uid.site, uid.version)
            .into_iter()
            .map(|g| g.task)
            .find(|t| t.task_id == uid.task_id)
            .expect("a fixture task");
        assert_eq!(task.eval.eval_types, vec![eval_type], "{uid}: the premise");
        if eval_type == EvalType::ProgramHtml {
            assert!(task.eval.program_html.iter().all(|c| c.url != "last"), "{uid}: the premise, checks on other URLs");
        }
        done.push(run(uid, condition).await);
    }
    driver.shutdown().await;

    for pair in done.chunks(2) {
        let (passed, failed) = (&pair[0], &pair[1]);
        assert_eq!(passed.record.outcome, Some(Outcome::Success), "{:?}", passed.record);
        let steps = &passed.trajectory.trajectory.steps;
        assert!(steps.iter().all(|s| s.last_action_error.is_none()), "the premise: no page showed an error");
        assert_eq!(passed.screenshots_taken, 0, "{}: a success takes none", passed.record.uid);

        assert_eq!(failed.record.outcome, Some(Outcome::Failure), "{:?}", failed.record);
        let t = &failed.trajectory.trajectory;
        let last = t.steps.last().expect("steps");
        assert!(last.action.as_deref().is_some_and(|a| a.starts_with("stop [")), "the premise: {last:?}");
        let name =
            last.screenshot.as_deref().expect("the last page of a failure is kept, photographed after its verdict");
        let digest = name.trim_start_matches("screenshots/").trim_end_matches(".png");
        assert!(failed.trajectory.screenshots.get(digest).is_some_and(|png| png.starts_with(b"\x89PNG")));
        // The instant agent's error pages are not photographed: the last page is the one screenshot.
        assert_eq!(failed.screenshots_taken, 1, "{}", failed.record.uid);
    }
}

/// An executor that makes up one attempt whose single step shows a 10 MB page.
struct BigPage;

const PAGE_BYTES: usize = 10 << 20;

fn big_observation() -> String {
    // Pseudo-random words: text that does not compress away.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut s = String::with_capacity(PAGE_BYTES + 16);
    while s.len() < PAGE_BYTES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!("[{}] link '{:x}'\n", x % 100_000, x));
    }
    s.truncate(PAGE_BYTES);
    s
}

impl Executor for BigPage {
    fn hosts(&self) -> Vec<(Site, Version)> {
        vec![(Site::Gitlab, Version::V1)]
    }
    fn slots(&self) -> usize {
        1
    }
    fn execute(&self, spec: AttemptSpec, cancel: CancellationToken) -> BoxFuture<'static, Record> {
        let attempt = self.execute_traced(spec, cancel);
        Box::pin(async move { attempt.await.0 })
    }
    fn execute_traced(&self, spec: AttemptSpec, _: CancellationToken) -> BoxFuture<'static, (Record, Option<Blob>)> {
        Box::pin(async move {
            let mut r = Record::for_attempt(&spec);
            r.success = Some(false);
            r.outcome = Some(Outcome::Failure);
            r.steps = Some(1);
            let mut t = Trajectory::for_attempt(&spec, "read the page", "http://x/", "big-page");
            t.outcome = Outcome::Failure;
            t.failure_category = Some("wrong_answer".into());
            t.steps.push(Step {
                step: 1,
                url: "http://x/".into(),
                title: "big".into(),
                observation: big_observation(),
                action: Some("stop [x]".into()),
                skill: None,
                last_action_error: None,
                perturbations: Vec::new(),
                llm: None,
                duration_ms: 1,
                screenshot: None,
                reported_skills: Vec::new(),
                dialogs: Vec::new(),
            });
            (r, Some(Blob { trajectory: t, screenshots: BTreeMap::new() }))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10_mb_observation_travels_in_chunks_through_the_real_stream_and_out_of_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let coordinator = common::coordinator(dir.path(), "t0k3n-for-the-test", cancel.child_token()).await;
    let url = format!("http://{}", coordinator.grpc_addr);
    let mut cfg = RemoteConfig::new(&url, "big", dir.path().join("outbox"));
    cfg.token = Some("t0k3n-for-the-test".into());
    let stop = CancellationToken::new();
    let worker = tokio::spawn(remote::run(cfg, Arc::new(BigPage), stop.clone()));

    let mut spec = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    spec.sites = vec![Site::Gitlab];
    spec.conditions = vec![Condition::Src];
    spec.families = BTreeMap::from([(Site::Gitlab, vec![0])]);
    let conn = Connect::plain(url.clone(), Some("t0k3n-for-the-test".into()));
    let mut client = conn.client().await.unwrap();
    let id = client.submit(&spec).await.unwrap();
    let began = Instant::now();
    loop {
        let st = client.get(&id).await.unwrap();
        if st.state.is_final() {
            break;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "the sweep did not finish: {st:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The drain waits until the trajectory is acknowledged too.
    stop.cancel();
    let summary = worker.await.unwrap().unwrap();
    assert_eq!(summary.undelivered, 0, "record and trajectory were acknowledged");
    assert!(!dir.path().join("outbox").join("quarantine").exists(), "nothing refused");

    let out = dir.path().join("export").join("per_task.jsonl");
    let done = export::export_all(&mut client, &id, &out).await.unwrap();
    assert_eq!((done.records, done.trajectories), (1, 1));
    let line = std::fs::read_to_string(&out).unwrap();
    let rec: Record = serde_json::from_str(line.trim()).unwrap();
    let file = rec.trajectory.clone().expect("the record names its trajectory");
    assert_eq!(file, "trajectories/CONTROL/skillshift.gitlab.v1.0.src.0.0.json");
    assert_eq!(rec.failure_category.as_deref(), Some("wrong_answer"));
    let t: Trajectory = serde_json::from_slice(&std::fs::read(out.parent().unwrap().join(&file)).unwrap()).unwrap();
    assert_eq!(t.steps[0].observation, big_observation(), "the 10 MB page arrived whole");
    assert_eq!(t.steps.len() as u32, rec.steps.unwrap());
    cancel.cancel();
    coordinator.wait().await.unwrap();
}
