//! Coordinator benchmark with simulated workers (no browser), in one process
//! over real gRPC on loopback with the sled store on disk:
//!
//! * throughput: 64 workers, zero-length attempts, units/s from submit to done;
//! * efficiency: 64 workers, fixed-length attempts, makespan / ideal, where
//!   ideal = units x duration / slots;
//! * reassignment: a worker holding an attempt drops dead (its connection is
//!   torn down); time until the unit's next attempt reaches an idle worker.
//!
//! Run: `cargo bench -p skillshift-coordinator --bench sweep` (add `-- quick`
//! for a smaller run). The simulated workers' numbers say nothing about agents.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use skillshift_common::{Outcome, Record, Site};
use skillshift_coordinator::client::Client;
use skillshift_coordinator::planner::{SweepSpec, TreatmentSpec};
use skillshift_coordinator::server::{self, Config};
use skillshift_coordinator::status::SweepState;
use skillshift_proto::convert::{self, site_version_to_wire};
use skillshift_proto::v1::{self, worker_client::WorkerClient};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

type Stamp = Arc<AtomicU64>;

/// One simulated worker: registers, then answers every assignment with a
/// record after `duration`. Stamps `assigned_at` (µs since `t0`) on each assignment.
async fn sim_worker(
    url: String,
    slots: u32,
    duration: Duration,
    t0: Instant,
    assigned_at: Stamp,
    stop: CancellationToken,
) {
    let Ok(mut client) = WorkerClient::connect(url).await else { return };
    let hosts = Site::ALL
        .iter()
        .flat_map(|s| skillshift_common::Version::ALL.iter().map(move |v| site_version_to_wire(*s, *v)))
        .collect();
    let Ok(reply) = client
        .register(v1::RegisterRequest {
            name: "bench".into(),
            hosts,
            slots,
            previous_id: String::new(),
            simulated: false,
        })
        .await
    else {
        return;
    };
    let id = reply.into_inner().worker_id;
    let (tx, rx) = mpsc::channel(4096);
    let hello = v1::WorkerMessage {
        body: Some(v1::worker_message::Body::Hello(v1::Hello { worker_id: id, running: vec![], free_slots: slots })),
    };
    let _ = tx.send(hello).await;
    let Ok(resp) = client.session(ReceiverStream::new(rx)).await else { return };
    let mut inbound = resp.into_inner();
    loop {
        let msg = tokio::select! {
            m = inbound.message() => m,
            _ = stop.cancelled() => return,
        };
        let Ok(Some(msg)) = msg else { return };
        if let Some(v1::coordinator_message::Body::Assign(a)) = msg.body {
            assigned_at.store(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
            let Ok((key, spec)) = convert::assignment_from_wire(a) else { continue };
            let tx = tx.clone();
            tokio::spawn(async move {
                if !duration.is_zero() {
                    tokio::time::sleep(duration).await;
                }
                let mut r = Record::new(spec.uid, spec.condition);
                r.outcome = Some(Outcome::Success);
                r.success = Some(true);
                r.steps = Some(3);
                r.attempt = Some(spec.attempt);
                r.rep = Some(spec.rep);
                r.treatment = Some(spec.treatment.clone());
                let rec = v1::RecordMessage { attempt: Some((&key).into()), record: Some((&r).into()) };
                let _ = tx.send(v1::WorkerMessage { body: Some(v1::worker_message::Body::Record(rec)) }).await;
                let ready = v1::Ready { credits: 1 };
                let _ = tx.send(v1::WorkerMessage { body: Some(v1::worker_message::Body::Ready(ready)) }).await;
            });
        }
    }
}

fn spec(count: u32, families: Option<BTreeMap<Site, Vec<u32>>>) -> SweepSpec {
    let mut s = SweepSpec::full_grid(TreatmentSpec { name: "BENCH".into(), skills: None });
    s.count = count;
    if let Some(f) = families {
        s.sites = f.keys().copied().collect();
        s.families = f;
    }
    s
}

struct Cluster {
    url: String,
    stop: CancellationToken,
    coordinator: server::Running,
    _dir: tempfile::TempDir,
}

async fn cluster(ttl: Duration) -> Cluster {
    let dir = tempfile::tempdir().expect("tempdir");
    let stop = CancellationToken::new();
    let config = Config {
        listen: "127.0.0.1:0".parse().expect("addr"),
        http: None,
        data_dir: dir.path().to_path_buf(),
        token: None,
        tls: None,
        lease_ttl: ttl,
        limits: Default::default(),
        llm_budget: Default::default(),
    };
    let coordinator = server::start(config, stop.clone()).await.expect("coordinator starts");
    Cluster { url: format!("http://{}", coordinator.grpc_addr), stop, coordinator, _dir: dir }
}

async fn run_sweep(c: &Cluster, s: &SweepSpec) -> (usize, Duration) {
    let mut client = Client::connect(&c.url, None, &Default::default()).await.expect("client");
    let units = skillshift_coordinator::planner::plan(s, &Default::default()).expect("plan").len();
    let t0 = Instant::now();
    let id = client.submit(s).await.expect("submit");
    loop {
        let st = client.get(&id).await.expect("status");
        if st.state == SweepState::Done {
            assert_eq!(st.units.done as usize, units);
            return (units, t0.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn throughput(workers: usize, count: u32) {
    let c = cluster(Duration::from_secs(30)).await;
    let t0 = Instant::now();
    for _ in 0..workers {
        tokio::spawn(sim_worker(c.url.clone(), 1, Duration::ZERO, t0, Stamp::default(), c.stop.clone()));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (units, took) = run_sweep(&c, &spec(count, None)).await;
    println!(
        "throughput: {workers} workers x 1 slot, zero-length attempts: {units} units in {:.2} s = {:.0} units/s",
        took.as_secs_f64(),
        units as f64 / took.as_secs_f64()
    );
    c.stop.cancel();
    let _ = c.coordinator.wait().await;
}

async fn efficiency(workers: usize, duration: Duration) {
    let c = cluster(Duration::from_secs(30)).await;
    let t0 = Instant::now();
    for _ in 0..workers {
        tokio::spawn(sim_worker(c.url.clone(), 1, duration, t0, Stamp::default(), c.stop.clone()));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (units, took) = run_sweep(&c, &spec(1, None)).await;
    let ideal = duration.as_secs_f64() * units as f64 / workers as f64;
    let waves = (units as f64 / workers as f64).ceil() * duration.as_secs_f64();
    println!(
        "efficiency: {workers} workers, {units} units of {} ms: makespan {:.2} s, ideal {:.2} s (whole waves {:.2} s): makespan/ideal = {:.3}, makespan/waves = {:.3}",
        duration.as_millis(),
        took.as_secs_f64(),
        ideal,
        waves,
        took.as_secs_f64() / ideal,
        took.as_secs_f64() / waves
    );
    c.stop.cancel();
    let _ = c.coordinator.wait().await;
}

async fn reassignment(rounds: usize) {
    let mut samples = Vec::new();
    for _ in 0..rounds {
        let c = cluster(Duration::from_secs(30)).await;
        let t0 = Instant::now();
        // The victim connects first and takes the only unit; the spare stays idle.
        // The victim runs on its own runtime; shutting that runtime down drops its
        // tasks and its connection at once, as a killed process would.
        let victim_stop = CancellationToken::new();
        let victim_stamp = Stamp::default();
        let victim_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let (url, stamp, stop) = (c.url.clone(), victim_stamp.clone(), victim_stop.clone());
        let victim_thread = std::thread::spawn(move || {
            victim_rt.block_on(async move {
                tokio::select! {
                    _ = sim_worker(url, 1, Duration::from_secs(3600), t0, stamp, CancellationToken::new()) => {}
                    _ = stop.cancelled() => {}
                }
            });
            victim_rt.shutdown_background();
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Six units; the victim (1 slot) takes the first.
        let mut client = Client::connect(&c.url, None, &Default::default()).await.expect("client");
        client.submit(&spec(1, Some(BTreeMap::from([(Site::Wordpress, vec![0])])))).await.expect("submit");
        while victim_stamp.load(Ordering::Relaxed) == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // The spare (8 slots) takes the other five and keeps three slots free.
        let second_spare = Stamp::default();
        tokio::spawn(sim_worker(c.url.clone(), 8, Duration::from_secs(3600), t0, second_spare.clone(), c.stop.clone()));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = second_spare.load(Ordering::Relaxed);
        let killed_at = t0.elapsed().as_micros() as u64;
        victim_stop.cancel();
        let _ = victim_thread.join();
        let deadline = Instant::now() + Duration::from_secs(10);
        while second_spare.load(Ordering::Relaxed) == before && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        let got = second_spare.load(Ordering::Relaxed);
        if got != before {
            samples.push(Duration::from_micros(got.saturating_sub(killed_at)));
        }
        c.stop.cancel();
        let _ = c.coordinator.wait().await;
    }
    samples.sort();
    if samples.is_empty() {
        println!("reassignment: no sample");
        return;
    }
    let p50 = samples[samples.len() / 2];
    let max = samples[samples.len() - 1];
    println!(
        "reassignment after a worker's connection dies: {} runs, median {:.1} ms, max {:.1} ms",
        samples.len(),
        p50.as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let only_throughput = std::env::args().any(|a| a == "throughput");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    // Telemetry A/B (docs/performance.md, Telemetry): SKILLSHIFT_BENCH_TRACING=no-endpoint installs the
    // coordinator's subscriber without an OTLP endpoint; unset, no subscriber at all (spans disabled).
    let _traces = match std::env::var("SKILLSHIFT_BENCH_TRACING").as_deref() {
        Ok("no-endpoint") => {
            Some(skillshift_telemetry::init(&skillshift_telemetry::TelemetryConfig::logs_only("bench")).expect("init"))
        }
        _ => None,
    };
    rt.block_on(async {
        throughput(64, if quick { 2 } else { 10 }).await;
        if only_throughput {
            return;
        }
        efficiency(64, Duration::from_millis(100)).await;
        if !quick {
            efficiency(64, Duration::from_millis(1000)).await;
        }
        reassignment(if quick { 3 } else { 10 }).await;
    });
}
