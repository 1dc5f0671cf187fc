//! Hostile and faulty inputs against a real coordinator process: each ends in
//! a clear answer (one error line and exit 2 for the CLI, a status or a
//! `reject` on the wire) while the coordinator keeps serving everyone else.
//! The hand-made messages are built with the generated client, as any other
//! language's client would build them.

mod support;

#[path = "support/cli.rs"]
mod cli;

use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

use skillshift_proto::v1::{
    self, control_client::ControlClient, coordinator_message, worker_client::WorkerClient, worker_message,
};
use support::{Options, Sandbox, BIN};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request};

fn authed<T>(msg: T) -> Request<T> {
    let mut req = Request::new(msg);
    req.metadata_mut().insert("authorization", MetadataValue::from_static("Bearer sandbox-token"));
    req
}

fn stderr_lines(out: &std::process::Output) -> Vec<String> {
    cli::stderr(out).lines().map(String::from).collect()
}

/// `GET path` with optional headers; the status line and the body.
fn http_get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect http");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n{extra}Connection: close\r\n\r\n").expect("send request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read response");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    (head.lines().next().unwrap_or("").to_string(), body.to_string())
}

#[test]
fn a_sweep_of_a_billion_reps_is_refused_with_one_line_and_the_coordinator_keeps_serving() {
    let mut sb = Sandbox::start(1, 300);
    let running = sb.submit(2, &[]);
    let out = sb.sweep(&["start", "--count", "1000000000", "--skills", "none"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "no sweep id printed");
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].contains("the sweep has 2130000000000 units (2130 per rep x count 1000000000)")
            && lines[0].contains("the limit is 200000 units per sweep (--max-units-per-sweep)"),
        "{}",
        lines[0]
    );
    // Everyone else is still served: the running sweep finishes, status and list answer.
    assert!(sb.coordinator_alive(), "the coordinator is still up");
    let st = sb.wait_state(&running, "done", Duration::from_secs(60));
    assert_eq!(st["units"]["total"], 12);
    let listed = sb.sweep(&["list"]);
    assert!(listed.status.success());
    assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 1, "the refused sweep was not stored");
    // A larger bound on the flag admits what fits under it.
    let out = sb.sweep(&["start", "--count", "100", "--skills", "none"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_lines(&out)[0].contains("the sweep has 213000 units"), "{:?}", stderr_lines(&out));
}

#[test]
fn an_empty_token_is_refused_with_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("c");
    let flag = Command::new(BIN)
        .args(["coordinator", "--listen", "127.0.0.1:0", "--token", "", "--data-dir"])
        .arg(&data)
        .env_remove("SKILLSHIFT_TOKEN")
        .output()
        .expect("run coordinator");
    let env = Command::new(BIN)
        .args(["coordinator", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("SKILLSHIFT_TOKEN", "")
        .output()
        .expect("run coordinator");
    for out in [flag, env] {
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "it never listened: {:?}", String::from_utf8_lossy(&out.stdout));
        let lines = stderr_lines(&out);
        assert_eq!(
            lines,
            ["skillshift: error: --token is empty: give a non-empty token, or leave --token (and SKILLSHIFT_TOKEN) out"]
        );
    }
}

#[test]
fn every_http_page_but_healthz_and_metrics_needs_the_token() {
    let sb = Sandbox::start_with(0, 0, Options { http: true, ..Options::default() });
    let id = sb.submit(1, &[]);
    let http = sb.http_addr.clone().expect("http address");
    for path in ["/", "/api/status", "/?token=wrong", "/api/status?x=1&token=sandbox-tokenX"] {
        let (status, body) = http_get(&http, path, &[]);
        assert!(status.contains("401"), "{path}: {status}");
        assert!(!body.contains(&id), "{path} shows nothing without the token");
    }
    let (status, _) = http_get(&http, "/api/status", &[("Authorization", "Bearer wrong")]);
    assert!(status.contains("401"), "{status}");
    let (status, body) = http_get(&http, "/api/status", &[("Authorization", "Bearer sandbox-token")]);
    assert!(status.contains("200") && body.contains(&id), "{status} {body}");
    let (status, body) = http_get(&http, "/?token=sandbox-token", &[]);
    assert!(status.contains("200") && body.contains(&id), "a browser passes it in the URL: {status}");
    let (status, body) = http_get(&http, "/?token=sandbox%2Dtoken", &[]);
    assert!(status.contains("200") && body.contains(&id), "percent-encoded: {status}");
    for open in ["/healthz", "/metrics"] {
        let (status, _) = http_get(&http, open, &[]);
        assert!(status.contains("200"), "{open}: {status}");
    }
}

fn record_for(a: &v1::Assignment, outcome: &str) -> v1::WorkerMessage {
    let site = a.uid.split('.').nth(1).unwrap_or_default().to_string();
    let rec = v1::RunRecord {
        uid: a.uid.clone(),
        site,
        condition: a.condition.clone(),
        success: Some(outcome == "success"),
        steps: Some(1),
        outcome: Some(outcome.into()),
        attempt: a.attempt.as_ref().map(|r| r.attempt),
        rep: Some(a.rep),
        treatment: Some(a.treatment.clone()),
        ..Default::default()
    };
    v1::WorkerMessage {
        body: Some(worker_message::Body::Record(v1::RecordMessage { attempt: a.attempt.clone(), record: Some(rec) })),
    }
}

/// A hand-made worker: registered, its session open with `free_slots`.
struct HandMade {
    credential: String,
    tx: mpsc::Sender<v1::WorkerMessage>,
    inbound: tonic::Streaming<v1::CoordinatorMessage>,
}

async fn hand_made(ch: &Channel, previous: &str, free_slots: u32) -> Result<HandMade, tonic::Status> {
    let mut worker = WorkerClient::new(ch.clone()).max_decoding_message_size(64 << 20);
    let hosts = vec![v1::SiteVersion { site: "gitlab".into(), version: "v1".into() }];
    let reg = v1::RegisterRequest {
        name: "hand-made".into(),
        hosts,
        slots: 1,
        previous_id: previous.into(),
        // Simulated, as the sandbox's workers are: it is given the units of the sandbox's (simulated) sweeps.
        simulated: true,
    };
    let credential = worker.register(authed(reg)).await?.into_inner().worker_id;
    let (tx, rx) = mpsc::channel(8);
    let hello = v1::Hello { worker_id: credential.clone(), running: Vec::new(), free_slots };
    tx.send(v1::WorkerMessage { body: Some(worker_message::Body::Hello(hello)) }).await.expect("queue");
    let inbound = worker.session(authed(ReceiverStream::new(rx))).await?.into_inner();
    Ok(HandMade { credential, tx, inbound })
}

async fn next_message(inbound: &mut tonic::Streaming<v1::CoordinatorMessage>) -> coordinator_message::Body {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), inbound.message())
            .await
            .expect("an answer within 20 s")
            .expect("the session stays open")
            .expect("a message");
        match msg.body {
            Some(coordinator_message::Body::Drain(_)) | None => continue,
            Some(body) => return body,
        }
    }
}

#[test]
fn a_forged_record_is_refused_and_the_worker_that_holds_the_lease_keeps_its_result() {
    // One real worker, attempts of 1.5 s: the attacker has time to forge each running one.
    let sb = Sandbox::start(1, 1500);
    let id = sb.submit(1, &[]);
    sb.wait_until(&id, Duration::from_secs(20), |s| s["units"]["running"].as_u64() == Some(1));
    let url = sb.url();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let victim = rt.block_on(async {
        let ch = Channel::from_shared(url).expect("url").connect().await.expect("connect");
        let mut control = ControlClient::new(ch.clone());
        let workers = control.list_workers(authed(v1::ListWorkersRequest {})).await.expect("list").into_inner();
        let victim = workers.workers[0].id.clone();
        let victim_name = workers.workers[0].name.clone();
        assert!(victim.starts_with("w-") && !victim.contains('.'), "only the public id is listed: {victim}");

        // Register{previous_id} with the victim's id gets another identity; hello as the victim is refused.
        let taker = hand_made(&ch, &victim, 0).await.expect("a session of its own");
        assert!(!taker.credential.starts_with(&format!("{victim}.")), "took {}", taker.credential);
        let mut worker = WorkerClient::new(ch.clone());
        let (tx, rx) = mpsc::channel(8);
        let hello = v1::Hello { worker_id: victim.clone(), running: Vec::new(), free_slots: 1 };
        tx.send(v1::WorkerMessage { body: Some(worker_message::Body::Hello(hello)) }).await.expect("queue");
        let e = match worker.session(authed(ReceiverStream::new(rx))).await {
            Err(e) => e,
            Ok(r) => r.into_inner().message().await.expect_err("refused"),
        };
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(e.message().contains(&victim) && e.message().contains("register again"), "{}", e.message());

        // The forger sends a well-formed success for every unit's attempt 0, the running one included.
        let mut forger = taker;
        for unit in 0..6u32 {
            let a = v1::Assignment {
                attempt: Some(v1::AttemptRef { sweep: id.clone(), unit, attempt: 0 }),
                treatment: "CONTROL".into(),
                uid: format!("skillshift.gitlab.{}.{}", if unit < 3 { "v1" } else { "v2" }, 0),
                condition: ["src", "src-perc", "src-exec", "tgt", "tgt-perc", "tgt-exec"][unit as usize].into(),
                rep: 0,
                ..Default::default()
            };
            forger.tx.send(record_for(&a, "success")).await.expect("queue");
            let Some(coordinator_message::Body::Reject(r)) = Some(next_message(&mut forger.inbound).await) else {
                panic!("a forged record is answered with a reject");
            };
            assert!(
                r.reason.contains("was not leased to this worker") || r.reason.contains("was never assigned"),
                "unit {unit}: {}",
                r.reason
            );
        }
        // Records say who ran them as the operator named it (`worker --name`).
        victim_name
    });
    sb.wait_state(&id, "done", Duration::from_secs(60));
    let records = sb.export(&id, "per_task.jsonl");
    assert_eq!(records.len(), 6, "one record per unit, the real worker's");
    assert!(victim.starts_with("worker-"), "the sandbox names its workers: {victim}");
    assert!(records.iter().all(|r| r["worker"] == victim.as_str()), "all from the worker that held the leases");
    // The forged records had no timing; every stored one is the simulated worker's.
    assert!(records.iter().all(|r| r["started_at"].is_string()), "none of the forged records was stored: {records:?}");
}

#[test]
fn a_record_over_4_mib_gets_a_reject_and_the_session_goes_on() {
    let sb = Sandbox::start(0, 0);
    let id = sb.submit(1, &["--conditions", "src", "--max-retries", "1"]);
    let url = sb.url();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ch = Channel::from_shared(url).expect("url").connect().await.expect("connect");
        let mut w = hand_made(&ch, "", 1).await.expect("session");
        let coordinator_message::Body::Assign(a) = next_message(&mut w.inbound).await else {
            panic!("an assignment first");
        };
        let mut big = record_for(&a, "failure");
        if let Some(worker_message::Body::Record(r)) = &mut big.body {
            r.record.as_mut().expect("record").answer = Some("x".repeat(5 << 20));
        }
        w.tx.send(big).await.expect("queue");
        let coordinator_message::Body::Reject(r) = next_message(&mut w.inbound).await else {
            panic!("a reject, not the end of the session");
        };
        assert_eq!(r.attempt, a.attempt, "the reject names the attempt");
        assert!(
            r.reason.starts_with("record too large: ") && r.reason.ends_with("the limit is 4194304 bytes"),
            "{r:?}"
        );
        // The same session gets the unit's next attempt and delivers a small record for it.
        w.tx.send(v1::WorkerMessage { body: Some(worker_message::Body::Ready(v1::Ready { credits: 1 })) })
            .await
            .expect("queue");
        let coordinator_message::Body::Assign(retry) = next_message(&mut w.inbound).await else {
            panic!("the unit runs again");
        };
        assert_eq!(retry.attempt.as_ref().map(|r| r.attempt), Some(1));
        w.tx.send(record_for(&retry, "success")).await.expect("queue");
        let coordinator_message::Body::Ack(ack) = next_message(&mut w.inbound).await else {
            panic!("an ack for the small record");
        };
        assert_eq!(ack.attempts, vec![retry.attempt.clone().expect("attempt")]);
    });
    let st = sb.wait_state(&id, "done", Duration::from_secs(30));
    assert_eq!(st["attempts"]["error"], 1);
    let records = sb.export(&id, "per_task.jsonl");
    let refused = records.iter().find(|r| r["attempt"] == 0).expect("the refused attempt is in the ledger");
    assert_eq!(refused["outcome"], "error");
    assert_eq!(refused["error"], "record_too_large");
}

#[test]
fn registrations_are_bounded_by_max_workers() {
    let opts = Options { coordinator_args: vec!["--max-workers".into(), "20".into()], ..Options::default() };
    let sb = Sandbox::start_with(0, 0, opts);
    let url = sb.url();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ch = Channel::from_shared(url).expect("url").connect().await.expect("connect");
        let mut worker = WorkerClient::new(ch.clone());
        for i in 0..200 {
            let hosts = vec![v1::SiteVersion { site: "gitlab".into(), version: "v1".into() }];
            let reg = v1::RegisterRequest {
                name: format!("flood-{i}"),
                hosts,
                slots: 1,
                previous_id: String::new(),
                simulated: false,
            };
            worker.register(authed(reg)).await.expect("an idle registration makes room");
        }
        let mut control = ControlClient::new(ch);
        let listed = control.list_workers(authed(v1::ListWorkersRequest {})).await.expect("list").into_inner();
        assert_eq!(listed.workers.len(), 20);
        assert_eq!(listed.workers.iter().filter(|w| w.name == "flood-199").count(), 1, "the newest are kept");
        // A name past the bound is refused, naming it.
        let hosts = vec![v1::SiteVersion { site: "gitlab".into(), version: "v1".into() }];
        let reg = v1::RegisterRequest {
            name: "n".repeat(1 << 20),
            hosts,
            slots: 1,
            previous_id: String::new(),
            simulated: false,
        };
        let e = worker.register(authed(reg)).await.expect_err("a 1 MiB name");
        assert_eq!(e.code(), Code::InvalidArgument);
        assert_eq!(e.message(), "worker name is 1048576 bytes; the limit is 256");
    });
}

/// A coordinator on a 6 MiB tmpfs of its own (a private mount namespace);
/// its store is copied to `copy` when it exits. Prints its first line.
fn coordinator_on_a_small_disk(sb: &Sandbox, copy: &std::path::Path) -> std::process::Child {
    let mnt = sb.path("small-disk");
    std::fs::create_dir_all(&mnt).expect("mount point");
    let script = r#"mount -t tmpfs -o size=6m tmpfs "$1" || exit 97
"$2" coordinator --listen 127.0.0.1:0 --token sandbox-token --data-dir "$1/c"
code=$?
cp -a "$1/c" "$3"
exit $code"#;
    // As root a private mount namespace is enough; otherwise a user namespace maps us to root in it.
    let flags = if is_root() { "-m" } else { "-rm" };
    Command::new("unshare")
        .args([flags, "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(BIN)
        .arg(copy)
        .env_remove("SKILLSHIFT_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("unshare")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// Needs a private mount namespace for a small tmpfs: root (CI), or unprivileged user namespaces.
#[test]
fn a_full_disk_stops_the_coordinator_with_one_line_and_a_restart_finds_every_sweep_whole() {
    use std::io::BufRead;
    let probe = Command::new("unshare").args([if is_root() { "-m" } else { "-rm" }, "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipping the full-disk test: cannot make a private mount namespace (unshare)");
        return;
    }
    let mut sb = Sandbox::start(0, 0);
    let copy = sb.path("copied-store");
    let mut child = coordinator_on_a_small_disk(&sb, &copy);
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("first line");
    let addr = first.trim().strip_prefix("coordinator listening on ").expect("listening").to_string();
    let own = std::mem::replace(&mut sb.addr, addr);
    // Sweeps of about 2.3 MB of units each until the disk is full.
    let mut accepted = 0;
    for _ in 0..10 {
        let out = sb.sweep(&["start", "--count", "90", "--skills", "none"]);
        if !out.status.success() {
            break;
        }
        accepted += 1;
    }
    assert!(accepted >= 1, "the disk had room for at least one sweep");
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "the coordinator did not exit on a full disk");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut err).expect("stderr");
    assert_eq!(status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("skillshift: error: store: ") && last.contains("No space left on device"), "{last}");
    // Restarted on a disk with room, every sweep it lists is whole: none shows 0/0.
    sb.kill_coordinator();
    sb.addr = own;
    std::fs::remove_dir_all(sb.path("coordinator")).expect("clear");
    std::fs::rename(&copy, sb.path("coordinator")).expect("move the store");
    sb.start_coordinator("127.0.0.1:0");
    let listed = sb.sweep(&["list"]);
    assert!(listed.status.success());
    let lines: Vec<String> = String::from_utf8_lossy(&listed.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), accepted, "every acknowledged sweep, and nothing else: {lines:?}");
    for l in &lines {
        assert!(l.contains("/191700"), "whole: {l}");
    }
}
