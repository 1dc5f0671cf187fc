//! The committed reference solutions (`data/solutions/<site>.<version>.json`)
//! replayed in real headless Chromium through the worker's own machinery: the
//! embedded fixture sites, site reset and login, the skill runtime (each
//! solution wrapped as a one-skill library) and the scorer. For a
//! deterministic sample of three tasks per site-version (one each whose
//! evaluators include string_match, program_html and url_match), applying the
//! solution must pass the task's evaluators and doing nothing must fail them.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skillshift_common::evaluate::Verdict;
use skillshift_common::skills::{Skill, SkillLibrary, Step, SKILLS_SCHEMA};
use skillshift_common::task::{load_task_file, task_file_path, EvalType, Task};
use skillshift_common::{Site, Version};
use skillshift_experiment::embedded::Embedded;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::scorer::{self, Score};
use skillshift_worker::sites::{ResetPolicy, SiteManager};
use skillshift_worker::skill_runtime::{run_skill, run_steps, Placeholders, LOCATOR_GRACE};
use skillshift_worker::tabs::Tabs;

const KINDS: [EvalType; 3] = [EvalType::StringMatch, EvalType::ProgramHtml, EvalType::UrlMatch];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("data")
}

/// For each evaluator kind `k` (in `KINDS` order), the first task at or after
/// `k * n / 3` (wrapping) whose evaluators include that kind. Deterministic,
/// spread over the file, and covering all three evaluator kinds.
fn sample(tasks: &[Task]) -> Vec<u32> {
    let n = tasks.len();
    KINDS
        .iter()
        .enumerate()
        .filter_map(|(k, kind)| {
            (0..n).map(|j| (k * n / 3 + j) % n).find(|&i| tasks[i].eval.eval_types.contains(kind)).map(|i| i as u32)
        })
        .collect()
}

fn solutions(site: Site, version: Version) -> Vec<Vec<Step>> {
    let path = data_dir().join("solutions").join(format!("{site}.{version}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A solution as a one-skill library, the way the skill runtime runs skills.
fn as_library(site: Site, task: &Task, steps: &[Step]) -> SkillLibrary {
    SkillLibrary {
        schema: SKILLS_SCHEMA.into(),
        method: "reference-solution".into(),
        skills: vec![Skill {
            name: format!("solve_{}", task.task_id),
            site,
            params: vec![],
            description: task.intent.clone(),
            steps: steps.to_vec(),
        }],
    }
}

/// Resets the site, opens a fresh Chromium session, logs in, opens the start
/// URL, optionally runs the solution, and scores the final page.
async fn attempt(
    sites: &Embedded,
    driver: &Driver,
    site: Site,
    version: Version,
    task: &Task,
    solution: Option<&SkillLibrary>,
) -> Result<Score, String> {
    let base = sites.endpoint(site, version).map_err(|e| e.to_string())?.base_url;
    let ph = Placeholders(vec![(site.placeholder().to_string(), base.clone()), ("__SITE__".to_string(), base)]);
    sites.reset(site, version).await.map_err(|e| e.to_string())?;
    let session = Session::open(driver).await.map_err(|e| format!("session: {e}"))?;
    let result = drive(sites, &session, site, version, task, &ph, solution).await;
    session.close().await;
    result
}

async fn drive(
    sites: &Embedded,
    session: &Session,
    site: Site,
    version: Version,
    task: &Task,
    ph: &Placeholders,
    solution: Option<&SkillLibrary>,
) -> Result<Score, String> {
    if task.require_login {
        let login = run_steps(session, &sites.login_steps(site, version), ph, LOCATOR_GRACE)
            .await
            .map_err(|e| e.to_string())?;
        if !login.ok {
            return Err(format!("login failed: {:?}", login.error));
        }
    }
    session.goto(&ph.apply(&task.start_url)).await.map_err(|e| format!("start url: {e}"))?;
    let mut answer = String::new();
    if let Some(lib) = solution {
        let skill = &lib.skills[0];
        let out = run_skill(session, skill, &BTreeMap::new(), ph, LOCATOR_GRACE).await.map_err(|e| e.to_string())?;
        if !out.ok {
            return Err(format!("solution stopped after {} steps: {:?}", out.steps_done, out.error));
        }
        answer = out.answer.unwrap_or_default();
    }
    let final_url = session.url().await.map_err(|e| e.to_string())?;
    let tabs = Tabs::adopt(session).await.map_err(|e| e.to_string())?;
    let ending = scorer::Ending { final_url: &final_url, answer: &answer, perturbed: false };
    scorer::score(session, &tabs, task, ph, ending).await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_solutions_pass_in_chromium_and_doing_nothing_fails() {
    let sites = Embedded::start(ResetPolicy::BeforeEach).await.expect("embedded sites");
    let driver = Driver::new(BrowserConfig::default());
    let mut failures = Vec::new();
    let mut checked = 0;
    for &site in Site::ALL {
        for &version in Version::ALL {
            let tasks = load_task_file(&task_file_path(&data_dir(), site, version), site).unwrap();
            let sols = solutions(site, version);
            assert_eq!(sols.len(), tasks.len(), "{site}.{version}: one solution per task");
            let ids = sample(&tasks);
            assert_eq!(ids.len(), 3, "{site}.{version}: a task for each evaluator kind");
            for id in ids {
                let task = &tasks[id as usize];
                let lib = as_library(site, task, &sols[id as usize]);
                let kinds = &task.eval.eval_types;
                let solved = attempt(&sites, &driver, site, version, task, Some(&lib)).await;
                let idle = attempt(&sites, &driver, site, version, task, None).await;
                println!("{site}.{version}.{id} {kinds:?}: solved {solved:?}; idle {idle:?}");
                match &solved {
                    Ok(s) if s.verdict == Verdict::Pass => {}
                    other => {
                        failures.push(format!("{site}.{version}.{id} {kinds:?}: solution did not pass: {other:?}"))
                    }
                }
                match &idle {
                    Ok(s) if s.verdict == Verdict::Fail => {}
                    other => {
                        failures.push(format!("{site}.{version}.{id} {kinds:?}: doing nothing did not fail: {other:?}"))
                    }
                }
                checked += 1;
            }
        }
    }
    driver.shutdown().await;
    assert_eq!(checked, 18);
    assert!(failures.is_empty(), "{} of {checked} sampled tasks failed:\n{}", failures.len(), failures.join("\n"));
}
