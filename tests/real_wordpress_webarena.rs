//! The evaluators on real pages, held to WebArena's own code: real attempts on the real WordPress 6.1.9
//! (`bash scripts/real-sites.sh wordpress`, docs/real-sites.md), passing and failing, each scored by the
//! harness in its attempt and then, on the site exactly as the attempt left it, by libwebarena 0.0.5's
//! `evaluator_router` in Playwright's Chromium (`scripts/webarena-oracle/real_pages.py`, in the venv of
//! `scripts/webarena-oracle/setup.sh`). The verdicts must agree, case for case.
//!
//! The cases: the first task of every template on both versions, the `skills` agent with the real
//! WordPress library (v1's steps: mostly passes on v1, mostly failures on v2, where the skills meet the
//! shift), and every mutating template's first task on v1 with no skills (the agent does nothing, a
//! failure). Each from a fresh reset, one at a time: the instances are shared.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

#[path = "support/oracle.rs"]
mod oracle;
#[path = "support/real_sites.rs"]
mod real_sites;

#[path = "support/cli.rs"]
mod cli;

use cli::root;
use real_sites::{first_per_template, real_tasks, reset, sites_file, start_real_sites};

/// One real attempt: the task, how it ran, and the harness's verdict.
struct Attempt {
    id: String,
    version: &'static str,
    task: u64,
    success: bool,
    answer: String,
    final_url: String,
}

/// Runs `skillshift run` on the real instance (no reset: the caller has reset it) and reads its record and
/// trajectory; `None` when the attempt errored (an environment error, which a sweep retries).
fn attempt(file: &Path, version: &'static str, task: u64, skills: &str, dir: &Path) -> Option<Attempt> {
    let condition = if version == "v1" { "src" } else { "tgt" };
    let trajectory = dir.join(format!("{version}-{task}-{}.json", skills.replace(['/', '.'], "_")));
    let out = cli::bin()
        .args(["run", &format!("skillshift.wordpress.{version}.{task}"), "--condition", condition])
        .args(["--reset-policy", "never", "--screenshots", "none", "--skills", skills])
        .arg("--sites")
        .arg(file)
        .arg("--trajectory")
        .arg(&trajectory)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let record: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap_or_default();
    if record["outcome"] != "success" && record["outcome"] != "failure" {
        eprintln!("{version}.{task} ({skills}): no verdict: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trajectory).unwrap()).unwrap();
    let final_url = t["steps"].as_array().and_then(|s| s.last()).map(|s| s["url"].as_str().unwrap().to_string());
    Some(Attempt {
        id: format!("{version}.{task} ({})", if skills == "none" { "nothing" } else { "skills" }),
        version,
        task,
        success: record["success"] == true,
        answer: record["answer"].as_str().unwrap_or("").to_string(),
        final_url: final_url.unwrap_or_else(|| t["start_url"].as_str().unwrap().to_string()),
    })
}

/// The task's WebArena config with its placeholders resolved, as libwebarena reads it.
fn config(task: &Value, base: &str) -> Value {
    serde_json::from_str(&task.to_string().replace("__WORDPRESS__", base.trim_end_matches('/'))).unwrap()
}

#[test]
fn real_attempts_are_scored_as_libwebarena_scores_them() {
    let Some(python) = oracle::venv_python(
        "webarena-oracle",
        "SKILLSHIFT_ORACLE_DIR",
        "real_attempts_are_scored_as_libwebarena_scores_them",
        "WebArena's evaluator",
    ) else {
        return;
    };
    let file = start_real_sites();
    let cfg = sites_file(&file);
    let tmp = tempfile::tempdir().unwrap();
    let library = root().join("data/skills/real-wordpress.json").display().to_string();
    let mut oracle = Command::new(&python)
        .arg(root().join("scripts/webarena-oracle/real_pages.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut to_oracle = oracle.stdin.take().unwrap();
    let mut from_oracle = BufReader::new(oracle.stdout.take().unwrap());

    let firsts = first_per_template();
    let mut runs: Vec<(&'static str, u64, String)> = Vec::new();
    for version in ["v1", "v2"] {
        runs.extend(firsts.iter().map(|(id, _)| (version, *id, library.clone())));
    }
    // Doing nothing on every mutating template (6 to 13: publish, rename, tag, approve, trash, quick edit,
    // role, site title).
    runs.extend(firsts.iter().filter(|(_, t)| (6..=13).contains(t)).map(|(id, _)| ("v1", *id, "none".to_string())));

    let mut compared = Vec::new();
    let mut disagree = Vec::new();
    for (version, task, skills) in runs {
        let site = &cfg["sites"][format!("wordpress-{version}")];
        let (base, env_ctrl) = (site["url"].as_str().unwrap(), site["env_ctrl"].as_str().unwrap());
        // An attempt that errored (a sign-in the loaded application lost) is run once more, as a sweep would.
        let mut ran = None;
        for _ in 0..2 {
            reset(env_ctrl);
            ran = attempt(&file, version, task, &skills, tmp.path());
            if ran.is_some() {
                break;
            }
        }
        let a = ran.unwrap_or_else(|| panic!("{version}.{task} errored twice"));
        let tasks = real_tasks(a.version);
        let case = json!({
            "id": a.id,
            "config": config(&tasks[a.task as usize], base),
            "answer": a.answer,
            "final_url": a.final_url,
            "login": {"url": base, "user": "admin", "password": "admin1234",
                      "confirm": if version == "v2" { vec!["The email is correct"] } else { vec![] }},
        });
        writeln!(to_oracle, "{case}").unwrap();
        to_oracle.flush().unwrap();
        let mut line = String::new();
        from_oracle.read_line(&mut line).unwrap();
        let verdict: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("oracle said {line:?}: {e}"));
        assert_ne!(verdict["verdict"], "invalid", "libwebarena could not score {}: {verdict}", a.id);
        let theirs = verdict["verdict"] == "pass";
        eprintln!("{:<22} harness {:<4} libwebarena {:<4}", a.id, pass(a.success), pass(theirs));
        if theirs != a.success {
            disagree.push(format!("{}: harness {}, libwebarena {} ({verdict})", a.id, pass(a.success), pass(theirs)));
        }
        compared.push(a.success);
    }
    drop(to_oracle);
    let _ = oracle.wait();
    let passes = compared.iter().filter(|s| **s).count();
    let fails = compared.len() - passes;
    eprintln!(
        "{} real attempts compared: {passes} passes, {fails} failures, {} disagreements",
        compared.len(),
        disagree.len()
    );
    assert!(compared.len() >= 30, "at least 30 real attempts are compared, not {}", compared.len());
    assert!(passes >= 10 && fails >= 10, "passing and failing attempts both ({passes} and {fails})");
    assert!(disagree.is_empty(), "the harness and libwebarena disagree on real pages: {disagree:#?}");
}

fn pass(p: bool) -> &'static str {
    if p {
        "pass"
    } else {
        "fail"
    }
}
