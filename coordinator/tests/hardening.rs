//! Faults and bounds of a coordinator in one process, over real gRPC on
//! loopback: a store that cannot write stops it with its error (no zombie
//! answering "shutting down"), and a stream that never says hello is closed
//! after the deadline while the number of open sessions stays bounded.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use skillshift_common::{Condition, Site};
use skillshift_coordinator::client::Client;
use skillshift_coordinator::limits::Limits;
use skillshift_coordinator::planner::{SweepSpec, TreatmentSpec};
use skillshift_coordinator::server::{self, Config};
use skillshift_coordinator::store::Store;
use skillshift_proto::v1::{self, worker_client::WorkerClient};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::Code;

fn config(dir: &std::path::Path, limits: Limits) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().expect("addr"),
        http: None,
        data_dir: dir.to_path_buf(),
        token: None,
        tls: None,
        lease_ttl: Duration::from_secs(30),
        limits,
        llm_budget: Default::default(),
    }
}

fn small_spec() -> SweepSpec {
    let mut spec = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    spec.sites = vec![Site::Gitlab];
    spec.conditions = vec![Condition::Src, Condition::Tgt];
    spec.families = BTreeMap::from([(Site::Gitlab, vec![0, 1, 2])]);
    spec
}

#[tokio::test]
async fn a_store_that_cannot_write_stops_the_coordinator_with_its_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coordinator = server::start(config(dir.path(), Limits::default()), CancellationToken::new()).await.expect("up");
    let url = format!("http://{}", coordinator.grpc_addr);
    let store = coordinator.store.clone();
    let mut control = Client::connect(&url, None, &Default::default()).await.expect("control client");
    let first = control.submit(&small_spec()).await.expect("stored while the disk has room");

    // The disk fills: the next sweep's commit fails.
    store.faults().fail_writes_after(0);
    let e = control.submit(&small_spec()).await.expect_err("never acknowledged");
    assert!(e.to_string().contains("shutting down"), "{e}");
    let t0 = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(20), coordinator.wait()).await.expect("stops in time");
    let e = result.expect_err("stops with the store's error");
    assert_eq!(e.to_string(), "store: no space left on device (injected fault)");
    assert!(t0.elapsed() < Duration::from_secs(15), "stopped in {:?}", t0.elapsed());
    // Nothing answers any more: a supervisor sees the exit, not a zombie.
    let again = Client::connect(&url, None, &Default::default()).await;
    if let Ok(mut c) = again {
        let e = c.list().await.expect_err("nobody serves");
        assert!(e.to_string().contains("unreachable"), "{e}");
    }
    drop(store);

    // After a restart the first sweep is whole and the refused one is not there.
    // sled's own threads may hold the closed store's lock for a moment.
    let path = dir.path().join("store");
    let deadline = Instant::now() + Duration::from_secs(5);
    let store = loop {
        match Store::open(&path) {
            Ok(store) => break store,
            Err(e) if Instant::now() > deadline => panic!("reopen: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let rows = store.load_all().expect("load");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].meta.id, first);
    assert_eq!(rows[0].units.len(), 6);
}

/// A disk that stops answering blocks a write instead of failing it: the commit's deadline turns that into
/// the coordinator's last error, so it stops (and a supervisor restarts it) instead of hanging.
#[tokio::test]
async fn a_store_write_that_blocks_stops_the_coordinator_at_the_commit_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits { store_commit_deadline: Duration::from_secs(1), ..Limits::default() };
    let coordinator = server::start(config(dir.path(), limits), CancellationToken::new()).await.expect("up");
    let url = format!("http://{}", coordinator.grpc_addr);
    let store = coordinator.store.clone();
    let mut control = Client::connect(&url, None, &Default::default()).await.expect("control client");
    control.submit(&small_spec()).await.expect("stored while the disk answers");

    store.faults().stall_writes();
    let t0 = Instant::now();
    let e = control.submit(&small_spec()).await.expect_err("never acknowledged");
    assert!(e.to_string().contains("shutting down"), "{e}");
    let result = tokio::time::timeout(Duration::from_secs(20), coordinator.wait()).await.expect("stops in time");
    let e = result.expect_err("stops with the stall as its error");
    assert_eq!(
        e.to_string(),
        "store: a write has not finished after 1 s (a full or failing disk?); nothing more is written"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "stopped in {:?}", t0.elapsed());
    // The blocked write ends (the disk answers again), so the test's runtime can stop. (The stalled store is
    // never closed, so its lock stays taken in this process; the full-disk test in the workspace's
    // `tests/hardening_coordinator.rs` restarts a real coordinator on the store.)
    store.faults().unstall();
}

async fn open_session(url: &str) -> (mpsc::Sender<v1::WorkerMessage>, Result<(), tonic::Status>) {
    let mut worker = WorkerClient::connect(url.to_string()).await.expect("connect");
    let (tx, rx) = mpsc::channel(8);
    let answer = worker.session(ReceiverStream::new(rx)).await.map(|_| ());
    (tx, answer)
}

#[tokio::test]
async fn a_stream_without_hello_is_closed_after_the_deadline_and_open_sessions_are_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits { hello_timeout: Duration::from_millis(1500), max_sessions: 2, ..Limits::default() };
    let stop = CancellationToken::new();
    let coordinator = server::start(config(dir.path(), limits), stop.clone()).await.expect("up");
    let url = format!("http://{}", coordinator.grpc_addr);

    // Two silent streams hold both session permits until the deadline.
    let t0 = Instant::now();
    let silent: Vec<_> = (0..2).map(|_| tokio::spawn(open_session_owned(url.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_tx, third) = open_session(&url).await;
    let e = third.expect_err("a third stream is refused at once");
    assert_eq!(e.code(), Code::ResourceExhausted);
    assert_eq!(e.message(), "2 worker sessions are open, the limit; try again later");
    for s in silent {
        let e = s.await.expect("joined").expect_err("closed without hello");
        assert_eq!(e.code(), Code::DeadlineExceeded);
        assert_eq!(e.message(), "no hello within 1500 ms");
    }
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(1400) && waited < Duration::from_secs(10), "{waited:?}");
    // Their permits are back: a new stream is waited for again (and closed the same way).
    let (_tx, fourth) = open_session(&url).await;
    assert_eq!(fourth.expect_err("no hello").code(), Code::DeadlineExceeded);
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(20), coordinator.wait()).await.expect("stops").expect("cleanly");
}

async fn open_session_owned(url: String) -> Result<(), tonic::Status> {
    let (_tx, answer) = open_session(&url).await;
    answer
}
