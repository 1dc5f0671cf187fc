//! The `reference` agent over real HTTP against the scripted OpenAI-compatible test server (a labelled
//! stand-in for a paid LLM): scripted moves, exact token and cost accounting, retries, and clean failures.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use skillshift_worker::action::Action;
use skillshift_worker::agent::{Agent, AgentError, Move, Observation, SkillSummary, TaskBrief};
use skillshift_worker::agents::llm::{LlmCallInfo, LlmConfig, Price, RetryPolicy};
use skillshift_worker::agents::reference::ReferenceAgent;
use skillshift_worker::agents::scripted_llm::{
    Scripted, ScriptedLlm, COMPLETION_TOKENS, PROMPT_TOKENS, SCRIPTED_MODEL,
};

fn config(server: &ScriptedLlm, model: &str) -> LlmConfig {
    let mut cfg = LlmConfig::new(&server.base_url(), model);
    cfg.api_key = Some("sk-test".into());
    cfg.request_timeout = Duration::from_secs(5);
    cfg.retry = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        total_budget: Duration::from_secs(5),
    };
    cfg
}

fn brief(skills: Vec<SkillSummary>) -> TaskBrief {
    TaskBrief {
        uid: "skillshift.gitlab.v1.3".into(),
        intent: "Open the issue \"Crash on save\" in a/b".into(),
        start_url: "http://gitlab.test/".into(),
        max_steps: 10,
        skills,
    }
}

fn obs(step: u32, tree: &str, error: Option<&str>) -> Observation {
    Observation {
        step,
        url: format!("http://gitlab.test/page{step}"),
        title: format!("Page {step}"),
        axtree: format!("Tab 0 (current): Page {step}\n\n[1] RootWebArea 'Page {step}'\n{tree}"),
        last_action_error: error.map(str::to_string),
    }
}

fn create_issue() -> SkillSummary {
    SkillSummary {
        name: "create_issue".into(),
        params: vec!["project".into(), "title".into()],
        description: "Open a new issue in a project".into(),
    }
}

#[tokio::test]
async fn follows_the_script_and_counts_tokens_exactly() {
    let server = ScriptedLlm::start(vec![
        Scripted::action("click [7]"),
        Scripted::action("type [12] [Crash on save] [1]"),
        Scripted::action(r#"skill [create_issue] [{"project": "a/b", "title": "Crash"}]"#),
        Scripted::action("stop [done]"),
    ])
    .await
    .unwrap();
    let seen: Arc<Mutex<Vec<LlmCallInfo>>> = Arc::default();
    let sink = seen.clone();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL))
        .unwrap()
        .on_llm_call(Arc::new(move |info: &LlmCallInfo| sink.lock().unwrap().push(info.clone())));
    agent.start(brief(vec![create_issue()])).await.unwrap();

    let mut moves = Vec::new();
    for (step, (tree, err)) in [
        ("\t[7] link 'Issues'", None),
        ("\t[12] searchbox 'Search'", Some("element 99 is not on the page")),
        ("\t[20] link 'Crash on save'", None),
        ("\t[30] heading 'Crash on save'", None),
    ]
    .into_iter()
    .enumerate()
    {
        moves.push(agent.next(obs(step as u32, tree, err)).await.unwrap().mv);
    }
    let args = BTreeMap::from([("project".to_string(), "a/b".to_string()), ("title".into(), "Crash".into())]);
    assert_eq!(
        moves,
        vec![
            Move::Action(Action::Click { id: 7 }),
            Move::Action(Action::Type { id: 12, text: "Crash on save".into(), enter: true }),
            Move::Skill { name: "create_issue".into(), args },
            Move::Action(Action::Stop { answer: "done".into() }),
        ]
    );

    let usage = agent.usage();
    assert_eq!(usage.llm_calls, 4);
    assert_eq!(usage.tokens_in, 4 * PROMPT_TOKENS);
    assert_eq!(usage.tokens_out, 4 * COMPLETION_TOKENS);
    assert_eq!(usage.cost_usd, None, "the scripted model has no price");

    // One request per step, each holding this step's observation, the objective and the previous action.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(reqs[0].body["model"], SCRIPTED_MODEL);
    assert_eq!(reqs[0].body["temperature"], 0.0);
    assert_eq!(reqs[0].body["max_tokens"], 384);
    let last: Vec<String> = reqs.iter().map(|r| r.last_message()).collect();
    assert!(last[0].contains("[7] link 'Issues'") && last[0].contains("PREVIOUS ACTION: None"));
    assert!(last[0].contains("OBJECTIVE: Open the issue \"Crash on save\" in a/b"));
    assert!(last[0].contains("URL: http://gitlab.test/page0"));
    assert!(last[1].contains("PREVIOUS ACTION: click [7]\nPREVIOUS ACTION ERROR: element 99 is not on the page"));
    assert!(last[3].contains(r#"PREVIOUS ACTION: skill [create_issue] [{"project":"a/b","title":"Crash"}]"#));
    let system = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("- create_issue(project, title): Open a new issue in a project"));

    // The per-call facts, through the hook and from the agent.
    let calls = agent.take_llm_calls();
    assert_eq!(calls, *seen.lock().unwrap());
    assert_eq!(calls.len(), 4);
    let c = &calls[0];
    assert_eq!(c.request_model, SCRIPTED_MODEL);
    assert_eq!(c.response_model.as_deref(), Some(SCRIPTED_MODEL));
    assert_eq!(c.provider, "openai");
    assert_eq!(c.server_address, "127.0.0.1");
    assert_eq!(c.server_port, Some(server.addr().port()));
    assert_eq!((c.tokens_in, c.tokens_out, c.http_attempts), (PROMPT_TOKENS, COMPLETION_TOKENS, 1));
    assert_eq!(c.finish_reason.as_deref(), Some("stop"));
    assert_eq!(c.max_tokens, Some(384));
    assert!(agent.llm_calls().is_empty());
}

#[tokio::test]
async fn costs_are_summed_from_the_price_of_each_call() {
    let server = ScriptedLlm::start_with_usage(
        vec![Scripted::action("click [1]"), Scripted::action("stop [x]")],
        120_000,
        3_000,
    )
    .await
    .unwrap();
    // The scripted model is in no price table: the test sets a price as SKILLSHIFT_LLM_PRICE would.
    let mut cfg = config(&server, "gpt-4o-mini");
    cfg.price = Some(Price { input_per_mtok: 0.15, output_per_mtok: 0.60 });
    let mut agent = ReferenceAgent::new(cfg).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    agent.next(obs(0, "\t[1] link 'A'", None)).await.unwrap();
    agent.next(obs(1, "", None)).await.unwrap();
    let usage = agent.usage();
    assert_eq!((usage.llm_calls, usage.tokens_in, usage.tokens_out), (2, 240_000, 6_000));
    let expected = (240_000.0 * 0.15 + 6_000.0 * 0.60) / 1e6;
    let cost = usage.cost_usd.expect("priced");
    assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");

    // Without a configured price the reply's model decides; scripted-test-llm is in no table, so the cost is
    // unknown even though a priced model was requested.
    let server = ScriptedLlm::start(vec![Scripted::action("stop [x]")]).await.unwrap();
    let mut agent = ReferenceAgent::new(config(&server, "gpt-4o-mini")).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    agent.next(obs(0, "", None)).await.unwrap();
    assert_eq!(agent.usage().cost_usd, None);
}

#[tokio::test]
async fn retries_through_a_429_and_a_500() {
    let server = ScriptedLlm::start(vec![Scripted::Status(429), Scripted::Status(500), Scripted::action("click [3]")])
        .await
        .unwrap();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL)).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    let reply = agent.next(obs(0, "\t[3] link 'Issues'", None)).await.unwrap();
    assert_eq!(reply.mv, Move::Action(Action::Click { id: 3 }));
    assert_eq!(server.requests().len(), 3);
    let usage = agent.usage();
    assert_eq!((usage.llm_calls, usage.tokens_in, usage.tokens_out), (1, PROMPT_TOKENS, COMPLETION_TOKENS));
    assert_eq!(agent.llm_calls()[0].http_attempts, 3);
}

#[tokio::test]
async fn gives_up_after_bounded_retries() {
    let server = ScriptedLlm::start(vec![Scripted::Status(503); 4]).await.unwrap();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL)).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    let err = agent.next(obs(0, "", None)).await.unwrap_err();
    assert!(matches!(&err, AgentError::Llm(m) if m.contains("http 503 after 4 attempt(s)")), "{err}");
    assert_eq!(server.requests().len(), 4, "max_retries 3 means 4 calls");
    assert_eq!(agent.usage().llm_calls, 0);
}

#[tokio::test]
async fn does_not_retry_a_client_error() {
    // An empty script answers 400 ("script exhausted"), which must not be retried.
    let server = ScriptedLlm::start(vec![]).await.unwrap();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL)).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    let err = agent.next(obs(0, "", None)).await.unwrap_err();
    assert!(matches!(&err, AgentError::Llm(m) if m.contains("http 400 after 1 attempt(s)")), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stalled_server_hits_the_call_deadline() {
    let server = ScriptedLlm::start(vec![Scripted::Stall(Duration::from_secs(10))]).await.unwrap();
    let mut cfg = config(&server, SCRIPTED_MODEL);
    cfg.request_timeout = Duration::from_millis(300);
    cfg.retry.max_retries = 0;
    let mut agent = ReferenceAgent::new(cfg).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    let err = agent.next(obs(0, "", None)).await.unwrap_err();
    assert!(matches!(&err, AgentError::Llm(m) if m.contains("timed out")), "{err}");
}

#[tokio::test]
async fn an_unparseable_reply_is_retried_once_with_the_error_shown() {
    let server = ScriptedLlm::start(vec![
        Scripted::text("I think the issue link is the one to click."),
        Scripted::action("click [20]"),
    ])
    .await
    .unwrap();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL)).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    let reply = agent.next(obs(0, "\t[20] link 'Crash on save'", None)).await.unwrap();
    assert_eq!(reply.mv, Move::Action(Action::Click { id: 20 }));
    assert_eq!(agent.usage().llm_calls, 2);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let retry = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(retry[retry.len() - 2]["content"], "I think the issue link is the one to click.");
    assert!(reqs[1].last_message().contains("could not be used: no action found"));
}

#[tokio::test]
async fn a_second_unparseable_reply_is_a_malformed_agent_error() {
    let server =
        ScriptedLlm::start(vec![Scripted::text("no idea"), Scripted::action("fly [1]"), Scripted::action("click [1]")])
            .await
            .unwrap();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL)).unwrap();
    agent.start(brief(vec![])).await.unwrap();
    let err = agent.next(obs(0, "\t[1] link 'A'", None)).await.unwrap_err();
    match &err {
        AgentError::Malformed(m) => assert!(m.contains("unknown action 'fly'"), "{m}"),
        other => panic!("expected Malformed, got {other}"),
    }
    assert_eq!(server.requests().len(), 2, "exactly one retry");
    assert_eq!(server.remaining(), 1);
    assert_eq!(agent.usage().tokens_in, 2 * PROMPT_TOKENS, "both calls are accounted");
}

#[tokio::test]
async fn an_unknown_skill_counts_as_unparseable() {
    let server = ScriptedLlm::start(vec![
        Scripted::action(r#"skill [delete_everything] [{}]"#),
        Scripted::action(r#"skill [create_issue] [{"project": "a/b", "title": "t"}]"#),
    ])
    .await
    .unwrap();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL)).unwrap();
    agent.start(brief(vec![create_issue()])).await.unwrap();
    let reply = agent.next(obs(0, "", None)).await.unwrap();
    assert!(matches!(reply.mv, Move::Skill { ref name, .. } if name == "create_issue"));
    assert!(server.requests()[1].last_message().contains("unknown skill 'delete_everything'"));
}

#[tokio::test]
async fn a_failed_skill_is_shown_as_the_previous_error() {
    let server = ScriptedLlm::start(vec![
        Scripted::action(r#"skill [create_issue] [{"project": "a/b", "title": "t"}]"#),
        Scripted::action("stop [N/A]"),
    ])
    .await
    .unwrap();
    let mut agent = ReferenceAgent::new(config(&server, SCRIPTED_MODEL)).unwrap();
    agent.start(brief(vec![create_issue()])).await.unwrap();
    agent.next(obs(0, "", None)).await.unwrap();
    agent.skill_result("create_issue", false, Some("no textbox named 'Title'"));
    agent.next(obs(1, "", None)).await.unwrap();
    let last = server.requests()[1].last_message();
    assert!(last.contains("PREVIOUS ACTION ERROR: skill create_issue failed: no textbox named 'Title'"), "{last}");
}
