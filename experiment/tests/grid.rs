//! The skills agent on the embedded fixture sites, in real headless Chromium:
//! for each site, three tasks under all six conditions, records valid per
//! `docs/formats.md` (records); and two runs with the same seed give the same records apart
//! from times.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::sync::Arc;

use skillshift_common::{Condition, Outcome, Record, Site, Uid};
use skillshift_experiment::embedded::{generated_tasks, Embedded};
use skillshift_worker::attempt::{run_attempt, RunContext};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::run_executor::factory_for;
use skillshift_worker::sites::ResetPolicy;
use skillshift_worker::CancellationToken;

/// The first `n` task ids of a site that have a skill in the example library.
fn tasks_with_skills(site: Site, n: usize) -> Vec<u32> {
    let lib = common::example_library(site);
    let tasks = skillshift_sites::tasks(site, skillshift_common::Version::V1);
    tasks
        .iter()
        .filter(|g| lib.skills.iter().any(|s| s.description == g.task.intent_template))
        .map(|g| g.task.task_id)
        .take(n)
        .collect()
}

async fn run_grid(site: Site, ids: &[u32], seed: u64) -> Vec<Record> {
    let sites = Embedded::start(ResetPolicy::BeforeEach).await.expect("embedded sites");
    let ctx = RunContext::new(Arc::new(sites), generated_tasks(), "test-worker");
    let driver = Driver::new(BrowserConfig::default());
    let lib = common::example_library(site);
    let mut out = Vec::new();
    for &id in ids {
        for &c in Condition::ALL {
            let uid = Uid::new(site, c.version(), id);
            let spec = common::spec(uid, c, seed, 120_000, Some(lib.clone()));
            let r = run_attempt(&ctx, &driver, &spec, factory_for(&spec), None, CancellationToken::new()).await;
            println!("{}", serde_json::to_string(&r).unwrap_or_default());
            out.push(r);
        }
    }
    driver.shutdown().await;
    out
}

fn check_grid(site: Site, records: &[Record]) {
    assert_eq!(records.len(), 18);
    common::validate(records);
    for r in records {
        assert_ne!(r.outcome, Some(Outcome::Error), "{site}: an attempt could not be measured: {r:?}");
        assert!(r.skill_calls.is_some_and(|c| c >= 1), "the skills agent calls a skill: {r:?}");
        assert!(r.images.as_ref().is_some_and(|i| i.contains_key(&site.image(r.condition.version()))));
    }
    let rate = |c: Condition| {
        let of: Vec<&Record> = records.iter().filter(|r| r.condition == c).collect();
        of.iter().filter(|r| r.success == Some(true)).count() as f64 / of.len() as f64
    };
    let src = rate(Condition::Src);
    let shifted: Vec<f64> = Condition::ALL[1..].iter().map(|c| rate(*c)).collect();
    println!("{site}: src {src:.2}, others {shifted:?}");
    assert!(src >= 2.0 / 3.0, "{site}: the skills agent should succeed on most src tasks, got {src}");
    assert!(
        shifted.iter().sum::<f64>() / (shifted.len() as f64) < src,
        "{site}: shifted conditions should succeed less than src ({src} vs {shifted:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_three_tasks_under_six_conditions() {
    let ids = tasks_with_skills(Site::Gitlab, 3);
    assert_eq!(ids.len(), 3, "gitlab has three tasks with example skills");
    check_grid(Site::Gitlab, &run_grid(Site::Gitlab, &ids, 7).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn magento_three_tasks_under_six_conditions() {
    let ids = tasks_with_skills(Site::Magento, 3);
    assert_eq!(ids.len(), 3, "magento has three tasks with example skills");
    check_grid(Site::Magento, &run_grid(Site::Magento, &ids, 7).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wordpress_three_tasks_under_six_conditions() {
    let ids = tasks_with_skills(Site::Wordpress, 3);
    assert_eq!(ids.len(), 3, "wordpress has three tasks with example skills");
    check_grid(Site::Wordpress, &run_grid(Site::Wordpress, &ids, 7).await);
}

/// Everything but the fields that measure time.
fn comparable(r: &Record) -> Record {
    let mut r = r.clone();
    r.duration_ms = None;
    r.started_at = None;
    r.finished_at = None;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_gives_the_same_records() {
    let ids: Vec<u32> = tasks_with_skills(Site::Magento, 2);
    let a = run_grid(Site::Magento, &ids, 11).await;
    let b = run_grid(Site::Magento, &ids, 11).await;
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(comparable(x), comparable(y));
    }
}
