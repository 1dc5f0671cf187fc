//! The example skills (written against v1) meet v2 as `sites/CHANGES.md`
//! says: for each skill in its "Example skills on v2" tables, bound to the
//! first task of its template, the skill passes on v1, and on v2 it fails
//! where the table says "breaks" and passes where it says "survives".

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::collections::BTreeMap;

use skillshift_common::skills::Skill;
use skillshift_common::{Site, Version};

/// (site, skill name, breaks on v2) rows of CHANGES.md; the site is the `## ` section's.
fn expectations() -> Vec<(Site, String, bool)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/CHANGES.md");
    let text = std::fs::read_to_string(path).expect("sites/CHANGES.md");
    let mut rows = Vec::new();
    let mut site = None;
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("## ") {
            let h = header.to_lowercase();
            site = Site::ALL.iter().copied().find(|s| h.contains(s.as_str()));
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 4 && cells[1].starts_with('`') && matches!(cells[2], "breaks" | "survives") {
            if let Some(site) = site {
                rows.push((site, cells[1].trim_matches('`').to_string(), cells[2] == "breaks"));
            }
        }
    }
    rows
}

async fn run_skill(site: Site, version: Version, skill: &Skill) -> Result<(), String> {
    let tasks = skillshift_sites::tasks(site, version);
    let t = tasks
        .iter()
        .find(|t| t.task.intent_template == skill.description)
        .ok_or_else(|| format!("no task of template '{}'", skill.description))?;
    let args: BTreeMap<String, String> = t
        .task
        .instantiation_dict
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    let steps: Vec<_> = skill.steps.iter().map(|s| s.bind(&args)).collect();
    let (router, app, _) = skillshift_sites::site_router(site, version);
    let login = app.login_steps();
    let attempt = skillshift_sites::sim::attempt(router, &t.task, &login, &steps).await;
    if attempt.passed() {
        Ok(())
    } else {
        Err(format!("{:?} {:?}", attempt.run.error.map(|(i, e)| format!("step {i}: {e}")), attempt.scored.details))
    }
}

#[tokio::test]
async fn v1_skills_break_on_v2_where_changes_md_says() {
    let rows = expectations();
    assert!(rows.len() >= 20, "CHANGES.md lists only {} skills", rows.len());
    let mut skills: Vec<Skill> = Vec::new();
    for &site in Site::ALL {
        skills.extend(skillshift_sites::skills(site));
    }
    let mut problems = Vec::new();
    let mut broke = 0;
    for (site, name, breaks) in &rows {
        let Some(skill) = skills.iter().find(|s| s.site == *site && &s.name == name) else {
            // A site whose module has not landed yet has no skills to check.
            if skills.iter().any(|s| s.site == *site) {
                problems.push(format!("{site} {name}: listed in CHANGES.md but not in the example library"));
            }
            continue;
        };
        if let Err(e) = run_skill(skill.site, Version::V1, skill).await {
            problems.push(format!("{name}: fails on v1, where it was learned: {e}"));
        }
        let on_v2 = run_skill(skill.site, Version::V2, skill).await;
        match (breaks, on_v2) {
            (true, Ok(())) => problems.push(format!("{name}: CHANGES.md says it breaks on v2, but it passes")),
            (false, Err(e)) => problems.push(format!("{name}: CHANGES.md says it survives v2, but: {e}")),
            (true, Err(_)) => broke += 1,
            (false, Ok(())) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(broke >= 10, "only {broke} skills break on v2");
    // Every example skill is accounted for in CHANGES.md.
    for s in &skills {
        assert!(
            rows.iter().any(|(site, n, _)| *site == s.site && *n == s.name),
            "{} skill {} is missing from CHANGES.md",
            s.site,
            s.name
        );
    }
}
