//! The in-page perturbations in real Chromium, on a page of this test's own:
//! perception shifts are applied and seeded (same seed, same page), and the
//! execution shifts do what docs/conditions.md says (a modal that covers
//! clicks until dismissed, a click swallowed once, elements rendered steps late).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

mod common;

use std::time::Duration;

use axum::response::Html;
use axum::routing::get;
use serde_json::json;
use skillshift_common::ids::Family;
use skillshift_common::{Condition, Site};
use skillshift_worker::action::Action;
use skillshift_worker::actions::{execute, ActError};
use skillshift_worker::axtree::{observe, Snapshot};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::perturb::{Perturbation, Profile};

const PAGE: &str = r#"<!doctype html><title>Projects</title>
<nav aria-label="Main"><ul><li><a href="/issues">Issues</a></li><li><a href="/mrs">Merge requests</a></li>
<li><a href="/labels">Labels</a></li><li><a href="/members">Members</a></li><li><a href="/settings">Settings</a></li></ul></nav>
<main><h1>Projects</h1><button>New project</button><button>Save changes</button><button>Delete project</button>
<a href="/issues">Open issues</a></main>"#;

async fn base() -> String {
    common::serve(
        axum::Router::new()
            .route("/", get(|| async { Html(PAGE) }))
            .route("/issues", get(|| async { Html("<title>Issues</title><main><h1>Issues</h1></main>") })),
    )
    .await
}

fn id_of(s: &Snapshot, needle: &str) -> u64 {
    let line = s.text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in\n{}", s.text));
    line.trim_start()[1..line.trim_start().find(']').unwrap()].parse().unwrap()
}

async fn perceive(driver: &Driver, url: &str, condition: Condition, seed: u64) -> String {
    let s = Session::open(driver).await.unwrap();
    let family = Family { site: Site::Gitlab, task_id: 0 };
    Perturbation::for_attempt(Profile::default_profile(), seed, family, condition, 0).install(&s).await.unwrap();
    s.goto(url).await.unwrap();
    let text = observe(&s).await.unwrap().text;
    s.close().await;
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perception_shift_is_applied_and_seeded() {
    let url = format!("{}/", base().await);
    let driver = Driver::new(BrowserConfig::default());
    let plain = perceive(&driver, &url, Condition::Src, 5).await;
    let a = perceive(&driver, &url, Condition::SrcPerc, 5).await;
    let b = perceive(&driver, &url, Condition::SrcPerc, 5).await;
    let c = perceive(&driver, &url, Condition::SrcPerc, 6).await;
    driver.shutdown().await;
    assert!(!plain.contains("Announcement"));
    assert!(a.contains("region 'Announcement'") && a.contains("complementary 'You might also like'"), "{a}");
    // Chrome numbers nodes in creation order, which varies between sessions; the page itself must not.
    let strip = |t: &str| -> String {
        t.lines().map(|l| l.split_once("] ").map_or(l, |(_, rest)| rest).to_string()).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(strip(&a), strip(&b), "the same seed gives the same page");
    assert_ne!(strip(&a), strip(&c), "another seed gives another page");
    let nav_order = |t: &str| -> Vec<String> {
        t.lines()
            .skip_while(|l| !l.contains("navigation 'Main'"))
            .skip(1)
            .take_while(|l| !l.contains("main ''"))
            .filter(|l| l.contains(" link '"))
            .map(|l| l.split('\'').nth(1).unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(nav_order(&plain).len(), 5);
    assert_ne!(nav_order(&plain), nav_order(&a), "navigation items are reordered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execution_shift_modal_swallowed_click_and_late_render() {
    let url = format!("{}/", base().await);
    let driver = Driver::new(BrowserConfig::default());
    let mut v: serde_json::Value = serde_json::from_str(skillshift_worker::perturb::DEFAULT_PROFILE).unwrap();
    v["execution"]["interstitial"]["first_step"] = json!(1);
    v["execution"]["interstitial"]["last_step"] = json!(1);
    v["execution"]["swallow_clicks"]["share"] = json!(1.0);
    v["execution"]["late_render"]["share"] = json!(0.0);
    let profile = Profile::from_value(&v, "test profile").unwrap();
    let family = Family { site: Site::Gitlab, task_id: 0 };
    let p = Perturbation::for_attempt(profile.clone(), 1, family, Condition::SrcExec, 0);

    let s = Session::open(&driver).await.unwrap();
    p.install(&s).await.unwrap();
    s.goto(&url).await.unwrap();
    p.set_step(&s, 0).await.unwrap();
    let snap = observe(&s).await.unwrap();
    assert!(!snap.text.contains("dialog"), "no modal before its step:\n{}", snap.text);
    // Every click is swallowed once: the link does not navigate the first time, and does the second.
    let link = id_of(&snap, "link 'Open issues'");
    execute(&s, &Action::Click { id: link }, |i| snap.ids.get(&i).copied()).await.unwrap();
    assert_eq!(s.title().await.unwrap(), "Projects", "the first click is swallowed");
    execute(&s, &Action::Click { id: link }, |i| snap.ids.get(&i).copied()).await.unwrap();
    assert_eq!(s.title().await.unwrap(), "Issues", "the second click goes through");
    s.back().await.unwrap();

    // At its step the modal covers the page until dismissed, across navigations.
    p.set_step(&s, 1).await.unwrap();
    let snap = observe(&s).await.unwrap();
    assert!(snap.text.contains("dialog 'Your session is about to expire' modal: True"), "{}", snap.text);
    let save = id_of(&snap, "button 'Save changes'");
    match execute(&s, &Action::Click { id: save }, |i| snap.ids.get(&i).copied()).await {
        Err(ActError::Failed(m)) => assert!(m.contains("covered"), "{m}"),
        other => panic!("a click under the modal must fail, got {other:?}"),
    }
    let stay = id_of(&snap, "button 'Stay signed in'");
    // The dismiss button is swallowed once too (share 1.0 applies to every control but our own).
    execute(&s, &Action::Click { id: stay }, |i| snap.ids.get(&i).copied()).await.unwrap();
    let snap = observe(&s).await.unwrap();
    assert!(!snap.text.contains("dialog"), "dismissed:\n{}", snap.text);
    s.goto(&url).await.unwrap();
    assert!(!observe(&s).await.unwrap().text.contains("dialog"), "stays dismissed after a navigation");
    s.close().await;

    // Late rendering: the controls of <main> appear after the delay.
    v["execution"]["interstitial"] = serde_json::Value::Null;
    v["execution"]["swallow_clicks"]["share"] = json!(0.0);
    v["execution"]["late_render"] = json!({"share": 1.0, "after_steps": 2});
    let p = Perturbation::for_attempt(Profile::from_value(&v, "late").unwrap(), 1, family, Condition::SrcExec, 0);
    let s = Session::open(&driver).await.unwrap();
    p.install(&s).await.unwrap();
    s.goto(&url).await.unwrap(); // the start page counts as loaded at step -1: shown from step 1 on
    p.set_step(&s, 0).await.unwrap();
    let early = observe(&s).await.unwrap().text;
    assert!(!early.contains("button 'New project'"), "rendered late:\n{early}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!observe(&s).await.unwrap().text.contains("button 'New project'"), "time alone does not render it");
    p.set_step(&s, 1).await.unwrap();
    let late = observe(&s).await.unwrap().text;
    assert!(late.contains("button 'New project'"), "{late}");
    s.close().await;
    driver.shutdown().await;
}
