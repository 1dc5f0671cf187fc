//! The attempt's faults before the browser, the turns of a site-version, the reset policy, and the
//! settings and ids it reads.

use std::sync::Arc;

use skillshift_common::{Outcome, Site, Version};

use super::*;
use crate::browser::BrowserConfig;
use crate::sites::SiteManager;
use crate::sites::{DirtySites, Endpoint, ResetPolicy, SiteError};
use futures::future::BoxFuture;
use skillshift_common::skills::Step;
use skillshift_common::task::{Eval, EvalType};
use skillshift_common::trajectory::ScreenshotPolicy;
use skillshift_common::{Condition, Uid};
use std::sync::atomic::{AtomicU32, Ordering};

/// gitlab v1 at an address nothing listens on; resets fail when asked to.
struct FakeSites {
    policy: ResetPolicy,
    reset_fails: bool,
    resets: AtomicU32,
    dirty: DirtySites,
    /// How long a reset takes, and the most resets seen under way at once.
    reset_takes: Duration,
    resetting: Arc<AtomicU32>,
    most_at_once: Arc<AtomicU32>,
}

impl FakeSites {
    fn new(policy: ResetPolicy, reset_fails: bool) -> FakeSites {
        FakeSites {
            policy,
            reset_fails,
            resets: AtomicU32::new(0),
            dirty: DirtySites::new(),
            reset_takes: Duration::ZERO,
            resetting: Arc::default(),
            most_at_once: Arc::default(),
        }
    }
}

impl SiteManager for FakeSites {
    fn hosts(&self) -> Vec<(Site, Version)> {
        vec![(Site::Gitlab, Version::V1)]
    }
    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
        Ok(Endpoint { base_url: "http://127.0.0.1:9".into(), image: site.image(version), digest: None })
    }
    fn reset(&self, site: Site, version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
        self.resets.fetch_add(1, Ordering::SeqCst);
        let fails = self.reset_fails;
        let (takes, resetting, most) = (self.reset_takes, self.resetting.clone(), self.most_at_once.clone());
        Box::pin(async move {
            let now = resetting.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(takes).await;
            resetting.fetch_sub(1, Ordering::SeqCst);
            if fails {
                return Err(SiteError::Reset { image: site.image(version), message: "refused".into() });
            }
            Ok(())
        })
    }
    fn login_steps(&self, _site: Site, _version: Version) -> Vec<Step> {
        Vec::new()
    }
    fn policy(&self) -> ResetPolicy {
        self.policy
    }
    fn dirty_sites(&self) -> &DirtySites {
        &self.dirty
    }
}

fn task(task_id: u32) -> Task {
    Task {
        task_id,
        sites: vec![Site::Gitlab.into()],
        require_login: false,
        storage_state: None,
        start_url: "__GITLAB__/".into(),
        geolocation: None,
        intent_template: "Say hi".into(),
        instantiation_dict: BTreeMap::new(),
        intent: "Say hi".into(),
        intent_template_id: 0,
        require_reset: false,
        eval: Eval {
            eval_types: vec![EvalType::UrlMatch],
            reference_answers: None,
            reference_url: None,
            program_html: vec![],
            ..Eval::default()
        },
        string_note: None,
    }
}

fn spec(uid: Uid, condition: Condition) -> AttemptSpec {
    AttemptSpec {
        sweep: "sw".into(),
        uid,
        condition,
        rep: 2,
        attempt: 1,
        seed: 3,
        max_steps: 5,
        task_timeout_ms: 10_000,
        config_digest: Some("sha256:cfg".into()),
        ..AttemptSpec::example()
    }
}

fn no_agent() -> AgentFactory {
    Box::new(|_| Err(AgentError::Process("no agent in this test".into())))
}

/// Runs an attempt that ends before it needs a browser.
async fn attempt(sites: Arc<FakeSites>, spec: &AttemptSpec) -> Record {
    let given: TaskFn = Arc::new(|_, _| vec![task(0)]);
    let ctx = RunContext::new(sites, TaskSource::Given(given), "w-test");
    let driver = Driver::new(BrowserConfig::default());
    run_attempt(&ctx, &driver, spec, no_agent(), None, CancellationToken::new()).await
}

fn check_error(r: &Record, spec: &AttemptSpec, reason: ErrorReason) {
    assert_eq!(r.identity_mismatch(spec), None, "identity stamped from the spec: {r:?}");
    assert_eq!((r.outcome, r.success), (Some(Outcome::Error), None));
    assert_eq!((r.steps, r.skill_calls, r.skill_failures), (None, None, None), "an error measured nothing: {r:?}");
    assert_eq!(ErrorReason::of(r), Some(reason), "{r:?}");
    assert_eq!(r.error.as_deref(), Some(reason.as_str()));
    assert_eq!(r.worker.as_deref(), Some("w-test"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_on_one_site_version_take_turns_and_other_site_versions_do_not_wait() {
    let run = |specs: Vec<AttemptSpec>| async move {
        let mut sites = FakeSites::new(ResetPolicy::BeforeEach, false);
        sites.reset_takes = Duration::from_millis(150);
        let sites = Arc::new(sites);
        let given: TaskFn = Arc::new(|_, _| vec![task(0)]);
        let ctx = RunContext::new(sites.clone(), TaskSource::Given(given), "w-test");
        let driver = Driver::new(BrowserConfig::default());
        let all = specs.iter().map(|s| run_attempt(&ctx, &driver, s, no_agent(), None, CancellationToken::new()));
        let records = futures::future::join_all(all).await;
        assert!(records.iter().all(|r| ErrorReason::of(r) == Some(ErrorReason::Agent)), "{records:?}");
        (sites.resets.load(Ordering::SeqCst), sites.most_at_once.load(Ordering::SeqCst))
    };
    let v1 = spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src);
    let v1_again = spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::SrcExec);
    // Another slot's reset would wipe what this attempt's agent and score read: one at a time.
    assert_eq!(run(vec![v1.clone(), v1_again]).await, (2, 1), "resets of one site-version never overlap");
    let v2 = spec(Uid::new(Site::Gitlab, Version::V2, 0), Condition::Tgt);
    assert_eq!(run(vec![v1, v2]).await, (2, 2), "two site-versions reset side by side");
}

#[tokio::test]
async fn faults_before_the_browser_are_error_records_with_their_reason_and_the_spec_identity() {
    let gitlab = |id| Uid::new(Site::Gitlab, Version::V1, id);
    let sites = Arc::new(FakeSites::new(ResetPolicy::Never, false));

    let wrong_version = spec(gitlab(0), Condition::TgtExec);
    check_error(&attempt(sites.clone(), &wrong_version).await, &wrong_version, ErrorReason::Spec);

    let no_such_task = spec(gitlab(7), Condition::Src);
    check_error(&attempt(sites.clone(), &no_such_task).await, &no_such_task, ErrorReason::Task);

    let ok = spec(gitlab(0), Condition::Src);
    check_error(&attempt(sites.clone(), &ok).await, &ok, ErrorReason::Agent);
    assert_eq!(sites.resets.load(Ordering::SeqCst), 0, "policy never: no reset");

    let failing = Arc::new(FakeSites::new(ResetPolicy::BeforeEach, true));
    check_error(&attempt(failing.clone(), &ok).await, &ok, ErrorReason::SiteReset);
    assert_eq!(failing.resets.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn after_mutation_resets_a_dirty_site_once_and_marks_it_clean() {
    let sites = Arc::new(FakeSites::new(ResetPolicy::AfterMutation, false));
    sites.mark_dirty(Site::Gitlab, Version::V1);
    let s = spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src);
    check_error(&attempt(sites.clone(), &s).await, &s, ErrorReason::Agent);
    assert!(!sites.needs_reset(Site::Gitlab, Version::V1), "the reset cleaned it");
    check_error(&attempt(sites.clone(), &s).await, &s, ErrorReason::Agent);
    assert_eq!(sites.resets.load(Ordering::SeqCst), 1, "a clean site is not reset again");
}

#[test]
fn the_network_trace_setting_is_on_off_or_bodies_and_nothing_else() {
    for (text, want) in
        [("on", NetworkTrace::On), ("", NetworkTrace::On), ("off", NetworkTrace::Off), ("bodies", NetworkTrace::Bodies)]
    {
        assert_eq!(text.parse::<NetworkTrace>(), Ok(want), "{text:?}");
    }
    let e = "Off".parse::<NetworkTrace>().expect_err("refused");
    assert_eq!(e.to_string(), "SKILLSHIFT_NETWORK_TRACE is 'Off': expected on, off or bodies");
    assert!(NetworkTrace::Bodies.records() && !NetworkTrace::Off.records());
}

#[test]
fn trace_ids_come_from_traceparent() {
    assert_eq!(
        trace_id("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").as_deref(),
        Some("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert_eq!(trace_id("garbage"), None);
}

#[test]
fn the_journal_tells_each_event_once_to_the_sink_and_the_skill_recorder_in_order() {
    use super::journal::{SkillCall, StepSpans};
    use crate::agent::SkillReport;
    use crate::cdp::Dialog;

    let seen: Arc<std::sync::Mutex<Vec<Event>>> = Arc::default();
    let into = seen.clone();
    let sink: EventSink = Box::new(move |e| into.lock().expect("not poisoned").push(e.clone()));
    let s = spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src);
    let mut journal = Journal::new(Some(sink), Capture::new(&s, ScreenshotPolicy::default()), Recorder::new(false));
    let span = tracing::Span::none();
    let spans = || StepSpans { step: &span, act: None, skill: None };
    journal.reported(0, SkillReport { name: "own".into(), ok: false, error: Some("gone".into()) });
    let alert = Dialog { kind: "alert".into(), message: "hi".into(), accepted: false };
    journal.acted(0, "http://h/", "click [3]".into(), None, (vec![alert], 0), spans());
    let args = BTreeMap::new();
    let call = SkillCall {
        step: 1,
        name: "find",
        args: &args,
        bound: &[],
        steps_done: 0,
        ok: true,
        error: None,
        answer: Some("42".into()),
    };
    journal.skill(call, (Vec::new(), 0), spans());
    journal.note("done".into());

    assert_eq!(journal.recorder().counts(), (Some(2), Some(1)), "a reported and a run skill count alike");
    let step = |action: &str| Event::Step { step: 0, url: "http://h/".into(), action: action.into(), error: None };
    let want = vec![
        Event::Reported { step: 0, name: "own".into(), ok: false, error: Some("gone".into()) },
        step("click [3]"),
        Event::Note("alert dialog \"hi\" dismissed".into()),
        Event::Skill { step: 1, name: "find".into(), ok: true, error: None, answer: Some("42".into()) },
        Event::Note("done".into()),
    ];
    assert_eq!(*seen.lock().expect("not poisoned"), want);
}
