//! The cluster's one LLM budget, end to end: a real coordinator with
//! `--llm-concurrency` / `--llm-rpm`, two real workers of three slots each
//! (`--simulate 20 --simulate-llm`: no browser, but every simulated step of an
//! LLM agent is a real HTTP call), and the scripted OpenAI-compatible stand-in
//! (`skillshift_worker::agents::scripted_llm`, not a language model) counting
//! the calls it holds at once and when each arrives.

mod support;

use std::io::{Read, Write};
use std::sync::Mutex;
use std::time::Duration;

use skillshift_worker::agents::scripted_llm::{Scripted, ScriptedLlm};
use support::{Options, Sandbox};

/// The workers read `OPENAI_BASE_URL` from the environment they are started with, which tests share; and
/// rates are measured, so the tests of this file run one at a time.
static ENV: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ENV.lock().unwrap_or_else(|p| p.into_inner())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

/// A coordinator with `coordinator_args`, and two `--slots 3` workers calling `llm`.
fn cluster(llm: &ScriptedLlm, coordinator_args: &[&str]) -> Sandbox {
    std::env::set_var("OPENAI_BASE_URL", llm.base_url());
    std::env::set_var("OPENAI_MODEL", "budget-test-model");
    let opts = Options {
        http: true,
        coordinator_args: coordinator_args.iter().map(|s| s.to_string()).collect(),
        ..Options::default()
    };
    let mut sb = Sandbox::start_with(0, 20, opts);
    for _ in 0..2 {
        sb.add_worker(20, &["--slots", "3", "--simulate-llm"]);
    }
    sb
}

/// A sweep of `families` gitlab families x 6 conditions by the `reference` agent, run to the end.
fn run_sweep(sb: &Sandbox, families: u32, max_steps: u32) -> Vec<serde_json::Value> {
    let id = sb.submit(families, &["--agent", "reference", "--max-steps", &max_steps.to_string()]);
    let st = sb.wait_state(&id, "done", Duration::from_secs(180));
    assert_eq!(st["units"]["done"], st["units"]["total"], "{st}");
    sb.export(&id, "per_task.jsonl")
}

/// `GET /metrics` on the coordinator's HTTP port.
fn metrics(sb: &Sandbox) -> String {
    let addr = sb.http_addr.as_deref().expect("http port");
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the http port");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("request");
    let mut body = String::new();
    s.read_to_string(&mut body).expect("response");
    body
}

/// The value of the sample `name{...}` (the budget's metrics carry one meter here).
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// LLM calls made by the simulated attempts of `records` (one per simulated step).
fn calls(records: &[serde_json::Value]) -> u64 {
    records.iter().filter(|r| r["outcome"] != "error").map(|r| r["llm_calls"].as_u64().unwrap_or(0)).sum()
}

#[test]
fn two_workers_of_three_slots_never_exceed_the_cluster_concurrency() {
    let _serial = one_at_a_time();
    let rt = runtime();
    let llm = rt
        .block_on(ScriptedLlm::start_endless(vec![], Scripted::text("ok"), Duration::from_millis(150)))
        .expect("scripted llm");
    // Without a budget, six slots make more than two calls at once: the bound below is the budget's doing.
    let free = cluster(&llm, &[]);
    run_sweep(&free, 2, 3);
    let unmetered = llm.max_in_flight();
    eprintln!("without a budget: at most {unmetered} calls at once");
    assert!(unmetered > 2, "without --llm-concurrency, 6 slots held only {unmetered} calls at once");
    drop(free);

    let llm = rt
        .block_on(ScriptedLlm::start_endless(vec![], Scripted::text("ok"), Duration::from_millis(150)))
        .expect("scripted llm");
    let sb = cluster(&llm, &["--llm-concurrency", "2"]);
    let records = run_sweep(&sb, 3, 3);
    let served = llm.requests().len() as u64;
    eprintln!("--llm-concurrency 2: {served} calls, at most {} at once", llm.max_in_flight());
    assert_eq!(served, calls(&records), "every simulated step made one call");
    assert!(served >= 18, "{served} calls");
    assert_eq!(llm.max_in_flight(), 2, "at most 2 calls in flight (and the budget let 2 run)");
    for r in records.iter().filter(|r| r["outcome"] != "error") {
        let n = r["llm_calls"].as_u64().unwrap_or(0);
        assert_eq!(r["tokens_in"].as_u64(), Some(n * 1000), "tokens the endpoint reported: {r}");
    }
    let m = metrics(&sb);
    assert_eq!(sample(&m, "skillshift_llm_permits_granted_total"), Some(served as f64), "{m}");
    assert_eq!(sample(&m, "skillshift_llm_in_flight"), Some(0.0), "every permit was given back: {m}");
    assert!(sample(&m, "skillshift_llm_permit_wait_seconds_total").is_some_and(|s| s > 0.0), "waits counted: {m}");
}

#[test]
fn requests_per_minute_hold_within_ten_percent() {
    let _serial = one_at_a_time();
    let rt = runtime();
    let llm =
        rt.block_on(ScriptedLlm::start_endless(vec![], Scripted::text("ok"), Duration::from_millis(10))).expect("llm");
    let sb = cluster(&llm, &["--llm-rpm", "600"]);
    run_sweep(&sb, 4, 4);
    let arrivals = llm.arrivals();
    assert!(arrivals.len() >= 30, "{} calls", arrivals.len());
    let span = arrivals[arrivals.len() - 1].duration_since(arrivals[0]).as_secs_f64();
    let per_minute = (arrivals.len() - 1) as f64 / span * 60.0;
    eprintln!("{} calls at {per_minute:.1} requests/min", arrivals.len());
    assert!((540.0..=660.0).contains(&per_minute), "{per_minute:.0} requests/min against --llm-rpm 600");
}

#[test]
fn a_burst_of_429s_lowers_the_shared_limit_and_the_sweep_still_completes() {
    let _serial = one_at_a_time();
    let rt = runtime();
    let burst = vec![Scripted::Status(429); 6];
    let llm =
        rt.block_on(ScriptedLlm::start_endless(burst, Scripted::text("ok"), Duration::from_millis(50))).expect("llm");
    let sb = cluster(&llm, &["--llm-concurrency", "4"]);
    let records = run_sweep(&sb, 2, 3);
    assert!(records.iter().all(|r| r["error"] != "agent"), "no attempt failed on the 429s (they were retried)");
    let m = metrics(&sb);
    assert_eq!(sample(&m, "skillshift_llm_rate_limited_total"), Some(6.0), "{m}");
    assert!(sample(&m, "skillshift_llm_limit_decreases_total").is_some_and(|d| d >= 1.0), "{m}");
    assert!(sb.read_log("coordinator-1.log").contains("shrinking the shared limit"));
    assert_eq!(llm.requests().len() as u64, calls(&records) + 6, "each 429 was retried once");
}

/// `cluster` with a lease TTL and one worker of `slots`, started by the caller.
fn small_cluster(llm: &ScriptedLlm, ttl_ms: u64, coordinator_args: &[&str]) -> Sandbox {
    std::env::set_var("OPENAI_BASE_URL", llm.base_url());
    std::env::set_var("OPENAI_MODEL", "budget-test-model");
    let opts = Options {
        http: true,
        lease_ttl_ms: ttl_ms,
        coordinator_args: coordinator_args.iter().map(|s| s.to_string()).collect(),
        ..Options::default()
    };
    Sandbox::start_with(0, 20, opts)
}

fn wait_for(limit: Duration, what: &str, sb: &Sandbox, pred: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    while !pred() {
        assert!(t0.elapsed() < limit, "{what} not within {limit:?}\n{}", sb.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_workers_permit_expires_with_its_lease() {
    let _serial = one_at_a_time();
    let rt = runtime();
    // The first call never answers in time; the rest answer at once.
    let script = vec![Scripted::Stall(Duration::from_secs(60))];
    let llm = rt.block_on(ScriptedLlm::start_endless(script, Scripted::text("ok"), Duration::ZERO)).expect("llm");
    let mut sb = small_cluster(&llm, 1000, &["--llm-concurrency", "1"]);
    let a = sb.add_worker(20, &["--slots", "1", "--simulate-llm"]);
    let id = sb.submit(1, &["--agent", "reference", "--max-steps", "1", "--conditions", "src,src-perc"]);
    wait_for(Duration::from_secs(30), "the first call", &sb, || llm.requests().len() == 1);
    sb.kill_worker(a);
    let killed = std::time::Instant::now();
    sb.add_worker(20, &["--slots", "1", "--simulate-llm"]);
    wait_for(Duration::from_secs(15), "a call by the second worker", &sb, || llm.requests().len() >= 2);
    let gap = killed.elapsed();
    let st = sb.wait_state(&id, "done", Duration::from_secs(60));
    assert_eq!(st["units"]["done"], 2, "{st}");
    // Its unit came back at once (the stream broke); its permit only when unrenewed for the TTL.
    assert!(gap >= Duration::from_millis(700), "the dead worker's permit was held until it expired: {gap:?}");
    assert_eq!(llm.max_in_flight(), 1, "the stalled call of the dead worker was still open: at most 1");
    let m = metrics(&sb);
    assert_eq!(sample(&m, "skillshift_llm_permits_expired_total"), Some(1.0), "{m}");
}

#[test]
fn a_coordinator_restart_keeps_the_ceiling_and_does_not_deadlock() {
    let _serial = one_at_a_time();
    let rt = runtime();
    // The restarted coordinator grants nothing for half a TTL (3 s) while the worker renews every third
    // (2 s): a renewal has 1 s to arrive after the restart, however loaded the machine. A call (6 s) outlasts
    // the kill, the restart and that quiet window, so the waiting slot asks while it is still open.
    let llm = rt
        .block_on(ScriptedLlm::start_endless(vec![], Scripted::text("ok"), Duration::from_millis(6000)))
        .expect("llm");
    let mut sb = small_cluster(&llm, 6000, &["--llm-concurrency", "1"]);
    sb.add_worker(20, &["--slots", "2", "--simulate-llm"]);
    let id = sb.submit(1, &["--agent", "reference", "--max-steps", "1", "--conditions", "src,src-perc,tgt"]);
    wait_for(Duration::from_secs(30), "the first call", &sb, || llm.requests().len() == 1);
    std::thread::sleep(Duration::from_millis(300));
    // kill -9 mid-call, restart on the same address: the worker renews the permit it holds and the new
    // coordinator adopts it before granting the waiting second slot anything.
    sb.kill_coordinator();
    let addr = sb.addr.clone();
    sb.start_coordinator(&addr);
    let st = sb.wait_state(&id, "done", Duration::from_secs(90));
    assert_eq!(st["units"]["done"], 3, "{st}");
    assert_eq!(llm.max_in_flight(), 1, "at most 1 call in flight across the restart\n{}", sb.logs());
    assert!(sb.read_log("coordinator-2.log").contains("adopted"), "{}", sb.logs());
}

// ---------------------------------------------------------------- a budget nobody can game (issue 30)
//
// Hand-made calls of a token holder, over real gRPC against a real coordinator process, built with the
// generated client as any other language's client would build them.

mod gaming {
    use skillshift_proto::v1::{self, llm_budget_client::LlmBudgetClient};
    use tonic::metadata::MetadataValue;
    use tonic::transport::Channel;
    use tonic::{Code, Request};

    use super::support::{Options, Sandbox};
    use super::{metrics, runtime};

    pub const ENDPOINT: &str = "http://llm.real/v1";
    pub const HONEST: &str = "the honest worker's holder secret";
    pub const THIEF: &str = "a token holder who holds nothing";

    pub fn authed<T>(msg: T) -> Request<T> {
        let mut req = Request::new(msg);
        req.metadata_mut().insert("authorization", MetadataValue::from_static("Bearer sandbox-token"));
        req
    }

    pub fn coordinator(args: &[&str]) -> Sandbox {
        let opts = Options {
            http: true,
            coordinator_args: args.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        };
        Sandbox::start_with(0, 20, opts)
    }

    pub async fn client(sb: &Sandbox) -> LlmBudgetClient<Channel> {
        let ch = Channel::from_shared(sb.url()).expect("url").connect().await.expect("connect to the coordinator");
        LlmBudgetClient::new(ch)
    }

    pub fn request(endpoint: &str, holder: &str, tokens: u64, wait_ms: u64) -> v1::LlmPermitRequest {
        v1::LlmPermitRequest {
            endpoint: endpoint.into(),
            model: "m".into(),
            tokens,
            worker: "test".into(),
            wait_ms,
            holder: holder.into(),
        }
    }

    pub fn release(permit: &str, holder: &str, result: v1::LlmCallResult) -> v1::LlmPermitRelease {
        v1::LlmPermitRelease {
            permit: permit.into(),
            endpoint: ENDPOINT.into(),
            model: "m".into(),
            result: result as i32,
            tokens_used: 0,
            holder: holder.into(),
        }
    }

    pub fn held(permit: &str, endpoint: &str) -> v1::LlmHeldPermit {
        v1::LlmHeldPermit { permit: permit.into(), endpoint: endpoint.into(), model: "m".into(), tokens: 1 }
    }

    /// The value of `name{endpoint="ENDPOINT",...}` on `/metrics`.
    pub fn real(sb: &Sandbox, name: &str) -> Option<f64> {
        let text = metrics(sb);
        let prefix = format!("{name}{{endpoint=\"{ENDPOINT}\"");
        text.lines().find(|l| l.starts_with(&prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
    }

    #[test]
    fn fabricated_release_and_renew_change_no_limit_and_hold_no_permit() {
        let rt = runtime();
        let sb = coordinator(&["--llm-concurrency", "8"]);
        rt.block_on(async {
            let mut c = client(&sb).await;
            let got = c.acquire(authed(request(ENDPOINT, HONEST, 10, 1000))).await.expect("acquire").into_inner();
            assert!(!got.permit.is_empty(), "granted: {got:?}");
            assert_eq!(got.limit, 8);
            // Ten 429s on permit ids the coordinator never granted, and the honest permit released by another.
            for i in 0..10 {
                let made_up = release(&format!("00000000-{i}"), THIEF, v1::LlmCallResult::RateLimited);
                let e = c.release(authed(made_up)).await.expect_err("a made-up permit is refused");
                assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
                assert!(e.message().contains("is not held by this caller"), "{}", e.message());
            }
            let stolen = release(&got.permit, THIEF, v1::LlmCallResult::RateLimited);
            assert_eq!(c.release(authed(stolen)).await.expect_err("another's permit").code(), Code::FailedPrecondition);
            // One renewal naming 4,096 made-up ids, shaped as an earlier coordinator's would be, holds none.
            let fake: Vec<_> = (0..4096).map(|i| held(&format!("0badc0de-{i}-{i:032x}"), ENDPOINT)).collect();
            let renew = v1::LlmPermitRenew { held: fake, worker: "thief".into(), holder: THIEF.into() };
            let r = c.renew(authed(renew)).await.expect("renew").into_inner();
            assert_eq!((r.adopted, r.refused), (0, 4096));
            let renew = v1::LlmPermitRenew {
                held: vec![held(&got.permit, ENDPOINT)],
                worker: "thief".into(),
                holder: THIEF.into(),
            };
            assert_eq!(c.renew(authed(renew)).await.expect("renew").into_inner().refused, 1);
        });
        assert_eq!(real(&sb, "skillshift_llm_scale"), Some(1.0), "{}", metrics(&sb));
        assert_eq!(real(&sb, "skillshift_llm_concurrency_limit"), Some(8.0));
        assert_eq!(real(&sb, "skillshift_llm_in_flight"), Some(1.0), "only the honest permit is held");
        assert_eq!(real(&sb, "skillshift_llm_rate_limited_total"), Some(0.0), "no 429 was counted");
        rt.block_on(async {
            let mut c = client(&sb).await;
            // Seven more honest permits fit (8 in all), so none of the fabricated ones is counted.
            for _ in 0..7 {
                let got = c.acquire(authed(request(ENDPOINT, HONEST, 10, 1000))).await.expect("acquire").into_inner();
                assert!(!got.permit.is_empty(), "granted: {got:?}");
            }
        });
    }

    #[test]
    fn three_hundred_junk_endpoints_never_stop_a_real_endpoints_acquire() {
        let rt = runtime();
        let sb = coordinator(&["--llm-concurrency", "4"]);
        rt.block_on(async {
            let mut c = client(&sb).await;
            // The report's attack: one renewal naming 300 endpoints.
            let fake: Vec<_> = (0..300).map(|i| held(&format!("x-{i}-y"), &format!("http://junk-{i}/v1"))).collect();
            let renew = v1::LlmPermitRenew { held: fake, worker: "thief".into(), holder: THIEF.into() };
            assert_eq!(c.renew(authed(renew)).await.expect("renew").into_inner().refused, 300);
            // And 300 endpoints each given a permit that is then released.
            for i in 0..300 {
                let junk = format!("http://junk-{i}/v1");
                let got = c.acquire(authed(request(&junk, THIEF, 1, 1000))).await.expect("junk acquire").into_inner();
                let mut r = release(&got.permit, THIEF, v1::LlmCallResult::Answered);
                r.endpoint = junk;
                c.release(authed(r)).await.expect("junk release");
            }
            let got =
                c.acquire(authed(request(ENDPOINT, HONEST, 10, 1000))).await.expect("the real endpoint's acquire");
            assert!(!got.into_inner().permit.is_empty(), "granted");
        });
        let text = metrics(&sb);
        let meters = text.lines().filter(|l| l.starts_with("skillshift_llm_scale{")).count();
        assert!(meters <= 256, "{meters} meters");
        assert_eq!(real(&sb, "skillshift_llm_in_flight"), Some(1.0), "{text}");
    }

    #[test]
    fn two_estimates_of_2_pow_63_are_not_both_granted() {
        let rt = runtime();
        let sb = coordinator(&["--llm-tpm", "1000"]);
        rt.block_on(async {
            let mut c = client(&sb).await;
            for holder in [HONEST, THIEF] {
                let e = c.acquire(authed(request(ENDPOINT, holder, 1 << 63, 200))).await.expect_err("over the cap");
                assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
                assert!(e.message().contains("more than one call may use (16777216)"), "{}", e.message());
            }
            // At the cap: the first runs alone in its window, the second waits for it.
            let first = c.acquire(authed(request(ENDPOINT, HONEST, 1 << 24, 200))).await.expect("acquire").into_inner();
            assert!(!first.permit.is_empty(), "{first:?}");
            let second = c.acquire(authed(request(ENDPOINT, THIEF, 1 << 24, 200))).await.expect("acquire").into_inner();
            assert!(second.permit.is_empty(), "not granted: {second:?}");
        });
        assert_eq!(real(&sb, "skillshift_llm_in_flight"), Some(1.0));
    }

    #[test]
    fn a_request_without_a_holder_is_refused_with_a_clear_message() {
        let rt = runtime();
        let sb = coordinator(&["--llm-concurrency", "2"]);
        rt.block_on(async {
            let mut c = client(&sb).await;
            let e = c.acquire(authed(request(ENDPOINT, "", 1, 200))).await.expect_err("no holder");
            assert_eq!(e.code(), Code::InvalidArgument);
            assert_eq!(e.message(), "llm permit request: holder must have 16 to 128 bytes, found 0");
        });
    }
}
