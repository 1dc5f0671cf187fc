//! A real relabel, marked in the viewer: one attempt under `src-perc` runs
//! through the worker's run loop in real headless Chromium on a page of this
//! test's own (the perturbation profile relabels every label it can), its
//! record and trajectory are written as an export, and the viewer, in
//! Chromium too, marks the observation line that shows the relabelled name.
//! The phrase between them is the one docs/formats.md pins
//! (`relabel: 'Issues' -> 'Tickets'`), written and read by
//! `skillshift_common::perturbation`.

mod common;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use skillshift_common::perturbation::AppliedPerturbation;
use skillshift_common::skills::Step as SkillStep;
use skillshift_common::task::{Eval, EvalType, ReferenceAnswers, Task};
use skillshift_common::trajectory::Trajectory;
use skillshift_common::{AttemptSpec, Condition, Site, Version};
use skillshift_viewer::{router, ExportSource};

use common::wait_for;
use skillshift_worker::action::Action;
use skillshift_worker::agent::{Agent, AgentError, Move, Observation, Reply, TaskBrief, Usage};
use skillshift_worker::attempt::{run_attempt_traced, RunContext, TaskSource};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::perturb::DEFAULT_PROFILE;
use skillshift_worker::sites::{DirtySites, Endpoint, ResetPolicy, SiteError, SiteManager};
use skillshift_worker::CancellationToken;

const PAGE: &str = r#"<!doctype html><title>Project</title>
<nav aria-label="Main"><ul><li><a href="/issues">Issues</a></li><li><a href="/wiki">Wiki</a></li></ul></nav>
<main><h1>Project</h1><p>Nothing to see.</p></main>"#;

async fn serve(app: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    format!("http://{addr}")
}

/// The test's page standing in for gitlab v1, with no reset and no login.
struct Page {
    base: String,
    dirty: DirtySites,
}

impl SiteManager for Page {
    fn hosts(&self) -> Vec<(Site, Version)> {
        vec![(Site::Gitlab, Version::V1)]
    }
    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
        Ok(Endpoint { base_url: self.base.clone(), image: site.image(version), digest: Some("sha256:test".into()) })
    }
    fn reset(&self, _site: Site, _version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
        Box::pin(async { Ok(()) })
    }
    fn login_steps(&self, _site: Site, _version: Version) -> Vec<SkillStep> {
        Vec::new()
    }
    fn policy(&self) -> ResetPolicy {
        ResetPolicy::Never
    }
    fn dirty_sites(&self) -> &DirtySites {
        &self.dirty
    }
}

/// Answers `kiwi` at once.
struct Stopper;

impl Agent for Stopper {
    fn start(&mut self, _brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
    fn next(&mut self, _obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        Box::pin(async { Ok(Reply { mv: Move::Action(Action::parse_lenient("stop [kiwi]")), skill_reports: vec![] }) })
    }
    fn usage(&self) -> Usage {
        Usage::default()
    }
}

fn task() -> Task {
    Task {
        task_id: 0,
        sites: vec![Site::Gitlab.into()],
        require_login: false,
        storage_state: None,
        start_url: "__GITLAB__/".into(),
        geolocation: None,
        intent_template: "Say kiwi".into(),
        instantiation_dict: Default::default(),
        intent: "Say kiwi".into(),
        intent_template_id: 0,
        require_reset: false,
        eval: Eval {
            eval_types: vec![EvalType::StringMatch],
            reference_answers: Some(ReferenceAnswers {
                exact_match: Some("kiwi".into()),
                must_include: None,
                fuzzy_match: None,
            }),
            reference_url: None,
            program_html: vec![],
            ..Eval::default()
        },
        string_note: None,
    }
}

/// The default profile with every label that has a synonym relabelled and the other perception shifts off.
fn relabel_everything() -> Value {
    let mut v: Value = serde_json::from_str(DEFAULT_PROFILE).expect("the default profile");
    v["perception"]["relabel"]["share"] = 1.0.into();
    v["perception"]["reorder_nav"]["share"] = 0.0.into();
    v["perception"]["distractors"] = serde_json::json!({"banner": null, "links": null});
    v
}

fn spec() -> AttemptSpec {
    AttemptSpec {
        sweep: "sw-relabel".into(),
        condition: Condition::SrcPerc,
        seed: 1,
        max_steps: 3,
        perturbation_profile: Some(relabel_everything()),
        ..AttemptSpec::example()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_relabel_is_marked_on_its_observation_line_in_the_viewer() {
    // The attempt, through the run loop.
    let site = serve(axum::Router::new().route("/", axum::routing::get(|| async { axum::response::Html(PAGE) }))).await;
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(data.path().join("tasks")).expect("mkdir");
    std::fs::write(data.path().join("tasks/gitlab.v1.json"), serde_json::to_string(&[task()]).expect("json"))
        .expect("write tasks");
    let sites: Arc<dyn SiteManager> = Arc::new(Page { base: site, dirty: DirtySites::new() });
    let ctx = RunContext::new(sites, TaskSource::Dir(data.path().into()), "test");
    let driver = Driver::new(BrowserConfig::default());
    let spec = spec();
    let agent = Box::new(|_: &Task| -> Result<Box<dyn Agent>, AgentError> { Ok(Box::new(Stopper)) });
    let done = run_attempt_traced(&ctx, &driver, &spec, agent, None, CancellationToken::new()).await;
    let mut record = done.record;
    let t = done.trajectory.trajectory;
    assert_eq!(t.steps.len(), 1, "{record:?}");

    // The step names the label it changed, old -> new, in the form docs/formats.md pins.
    let step = &t.steps[0];
    let renamed: Vec<(String, String)> = step
        .applied_perturbations()
        .filter_map(|p| match p {
            AppliedPerturbation::Relabel { from, to } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(renamed.len(), 1, "one label with a synonym on the page: {:?}", step.perturbations);
    let (from, to) = &renamed[0];
    assert_eq!(from, "Issues");
    assert!(["Tickets", "Work items"].contains(&to.as_str()), "{to}");
    assert!(step.perturbations.contains(&format!("relabel: 'Issues' -> '{to}'")), "{:?}", step.perturbations);
    let line = step.observation.lines().find(|l| l.contains(&format!("link '{to}'"))).expect("the renamed link");
    assert!(!step.observation.contains("'Issues'"), "{}", step.observation);

    // The export the viewer reads.
    let out = tempfile::tempdir().expect("tempdir");
    let rel = Trajectory::file_name(&t.key);
    let path = out.path().join(&rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, serde_json::to_vec(&t).expect("json")).expect("write trajectory");
    record.trajectory = Some(rel);
    std::fs::write(out.path().join("per_task.jsonl"), serde_json::to_string(&record).expect("json") + "\n")
        .expect("write records");
    std::fs::write(out.path().join("contract.json"), "{}\n").expect("write contract");
    let viewer = serve(router(Arc::new(ExportSource::open(out.path()).expect("open export")), None)).await;

    // The attempt's page marks the renamed link's line, and only it.
    let s = Session::open(&driver).await.expect("a headless Chromium session");
    let page =
        format!("{viewer}/#/attempt?sweep=sw-relabel&treatment=T&uid={}&condition=src-perc&rep=0&attempt=0", spec.uid);
    s.goto(&page).await.expect("open the attempt");
    wait_for(&s, "the step", "document.querySelectorAll('.step').length === 1").await;
    let marked = s
        .eval("[...document.querySelectorAll('#step-1 .obs .perturbed')].map(e => e.textContent)")
        .await
        .expect("marked lines");
    assert_eq!(marked, serde_json::json!([line]), "{}", step.observation);
    s.close().await;
    driver.shutdown().await;
}
