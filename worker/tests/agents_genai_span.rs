//! Each reference-agent LLM call is a `chat {model}` span carrying the GenAI attributes, checked with a
//! capturing tracing layer against the scripted test LLM (a labelled stand-in).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use skillshift_worker::agent::{Agent, Observation, TaskBrief};
use skillshift_worker::agents::llm::{LlmConfig, RetryPolicy};
use skillshift_worker::agents::reference::ReferenceAgent;
use skillshift_worker::agents::scripted_llm::{Scripted, ScriptedLlm, SCRIPTED_MODEL};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

type Fields = BTreeMap<String, String>;

/// Records every span's name and fields, by span id.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<BTreeMap<u64, (String, Fields)>>>);

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = Fields::new();
        attrs.record(&mut Visitor(&mut fields));
        self.0.lock().unwrap().insert(id.into_u64(), (attrs.metadata().name().to_string(), fields));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some((_, fields)) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Visitor(fields));
        }
    }
}

#[tokio::test]
async fn each_llm_call_is_a_genai_chat_span() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let server = ScriptedLlm::start_with_usage(
        vec![Scripted::Status(429), Scripted::action("click [3]"), Scripted::Status(400)],
        1234,
        56,
    )
    .await
    .unwrap();
    let mut cfg = LlmConfig::new(&server.base_url(), SCRIPTED_MODEL);
    cfg.request_timeout = Duration::from_secs(5);
    cfg.retry = RetryPolicy { base_delay: Duration::from_millis(5), max_delay: Duration::from_millis(10), ..cfg.retry };
    let mut agent = ReferenceAgent::new(cfg).unwrap();
    let brief = TaskBrief {
        uid: "skillshift.gitlab.v1.0".into(),
        intent: "Open issues".into(),
        start_url: "http://h/".into(),
        max_steps: 10,
        skills: vec![],
    };
    agent.start(brief).await.unwrap();
    let obs = |step| Observation {
        step,
        url: "http://h/".into(),
        title: "H".into(),
        axtree: "[3] link 'Issues'".into(),
        last_action_error: None,
    };
    agent.next(obs(0)).await.unwrap();
    agent.next(obs(1)).await.unwrap_err();

    let spans: Vec<Fields> =
        capture.0.lock().unwrap().values().filter(|(name, _)| name == "chat").map(|(_, f)| f.clone()).collect();
    assert_eq!(spans.len(), 2, "one span per completion call, retries inside it: {spans:?}");
    let ok = &spans[0];
    let port = server.addr().port();
    for (key, want) in [
        ("otel.name", format!("chat {SCRIPTED_MODEL}")),
        ("otel.kind", "client".into()),
        ("gen_ai.operation.name", "chat".into()),
        ("gen_ai.provider.name", "openai".into()),
        ("gen_ai.request.model", SCRIPTED_MODEL.into()),
        ("gen_ai.request.temperature", "0.0".into()),
        ("gen_ai.request.max_tokens", "384".into()),
        ("gen_ai.response.model", SCRIPTED_MODEL.into()),
        ("gen_ai.response.id", "scripted-1".into()),
        ("gen_ai.usage.input_tokens", "1234".into()),
        ("gen_ai.usage.output_tokens", "56".into()),
        ("server.address", "127.0.0.1".into()),
    ] {
        assert_eq!(ok.get(key), Some(&want), "{key} in {ok:?} (port {port})");
    }
    assert_eq!(spans[1].get("error.type").map(String::as_str), Some("http_400"), "{:?}", spans[1]);
}
