//! One attempt, traced across two real processes into a real OTLP receiver.
//!
//! The test runs an OTLP gRPC trace receiver (the collector's `TraceService`
//! from the `opentelemetry-proto` definitions) in-process, starts a
//! `skillshift coordinator` and a `skillshift worker --embedded-sites`
//! (headless Chromium against the fixture GitLab) with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at it, and runs one attempt of the
//! `reference` agent. The LLM is the scripted OpenAI-compatible server
//! (`worker/src/agents/scripted_llm.rs`), a labelled stand-in that answers
//! from a script with fixed token counts. Then it checks that the coordinator's
//! and the worker's spans are one trace, that their parent links form one
//! tree, that there is one `step` span per recorded step, that the chat spans
//! carry the GenAI attributes with the script's token counts, and that the
//! record's `trace_id` is the trace's id.
//!
//! `SKILLSHIFT_TRACE_HTML=path` also writes the received trace as an HTML
//! waterfall (the source of `docs/tracing-trace.png`).

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

#[path = "support/cli.rs"]
mod cli;
#[path = "support/otlp.rs"]
mod otlp;
#[path = "support/tracing_sandbox.rs"]
mod sandbox;

use std::time::Duration;

use otlp::{Attr, ReceivedSpan};
use skillshift_common::{Site, Version};
use skillshift_worker::agents::scripted_llm::{
    element_id, Scripted, ScriptedLlm, COMPLETION_TOKENS, PROMPT_TOKENS, SCRIPTED_MODEL,
};

/// The first GitLab v1 family whose intent is a search, and its query.
fn search_family() -> (u32, String) {
    let tasks = skillshift_sites::tasks(Site::Gitlab, Version::V1);
    let (i, g) = tasks.iter().enumerate().find(|(_, g)| g.task.intent.starts_with("Search GitLab for")).unwrap();
    (i as u32, g.task.intent.split('"').nth(1).unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_attempt_is_one_trace_across_coordinator_and_worker() {
    let receiver = otlp::OtlpReceiver::start().await;
    let (family, query) = search_family();
    let llm = ScriptedLlm::start(vec![
        Scripted::compute_action(move |req| match element_id(&req.last_message(), "searchbox", "Search GitLab") {
            Some(id) => format!("type [{id}] [{query}] [1]"),
            None => "stop [no search box]".to_string(),
        }),
        Scripted::action("stop []"),
    ])
    .await
    .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let otel = |service: &str| {
        vec![("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()), ("OTEL_SERVICE_NAME", service.to_string())]
    };
    // Metered, so each LLM call asks the coordinator for a permit (its llm.permit span joins the trace).
    let (mut coord, grpc, _http) =
        sandbox::coordinator_with(dir.path(), &otel("skillshift-coordinator"), &["--llm-concurrency", "4"]);
    let mut worker_env = otel("skillshift-worker");
    worker_env.push(("OPENAI_BASE_URL", llm.base_url()));
    worker_env.push(("OPENAI_API_KEY", "scripted".to_string()));
    let metrics_addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let metrics_flag = metrics_addr.to_string();
    let mut worker = sandbox::worker(
        "trace-w1",
        grpc,
        dir.path(),
        &["--embedded-sites", "--metrics-addr", &metrics_flag],
        &worker_env,
    );

    let families = dir.path().join("families.json");
    std::fs::write(&families, format!(r#"{{"sites": {{"gitlab": {{"families": [{family}]}}}}}}"#)).unwrap();
    let families = families.display().to_string();
    let id = tokio::task::spawn_blocking(move || {
        sandbox::start_sweep(
            grpc,
            &[
                "--sites",
                "gitlab",
                "--conditions",
                "src",
                "--families",
                &families,
                "--agent",
                "reference",
                "--model",
                SCRIPTED_MODEL,
                "--max-steps",
                "5",
                "--task-timeout",
                "120",
                "--max-retries",
                "0",
            ],
        )
    })
    .await
    .unwrap();
    let g = grpc;
    let sweep_id = id.clone();
    let status =
        tokio::task::spawn_blocking(move || sandbox::wait_done(g, &sweep_id, Duration::from_secs(180))).await.unwrap();
    assert_eq!(status["state"], "done", "{status}");
    let export_dir = dir.path().to_path_buf();
    let sweep_id = id.clone();
    let records = tokio::task::spawn_blocking(move || sandbox::export(g, &sweep_id, &export_dir)).await.unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record["outcome"], "success", "{record}");

    // The worker's metrics counted the same attempt: steps, outcome, LLM calls and tokens.
    let (_, body) = tokio::task::spawn_blocking(move || sandbox::http_get(metrics_addr, "/metrics")).await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
    let sample = |name: &str, labels: &[(&str, &str)]| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
            .filter_map(|x| match x.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => Some(v),
                _ => None,
            })
            .sum()
    };
    let steps = record["steps"].as_u64().unwrap() as f64;
    assert_eq!(sample("skillshift_worker_steps_total", &[]), steps, "{body}");
    assert_eq!(sample("skillshift_worker_attempts_total", &[("outcome", "success")]), 1.0, "{body}");
    assert_eq!(sample("skillshift_worker_llm_calls_total", &[("result", "ok")]), 2.0, "{body}");
    let input = sample("skillshift_worker_llm_tokens_total", &[("model", SCRIPTED_MODEL), ("type", "input")]);
    assert_eq!(input, 2.0 * PROMPT_TOKENS as f64, "{body}");
    let output = sample("skillshift_worker_llm_tokens_total", &[("type", "output")]);
    assert_eq!(output, 2.0 * COMPLETION_TOKENS as f64, "{body}");

    // SIGTERM both: each flushes its spans on the way out.
    let (w, c) = tokio::task::spawn_blocking(move || {
        (worker.terminate(Duration::from_secs(30)), coord.terminate(Duration::from_secs(30)))
    })
    .await
    .unwrap();
    assert!(w.is_some_and(|s| s.success()), "worker exit: {w:?}");
    assert!(c.is_some_and(|s| s.success()), "coordinator exit: {c:?}");

    let trace_id = record["trace_id"].as_str().expect("the record carries a trace_id").to_string();
    assert_eq!(trace_id.len(), 32, "{trace_id}");
    let all = receiver.wait_for(Duration::from_secs(10), |s| s.iter().any(|s| s.name == "sweep")).await;
    let trace: Vec<ReceivedSpan> = all.iter().filter(|s| s.trace_id == trace_id).cloned().collect();
    let names: Vec<(&str, &str)> = trace.iter().map(|s| (s.service.as_str(), s.name.as_str())).collect();

    // One trace, both processes, one tree rooted at the coordinator's attempt span.
    assert!(trace.iter().any(|s| s.service == "skillshift-coordinator"), "{names:?}");
    assert!(trace.iter().any(|s| s.service == "skillshift-worker"), "{names:?}");
    let root = otlp::single_tree(&trace).unwrap_or_else(|e| panic!("{e}: {names:?}"));
    assert_eq!((root.name.as_str(), root.service.as_str()), ("attempt", "skillshift-coordinator"));
    let family_label = format!("gitlab.{family}");
    for (k, v) in [
        ("uid", record["uid"].as_str().unwrap()),
        ("family", family_label.as_str()),
        ("site", "gitlab"),
        ("condition", "src"),
        ("sweep", id.as_str()),
    ] {
        assert_eq!(root.str_attr(k), Some(v), "attempt.{k}: {:?}", root.attributes);
    }
    assert_eq!(root.int_attr("rep"), Some(0));
    assert_eq!(root.int_attr("attempt"), Some(0));
    assert!(root.str_attr("treatment").is_some_and(|t| !t.is_empty()));
    assert!(root.str_attr("worker").is_some_and(|w| !w.is_empty()));
    assert_eq!(root.str_attr("outcome"), Some("success"));
    let run = trace.iter().find(|s| s.name == "run").unwrap_or_else(|| panic!("no run span: {names:?}"));
    assert_eq!(run.service, "skillshift-worker");
    assert_eq!(run.parent_span_id, root.span_id, "the worker's run span is the attempt span's child");

    // One step span per recorded step, each under the run.
    let steps: Vec<&ReceivedSpan> = trace.iter().filter(|s| s.name == "step").collect();
    assert_eq!(steps.len() as u64, record["steps"].as_u64().unwrap(), "{names:?}");
    for s in &steps {
        assert_eq!(otlp::ancestry(&trace, s)[1..], ["run", "attempt"], "{:?}", otlp::ancestry(&trace, s));
        assert!(s.str_attr("action").is_some_and(|a| !a.is_empty()), "{:?}", s.attributes);
    }
    for phase in ["reset", "start", "observe", "act", "score"] {
        assert!(trace.iter().any(|s| s.name == phase), "no {phase} span: {names:?}");
    }

    // The LLM calls, under the GenAI conventions, with the script's token counts.
    let chats: Vec<&ReceivedSpan> = trace.iter().filter(|s| s.name == format!("chat {SCRIPTED_MODEL}")).collect();
    assert_eq!(chats.len() as u64, record["llm_calls"].as_u64().unwrap(), "{names:?}");
    for c in &chats {
        assert_eq!(c.str_attr("gen_ai.operation.name"), Some("chat"));
        assert_eq!(c.str_attr("gen_ai.provider.name"), Some("openai"));
        assert_eq!(c.str_attr("gen_ai.request.model"), Some(SCRIPTED_MODEL));
        assert!(c.attr("gen_ai.request.temperature").and_then(Attr::as_f64).is_some(), "{:?}", c.attributes);
        assert_eq!(c.int_attr("gen_ai.usage.input_tokens"), Some(PROMPT_TOKENS as i64));
        assert_eq!(c.int_attr("gen_ai.usage.output_tokens"), Some(COMPLETION_TOKENS as i64));
        assert_eq!(c.attr("gen_ai.response.finish_reasons"), Some(&Attr::Array(vec![Attr::Str("stop".into())])));
        assert!(c.attr("gen_ai.input.messages").is_none(), "content is recorded only when asked for");
        assert!(otlp::ancestry(&trace, c).contains(&"step"), "{:?}", otlp::ancestry(&trace, c));
    }
    // The coordinator's permit spans are children of the worker's calls, inside the attempt's trace (they
    // used to be roots of one-span traces of their own).
    let coordinator_permit = |s: &&ReceivedSpan| s.name == "llm.permit" && s.service == "skillshift-coordinator";
    let permits: Vec<&ReceivedSpan> = trace.iter().filter(coordinator_permit).collect();
    assert_eq!(permits.len() as u64, record["llm_calls"].as_u64().unwrap(), "{names:?}");
    let chat = format!("chat {SCRIPTED_MODEL}");
    for p in &permits {
        // Under the worker's own wait for the permit, inside its chat call.
        let up = otlp::ancestry(&trace, p);
        assert_eq!(up[1..], ["llm.permit", chat.as_str(), "step", "run", "attempt"], "{up:?}");
    }
    assert!(!all.iter().any(|s| coordinator_permit(&s) && s.trace_id != trace_id), "no permit span outside it");

    // The sweep's span is its own trace and links to the attempt.
    let sweep = all.iter().find(|s| s.name == "sweep" && s.str_attr("sweep") == Some(id.as_str())).unwrap();
    assert!(sweep.links.contains(&(root.trace_id.clone(), root.span_id.clone())), "{:?}", sweep.links);

    if let Ok(path) = std::env::var("SKILLSHIFT_TRACE_HTML") {
        let title = format!("skillshift: one attempt of {} ({})", record["uid"].as_str().unwrap_or(""), SCRIPTED_MODEL);
        std::fs::write(path, otlp::waterfall_html(&trace, &title)).unwrap();
    }
}

/// `skillshift run --otlp-endpoint`: no coordinator starts the trace, the attempt's own span does, and the
/// record `run` prints carries that trace's id (issue 31: it used to have none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_prints_a_record_with_the_trace_id_the_receiver_got() {
    let receiver = otlp::OtlpReceiver::start().await;
    let endpoint = receiver.endpoint();
    let out = tokio::task::spawn_blocking(move || {
        cli::bin()
            .args(["run", "skillshift.gitlab.v1.0", "--condition", "src", "--otlp-endpoint", &endpoint])
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let record: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let trace_id = record["trace_id"].as_str().unwrap_or_else(|| panic!("no trace_id: {record}")).to_string();
    let want = trace_id.clone();
    let spans = receiver.wait_for(Duration::from_secs(10), |s| s.iter().any(|s| s.trace_id == want)).await;
    let ours: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    assert!(ours.iter().any(|s| s.name == "attempt" || s.name == "run"), "the attempt's span is in the trace");
    assert!(ours.iter().any(|s| s.name == "step"), "and its steps");
}
