//! An OTLP gRPC trace receiver that runs inside a test.
//!
//! It implements the collector's `TraceService` from the `opentelemetry-proto`
//! definitions on a loopback port, so processes under test export to it
//! exactly as they would to Jaeger or a collector, and keeps every span it is
//! sent. [`waterfall_html`] renders what it received as a small HTML
//! waterfall (used for the screenshot in `docs/tracing.md`).

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};

/// An attribute value as received.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    Array(Vec<Attr>),
    Other,
}

impl Attr {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Attr::Int(i) => Some(*i),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Attr::Double(d) => Some(*d),
            Attr::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
    /// A short rendering for the waterfall.
    pub fn show(&self) -> String {
        match self {
            Attr::Str(s) => s.clone(),
            Attr::Int(i) => i.to_string(),
            Attr::Double(d) => d.to_string(),
            Attr::Bool(b) => b.to_string(),
            Attr::Array(a) => format!("[{}]", a.iter().map(Attr::show).collect::<Vec<_>>().join(", ")),
            Attr::Other => "?".into(),
        }
    }
}

fn attr(v: Option<&AnyValue>) -> Attr {
    match v.and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => Attr::Str(s.clone()),
        Some(Value::IntValue(i)) => Attr::Int(*i),
        Some(Value::DoubleValue(d)) => Attr::Double(*d),
        Some(Value::BoolValue(b)) => Attr::Bool(*b),
        Some(Value::ArrayValue(a)) => Attr::Array(a.values.iter().map(|v| attr(Some(v))).collect()),
        _ => Attr::Other,
    }
}

fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, Attr> {
    kvs.iter().map(|kv| (kv.key.clone(), attr(kv.value.as_ref()))).collect()
}

/// One span as the receiver got it; ids are lowercase hex.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub service: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: BTreeMap<String, Attr>,
    /// (trace id, span id) of each link.
    pub links: Vec<(String, String)>,
    /// (name, attributes) of each event.
    pub events: Vec<(String, BTreeMap<String, Attr>)>,
    /// 0 unset, 1 ok, 2 error.
    pub status_code: i32,
}

impl ReceivedSpan {
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attributes.get(key)
    }
    pub fn str_attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Attr::as_str)
    }
    pub fn int_attr(&self, key: &str) -> Option<i64> {
        self.attributes.get(key).and_then(Attr::as_i64)
    }
}

#[derive(Clone, Default)]
struct Collector {
    // A std Mutex: the critical section is a Vec push, never held across await.
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut got = Vec::new();
        for rs in request.into_inner().resource_spans {
            let service = rs
                .resource
                .as_ref()
                .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
                .and_then(|kv| attr(kv.value.as_ref()).as_str().map(String::from))
                .unwrap_or_default();
            for ss in rs.scope_spans {
                for s in ss.spans {
                    got.push(ReceivedSpan {
                        service: service.clone(),
                        trace_id: hex(&s.trace_id),
                        span_id: hex(&s.span_id),
                        parent_span_id: hex(&s.parent_span_id),
                        name: s.name.clone(),
                        start_ns: s.start_time_unix_nano,
                        end_ns: s.end_time_unix_nano,
                        attributes: attrs(&s.attributes),
                        links: s.links.iter().map(|l| (hex(&l.trace_id), hex(&l.span_id))).collect(),
                        events: s.events.iter().map(|e| (e.name.clone(), attrs(&e.attributes))).collect(),
                        status_code: s.status.as_ref().map(|st| st.code).unwrap_or(0),
                    });
                }
            }
        }
        self.spans.lock().map_err(|_| tonic::Status::internal("receiver lock poisoned"))?.extend(got);
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The running receiver; dropped, it stops serving.
pub struct OtlpReceiver {
    pub addr: SocketAddr,
    collector: Collector,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl OtlpReceiver {
    /// Serves the collector's trace service on 127.0.0.1, port 0.
    pub async fn start() -> OtlpReceiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind otlp receiver");
        let addr = listener.local_addr().expect("receiver address");
        let collector = Collector::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let svc = TraceServiceServer::new(collector.clone());
        tokio::spawn(async move {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(svc)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        OtlpReceiver { addr, collector, stop: Some(stop) }
    }

    /// The value for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.collector.spans.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until `done(spans)` holds or `deadline` passes; returns the spans either way.
    pub async fn wait_for(&self, deadline: Duration, done: impl Fn(&[ReceivedSpan]) -> bool) -> Vec<ReceivedSpan> {
        let end = tokio::time::Instant::now() + deadline;
        loop {
            let spans = self.spans();
            if done(&spans) || tokio::time::Instant::now() >= end {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Checks that `spans` form one tree: exactly one root, every other span's
/// parent present. Returns the root, or what is wrong.
pub fn single_tree(spans: &[ReceivedSpan]) -> Result<&ReceivedSpan, String> {
    let ids: HashMap<&str, &ReceivedSpan> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let roots: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    if roots.len() != 1 {
        return Err(format!(
            "expected one root span, found {}: {:?}",
            roots.len(),
            roots.iter().map(|s| &s.name).collect::<Vec<_>>()
        ));
    }
    for s in spans {
        if !s.parent_span_id.is_empty() && !ids.contains_key(s.parent_span_id.as_str()) {
            return Err(format!(
                "span `{}` ({}) has parent {} which is not in the trace",
                s.name, s.service, s.parent_span_id
            ));
        }
    }
    Ok(roots[0])
}

/// The chain of span names from `span` up to the root.
pub fn ancestry<'a>(spans: &'a [ReceivedSpan], span: &'a ReceivedSpan) -> Vec<&'a str> {
    let ids: HashMap<&str, &ReceivedSpan> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let mut out = vec![span.name.as_str()];
    let mut cur = span;
    while let Some(p) = ids.get(cur.parent_span_id.as_str()) {
        out.push(p.name.as_str());
        cur = p;
        if out.len() > 64 {
            break;
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Renders one trace as an HTML waterfall: one row per span, indented by
/// depth, a bar placed by start and length, the service and key attributes.
pub fn waterfall_html(spans: &[ReceivedSpan], title: &str) -> String {
    let ids: HashMap<&str, &ReceivedSpan> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let mut children: HashMap<&str, Vec<&ReceivedSpan>> = HashMap::new();
    for s in spans {
        children.entry(s.parent_span_id.as_str()).or_default().push(s);
    }
    for v in children.values_mut() {
        v.sort_by_key(|s| s.start_ns);
    }
    let t0 = spans.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let t1 = spans.iter().map(|s| s.end_ns).max().unwrap_or(t0 + 1).max(t0 + 1);
    let total = (t1 - t0) as f64;
    let mut rows = Vec::new();
    // Depth-first from the roots (spans whose parent is absent).
    let mut stack: Vec<(&ReceivedSpan, usize)> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty() || !ids.contains_key(s.parent_span_id.as_str()))
        .map(|s| (s, 0))
        .collect();
    stack.reverse();
    while let Some((s, depth)) = stack.pop() {
        let left = (s.start_ns.saturating_sub(t0)) as f64 / total * 100.0;
        let width = ((s.end_ns.saturating_sub(s.start_ns)) as f64 / total * 100.0).max(0.3);
        let ms = s.end_ns.saturating_sub(s.start_ns) as f64 / 1e6;
        let keys = [
            "uid",
            "condition",
            "worker",
            "attempt",
            "step",
            "action",
            "error",
            "skill",
            "result",
            "verdicts",
            "gen_ai.request.model",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.response.finish_reasons",
            "outcome",
        ];
        let detail: Vec<String> =
            keys.iter().filter_map(|k| s.attributes.get(*k).map(|v| format!("{k}={}", v.show()))).collect();
        let class = if s.service.contains("coordinator") { "c" } else { "w" };
        let err = if s.status_code == 2 { " err" } else { "" };
        rows.push(format!(
            "<tr><td class=\"n\" style=\"padding-left:{}px\">{}</td><td class=\"s\">{}</td>\
             <td class=\"t\"><div class=\"bar {class}{err}\" style=\"left:{left:.2}%;width:{width:.2}%\"></div></td>\
             <td class=\"d\">{ms:.1} ms</td><td class=\"a\">{}</td></tr>",
            6 + depth * 14,
            esc(&s.name),
            esc(&s.service),
            esc(&detail.join("  ")),
        ));
        if let Some(kids) = children.get(s.span_id.as_str()) {
            for k in kids.iter().rev() {
                stack.push((k, depth + 1));
            }
        }
    }
    let trace_id = spans.first().map(|s| s.trace_id.as_str()).unwrap_or("");
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title><style>\
         body{{font:12px/1.35 sans-serif;margin:14px;color:#222}}h1{{font-size:15px;margin:0 0 2px}}\
         .note{{color:#a33;margin:0 0 8px}}table{{border-collapse:collapse;width:100%}}td{{padding:2px 4px;\
         border-bottom:1px solid #eee;white-space:nowrap;vertical-align:middle}}.t{{position:relative;width:34%;\
         height:14px}}.bar{{position:absolute;top:3px;height:10px;border-radius:2px}}.c{{background:#3b7dd8}}\
         .w{{background:#2a9d6f}}.err{{background:#d8453b}}.s{{color:#666}}.d{{text-align:right;color:#444}}\
         .a{{color:#555;font-size:11px;white-space:normal}}</style></head><body><h1>{title}</h1>\
         <p class=\"note\">Rendered from the spans the test's OTLP receiver collected (not Jaeger's UI). \
         trace_id {trace_id}, {n} spans, {total_ms:.1} ms. Blue: coordinator, green: worker, red: error status.</p>\
         <table><tr><th align=left>span</th><th align=left>service</th><th>timeline</th><th>duration</th>\
         <th align=left>attributes</th></tr>{rows}</table></body></html>",
        title = esc(title),
        n = spans.len(),
        total_ms = total / 1e6,
        rows = rows.join("\n"),
    )
}
