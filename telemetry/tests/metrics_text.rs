//! `/metrics` serves text a real Prometheus parser reads, with every family
//! the coordinator and the worker promise and the values put in.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

use std::time::Duration;

use skillshift_telemetry::metrics::{self, CellState, CoordinatorMetrics, WorkerMetrics};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn scrape(exposition: metrics::Exposition) -> (String, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(metrics::serve(listener, exposition, async {
        let _ = stopped.await;
    }));
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(5), conn.read_to_string(&mut raw)).await.unwrap().unwrap();
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

fn parse(body: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap()
}

fn value(s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples.iter().find(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v))).and_then(
        |x| match x.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => Some(v),
            _ => None,
        },
    )
}

#[tokio::test]
async fn coordinator_metrics_parse_with_their_values() {
    let (m, exposition) = CoordinatorMetrics::new();
    m.set_units([("queued", 10), ("running", 2), ("done", 5), ("invalid", 1)]);
    m.set_cells([
        CellState { sweep: "s1", site: "gitlab", condition: "src", state: "done", units: 3 },
        CellState { sweep: "s1", site: "gitlab", condition: "tgt", state: "queued", units: 4 },
    ]);
    m.set_active_leases(2);
    m.set_connected_workers(1);
    m.record_ingested("success", Duration::from_millis(3));
    m.record_ingested("error", Duration::from_millis(40));
    m.lease_expired("ttl");
    m.unit_reassigned();
    let (head, body) = scrape(exposition).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: application/openmetrics-text"), "{head}");
    let s = parse(&body);
    assert_eq!(value(&s, "skillshift_units", &[("state", "queued")]), Some(10.0));
    assert_eq!(value(&s, "skillshift_units", &[("state", "invalid")]), Some(1.0));
    assert_eq!(
        value(&s, "skillshift_cell_units", &[("site", "gitlab"), ("condition", "tgt"), ("state", "queued")]),
        Some(4.0)
    );
    assert_eq!(value(&s, "skillshift_active_leases", &[]), Some(2.0));
    assert_eq!(value(&s, "skillshift_connected_workers", &[]), Some(1.0));
    assert_eq!(value(&s, "skillshift_records_ingested_total", &[("outcome", "success")]), Some(1.0));
    assert_eq!(value(&s, "skillshift_lease_expiries_total", &[("reason", "ttl")]), Some(1.0));
    assert_eq!(value(&s, "skillshift_reassignments_total", &[]), Some(1.0));
    let hist = s.samples.iter().find(|x| x.metric == "skillshift_ingest_durable_seconds").unwrap();
    let prometheus_parse::Value::Histogram(buckets) = &hist.value else { panic!("not a histogram: {hist:?}") };
    // 3 ms and 40 ms: one observation at or below 4 ms, both at or below 64 ms, both in +Inf.
    let at = |le: f64| buckets.iter().find(|b| b.less_than == le || (b.less_than - le).abs() < 1e-9).map(|b| b.count);
    assert_eq!(at(0.004), Some(1.0));
    assert_eq!(at(0.064), Some(2.0));
    assert_eq!(at(f64::INFINITY), Some(2.0));
    assert_eq!(value(&s, "skillshift_ingest_durable_seconds_count", &[]), Some(2.0));
    assert!(body.trim_end().ends_with("# EOF"), "openmetrics ends with # EOF");
}

#[tokio::test]
async fn worker_metrics_parse_with_their_values() {
    let (m, exposition) = WorkerMetrics::new();
    m.attempt_started();
    m.step();
    m.step();
    m.llm_call("gpt-x", Duration::from_millis(700), true, 1200, 40);
    m.llm_call("gpt-x", Duration::from_millis(300), false, 0, 0);
    m.browser_restarted();
    m.attempt_finished("success");
    let (_, body) = scrape(exposition).await;
    let s = parse(&body);
    assert_eq!(value(&s, "skillshift_worker_steps_total", &[]), Some(2.0));
    assert_eq!(value(&s, "skillshift_worker_attempts_total", &[("outcome", "success")]), Some(1.0));
    assert_eq!(value(&s, "skillshift_worker_attempts_running", &[]), Some(0.0));
    assert_eq!(value(&s, "skillshift_worker_browser_restarts_total", &[]), Some(1.0));
    assert_eq!(value(&s, "skillshift_worker_llm_tokens_total", &[("model", "gpt-x"), ("type", "input")]), Some(1200.0));
    assert_eq!(value(&s, "skillshift_worker_llm_tokens_total", &[("type", "output")]), Some(40.0));
    assert_eq!(value(&s, "skillshift_worker_llm_calls_total", &[("result", "error")]), Some(1.0));
    assert_eq!(value(&s, "skillshift_worker_llm_latency_seconds_count", &[("model", "gpt-x")]), Some(2.0));
    let sum = value(&s, "skillshift_worker_llm_latency_seconds_sum", &[("model", "gpt-x")]).unwrap();
    assert!((sum - 1.0).abs() < 1e-9, "{sum}");
}

#[tokio::test]
async fn the_global_worker_metrics_are_one_instance() {
    WorkerMetrics::global().browser_restarted();
    WorkerMetrics::global().browser_restarted();
    let (_, body) = scrape(WorkerMetrics::global_exposition()).await;
    assert_eq!(value(&parse(&body), "skillshift_worker_browser_restarts_total", &[]), Some(2.0));
}
