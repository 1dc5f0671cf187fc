//! A skill's locator without `nth` reads only the nodes of its target's role (Chrome's
//! `Accessibility.queryAXTree`) instead of the whole accessibility tree. It must find exactly
//! what the whole tree finds: on the start pages of the fixture sites, both versions, for every
//! role and name an element on the page has (and a name no element has), the matches of the
//! role's nodes equal the matches of the whole tree. A page with a frame is left to the whole
//! tree (`fetch_role` answers `None`), since `queryAXTree` would walk into the frame's document.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use skillshift_common::skills::Target;
use skillshift_common::task::{load_task_file, task_file_path};
use skillshift_common::{Site, Version};
use skillshift_experiment::embedded::Embedded;
use skillshift_worker::axtree::{fetch_role, fetch_tree};
use skillshift_worker::browser::{BrowserConfig, Driver, Session};
use skillshift_worker::sites::{ResetPolicy, SiteManager};
use skillshift_worker::skill_runtime::{matches, run_steps, Placeholders, LOCATOR_GRACE};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("data")
}

/// Compares the two ways of locating on the current page; returns the targets checked.
async fn compare_on_page(session: &Session, page: &str, failures: &mut Vec<String>) -> usize {
    let full = fetch_tree(session).await.unwrap();
    let targets: BTreeSet<(String, String)> = full
        .elements()
        .filter(|n| !n.role.is_empty() && n.role != "StaticText" && n.role != "InlineTextBox")
        .map(|n| (n.role.clone(), n.name.clone()))
        .chain([("button".to_string(), "no such button anywhere".to_string())])
        .collect();
    let mut checked = 0;
    let mut by_role = None;
    for (role, name) in targets {
        let target =
            Target { role: role.clone(), name: name.clone(), nth: None, column: None, row: None, name_pattern: None };
        if by_role.as_ref().is_none_or(|(r, _)| *r != role) {
            let Some(tree) = fetch_role(session, &role).await.unwrap() else {
                failures.push(format!("{page}: no frame on the page, yet the role query was refused"));
                return checked;
            };
            by_role = Some((role.clone(), tree));
        }
        let Some((_, nodes)) = &by_role else { continue };
        let (mut a, mut b) = (matches(&full, &target), matches(nodes, &target));
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            failures.push(format!("{page}: {role} '{name}': whole tree {a:?}, role query {b:?}"));
        }
        checked += 1;
    }
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locator_finds_by_role_exactly_what_the_whole_tree_finds() {
    let sites = Embedded::start(ResetPolicy::BeforeEach).await.expect("embedded sites");
    let driver = Driver::new(BrowserConfig::default());
    let mut failures = Vec::new();
    let (mut pages, mut targets) = (0, 0);
    for &site in Site::ALL {
        for &version in Version::ALL {
            let base = sites.endpoint(site, version).unwrap().base_url;
            let ph = Placeholders(vec![(site.placeholder().to_string(), base.clone()), ("__SITE__".to_string(), base)]);
            sites.reset(site, version).await.unwrap();
            let session = Session::open(&driver).await.unwrap();
            let login = run_steps(&session, &sites.login_steps(site, version), &ph, LOCATOR_GRACE).await.unwrap();
            assert!(login.ok, "{site}.{version}: login {:?}", login.error);
            let tasks = load_task_file(&task_file_path(&data_dir(), site, version), site).unwrap();
            // Every distinct start page: lists, detail pages, forms, admin grids.
            let urls: BTreeSet<String> = tasks.iter().map(|t| ph.apply(&t.start_url)).collect();
            for url in &urls {
                session.goto(url).await.unwrap();
                targets += compare_on_page(&session, &format!("{site}.{version} {url}"), &mut failures).await;
                pages += 1;
            }
            // A frame sends the locator back to the whole tree.
            session.eval("document.body.append(document.createElement('iframe'))").await.unwrap();
            assert!(fetch_role(&session, "link").await.unwrap().is_none(), "{site}.{version}: a page with a frame");
            session.close().await;
        }
    }
    driver.shutdown().await;
    println!("{pages} pages, {targets} targets compared");
    assert!(pages >= 24 && targets >= 1000, "too little compared: {pages} pages, {targets} targets");
    assert!(failures.is_empty(), "{} of {targets} targets differ:\n{}", failures.len(), failures.join("\n"));
}
