//! The crate's spans reach a real OTLP gRPC receiver: one trace per attempt,
//! parent links forming one tree, GenAI attributes on the chat span, links
//! between sweep and attempt, and the record's trace id equal to the trace's.
//! (The cross-process version, with a coordinator and a worker process, is
//! `tests/tracing_attempt.rs` at the workspace root.)

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

#[path = "../../tests/support/otlp.rs"]
mod otlp;

use std::time::Duration;

use skillshift_common::{AttemptSpec, Condition, Site, Uid, Version};
use skillshift_telemetry::{context, genai, spans, TelemetryArgs};

fn spec() -> AttemptSpec {
    AttemptSpec {
        sweep: "sw-1".into(),
        treatment: "CONTROL".into(),
        uid: Uid::new(Site::Gitlab, Version::V1, 7),
        condition: Condition::SrcPerc,
        attempt: 1,
        seed: 42,
        task_timeout_ms: 600_000,
        agent: "reference".into(),
        model: Some("scripted-model".into()),
        ..AttemptSpec::example()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_of_one_attempt_arrive_as_one_tree() {
    let receiver = otlp::OtlpReceiver::start().await;
    let args = TelemetryArgs { otlp_endpoint: Some(receiver.endpoint()), ..TelemetryArgs::default() };
    let guard = skillshift_telemetry::init(&args.config("telemetry-test").unwrap()).unwrap();
    assert!(guard.exporting());

    let sweep = spans::sweep("sw-1", false);
    let mut spec = spec();
    let attempt = spans::attempt(&spec, "w1", Some(&sweep));
    spec.traceparent = context::traceparent(&attempt);
    let tp = spec.traceparent.clone().expect("an exporting process has a traceparent");
    let attempt_trace = context::trace_id(&attempt).unwrap();

    // The worker side, parented on the assignment's traceparent only.
    let run = spans::run(&spec, "w1");
    let record_trace_id = spans::record_trace_id(&run, &spec);
    {
        let _r = run.enter();
        spans::reset("gitlab", "v1").in_scope(|| {});
        for i in 0..3u32 {
            let step = spans::step(i);
            let _s = step.enter();
            spans::observe().in_scope(|| {});
            let chat = genai::chat(&genai::ChatRequest {
                provider: "openai",
                model: "scripted-model",
                temperature: Some(0.0),
                max_tokens: Some(512),
                server_address: Some("127.0.0.1"),
            });
            genai::record_response(
                &chat,
                &genai::ChatResponse {
                    input_tokens: Some(120 + u64::from(i)),
                    output_tokens: Some(9),
                    finish_reasons: &["stop".to_string()],
                    response_model: Some("scripted-model"),
                    response_id: None,
                },
            );
            drop(chat);
            if i == 1 {
                let sk = spans::skill("open_issue");
                spans::record_skill(&sk, false, Some("element not found"));
            }
            spans::act("click").in_scope(|| {});
            spans::record_step(&step, "click [12]", if i == 2 { Some("stale element") } else { None });
        }
        let score = spans::score(2);
        score.in_scope(|| {
            spans::record_verdict(0, "string_match", true, "matched");
            spans::record_verdict(1, "url_match", false, "/issues != /issues/3");
        });
        spans::record_score(&score, &[("string_match".into(), true), ("url_match".into(), false)], false);
        spans::record_outcome(&run, "failure", None);
        spans::record_steps(&run, 3);
    }
    drop(run);
    spans::record_outcome(&attempt, "failure", None);
    drop(attempt);
    drop(sweep);
    guard.shutdown(Duration::from_secs(5)).await.unwrap();

    let all = receiver.wait_for(Duration::from_secs(5), |s| s.iter().any(|s| s.name == "sweep")).await;
    assert_eq!(record_trace_id.as_deref(), Some(attempt_trace.as_str()));
    assert!(tp.contains(&attempt_trace), "{tp}");

    let trace: Vec<otlp::ReceivedSpan> = all.iter().filter(|s| s.trace_id == attempt_trace).cloned().collect();
    let root = otlp::single_tree(&trace).unwrap();
    assert_eq!(root.name, "attempt");
    assert_eq!(root.service, "telemetry-test");
    for (k, v) in [("uid", "skillshift.gitlab.v1.7"), ("condition", "src-perc"), ("worker", "w1"), ("sweep", "sw-1")] {
        assert_eq!(root.str_attr(k), Some(v), "attempt attribute {k}: {:?}", root.attributes);
    }
    assert_eq!(root.int_attr("attempt"), Some(1));
    assert!(root.attr("family").is_some() && root.attr("treatment").is_some() && root.attr("rep").is_some());

    let steps: Vec<_> = trace.iter().filter(|s| s.name == "step").collect();
    assert_eq!(steps.len(), 3);
    assert!(steps.iter().all(|s| otlp::ancestry(&trace, s) == ["step", "run", "attempt"]));
    let failed = steps.iter().find(|s| s.int_attr("step") == Some(2)).unwrap();
    assert_eq!(failed.str_attr("error"), Some("stale element"));
    assert_eq!(failed.status_code, 2);

    let chats: Vec<_> = trace.iter().filter(|s| s.name == "chat scripted-model").collect();
    assert_eq!(chats.len(), 3);
    let c = chats.iter().find(|s| s.int_attr("gen_ai.usage.input_tokens") == Some(121)).unwrap();
    assert_eq!(c.str_attr("gen_ai.operation.name"), Some("chat"));
    assert_eq!(c.str_attr("gen_ai.provider.name"), Some("openai"));
    assert_eq!(c.str_attr("gen_ai.request.model"), Some("scripted-model"));
    assert_eq!(c.attr("gen_ai.request.temperature").and_then(otlp::Attr::as_f64), Some(0.0));
    assert_eq!(c.int_attr("gen_ai.request.max_tokens"), Some(512));
    assert_eq!(c.int_attr("gen_ai.usage.output_tokens"), Some(9));
    assert_eq!(
        c.attr("gen_ai.response.finish_reasons"),
        Some(&otlp::Attr::Array(vec![otlp::Attr::Str("stop".into())]))
    );
    assert!(c.attr("gen_ai.input.messages").is_none(), "content is off by default");

    let skill = trace.iter().find(|s| s.name == "skill").unwrap();
    assert_eq!((skill.str_attr("skill"), skill.str_attr("result")), (Some("open_issue"), Some("failed")));
    let score = trace.iter().find(|s| s.name == "score").unwrap();
    assert_eq!(score.str_attr("verdicts"), Some("string_match=pass,url_match=fail"));
    assert_eq!(score.events.len(), 2);

    let sweep = all.iter().find(|s| s.name == "sweep").unwrap();
    assert_ne!(sweep.trace_id, attempt_trace, "the sweep is its own trace");
    assert!(sweep.links.contains(&(root.trace_id.clone(), root.span_id.clone())), "sweep links to the attempt");
    assert!(root.links.contains(&(sweep.trace_id.clone(), sweep.span_id.clone())), "attempt links to the sweep");

    if let Ok(path) = std::env::var("SKILLSHIFT_TRACE_HTML") {
        std::fs::write(path, otlp::waterfall_html(&trace, "telemetry crate: one attempt")).unwrap();
    }
}
