//! The LLM judge of `fuzzy_match` held to WebArena's own: the oracle
//! (`scripts/webarena-oracle/judge_prompts.py`) runs libwebarena's
//! `llm_fuzzy_match` and `llm_ua_match` with the model call recorded, and our
//! judge, over the OpenAI-compatible endpoint of a scripted stand-in server
//! (it replaces a paid LLM), must send the same messages with the same model,
//! temperature and token budget, and read each reply to the same verdict.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use skillshift_common::evaluate::Judge;
use skillshift_worker::agents::llm::{LlmConfig, OpenAiClient};
use skillshift_worker::agents::scripted_llm::{Scripted, ScriptedLlm};
use skillshift_worker::judge::{LlmJudge, JUDGE_MAX_TOKENS, JUDGE_MODEL};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// (kind, pred, reference, question, reply)
const CASES: &[(&str, &str, &str, &str, &str)] = &[
    ("fuzzy", "the order was canceled", "cancelled", "What is the status of order 170?", "Correct."),
    ("fuzzy", "$12", "12.00 dollars", "How much did I spend?", "The student answer is partially correct."),
    ("fuzzy", "blue", "red", "Which color?", "incorrect"),
    ("fuzzy", "maybe", "yes", "Is it open?", "I cannot tell."),
    ("ua", "no such product exists", "the product is not sold in this store", "Buy the red kettle", "Same"),
    ("ua", "i was tired", "the repo is archived", "Open an issue", "different"),
    ("ua", "n/a", "reason", "Task 'quoted' \"both\"", "maybe"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judge_sends_webarenas_prompts_and_reads_replies_as_webarena_does() {
    let Some((python, _)) = common::webarena_oracle("the judge conformance") else { return };
    let input: Vec<Value> = CASES.iter().map(|c| json!([c.0, c.1, c.2, c.3, c.4])).collect();
    let mut child = Command::new(&python)
        .arg(root().join("scripts/webarena-oracle/judge_prompts.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting the oracle");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(Value::Array(input).to_string().as_bytes()).expect("write");
    }
    let out = child.wait_with_output().expect("oracle output");
    assert!(out.status.success(), "the oracle failed");
    let theirs: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the oracle prints JSON");
    assert_eq!(theirs.len(), CASES.len());

    let server = ScriptedLlm::start(CASES.iter().map(|c| Scripted::text(c.4)).collect()).await.expect("stand-in");
    let mut cfg = LlmConfig::new(&server.base_url(), JUDGE_MODEL);
    cfg.temperature = 0.0;
    cfg.max_tokens = Some(JUDGE_MAX_TOKENS);
    let judge = LlmJudge::new(Box::new(OpenAiClient::new(cfg).expect("client")));
    for (i, ((kind, pred, reference, question, _), want)) in CASES.iter().zip(&theirs).enumerate() {
        let ours = match *kind {
            "fuzzy" => judge.fuzzy_match(question, reference, pred).await,
            _ => judge.ua_match(question, reference, pred).await,
        };
        match want.get("score").and_then(Value::as_f64) {
            Some(s) => assert_eq!(ours, Ok(s == 1.0), "case {i}: WebArena scored {s}"),
            None => assert!(
                ours.is_err(),
                "case {i}: WebArena could not read the reply ({}), we read {ours:?}",
                want["error"]
            ),
        }
        let sent = &server.requests()[i].body;
        assert_eq!(sent["messages"], want["messages"], "case {i}: the messages");
        assert_eq!(sent["model"], want["model"], "case {i}: the model");
        assert_eq!(sent["temperature"].as_f64(), want["temperature"].as_f64(), "case {i}: the temperature");
        assert_eq!(sent["max_tokens"], want["max_tokens"], "case {i}: the token budget");
        // WebArena sends top_p 1.0, the API's default; we leave it unsent.
        assert_eq!(want["top_p"].as_f64(), Some(1.0));
        assert!(sent.get("top_p").is_none());
    }
}
