//! Every task of every site present is solved by its reference solution and
//! not solved by doing nothing, checked at HTTP level with the simulator
//! (log in, go to the start URL, run the steps, score the evaluators).
//! Sites whose module has no tasks yet are reported and skipped.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use skillshift_common::{Site, Version};

async fn check_site(site: Site) {
    let mut report = Vec::new();
    for &version in Version::ALL {
        let tasks = skillshift_sites::tasks(site, version);
        if tasks.is_empty() {
            eprintln!("{site} {version}: no tasks yet, skipped");
            continue;
        }
        assert_eq!(tasks.len(), site.n_tasks(), "{site} {version} task count");
        let (router, app, _) = skillshift_sites::site_router(site, version);
        let login = app.login_steps();
        for t in &tasks {
            app.reset();
            let solved = skillshift_sites::sim::attempt(router.clone(), &t.task, &login, &t.solution).await;
            if !solved.passed() {
                report.push(format!(
                    "{site} {version} task {} ({}): reference solution fails: step error {:?}; {:?}",
                    t.task.task_id, t.task.intent, solved.run.error, solved.scored.details
                ));
            }
            app.reset();
            let idle = skillshift_sites::sim::attempt(router.clone(), &t.task, &login, &[]).await;
            if idle.passed() {
                report.push(format!(
                    "{site} {version} task {} ({}): passes without doing anything: {:?}",
                    t.task.task_id, t.task.intent, idle.scored.details
                ));
            }
        }
    }
    assert!(report.is_empty(), "{} problem(s):\n{}", report.len(), report.join("\n"));
}

#[tokio::test]
async fn gitlab_reference_solutions_pass_and_doing_nothing_fails() {
    check_site(Site::Gitlab).await;
}

#[tokio::test]
async fn magento_reference_solutions_pass_and_doing_nothing_fails() {
    check_site(Site::Magento).await;
}

#[tokio::test]
async fn wordpress_reference_solutions_pass_and_doing_nothing_fails() {
    check_site(Site::Wordpress).await;
}

#[tokio::test]
async fn the_simulator_rejects_a_wrong_answer_and_a_wrong_page() {
    // Guard against a scorer that passes everything: perturb a correct solution.
    let tasks = skillshift_sites::tasks(Site::Gitlab, Version::V1);
    let (router, app, _) = skillshift_sites::site_router(Site::Gitlab, Version::V1);
    let login = app.login_steps();
    let string_task = tasks.iter().find(|t| t.task.eval.reference_answers.is_some()).expect("a string_match task");
    let wrong = vec![skillshift_common::skills::Step::Answer { text: "definitely not it".into() }];
    assert!(!skillshift_sites::sim::attempt(router.clone(), &string_task.task, &login, &wrong).await.passed());
    let url_task = tasks.iter().find(|t| t.task.eval.reference_url.is_some()).expect("a url_match task");
    let elsewhere = vec![skillshift_common::skills::Step::Goto { url: "__GITLAB__/dashboard/snippets".into() }];
    assert!(!skillshift_sites::sim::attempt(router, &url_task.task, &login, &elsewhere).await.passed());
}
