//! A graceful shutdown in one process over real gRPC on loopback: the worker
//! is told to drain, its session ends, the coordinator stops cleanly, and the
//! attempt it was running is not lost: it stays a running attempt in the
//! store, for the worker to re-attach after a restart (guarantee 4 in
//! `docs/design.md`).

use std::collections::BTreeMap;
use std::time::Duration;

use skillshift_common::{Condition, Site, Version};
use skillshift_coordinator::client::Client;
use skillshift_coordinator::planner::{SweepSpec, TreatmentSpec};
use skillshift_coordinator::server::{self, Config};
use skillshift_proto::convert::site_version_to_wire;
use skillshift_proto::v1::{self, coordinator_message::Body, worker_client::WorkerClient};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);

/// The coordinator's next message on a session, waiting at most [`WAIT`].
async fn next(
    inbound: &mut tonic::Streaming<v1::CoordinatorMessage>,
) -> Result<Option<v1::CoordinatorMessage>, tonic::Status> {
    tokio::time::timeout(WAIT, inbound.message()).await.expect("an answer in time")
}

#[tokio::test]
async fn shutdown_drains_the_worker_ends_its_session_and_keeps_its_running_attempt() {
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
        llm_budget: Default::default(),
    };
    let coordinator = server::start(config, stop.clone()).await.expect("coordinator starts");
    let url = format!("http://{}", coordinator.grpc_addr);
    let store = coordinator.store.clone();

    let mut spec = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    spec.sites = vec![Site::Gitlab];
    spec.conditions = vec![Condition::Src];
    spec.families = BTreeMap::from([(Site::Gitlab, vec![0])]);
    let mut control = Client::connect(&url, None, &Default::default()).await.expect("control client");
    let id = control.submit(&spec).await.expect("submit");

    let mut worker = WorkerClient::connect(url.clone()).await.expect("worker connects");
    let hosts = vec![site_version_to_wire(Site::Gitlab, Version::V1)];
    let reg = v1::RegisterRequest { name: "w".into(), hosts, slots: 1, previous_id: String::new(), simulated: false };
    let worker_id = worker.register(reg).await.expect("register").into_inner().worker_id;
    let (tx, rx) = mpsc::channel(8);
    let hello = v1::Hello { worker_id, running: Vec::new(), free_slots: 1 };
    tx.send(v1::WorkerMessage { body: Some(v1::worker_message::Body::Hello(hello)) }).await.expect("queue");
    let mut inbound = worker.session(ReceiverStream::new(rx)).await.expect("session").into_inner();
    let assigned = match next(&mut inbound).await {
        Ok(Some(v1::CoordinatorMessage { body: Some(Body::Assign(a)) })) => a,
        other => panic!("expected an assignment, got {other:?}"),
    };
    assert!(assigned.attempt.is_some());

    stop.cancel();
    let drained = matches!(next(&mut inbound).await, Ok(Some(v1::CoordinatorMessage { body: Some(Body::Drain(_)) })));
    assert!(drained, "the worker is told to drain");
    // The session then ends (cleanly or as a broken stream), it does not hang.
    while let Ok(Some(_)) = next(&mut inbound).await {}
    tokio::time::timeout(WAIT, coordinator.wait()).await.expect("stops in time").expect("stops cleanly");

    let records = store.records(&id).collect::<Result<Vec<_>, _>>().expect("records read");
    assert!(records.is_empty(), "no attempt was recorded as lost on a graceful shutdown: {records:?}");
    let rows = store.load_all().expect("load");
    let sweep = rows.iter().find(|r| r.meta.id == id).expect("the sweep is unfinished");
    assert_eq!(sweep.attempts.len(), 1, "the running attempt is still in the store, to re-attach");
    drop(tx);
}
