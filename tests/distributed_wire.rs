//! Hand-made malformed gRPC messages against a real coordinator process: each
//! gets a clear status or a `reject` naming what is wrong, and nothing stored
//! changes. The messages are built with the generated client, as any other
//! language's client would build them.

mod support;

use std::time::Duration;

use skillshift_proto::v1::{
    self, control_client::ControlClient, coordinator_message, worker_client::WorkerClient, worker_message,
};
use support::Sandbox;
use tokio::sync::mpsc;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request};

fn authed<T>(msg: T) -> Request<T> {
    let mut req = Request::new(msg);
    req.metadata_mut().insert("authorization", MetadataValue::from_static("Bearer sandbox-token"));
    req
}

fn spec(sites: &[&str]) -> v1::SweepSpec {
    v1::SweepSpec {
        treatments: vec![v1::Treatment { name: "CONTROL".into(), skills_json: None }],
        agent: "skills".into(),
        sites: sites.iter().map(|s| s.to_string()).collect(),
        conditions: vec!["src".into()],
        count: 1,
        max_steps: 10,
        task_timeout_s: 600,
        max_retries: 2,
        agent_version: "test".into(),
        harness_version: "test".into(),
        ..Default::default()
    }
}

fn record(sweep: &str, unit: u32, uid: &str, condition: &str) -> v1::WorkerMessage {
    let rec = v1::RunRecord {
        uid: uid.into(),
        site: "gitlab".into(),
        condition: condition.into(),
        success: Some(true),
        steps: Some(1),
        outcome: Some("success".into()),
        attempt: Some(0),
        rep: Some(0),
        ..Default::default()
    };
    let attempt = v1::AttemptRef { sweep: sweep.into(), unit, attempt: 0 };
    v1::WorkerMessage {
        body: Some(worker_message::Body::Record(v1::RecordMessage { attempt: Some(attempt), record: Some(rec) })),
    }
}

/// The reject the coordinator answers a message with.
async fn reject_of(inbound: &mut tonic::Streaming<v1::CoordinatorMessage>) -> String {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), inbound.message())
            .await
            .expect("an answer within 10 s")
            .expect("the session stays open after a refused record")
            .expect("a message");
        if let Some(coordinator_message::Body::Reject(r)) = msg.body {
            return r.reason;
        }
    }
}

#[test]
fn malformed_messages_get_a_clear_status_and_leave_the_store_alone() {
    let sb = Sandbox::start(1, 20);
    let id = sb.submit(2, &[]);
    sb.wait_state(&id, "done", Duration::from_secs(60));
    let before = sb.export(&id, "before.jsonl");
    let url = sb.url();

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ch = Channel::from_shared(url).expect("url").connect().await.expect("connect");

        // Control: refused specs name what is wrong.
        let mut control = ControlClient::new(ch.clone());
        let e = control.submit_sweep(authed(spec(&["gitlub"]))).await.expect_err("unknown site");
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("gitlub"), "{}", e.message());
        let mut bad = spec(&["gitlab"]);
        bad.treatments[0].skills_json = Some("{not json".into());
        let e = control.submit_sweep(authed(bad)).await.expect_err("garbage skill library");
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("skills"), "{}", e.message());
        let mut bad = spec(&["gitlab"]);
        bad.count = 0;
        let e = control.submit_sweep(authed(bad)).await.expect_err("zero reps");
        assert_eq!(e.code(), Code::InvalidArgument);
        let e = control.get_sweep(authed(v1::SweepId { id: "sw-nope".into() })).await.expect_err("unknown sweep");
        assert_eq!(e.code(), Code::NotFound);
        let e = control.get_sweep(Request::new(v1::SweepId { id: id.clone() })).await.expect_err("no token");
        assert_eq!(e.code(), Code::Unauthenticated);

        // Worker: a registration for a version that does not exist.
        let mut worker = WorkerClient::new(ch.clone());
        let hosts = vec![v1::SiteVersion { site: "gitlab".into(), version: "v9".into() }];
        let reg = v1::RegisterRequest {
            name: "hand-made".into(),
            hosts,
            slots: 1,
            previous_id: String::new(),
            simulated: false,
        };
        let e = worker.register(authed(reg)).await.expect_err("unknown version");
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("v9"), "{}", e.message());
        let hosts = vec![v1::SiteVersion { site: "gitlab".into(), version: "v1".into() }];
        let reg = v1::RegisterRequest {
            name: "hand-made".into(),
            hosts,
            slots: 1,
            previous_id: String::new(),
            simulated: false,
        };
        let worker_id = worker.register(authed(reg)).await.expect("a valid registration").into_inner().worker_id;

        // A session that does not start with hello ends with invalid_argument.
        let (tx, rx) = mpsc::channel(8);
        tx.send(v1::WorkerMessage { body: Some(worker_message::Body::Ready(v1::Ready { credits: 1 })) })
            .await
            .expect("queue");
        let e = match worker.session(authed(tokio_stream::wrappers::ReceiverStream::new(rx))).await {
            Err(e) => e,
            Ok(resp) => {
                let mut s = resp.into_inner();
                s.message().await.expect_err("the session is refused")
            }
        };
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("hello"), "{}", e.message());

        // A proper session (no free slots, so nothing is assigned) sending bad records.
        let (tx, rx) = mpsc::channel(8);
        let hello = v1::Hello { worker_id, running: Vec::new(), free_slots: 0 };
        tx.send(v1::WorkerMessage { body: Some(worker_message::Body::Hello(hello)) }).await.expect("queue");
        let mut inbound = worker
            .session(authed(tokio_stream::wrappers::ReceiverStream::new(rx)))
            .await
            .expect("session")
            .into_inner();
        // A record whose uid is not its unit's, for an attempt that is already stored.
        tx.send(record(&id, 0, "skillshift.gitlab.v1.99", "src")).await.expect("queue");
        let reason = reject_of(&mut inbound).await;
        assert!(reason.contains("uid") && reason.contains("skillshift.gitlab.v1.99"), "{reason}");
        // A condition that does not exist.
        tx.send(record(&id, 0, "skillshift.gitlab.v1.0", "sideways")).await.expect("queue");
        let reason = reject_of(&mut inbound).await;
        assert!(reason.contains("sideways"), "{reason}");
        // A sweep that does not exist.
        tx.send(record("sw-nope", 0, "skillshift.gitlab.v1.0", "src")).await.expect("queue");
        let reason = reject_of(&mut inbound).await;
        assert!(reason.contains("unknown sweep"), "{reason}");
        // A unit past the end of the plan.
        tx.send(record(&id, 10_000, "skillshift.gitlab.v1.0", "src")).await.expect("queue");
        let reason = reject_of(&mut inbound).await;
        assert!(reason.contains("no unit 10000"), "{reason}");
        // A message without a body ends the session with invalid_argument.
        tx.send(v1::WorkerMessage { body: None }).await.expect("queue");
        let e = loop {
            match tokio::time::timeout(Duration::from_secs(10), inbound.message()).await.expect("answer") {
                Err(e) => break e,
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the stream ended without a status"),
            }
        };
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("empty worker message"), "{}", e.message());
    });

    // Nothing stored changed, and no sweep was added.
    let after = sb.export(&id, "after.jsonl");
    assert_eq!(before, after);
    let listed = sb.sweep(&["list"]);
    assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 1);
}
