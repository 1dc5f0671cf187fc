//! Measures issue 30's upload and HTTP cases against a coordinator binary
//! (docs/reliability.md#hostile-input-round-two-issue-30): run it once with a
//! build from before the fixes and once after, same profile, and compare.
//!
//!   cargo run --example hostile_uploads -- BIN [--fd-limit N]
//!
//! It starts `BIN coordinator` on loopback with its store in a temporary
//! folder, submits a one-unit sweep, and as hand-made workers (the generated
//! gRPC client):
//! 1. the 16 kB bomb (a screenshot of 500 MiB of zeros) from a worker that
//!    holds no lease, then from the holder: the coordinator's peak RSS
//!    (`VmHWM`) before and after each, and the answers;
//! 2. a trajectory, then three re-uploads of it and three different ones
//!    (each a new 4 MiB screenshot): the store folder's bytes after each;
//! 3. 1,000 silent TCP connections to `--http`: a gRPC `ListSweeps`'s
//!    latency before and with them open, and how many are still open 65 s
//!    later (the default idle timeout is 60 s).
//!
//! Every figure is printed as one JSON line.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use skillshift_common::blob::{self, Blob};
use skillshift_common::trajectory::{self, Step, Trajectory};
use skillshift_proto::v1::worker_message;
use skillshift_proto::v1::{self, control_client::ControlClient, coordinator_message, worker_client::WorkerClient};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::Request;

const TOKEN: &str = "bench-token";

fn authed<T>(msg: T) -> Request<T> {
    let mut req = Request::new(msg);
    req.metadata_mut().insert("authorization", MetadataValue::from_static("Bearer bench-token"));
    req
}

fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = status.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok());
    kb.unwrap_or(0u64) * 1024
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = e.metadata() else { continue };
        n += if meta.is_dir() { dir_bytes(&e.path()) } else { meta.len() };
    }
    n
}

struct HandMade {
    tx: mpsc::Sender<v1::WorkerMessage>,
    inbound: tonic::Streaming<v1::CoordinatorMessage>,
}

async fn hand_made(ch: &Channel, free: u32) -> HandMade {
    let mut worker = WorkerClient::new(ch.clone());
    let hosts = vec![v1::SiteVersion { site: "gitlab".into(), version: "v1".into() }];
    let reg =
        v1::RegisterRequest { name: "bench".into(), hosts, slots: 1, previous_id: String::new(), simulated: false };
    let credential = worker.register(authed(reg)).await.expect("register").into_inner().worker_id;
    let (tx, rx) = mpsc::channel(64);
    let hello = v1::Hello { worker_id: credential, running: Vec::new(), free_slots: free };
    tx.send(v1::WorkerMessage { body: Some(worker_message::Body::Hello(hello)) }).await.expect("queue");
    let inbound = worker.session(authed(ReceiverStream::new(rx))).await.expect("session").into_inner();
    HandMade { tx, inbound }
}

impl HandMade {
    async fn next(&mut self) -> Option<coordinator_message::Body> {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(120), self.inbound.message()).await.ok()?.ok()??;
            match msg.body {
                Some(coordinator_message::Body::Drain(_)) | None => continue,
                Some(body) => return Some(body),
            }
        }
    }

    async fn upload(&mut self, attempt: &v1::AttemptRef, blob: &[u8]) -> String {
        for (offset, data) in skillshift_proto::chunks::chunks(blob) {
            let chunk = v1::TrajectoryChunk {
                attempt: Some(attempt.clone()),
                total_bytes: blob.len() as u64,
                offset,
                data: data.to_vec(),
            };
            let msg = v1::WorkerMessage { body: Some(worker_message::Body::TrajectoryChunk(chunk)) };
            if self.tx.send(msg).await.is_err() {
                return "the session ended".into();
            }
        }
        match self.next().await {
            Some(coordinator_message::Body::TrajectoryAck(_)) => "ack".into(),
            Some(coordinator_message::Body::TrajectoryReject(r)) => format!("refused: {}", r.reason),
            Some(other) => format!("{other:?}"),
            None => "no answer within 120 s (or the session ended)".into(),
        }
    }
}

fn trajectory_of(a: &v1::Assignment, shots: &[String]) -> Trajectory {
    let (_, spec) = skillshift_proto::convert::assignment_from_wire(a.clone()).expect("assignment");
    let mut t = Trajectory::for_attempt(&spec, "intent", "http://x/", "skills");
    for (i, d) in shots.iter().enumerate() {
        t.steps.push(Step {
            step: i as u32 + 1,
            url: "http://x/".into(),
            title: "t".into(),
            observation: "obs".into(),
            action: Some("stop []".into()),
            skill: None,
            last_action_error: None,
            perturbations: Vec::new(),
            llm: None,
            duration_ms: 1,
            screenshot: Some(trajectory::screenshot_name(d)),
            reported_skills: Vec::new(),
            dialogs: Vec::new(),
        });
    }
    t
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn real_blob(a: &v1::Assignment, png_bytes: usize, seed: u64) -> Vec<u8> {
    let png = noise(png_bytes, seed);
    let d = blob::digest(&png);
    Blob { trajectory: trajectory_of(a, std::slice::from_ref(&d)), screenshots: BTreeMap::from([(d, png)]) }
        .encode()
        .expect("encode")
}

fn bomb(a: &v1::Assignment) -> Vec<u8> {
    let d = "0".repeat(64);
    let json = serde_json::to_vec(&trajectory_of(a, std::slice::from_ref(&d))).expect("json");
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 19).expect("encoder");
    enc.write_all(&(json.len() as u32).to_be_bytes()).expect("len");
    enc.write_all(&json).expect("json");
    enc.write_all(d.as_bytes()).expect("name");
    enc.write_all(&(500u32 << 20).to_be_bytes()).expect("len");
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..500 {
        enc.write_all(&zeros).expect("zeros");
    }
    enc.finish().expect("finish")
}

async fn list_ms(ch: &Channel) -> serde_json::Value {
    let mut c = ControlClient::new(ch.clone());
    let t = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(10), c.list_sweeps(authed(v1::ListSweepsRequest {}))).await;
    match r {
        Ok(Ok(_)) => serde_json::json!(t.elapsed().as_secs_f64() * 1000.0),
        Ok(Err(e)) => serde_json::json!(format!("{:?}: {}", e.code(), e.message())),
        Err(_) => serde_json::json!("no answer within 10 s"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().expect("usage: hostile_uploads BIN [--fd-limit N]");
    let fd_limit: Option<u32> = match (args.next().as_deref(), args.next()) {
        (Some("--fd-limit"), Some(n)) => Some(n.parse().expect("a number")),
        _ => None,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let script = format!(
        "{}exec {bin} coordinator --listen 127.0.0.1:0 --http 127.0.0.1:0 --data-dir {} --token {TOKEN} \
         --lease-ttl-ms 600000",
        fd_limit.map(|n| format!("ulimit -n {n}; ")).unwrap_or_default(),
        data.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("coordinator.log")).expect("log"))
        .spawn()
        .expect("start the coordinator");
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
    let rest = line.trim().strip_prefix("coordinator listening on ").expect("the listening line");
    let grpc = rest.split_whitespace().next().expect("grpc address").to_string();
    let http = rest.split("(http ").nth(1).map(|h| h.trim_end_matches(')').to_string()).expect("http address");
    let families = dir.path().join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0]}}}"#).expect("families");
    let out = Command::new(&bin)
        .args(["sweep", "start", "--sites", "gitlab", "--conditions", "src", "--skills", "none", "--families"])
        .arg(&families)
        .env("SKILLSHIFT_COORDINATOR", format!("http://{grpc}"))
        .env("SKILLSHIFT_TOKEN", TOKEN)
        .output()
        .expect("sweep start");
    assert!(out.status.success(), "sweep start: {}", String::from_utf8_lossy(&out.stderr));

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ch = Channel::from_shared(format!("http://{grpc}")).expect("url").connect().await.expect("connect");
        let mut holder = hand_made(&ch, 1).await;
        let Some(coordinator_message::Body::Assign(a)) = holder.next().await else { panic!("an assignment") };
        let attempt = a.attempt.clone().expect("attempt");
        let mut thief = hand_made(&ch, 0).await;
        let bomb = bomb(&a);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let idle = peak_rss(pid);
        let answer = thief.upload(&attempt, &bomb).await;
        let after = peak_rss(pid);
        println!(
            "{}",
            serde_json::json!({"case": "bomb from a non-holder", "bomb_bytes": bomb.len(),
            "answer": answer, "peak_rss_idle": idle, "peak_rss_after": after, "delta_mib": (after - idle) >> 20})
        );
        let answer = holder.upload(&attempt, &bomb).await;
        let after2 = peak_rss(pid);
        println!(
            "{}",
            serde_json::json!({"case": "bomb from the holder", "answer": answer,
            "peak_rss_after": after2, "delta_mib": (after2 - idle) >> 20})
        );

        let first = real_blob(&a, 256 << 10, 1);
        let answer = holder.upload(&attempt, &first).await;
        let stored = dir_bytes(&data);
        println!("{}", serde_json::json!({"case": "first trajectory", "answer": answer, "store_bytes": stored}));
        for i in 0..3 {
            let answer = holder.upload(&attempt, &first).await;
            println!(
                "{}",
                serde_json::json!({"case": format!("same re-upload {}", i + 1), "answer": answer,
                "store_bytes": dir_bytes(&data), "grown_bytes": dir_bytes(&data) as i64 - stored as i64})
            );
        }
        for seed in 2..5u64 {
            let answer = holder.upload(&attempt, &real_blob(&a, 4 << 20, seed)).await;
            println!(
                "{}",
                serde_json::json!({"case": format!("different re-upload {}", seed - 1), "answer": answer,
                "store_bytes": dir_bytes(&data), "grown_bytes": dir_bytes(&data) as i64 - stored as i64})
            );
        }

        let quiet = list_ms(&ch).await;
        let n = if fd_limit.is_some() { 320 } else { 1000 };
        let mut silent: Vec<TcpStream> = (0..n).filter_map(|_| TcpStream::connect(&http).ok()).collect();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let busy = list_ms(&ch).await;
        let fresh = list_ms(&Channel::from_shared(format!("http://{grpc}")).expect("url").connect_lazy()).await;
        println!(
            "{}",
            serde_json::json!({"case": format!("{n} silent http connections"), "connected": silent.len(),
            "list_sweeps_ms_before": quiet, "list_sweeps_ms_with_them": busy, "list_sweeps_ms_new_channel": fresh})
        );
        tokio::time::sleep(Duration::from_secs(65)).await;
        let mut still_open = 0;
        for s in &mut silent {
            s.set_nonblocking(true).expect("nonblocking");
            let mut b = [0u8; 1];
            if matches!(s.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock) {
                still_open += 1;
            }
        }
        println!(
            "{}",
            serde_json::json!({"case": "65 s later", "still_open": still_open, "of": silent.len(),
            "list_sweeps_ms": list_ms(&ch).await})
        );
    });
    let _ = child.kill();
    let _ = child.wait();
}
