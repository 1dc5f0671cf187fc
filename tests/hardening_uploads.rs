//! Trajectory uploads against a real coordinator process over gRPC, with its
//! sled store on disk (issue 30, items 1 and 3): a blob is refused before it
//! is inflated unless its sender holds the attempt, each part of it is bound,
//! an attempt keeps one trajectory, and a sweep's trajectories have a quota.
//! The hand-made workers are built with the generated client, as any other
//! language's client would build them.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use skillshift_common::blob::{self, Blob};
use skillshift_common::trajectory::{self, Step, Trajectory};
use skillshift_proto::v1::{self, coordinator_message, worker_client::WorkerClient, worker_message};
use support::{dir_bytes, peak_rss, Options, Sandbox};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::Request;

fn authed<T>(msg: T) -> Request<T> {
    let mut req = Request::new(msg);
    req.metadata_mut().insert("authorization", MetadataValue::from_static("Bearer sandbox-token"));
    req
}

/// A hand-made worker: registered with `slots`, its session open with as many free.
struct HandMade {
    tx: mpsc::Sender<v1::WorkerMessage>,
    inbound: tonic::Streaming<v1::CoordinatorMessage>,
}

async fn hand_made(ch: &Channel, slots: u32, free: u32) -> HandMade {
    let mut worker = WorkerClient::new(ch.clone());
    let hosts = vec![v1::SiteVersion { site: "gitlab".into(), version: "v1".into() }];
    let reg =
        v1::RegisterRequest { name: "hand-made".into(), hosts, slots, previous_id: String::new(), simulated: true };
    let credential = worker.register(authed(reg)).await.expect("register").into_inner().worker_id;
    let (tx, rx) = mpsc::channel(64);
    let hello = v1::Hello { worker_id: credential, running: Vec::new(), free_slots: free };
    tx.send(v1::WorkerMessage { body: Some(worker_message::Body::Hello(hello)) }).await.expect("queue");
    let inbound = worker.session(authed(ReceiverStream::new(rx))).await.expect("session").into_inner();
    HandMade { tx, inbound }
}

impl HandMade {
    async fn next(&mut self) -> coordinator_message::Body {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(60), self.inbound.message())
                .await
                .expect("an answer within 60 s")
                .expect("the session stays open")
                .expect("a message");
            match msg.body {
                Some(coordinator_message::Body::Drain(_)) | None => continue,
                Some(body) => return body,
            }
        }
    }

    async fn assignment(&mut self) -> v1::Assignment {
        match self.next().await {
            coordinator_message::Body::Assign(a) => a,
            other => panic!("an assignment first, got {other:?}"),
        }
    }

    /// Sends `blob` for `attempt` in chunks and returns the answer: `Ok(())` for an ack, `Err(reason)`.
    async fn upload(&mut self, attempt: &v1::AttemptRef, blob: &[u8]) -> Result<(), String> {
        for (offset, data) in skillshift_proto::chunks::chunks(blob) {
            let chunk = v1::TrajectoryChunk {
                attempt: Some(attempt.clone()),
                total_bytes: blob.len() as u64,
                offset,
                data: data.to_vec(),
            };
            let msg = v1::WorkerMessage { body: Some(worker_message::Body::TrajectoryChunk(chunk)) };
            self.tx.send(msg).await.expect("queue");
        }
        match self.next().await {
            coordinator_message::Body::TrajectoryAck(a) if a.attempt.as_ref() == Some(attempt) => Ok(()),
            coordinator_message::Body::TrajectoryReject(r) if r.attempt.as_ref() == Some(attempt) => Err(r.reason),
            other => panic!("an answer to the upload, got {other:?}"),
        }
    }
}

/// The trajectory the assigned attempt names itself by, one step per screenshot digest.
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

/// `n` bytes that do not compress, different for each `seed`.
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

/// A trajectory blob with one named screenshot of `png_bytes` of noise.
fn real_blob(a: &v1::Assignment, png_bytes: usize, seed: u64) -> Vec<u8> {
    let png = noise(png_bytes, seed);
    let d = blob::digest(&png);
    let b = Blob { trajectory: trajectory_of(a, std::slice::from_ref(&d)), screenshots: BTreeMap::from([(d, png)]) };
    b.encode().expect("encode")
}

/// The bomb: a trajectory naming one screenshot whose 500 MiB of zeros compress to about 16 kB.
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

fn options(extra: &[&str]) -> Options {
    // Hand-made workers send no heartbeats: a long TTL keeps their leases (and the store) still.
    Options {
        lease_ttl_ms: 600_000,
        coordinator_args: extra.iter().map(|s| s.to_string()).collect(),
        ..Options::default()
    }
}

#[test]
fn a_16_kb_bomb_is_refused_before_it_is_inflated_from_a_non_holder_and_by_its_declared_size_from_the_holder() {
    let sb = Sandbox::start_with(0, 0, options(&[]));
    let _id = sb.submit(1, &["--conditions", "src"]);
    let pid = sb.coordinator_pid();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ch = Channel::from_shared(sb.url()).expect("url").connect().await.expect("connect");
        let mut holder = hand_made(&ch, 1, 1).await;
        let a = holder.assignment().await;
        let attempt = a.attempt.clone().expect("attempt ref");
        let mut thief = hand_made(&ch, 1, 0).await;
        let bomb = bomb(&a);
        assert!(bomb.len() < 20 << 10, "the bomb is {} bytes", bomb.len());
        let idle = peak_rss(pid);

        let reason = thief.upload(&attempt, &bomb).await.expect_err("refused");
        assert_eq!(reason, "attempt 0 of unit 0 was not leased to this worker");
        let after_thief = peak_rss(pid);
        assert!(
            after_thief < idle + (64 << 20),
            "a non-holder's bomb raised the coordinator's peak from {idle} to {after_thief} bytes"
        );

        // From the holder, the screenshot's declared 500 MiB is refused before it is read.
        let reason = holder.upload(&attempt, &bomb).await.expect_err("refused");
        assert_eq!(
            reason,
            format!(
                "trajectory unreadable: trajectory blob: screenshot {} is 524288000 bytes, past its limit of 8388608 \
                 bytes",
                "0".repeat(64)
            )
        );
        let after_holder = peak_rss(pid);
        assert!(
            after_holder < idle + (64 << 20),
            "the holder's bomb raised the coordinator's peak from {idle} to {after_holder} bytes"
        );
        // The session goes on: a real trajectory of the same attempt is taken.
        holder.upload(&attempt, &real_blob(&a, 4096, 1)).await.expect("acknowledged");
    });
}

#[test]
fn an_attempt_keeps_one_trajectory_and_three_re_uploads_leave_the_store_unchanged() {
    let sb = Sandbox::start_with(0, 0, options(&[]));
    let _id = sb.submit(1, &["--conditions", "src"]);
    let store = sb.path("coordinator");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ch = Channel::from_shared(sb.url()).expect("url").connect().await.expect("connect");
        let mut w = hand_made(&ch, 1, 1).await;
        let a = w.assignment().await;
        let attempt = a.attempt.clone().expect("attempt ref");
        let first = real_blob(&a, 256 << 10, 1);
        w.upload(&attempt, &first).await.expect("the first trajectory is taken");
        let stored = dir_bytes(&store);

        for i in 0..3 {
            w.upload(&attempt, &first).await.unwrap_or_else(|e| panic!("re-upload {i} of the same blob: {e}"));
        }
        assert_eq!(dir_bytes(&store), stored, "three re-uploads of the same blob store nothing");
        for seed in 2..5 {
            // Each another 1 MiB screenshot: what grew the store by 900 MiB in three uploads of 300 MiB.
            let reason = w.upload(&attempt, &real_blob(&a, 1 << 20, seed)).await.expect_err("another blob");
            assert_eq!(reason, "attempt 0 of unit 0 already has a trajectory, from another blob; an attempt keeps one");
        }
        assert_eq!(dir_bytes(&store), stored, "three different re-uploads store nothing either");
    });
}

#[test]
fn a_sweeps_trajectories_past_its_quota_are_refused_naming_the_numbers() {
    let sb = Sandbox::start_with(0, 0, options(&["--max-trajectory-bytes-per-sweep", "300000"]));
    let id = sb.submit(1, &["--conditions", "src,src-perc"]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ch = Channel::from_shared(sb.url()).expect("url").connect().await.expect("connect");
        let mut w = hand_made(&ch, 2, 2).await;
        let (a, b) = (w.assignment().await, w.assignment().await);
        w.upload(a.attempt.as_ref().expect("ref"), &real_blob(&a, 200_000, 1)).await.expect("within the quota");
        let reason = w.upload(b.attempt.as_ref().expect("ref"), &real_blob(&b, 200_000, 2)).await.expect_err("past it");
        assert!(reason.starts_with(&format!("sweep '{id}' stores 2")), "{reason}");
        assert!(
            reason.ends_with("more would pass its quota of 300000 bytes (--max-trajectory-bytes-per-sweep)"),
            "{reason}"
        );
    });
}
