//! `/metrics` of a real coordinator process and a real worker process, after
//! a small sweep run by a simulated worker (no browser: this test is about the
//! counters, not the attempts), parsed with a real Prometheus text parser.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

#[path = "support/tracing_sandbox.rs"]
mod sandbox;

use std::time::Duration;

fn parse(body: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap()
}

fn num(v: &prometheus_parse::Value) -> Option<f64> {
    match v {
        prometheus_parse::Value::Counter(x)
        | prometheus_parse::Value::Gauge(x)
        | prometheus_parse::Value::Untyped(x) => Some(*x),
        _ => None,
    }
}

/// The sum of a family's samples whose labels include `labels`.
fn sum(s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    s.samples
        .iter()
        .filter(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .filter_map(|x| num(&x.value))
        .sum()
}

fn has(s: &prometheus_parse::Scrape, name: &str) -> bool {
    s.samples.iter().any(|x| x.metric == name)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn coordinator_and_worker_metrics_are_parseable_and_count_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let (mut coord, grpc, http) = sandbox::coordinator(dir.path(), &[]);
    let worker_metrics: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let metrics_flag = worker_metrics.to_string();
    let mut worker = sandbox::worker(
        "metrics-w1",
        grpc,
        dir.path(),
        &["--simulate", "20", "--slots", "2", "--metrics-addr", &metrics_flag],
        &[],
    );
    let families = dir.path().join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0, 1, 2]}}}"#).unwrap();
    let id = sandbox::start_sweep(
        grpc,
        // A simulated worker takes only a sweep whose contract says simulated.
        &["--simulated", "--sites", "gitlab", "--conditions", "src,tgt", "--families", &families.display().to_string()],
    );
    let status = sandbox::wait_done(grpc, &id, Duration::from_secs(60));
    assert_eq!(status["state"], "done", "{status}");
    assert_eq!(status["units"]["done"], 6, "{status}");

    let (line, body) = sandbox::http_get(http, "/metrics");
    assert!(line.contains("200"), "{line}");
    let s = parse(&body);
    assert_eq!(sum(&s, "skillshift_units", &[("state", "done")]), 6.0, "{body}");
    assert_eq!(sum(&s, "skillshift_units", &[("state", "queued")]), 0.0);
    assert_eq!(
        sum(
            &s,
            "skillshift_cell_units",
            &[("sweep", &id), ("site", "gitlab"), ("condition", "src"), ("state", "done")]
        ),
        3.0
    );
    assert_eq!(sum(&s, "skillshift_cell_units", &[("sweep", &id), ("condition", "tgt"), ("state", "done")]), 3.0);
    assert_eq!(sum(&s, "skillshift_records_ingested_total", &[]), 6.0, "one record per attempt: {body}");
    assert_eq!(sum(&s, "skillshift_ingest_durable_seconds_count", &[]), 6.0);
    let total_secs = sum(&s, "skillshift_ingest_durable_seconds_sum", &[]);
    assert!(total_secs > 0.0 && total_secs < 6.0, "ingest-to-durable is milliseconds: {total_secs}");
    assert_eq!(sum(&s, "skillshift_connected_workers", &[]), 1.0);
    assert_eq!(sum(&s, "skillshift_active_leases", &[]), 0.0);
    assert_eq!(sum(&s, "skillshift_sweeps_active", &[]), 0.0);
    assert_eq!(sum(&s, "skillshift_reassignments_total", &[]), 0.0);
    assert!(has(&s, "skillshift_reassignments_total"));
    let hist = s.samples.iter().find(|x| x.metric == "skillshift_ingest_durable_seconds").unwrap();
    assert!(matches!(hist.value, prometheus_parse::Value::Histogram(ref b) if b.len() > 5), "{hist:?}");

    let (line, body) = sandbox::http_get(worker_metrics, "/metrics");
    assert!(line.contains("200"), "{line}");
    let w = parse(&body);
    assert_eq!(sum(&w, "skillshift_worker_attempts_total", &[]), 6.0, "{body}");
    assert_eq!(sum(&w, "skillshift_worker_attempts_running", &[]), 0.0);
    for family in ["skillshift_worker_steps_total", "skillshift_worker_browser_restarts_total"] {
        assert!(has(&w, family), "{family} missing: {body}");
    }

    // Losing the worker: its stream closes, the coordinator sees it go.
    assert!(worker.terminate(Duration::from_secs(20)).is_some_and(|s| s.success()));
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let s = parse(&sandbox::http_get(http, "/metrics").1);
        if sum(&s, "skillshift_connected_workers", &[]) == 0.0 || std::time::Instant::now() > end {
            assert_eq!(sum(&s, "skillshift_connected_workers", &[]), 0.0);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(coord.terminate(Duration::from_secs(20)).is_some_and(|s| s.success()));
}
