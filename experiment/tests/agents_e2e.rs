//! End to end through the run loop, real headless Chromium and the embedded fixture sites: the `reference`
//! agent against the scripted OpenAI-compatible test server (a labelled stand-in for a paid LLM) and the
//! Python example agent over the `cmd:` protocol each complete a GitLab v1 search task under `src`.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::sync::{Arc, Mutex};
use std::time::Duration;

use skillshift_common::record::Outcome;
use skillshift_common::{AttemptSpec, Site, Uid, Version};
use skillshift_experiment::embedded::{generated_tasks, Embedded};
use skillshift_worker::agent::Agent;
use skillshift_worker::agents::cmd::CmdAgent;
use skillshift_worker::agents::llm::LlmConfig;
use skillshift_worker::agents::reference::ReferenceAgent;
use skillshift_worker::agents::scripted_llm::{
    element_id, Scripted, ScriptedLlm, COMPLETION_TOKENS, PROMPT_TOKENS, SCRIPTED_MODEL,
};
use skillshift_worker::attempt::{run_attempt, AgentFactory, Event, RunContext};
use skillshift_worker::browser::{BrowserConfig, Driver};
use skillshift_worker::sites::ResetPolicy;
use skillshift_worker::CancellationToken;

/// The first GitLab task whose intent is a search ("Search GitLab for \"...\""), a url_match task.
fn search_task() -> (u32, String, String) {
    let tasks = skillshift_sites::tasks(Site::Gitlab, Version::V1);
    let (i, g) = tasks.iter().enumerate().find(|(_, g)| g.task.intent.starts_with("Search GitLab for")).unwrap();
    let query = g.task.intent.split('"').nth(1).unwrap().to_string();
    (i as u32, g.task.intent.clone(), query)
}

fn spec(task_id: u32, agent: &str) -> AttemptSpec {
    AttemptSpec {
        sweep: "agents-e2e".into(),
        treatment: "CONTROL".into(),
        uid: Uid { site: Site::Gitlab, version: Version::V1, task_id },
        max_steps: 5,
        task_timeout_ms: 120_000,
        agent: agent.into(),
        ..AttemptSpec::example()
    }
}

async fn run(spec: &AttemptSpec, factory: AgentFactory) -> (skillshift_common::record::Record, Vec<Event>) {
    let sites = Arc::new(Embedded::start(ResetPolicy::BeforeEach).await.unwrap());
    let ctx = RunContext::new(sites, generated_tasks(), "agents-e2e");
    let driver = Driver::new(BrowserConfig::default());
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let record = run_attempt(
        &ctx,
        &driver,
        spec,
        factory,
        Some(Box::new(move |e: &Event| {
            println!("{e:?}");
            sink.lock().unwrap().push(e.clone());
        })),
        CancellationToken::new(),
    )
    .await;
    driver.shutdown().await;
    println!("{}", serde_json::to_string(&record).unwrap());
    let events = events.lock().unwrap().clone();
    (record, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_agent_completes_a_task_against_the_scripted_llm() {
    let (task_id, intent, query) = search_task();
    let q = query.clone();
    let server = ScriptedLlm::start(vec![
        // Step 0: type the query into the search box, whose id only the observation tells.
        Scripted::compute_action(move |req| {
            let obs = req.last_message();
            match element_id(&obs, "searchbox", "Search GitLab") {
                Some(id) => format!("type [{id}] [{q}] [1]"),
                None => format!("stop [no search box in {obs}]"),
            }
        }),
        Scripted::action("stop []"),
    ])
    .await
    .unwrap();
    let mut cfg = LlmConfig::new(&server.base_url(), SCRIPTED_MODEL);
    cfg.request_timeout = Duration::from_secs(10);
    let factory: AgentFactory = Box::new(move |_task| Ok(Box::new(ReferenceAgent::new(cfg)?) as Box<dyn Agent>));
    let (record, events) = run(&spec(task_id, "reference"), factory).await;

    assert_eq!(record.outcome, Some(Outcome::Success), "{events:?}");
    assert_eq!(record.success, Some(true));
    assert_eq!(record.steps, Some(2));
    assert_eq!(record.llm_calls, Some(2));
    assert_eq!(record.tokens_in, Some(2 * PROMPT_TOKENS));
    assert_eq!(record.tokens_out, Some(2 * COMPLETION_TOKENS));
    assert_eq!(record.cost_usd, None, "the scripted model has no price");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].last_message().contains(&format!("OBJECTIVE: {intent}")));
    assert!(reqs[1].last_message().contains("PREVIOUS ACTION: type ["), "{}", reqs[1].last_message());
    assert!(reqs[1].last_message().contains(&query));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_example_agent_completes_a_task() {
    let (task_id, _, query) = search_task();
    let command = format!("python3 {}/../examples/agent.py", env!("CARGO_MANIFEST_DIR"));
    let factory: AgentFactory = Box::new(move |_task| Ok(Box::new(CmdAgent::spawn(&command)?) as Box<dyn Agent>));
    let (record, events) = run(&spec(task_id, "cmd:python3 examples/agent.py"), factory).await;

    assert_eq!(record.outcome, Some(Outcome::Success), "{events:?}");
    assert_eq!(record.steps, Some(2));
    assert_eq!(record.llm_calls, Some(0));
    let typed = events.iter().any(|e| matches!(e, Event::Step { action, .. } if action.contains(&query)));
    assert!(typed, "the agent typed the query: {events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_external_agent_ends_the_attempt_as_an_agent_error() {
    let (task_id, _, _) = search_task();
    let factory: AgentFactory =
        Box::new(|_task| Ok(Box::new(CmdAgent::spawn("sh -c 'echo not-json; sleep 30'")?) as Box<dyn Agent>));
    let (record, _) = run(&spec(task_id, "cmd:sh"), factory).await;
    assert_eq!(record.outcome, Some(Outcome::Error));
    assert_eq!(record.error.as_deref(), Some("agent"));
    assert_eq!(record.success, None);
}
