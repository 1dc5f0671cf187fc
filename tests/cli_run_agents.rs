//! `skillshift run UID --condition src --agent A` as a user runs it, with real Chromium and the embedded
//! fixture sites: `--agent reference` against the scripted OpenAI-compatible test server (a labelled stand-in
//! for a paid LLM, reached through `OPENAI_BASE_URL`), and `--agent 'cmd:python3 examples/agent.py'`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

#[path = "support/cli.rs"]
mod cli;

#[path = "support/procs.rs"]
mod procs;

use std::process::Output;

use procs::{gone_within, processes_running, unique_seconds};

use skillshift_common::{Site, Version};
use skillshift_worker::agents::scripted_llm::{
    element_id, Scripted, ScriptedLlm, COMPLETION_TOKENS, PROMPT_TOKENS, SCRIPTED_MODEL,
};

/// The uid and query of the first GitLab v1 search task ("Search GitLab for \"...\"", judged by url_match).
fn search_task() -> (String, String) {
    let tasks = skillshift_sites::tasks(Site::Gitlab, Version::V1);
    let (i, g) = tasks.iter().enumerate().find(|(_, g)| g.task.intent.starts_with("Search GitLab for")).unwrap();
    (format!("skillshift.gitlab.v1.{i}"), g.task.intent.split('"').nth(1).unwrap().to_string())
}

/// Runs `skillshift run` with an empty data directory (so the fixture sites' generated tasks are used) and no
/// skill library, and returns its output and the record it printed last.
fn skillshift_run(uid: &str, agent: &str, env: &[(&str, &str)]) -> (Output, serde_json::Value) {
    skillshift_run_with(uid, agent, env, &[])
}

/// [`skillshift_run`] with more arguments.
fn skillshift_run_with(uid: &str, agent: &str, env: &[(&str, &str)], extra: &[&str]) -> (Output, serde_json::Value) {
    let data = tempfile::tempdir().unwrap();
    let mut cmd = cli::bin();
    cmd.args(["run", uid, "--condition", "src", "--agent", agent, "--skills", "none", "--max-steps", "5"])
        .args(extra)
        .arg("--data")
        .arg(data.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let record = stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()).unwrap_or_default();
    (out, record)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_the_reference_agent_against_the_scripted_llm() {
    let (uid, query) = search_task();
    let q = query.clone();
    let server = ScriptedLlm::start(vec![
        Scripted::Status(429),
        Scripted::compute_action(move |req| match element_id(&req.last_message(), "searchbox", "Search GitLab") {
            Some(id) => format!("type [{id}] [{q}] [1]"),
            None => "stop [no search box]".into(),
        }),
        Scripted::action("stop []"),
    ])
    .await
    .unwrap();
    let base = server.base_url();
    let dir = tempfile::tempdir().unwrap();
    let traj = dir.path().join("t.json").display().to_string();
    let t = traj.clone();
    let (out, record) = tokio::task::spawn_blocking(move || {
        let extra = ["--trajectory", t.as_str(), "--screenshots", "none", "--temperature", "0.5"];
        skillshift_run_with(&uid, "reference", &[("OPENAI_BASE_URL", &base)], &extra)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("] [{query}] [1]")), "the trajectory shows the typed query:\n{stdout}");
    assert_eq!(record["outcome"], "success", "{record}");
    assert_eq!(record["steps"], 2);
    assert_eq!(record["llm_calls"], 2, "the 429 is retried inside one call");
    assert_eq!(record["tokens_in"], 2 * PROMPT_TOKENS);
    assert_eq!(record["tokens_out"], 2 * COMPLETION_TOKENS);
    assert!(record["cost_usd"].is_null(), "the scripted model has no price: {record}");
    assert_eq!(server.requests().len(), 3);
    // `run --temperature` reaches every request, as `sweep start --temperature` does.
    assert!(server.requests().iter().all(|r| r.body["temperature"] == 0.5), "{:?}", server.requests()[0].body);
    // The trajectory keeps each step's LLM call: the model that answered, its reply, tokens and latency.
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&traj).unwrap()).unwrap();
    let steps = t["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{t}");
    for (i, step) in steps.iter().enumerate() {
        let llm = &step["llm"];
        assert_eq!(llm["model"], SCRIPTED_MODEL, "step {i}: {llm}");
        assert_eq!(
            (llm["tokens_in"].as_u64(), llm["tokens_out"].as_u64()),
            (Some(PROMPT_TOKENS), Some(COMPLETION_TOKENS))
        );
        assert!(llm["latency_ms"].is_u64(), "step {i}: {llm}");
        let reply = llm["reply"].as_str().unwrap();
        let action = step["action"].as_str().unwrap();
        assert!(reply.contains(action), "step {i}: the reply {reply:?} holds the action {action:?}");
    }
    assert!(steps[0]["action"].as_str().unwrap().starts_with("type ["), "{t}");
    assert_eq!(steps[1]["action"], "stop []");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_the_python_example_agent() {
    let (uid, query) = search_task();
    let (out, record) =
        tokio::task::spawn_blocking(move || skillshift_run(&uid, "cmd:python3 examples/agent.py", &[])).await.unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&query));
    assert_eq!(record["outcome"], "success", "{record}");
    assert_eq!(record["steps"], 2);
    assert_eq!(record["llm_calls"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_a_malformed_external_agent_records_an_agent_error() {
    let (uid, _) = search_task();
    let (out, record) =
        tokio::task::spawn_blocking(move || skillshift_run(&uid, "cmd:sh -c 'echo not-json; sleep 30'", &[]))
            .await
            .unwrap();
    assert!(out.status.success(), "an agent error is a measurement-less record, not a failed command");
    assert_eq!(record["outcome"], "error", "{record}");
    assert_eq!(record["error"], "agent");
    assert!(record["steps"].is_null() && record["skill_calls"].is_null(), "an error measured nothing: {record}");
}

/// An attempt past its wall-clock ceiling is an `error` `task_timeout` record that, like every error record
/// (simulated ones and the coordinator's `worker_lost`), carries no step count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_past_its_task_timeout_records_an_error_with_no_step_count() {
    let (uid, _) = search_task();
    let agent = "cmd:python3 -c 'import time; time.sleep(30)'";
    let (out, record) =
        tokio::task::spawn_blocking(move || skillshift_run_with(&uid, agent, &[], &["--task-timeout", "3"]))
            .await
            .unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    assert_eq!(
        (record["outcome"].as_str(), record["error"].as_str()),
        (Some("error"), Some("task_timeout")),
        "{record}"
    );
    assert!(record["steps"].is_null(), "{record}");
    assert!(record["success"].is_null(), "{record}");
}

/// A misconfigured agent is bad input: exit 2 with one line, before any browser starts.
#[test]
fn run_refuses_a_reference_agent_without_an_api_key_and_an_unknown_agent() {
    for (agent, expected) in [("reference", "OPENAI_API_KEY"), ("telepathy", "--agent 'telepathy'")] {
        let out = cli::bin()
            .args(["run", "skillshift.gitlab.v1.0", "--condition", "src", "--agent", agent])
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "agent {agent}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "agent {agent}: {stderr}");
        assert!(stderr.contains(expected), "agent {agent}: {stderr}");
        assert!(out.stdout.is_empty(), "agent {agent}: nothing runs");
    }
}

/// Skills an external agent runs by itself and reports are in its trajectory, step by step, and a reported
/// failure makes the attempt's failure category `skill_failure`, as a failed harness skill does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_agents_skill_reports_are_in_its_trajectory_and_explain_its_failure() {
    let (uid, _) = search_task();
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.sh");
    // Reads the task line, then per observation: step 1 reports a passing and a failing skill and scrolls,
    // step 2 stops with a wrong answer.
    std::fs::write(
        &agent,
        r#"read task
read obs
echo '{"type":"skill_report","name":"open_search","ok":true,"error":null}'
echo '{"type":"skill_report","name":"fill_query","ok":false,"error":"no search box on this page"}'
echo '{"type":"action","action":"scroll [down]"}'
read obs
echo '{"type":"action","action":"stop [nothing]"}'
read obs
"#,
    )
    .unwrap();
    let path = dir.path().join("t.json");
    let (out, record) = {
        let agent = format!("cmd:sh {}", agent.display());
        let traj = path.display().to_string();
        tokio::task::spawn_blocking(move || {
            let data = tempfile::tempdir().unwrap();
            let out = cli::bin()
                .args(["run", &uid, "--condition", "src", "--agent", &agent, "--skills", "none", "--max-steps", "5"])
                .args(["--trajectory", &traj, "--screenshots", "none", "--data"])
                .arg(data.path())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let record: serde_json::Value =
                stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()).unwrap_or_default();
            (out, record)
        })
        .await
        .unwrap()
    };
    assert!(out.status.success(), "exit {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert_eq!(record["outcome"], "failure", "{record}");
    assert_eq!((record["skill_calls"].as_u64(), record["skill_failures"].as_u64()), (Some(2), Some(1)), "{record}");
    assert_eq!(record["failure_category"], "skill_failure", "{record}");
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let steps = t["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{t}");
    let reported = steps[0]["reported_skills"].as_array().expect("step 1 has its reports");
    assert_eq!(reported.len(), 2, "{t}");
    assert_eq!(
        (&reported[0]["name"], &reported[0]["ok"]),
        (&serde_json::json!("open_search"), &serde_json::json!(true))
    );
    assert_eq!(reported[1]["error"], "no search box on this page");
    assert_eq!(steps[0]["action"], "scroll [down]");
    assert!(steps[1].get("reported_skills").is_none(), "no reports, no field: {}", steps[1]);
    assert_eq!(t["failure_category"], "skill_failure");
}

/// A child killed (and reaped) when dropped, so a test that fails early leaves no run behind.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `skillshift run` of the search task with external agent `agent`, its output dropped.
fn spawn_run(agent: &str, data: &std::path::Path) -> Reaped {
    let (uid, _) = search_task();
    let run = cli::bin()
        .args(["run", &uid, "--condition", "src", "--agent", agent, "--skills", "none", "--max-steps", "5"])
        .arg("--data")
        .arg(data)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    Reaped(run)
}

/// Waits up to 60 s for the live `sleep SECONDS` process; its pid.
fn wait_for_helper(seconds: &str, run: &mut Reaped) -> u32 {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(pid) = processes_running(&["sleep", seconds]).first() {
            return *pid;
        }
        assert!(t0.elapsed() < std::time::Duration::from_secs(60), "the agent's helper never started");
        assert!(run.0.try_wait().unwrap().is_none(), "the run ended before its agent's helper started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A run killed outright (`kill -9`: no destructor runs) takes its external agent with it, helpers
/// included: the agent's process group has a warden, as the browsers' have, so an agent that calls a
/// paid model does not run on under PID 1.
#[test]
fn an_external_agent_dies_with_a_run_killed_outright() {
    let data = tempfile::tempdir().unwrap();
    // A helper (`sleep`, forked by the agent's shell) that waits with the agent.
    let seconds = unique_seconds();
    let mut run = spawn_run(&format!("cmd:sh -c 'sleep {seconds}; echo done'"), data.path());
    let helper = wait_for_helper(&seconds, &mut run);
    run.0.kill().unwrap();
    run.0.wait().unwrap();
    assert!(
        gone_within(helper, &["sleep", &seconds], std::time::Duration::from_secs(15)),
        "the agent's helper (pid {helper}, sleep {seconds}) outlived the killed run"
    );
}
