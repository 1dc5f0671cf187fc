//! Costs and models true (issue 31 item 5): an attempt that made no LLM call records `cost_usd: 0`, so a
//! spend gate decides ($0 passes a bound) instead of being inconclusive; `worker --simulate-llm` asks the
//! endpoint for the model the contract names and prices its calls as a real call is priced. The endpoint
//! is the scripted OpenAI-compatible stand-in (`skillshift_worker::agents::scripted_llm`, not a language
//! model); coordinator and workers are real processes over real gRPC with a sled store.

mod support;

#[path = "support/cli.rs"]
mod cli;

use std::time::Duration;

use skillshift_worker::agents::scripted_llm::{Scripted, ScriptedLlm};
use support::{read_records, Sandbox};

#[test]
fn a_run_without_llm_calls_costs_0_and_its_spend_gate_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fam = dir.path().join("families.json");
    std::fs::write(&fam, r#"{"sites": {"gitlab": {"families": [0, 1]}}}"#).expect("families");
    let out = dir.path().join("run");
    let o = cli::bin()
        .args(["local", "--simulate", "5", "--sites", "gitlab", "--conditions", "src,tgt", "--families"])
        .arg(&fam)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("local");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records = out.join("per_task.jsonl");
    let recs = read_records(&records);
    assert!(recs.iter().all(|r| r["cost_usd"] == 0.0 && r["llm_calls"] == 0), "the skills agent spent $0: {recs:?}");
    let gates = dir.path().join("gates.json");
    std::fs::write(
        &gates,
        r#"{"schema": "skillshift.gates/1", "gates": [{"name": "spend", "metric": "cost.total_usd", "max": 0.01}]}"#,
    )
    .expect("gates");
    let o = cli::bin()
        .arg("report")
        .arg(&records)
        .args(["--allow-partial", "--gates"])
        .arg(&gates)
        .output()
        .expect("report");
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "a measured $0 passes the gate, not inconclusive:\n{text}");
    assert!(text.contains("spend: pass: observed 0 meets max 0.01"), "{text}");
}

#[test]
fn simulate_llm_asks_for_the_contracts_model_and_prices_its_calls() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let llm = rt
        .block_on(ScriptedLlm::start_endless(vec![], Scripted::text("ok"), Duration::from_millis(5)))
        .expect("scripted llm");
    let mut sb = Sandbox::start(0, 20);
    // The workers' environment: another default model, and a price for the scripted one (in no table).
    let env = [
        ("OPENAI_BASE_URL", llm.base_url()),
        ("OPENAI_MODEL", "endpoint-default".to_string()),
        ("SKILLSHIFT_LLM_PRICE", "2,8".to_string()),
    ];
    for (k, v) in &env {
        std::env::set_var(k, v);
    }
    sb.add_worker(20, &["--slots", "2", "--simulate-llm"]);
    let id = sb.submit(2, &["--agent", "reference", "--model", "m1", "--max-steps", "3"]);
    let st = sb.wait_state(&id, "done", Duration::from_secs(120));
    assert_eq!(st["units"]["done"], st["units"]["total"], "{st}");
    let records = sb.export(&id, "per_task.jsonl");
    let requests = llm.requests();
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| r.body["model"] == "m1"), "every call asked for the contract's model m1");
    let measured: Vec<_> = records.iter().filter(|r| r["outcome"] != "error").collect();
    assert!(!measured.is_empty());
    for r in measured {
        let (tin, tout) = (r["tokens_in"].as_f64().expect("tokens in"), r["tokens_out"].as_f64().expect("tokens out"));
        let want = (tin * 2.0 + tout * 8.0) / 1e6;
        let got = r["cost_usd"].as_f64().unwrap_or(-1.0);
        assert!((got - want).abs() < 1e-12, "priced at SKILLSHIFT_LLM_PRICE: {got} vs {want}: {r}");
    }
    let contract: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.path("contract.json")).expect("contract")).expect("json");
    assert_eq!(contract["model"], "m1");
}
