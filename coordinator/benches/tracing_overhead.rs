//! What tracing costs the coordinator's hot path.
//!
//! Drives the coordinator's real engine (`skillshift_coordinator::engine`)
//! through whole sweeps of the full grid (355 families x 6 conditions = 2,130
//! units): schedule, assign (which opens the attempt span, links it to the
//! sweep span and writes the traceparent into the assignment), ingest each
//! record (which ends the span) and count the metrics. No store and no gRPC:
//! those only add per-attempt cost that tracing does not touch, so the
//! relative overhead measured here is an upper bound for the real process.
//!
//! Each mode runs in its own process, the way the coordinator installs its
//! subscriber once:
//! * `off`: no subscriber (spans disabled at their callsites);
//! * `no-endpoint`: `skillshift_telemetry::init` with no OTLP endpoint, the
//!   default: stderr log at the project's filter, no exporter;
//! * `export`: an OTLP exporter to a closed local port (spans built, batched
//!   and dropped), for reference.
//!
//! It lives with the coordinator, whose engine it drives, so that telemetry
//! never depends on the coordinator (the arrow points one way).
//!
//! `cargo bench -p skillshift-coordinator --bench tracing_overhead`
//! (`-- ROUNDS SWEEPS` to change 7 rounds of 20 sweeps per mode).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use skillshift_common::{Outcome, Record, Site, Version};
use skillshift_coordinator::engine::{
    Conn, ControlCmd, Effect, Engine, Input, Outbound, RandomIds, SystemClock, WorkerEvent,
};
use skillshift_coordinator::planner::{SweepSpec, TreatmentSpec};
use tokio::sync::{mpsc, oneshot};

const WORKERS: usize = 32;
const SLOTS: u32 = 4;

/// Runs one full-grid sweep through a fresh engine; returns (attempts, time).
fn one_sweep() -> (u64, Duration) {
    let t = Instant::now();
    let mut e = Engine::new(Duration::from_secs(30), SystemClock, RandomIds);
    let (tx, _rx_submit) = oneshot::channel();
    let spec = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    e.handle(Input::Control(ControlCmd::Submit(Box::new(spec), tx)), t);
    let hosts: Vec<(Site, Version)> =
        Site::ALL.iter().flat_map(|s| Version::ALL.iter().map(move |v| (*s, *v))).collect();
    let mut keep = Vec::new();
    for i in 0..WORKERS {
        let (tx, mut rx) = oneshot::channel();
        e.handle(
            Input::Register {
                name: format!("w{i}"),
                hosts: hosts.clone(),
                simulated: false,
                slots: SLOTS,
                previous: None,
                reply: tx,
            },
            t,
        );
        // The registration is answered once it would be durable.
        for effect in e.take_outputs().1 {
            if let Effect::Reply(f) = effect {
                f();
            }
        }
        let credential = rx.try_recv().expect("answered").expect("registered");
        let (ctx, crx) = mpsc::channel(1);
        keep.push(crx);
        let (reply, _connected) = oneshot::channel();
        let conn = Conn { id: i as u64, tx: ctx };
        e.handle(Input::Connect { credential, conn, running: vec![], free_slots: SLOTS, reply }, t);
    }
    let _ = e.take_outputs();

    let start = Instant::now();
    let mut attempts = 0u64;
    loop {
        e.schedule(t);
        let (_ops, effects) = e.take_outputs();
        let mut assigned = Vec::new();
        for eff in effects {
            match eff {
                Effect::Send { worker, conn, msg: Outbound::Assign(key, spec) } => {
                    assigned.push((worker, conn, key, spec))
                }
                Effect::Reply(f) => f(),
                Effect::Send { .. } => {}
            }
        }
        if assigned.is_empty() {
            break;
        }
        for (worker, conn, key, spec) in assigned {
            attempts += 1;
            let mut r = Record::new(spec.uid, spec.condition);
            r.outcome = Some(Outcome::Success);
            r.success = Some(true);
            r.steps = Some(3);
            r.rep = Some(spec.rep);
            r.attempt = Some(spec.attempt);
            r.treatment = Some(spec.treatment.clone());
            r.trace_id = spec.traceparent.as_deref().and_then(skillshift_telemetry::context::trace_id_from_traceparent);
            let event = WorkerEvent::Record(key, Box::new(r));
            e.handle(Input::Worker { worker: worker.clone(), conn: conn.id, event }, t);
            e.handle(Input::Worker { worker, conn: conn.id, event: WorkerEvent::Ready(1) }, t);
        }
    }
    (attempts, start.elapsed())
}

/// ns per attempt of exactly the telemetry calls the engine makes for one
/// attempt (attempt span linked to the sweep span, traceparent, outcome, end).
fn telemetry_calls_ns() -> f64 {
    let spec = skillshift_common::AttemptSpec {
        treatment: "CONTROL".into(),
        uid: skillshift_common::Uid::new(Site::Gitlab, Version::V1, 3),
        task_timeout_ms: 1000,
        ..skillshift_common::AttemptSpec::example()
    };
    let sweep = skillshift_telemetry::spans::sweep("s", false);
    let n = 200_000u32;
    let start = Instant::now();
    for _ in 0..n {
        let span = skillshift_telemetry::spans::attempt(&spec, "w1", Some(&sweep));
        let tp = skillshift_telemetry::context::traceparent(&span);
        skillshift_telemetry::spans::record_outcome(&span, "success", None);
        std::hint::black_box(tp);
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

fn child(mode: &str, sweeps: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let _enter = rt.enter();
    let guard = match mode {
        "off" => None,
        "no-endpoint" => {
            let c = skillshift_telemetry::TelemetryConfig::logs_only("bench");
            Some(skillshift_telemetry::init(&c).expect("init"))
        }
        "export" => {
            let mut c = skillshift_telemetry::TelemetryConfig::logs_only("bench");
            c.otlp_endpoint = Some("http://127.0.0.1:9".into());
            Some(skillshift_telemetry::init(&c).expect("init"))
        }
        other => panic!("unknown mode {other}"),
    };
    let _ = one_sweep(); // warm-up
    let mut rates: Vec<f64> = (0..sweeps)
        .map(|_| {
            let (n, d) = one_sweep();
            n as f64 / d.as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let ns = if mode == "export" { f64::NAN } else { telemetry_calls_ns() };
    println!("{} {ns}", rates[rates.len() / 2]);
    drop(guard);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1], args[2].parse().expect("sweeps"));
    }
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(7);
    let sweeps: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let exe = std::env::current_exe().expect("own path");
    let modes = ["off", "no-endpoint", "export"];
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut calls: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for round in 0..rounds {
        // Interleaved, so drift in machine load hits every mode alike.
        for (i, mode) in modes.iter().enumerate() {
            let out = Command::new(&exe)
                .args(["--child", mode, &sweeps.to_string()])
                .stderr(Stdio::null())
                .output()
                .expect("run child");
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().expect("child figures"));
            results[i].push(fields.next().expect("rate"));
            calls[i].push(fields.next().expect("ns"));
        }
        eprintln!("round {} of {rounds} done", round + 1);
    }
    let base = median(results[0].clone());
    println!("coordinator engine, full grid (2,130 attempts per sweep), {WORKERS} workers x {SLOTS} slots");
    println!("{rounds} rounds x {sweeps} sweeps per mode, median of round medians");
    println!("{:<12} {:>14} {:>10}   per-round attempts/s", "mode", "attempts/s", "vs off");
    for (i, mode) in modes.iter().enumerate() {
        let m = median(results[i].clone());
        let rounds_s: Vec<String> = results[i].iter().map(|r| format!("{r:.0}")).collect();
        println!("{mode:<12} {m:>14.0} {:>9.2}%   {}", (m / base - 1.0) * 100.0, rounds_s.join(" "));
    }
    // The robust figure: the calls themselves, against the engine's own time per attempt.
    let per_attempt_ns = 1e9 / base;
    for (i, mode) in modes.iter().enumerate().take(2) {
        let ns = median(calls[i].clone());
        println!(
            "{mode:<12} telemetry calls per attempt: {ns:.1} ns = {:.2}% of the engine's {per_attempt_ns:.0} ns per attempt",
            ns / per_attempt_ns * 100.0
        );
    }
}
