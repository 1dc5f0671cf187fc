//! The contract records what ran: a `local` run of the `reference` agent against the scripted test LLM (a
//! labelled stand-in, real Chromium, the embedded fixture sites) sends the temperature and model the flags
//! asked for, and `contract.json` names exactly those, the endpoint's provider and the digest of the prompt
//! template the agent built. Without an LLM agent the contract names no model at all.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::path::PathBuf;

use serde_json::Value;
use skillshift_common::{Condition, Site};
use skillshift_coordinator::planner;
use skillshift_experiment::local::{self, LocalSettings};
use skillshift_experiment::settings::{Skills, SweepSettings};
use skillshift_experiment::spec;
use skillshift_telemetry::TelemetryConfig;
use skillshift_worker::agents::prompt;
use skillshift_worker::agents::scripted_llm::{Scripted, ScriptedLlm, SCRIPTED_MODEL};

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data")
}

/// The model the agent asks for in the contract run.
const REQUESTED: &str = "requested-model";

fn one_unit(dir: &std::path::Path) -> SweepSettings {
    let families = dir.join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0]}}}"#).unwrap();
    SweepSettings {
        sites: vec![Site::Gitlab],
        conditions: vec![Condition::Src],
        families: Some(families),
        treatments: vec!["CONTROL".into()],
        skills: Skills::None,
        max_steps: 3,
        task_timeout_s: 120,
        ..SweepSettings::full_grid(data())
    }
}

fn contract_of(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("contract.json")).unwrap()).unwrap()
}

// One test, since it sets the process's OPENAI_* variables.
#[test]
fn the_contract_names_the_temperature_model_provider_and_prompt_the_agent_ran_with() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Every attempt stops at once; spare replies cover retries.
    let server = rt.block_on(ScriptedLlm::start(vec![Scripted::action("stop [N/A]"); 6])).unwrap();
    std::env::set_var("OPENAI_BASE_URL", server.base_url());
    std::env::remove_var("OPENAI_MODEL");
    std::env::remove_var("OPENAI_API_KEY");

    // Resolved before anything runs: the defaults are the values the agent will use.
    let dir = tempfile::tempdir().unwrap();
    let defaults = spec::build(&SweepSettings { agent: "reference".into(), ..one_unit(dir.path()) }).unwrap();
    assert_eq!(defaults.temperature, Some(0.0), "the agent's default temperature, not null");
    assert_eq!(defaults.model.as_deref(), Some(skillshift_worker::agents::llm::DEFAULT_MODEL));
    assert_eq!(defaults.provider.as_deref(), Some("openai"));
    assert_eq!(defaults.prompt_version, Some(prompt::template_digest()));
    let skills = spec::build(&SweepSettings { temperature: Some(0.7), ..one_unit(dir.path()) }).unwrap();
    assert_eq!((skills.model, skills.temperature, skills.prompt_version), (None, None, None), "no model runs");
    let other =
        spec::build(&SweepSettings { agent: "reference".into(), temperature: Some(0.25), ..one_unit(dir.path()) });
    assert_ne!(planner::contract(&other.unwrap()).1, planner::contract(&defaults).1, "temperature is frozen");

    let out = dir.path().join("run");
    let run = local::run(LocalSettings {
        sweep: SweepSettings {
            agent: "reference".into(),
            // The stand-in answers as SCRIPTED_MODEL whatever it is asked for, as an endpoint serving a snapshot does.
            model: Some(REQUESTED.into()),
            temperature: Some(0.25),
            ..one_unit(dir.path())
        },
        workers: 1,
        slots: 1,
        out: out.clone(),
        simulate: None,
        real_sites: None,
        llm_budget: Default::default(),
        screenshots: Default::default(),
        telemetry: TelemetryConfig::logs_only("contract-truth"),
    })
    .unwrap();
    assert!(run.completed);
    let reqs = server.requests();
    assert!(!reqs.is_empty(), "the agent called the scripted LLM");
    for r in &reqs {
        assert_eq!(r.body["temperature"], 0.25, "the temperature the flag asked for reached the endpoint");
        assert_eq!(r.body["model"], REQUESTED);
    }
    let c = contract_of(&out);
    assert_eq!(c["temperature"], 0.25);
    assert_eq!(c["model"], REQUESTED, "the frozen model is the one the agent requests");
    assert_eq!(c["models_answered"], serde_json::json!([SCRIPTED_MODEL]), "the model the endpoint said answered");
    assert_eq!(c["provider"], "openai");
    assert_eq!(c["prompt_version"], Value::String(prompt::template_digest()));
    let records = std::fs::read_to_string(out.join("per_task.jsonl")).unwrap();
    for line in records.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["config_digest"], c["config_digest"]);
        assert_ne!(r["outcome"], "error", "the attempt ran under its contract: {line}");
    }
}

#[test]
fn a_worker_with_another_prompt_template_refuses_the_attempt() {
    let choice = skillshift_worker::agents::LlmChoice {
        model: Some(SCRIPTED_MODEL.into()),
        temperature: Some(0.0),
        prompt_version: Some("sha256:0000".into()),
    };
    let e = skillshift_worker::agents::reference_config(&choice).unwrap_err().to_string();
    assert!(e.contains("prompt version is sha256:0000") && e.contains(&prompt::template_digest()), "{e}");
}
