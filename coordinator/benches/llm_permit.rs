//! The cost of the cluster's LLM budget on the call path: the round trip of
//! one permit (Acquire, then Release) against a coordinator in this process,
//! over real gRPC on loopback, as a worker's LLM client makes it before and
//! after every HTTP call.
//!
//! * uncontended: one client, a permit always free (`--llm-concurrency 1000`);
//! * contended: 8 clients against `--llm-concurrency 4`, each holding its
//!   permit 5 ms (a stand-in for the LLM call), so half of them always wait:
//!   the figure is the time from a release to the next grant (hand-over).
//!
//! Run: `cargo bench -p skillshift-coordinator --bench llm_permit` (add
//! `-- quick` for fewer rounds).

use std::time::{Duration, Instant};

use skillshift_coordinator::llm_budget::BudgetConfig;
use skillshift_coordinator::server::{self, Config};
use skillshift_proto::v1::{self, llm_budget_client::LlmBudgetClient};
use tokio_util::sync::CancellationToken;

type Client = LlmBudgetClient<tonic::transport::Channel>;

/// The clients' holder secret (one holder for all: each holds at most one permit at a time).
const HOLDER: &str = "bench-holder-0123456789";

fn request() -> v1::LlmPermitRequest {
    v1::LlmPermitRequest {
        endpoint: "http://llm.bench/v1".into(),
        model: "bench".into(),
        tokens: 1_400,
        worker: "bench".into(),
        wait_ms: 20_000,
        holder: HOLDER.into(),
    }
}

async fn round(client: &mut Client, hold: Duration) -> (Duration, Duration) {
    let t0 = Instant::now();
    let permit = client.acquire(request()).await.expect("acquire").into_inner().permit;
    let acquired = t0.elapsed();
    assert!(!permit.is_empty(), "granted within the wait");
    tokio::time::sleep(hold).await;
    let t1 = Instant::now();
    client
        .release(v1::LlmPermitRelease {
            permit,
            endpoint: "http://llm.bench/v1".into(),
            model: "bench".into(),
            result: v1::LlmCallResult::Answered as i32,
            tokens_used: 1_050,
            holder: HOLDER.into(),
        })
        .await
        .expect("release");
    (acquired, t1.elapsed())
}

fn quantile(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn line(what: &str, v: &mut [Duration]) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{what:<34} n={:>5}  p50 {:>7.0} µs  p90 {:>7.0} µs  p99 {:>7.0} µs",
        v.len(),
        us(quantile(v, 0.5)),
        us(quantile(v, 0.9)),
        us(quantile(v, 0.99))
    );
}

async fn start(concurrency: u32) -> (String, CancellationToken, server::Running, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let stop = CancellationToken::new();
    let config = Config {
        listen: "127.0.0.1:0".parse().expect("addr"),
        http: None,
        data_dir: dir.path().to_path_buf(),
        token: None,
        tls: None,
        lease_ttl: Duration::from_secs(30),
        limits: Default::default(),
        llm_budget: BudgetConfig { concurrency: Some(concurrency), rpm: None, tpm: None },
    };
    let running = server::start(config, stop.clone()).await.expect("coordinator starts");
    (format!("http://{}", running.grpc_addr), stop, running, dir)
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let rounds = if quick { 300 } else { 3_000 };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let (url, stop, running, _dir) = start(1_000).await;
        let mut client = Client::connect(url.clone()).await.expect("connect");
        for _ in 0..50 {
            round(&mut client, Duration::ZERO).await; // warm-up
        }
        let (mut acq, mut rel, mut both) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let (a, r) = round(&mut client, Duration::ZERO).await;
            acq.push(a);
            rel.push(r);
            both.push(a + r);
        }
        line("uncontended acquire", &mut acq);
        line("uncontended release", &mut rel);
        line("uncontended acquire + release", &mut both);
        stop.cancel();
        let _ = running.wait().await;

        let (url, stop, running, _dir) = start(4).await;
        let per_client = rounds / 8;
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let url = url.clone();
            tasks.push(tokio::spawn(async move {
                let mut client = Client::connect(url).await.expect("connect");
                let mut waits = Vec::new();
                for _ in 0..per_client {
                    waits.push(round(&mut client, Duration::from_millis(5)).await.0);
                }
                waits
            }));
        }
        let mut waits = Vec::new();
        for t in tasks {
            waits.extend(t.await.expect("client task"));
        }
        let elapsed = t0.elapsed();
        let calls = waits.len() as f64;
        // With 4 permits held 5 ms each, the ideal is 4 calls per 5 ms; the rest is hand-over cost.
        let ideal = Duration::from_secs_f64(calls * 0.005 / 4.0);
        line("contended acquire (8 on 4 permits)", &mut waits);
        println!(
            "contended: {calls} calls in {:.2} s, ideal {:.2} s; hand-over {:.0} µs per call",
            elapsed.as_secs_f64(),
            ideal.as_secs_f64(),
            (elapsed.as_secs_f64() - ideal.as_secs_f64()) / calls * 4.0 * 1e6
        );
        stop.cancel();
        let _ = running.wait().await;
    });
}
