//! The viewer over a live coordinator: an in-process coordinator with the
//! viewer's hook on its `--http` port and a worker over real gRPC whose one
//! attempt keeps a trajectory; the page's JSON shows the attempt and its
//! steps from the store, behind the token.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::Value;
use skillshift_common::blob::Blob;
use skillshift_common::trajectory::{Step, Trajectory};
use skillshift_common::{AttemptSpec, Condition, Outcome, Record, Site, Version};
use skillshift_coordinator::client::Client;
use skillshift_coordinator::planner::{SweepSpec, TreatmentSpec};
use skillshift_coordinator::server::{self, Config};
use skillshift_proto::channel::ClientTls;
use skillshift_worker::executor::Executor;
use skillshift_worker::remote::{self, RemoteConfig};
use skillshift_worker::CancellationToken;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "live-viewer-token";

/// One step, failing, with a trajectory.
struct OneStep;

impl Executor for OneStep {
    fn hosts(&self) -> Vec<(Site, Version)> {
        vec![(Site::Gitlab, Version::V1)]
    }
    fn slots(&self) -> usize {
        1
    }
    fn execute(&self, spec: AttemptSpec, cancel: CancellationToken) -> BoxFuture<'static, Record> {
        let attempt = self.execute_traced(spec, cancel);
        Box::pin(async move { attempt.await.0 })
    }
    fn execute_traced(&self, spec: AttemptSpec, _: CancellationToken) -> BoxFuture<'static, (Record, Option<Blob>)> {
        Box::pin(async move {
            let mut r = Record::for_attempt(&spec);
            r.success = Some(false);
            r.outcome = Some(Outcome::Failure);
            r.steps = Some(1);
            // As the run loop stamps it; it travels on the wire record (RunRecord.failure_category).
            r.failure_category = Some("wrong_answer".into());
            let mut t = Trajectory::for_attempt(&spec, "find the issue", "http://x/", "one-step");
            t.outcome = Outcome::Failure;
            t.failure_category = Some("wrong_answer".into());
            t.steps.push(Step {
                step: 1,
                url: "http://x/issues".into(),
                title: "Issues".into(),
                observation: "[12] link 'Issue 7'".into(),
                action: Some("stop [nothing]".into()),
                skill: None,
                last_action_error: None,
                perturbations: Vec::new(),
                llm: None,
                duration_ms: 1,
                screenshot: None,
                reported_skills: Vec::new(),
                dialogs: Vec::new(),
            });
            (r, Some(Blob { trajectory: t, screenshots: BTreeMap::new() }))
        })
    }
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("send");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out)).await.expect("in time").expect("read");
    let code = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("not http: {out}"));
    (code, out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

async fn json(addr: std::net::SocketAddr, path: &str) -> Value {
    let (code, body) = get(addr, path).await;
    assert_eq!(code, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_attempts_trajectory_is_read_from_the_coordinators_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cancel = CancellationToken::new();
    let config = Config {
        listen: "127.0.0.1:0".parse().expect("addr"),
        http: Some("127.0.0.1:0".parse().expect("addr")),
        data_dir: dir.path().join("coordinator"),
        token: Some(TOKEN.into()),
        tls: None,
        lease_ttl: Duration::from_secs(30),
        limits: Default::default(),
        llm_budget: Default::default(),
    };
    let hook = Some(skillshift_viewer::live::hook());
    let coordinator = server::start_with_pages(config, cancel.child_token(), hook).await.expect("start");
    let http = coordinator.http_addr.expect("http address");
    let url = format!("http://{}", coordinator.grpc_addr);
    let mut cfg = RemoteConfig::new(&url, "one-step", dir.path().join("outbox"));
    cfg.token = Some(TOKEN.into());
    let stop = CancellationToken::new();
    let worker = tokio::spawn(remote::run(cfg, Arc::new(OneStep), stop.clone()));

    let mut spec = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
    spec.sites = vec![Site::Gitlab];
    spec.conditions = vec![Condition::Src];
    spec.families = BTreeMap::from([(Site::Gitlab, vec![0])]);
    let mut client = Client::connect(&url, Some(TOKEN), &ClientTls::default()).await.expect("client");
    let id = client.submit(&spec).await.expect("submit");
    let began = Instant::now();
    // Done, and the trajectory (acknowledged after the record) stored too.
    loop {
        let st = client.get(&id).await.expect("status");
        let attempts =
            json(http, &format!("/api/attempts?sweep={id}&treatment=CONTROL&site=gitlab&condition=src&token={TOKEN}"))
                .await;
        let kept = attempts["attempts"].as_array().is_some_and(|a| a.iter().any(|a| a["trajectory"] == true));
        if st.state.is_final() && kept {
            break;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "no stored trajectory: {st:?} {attempts}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let attempts =
        json(http, &format!("/api/attempts?sweep={id}&treatment=CONTROL&site=gitlab&condition=src&token={TOKEN}"))
            .await;
    assert_eq!(attempts["attempts"][0]["failure_category"], "wrong_answer", "the live record's category: {attempts}");
    let q = format!("sweep={id}&treatment=CONTROL&uid=skillshift.gitlab.v1.0&condition=src&rep=0&attempt=0");
    let one = json(http, &format!("/api/attempt?{q}&token={TOKEN}")).await;
    assert_eq!(one["record"]["outcome"], "failure", "{one}");
    assert_eq!(one["trajectory"]["steps"][0]["observation"], "[12] link 'Issue 7'", "{one}");
    assert_eq!(one["trajectory"]["failure_category"], "wrong_answer", "{one}");
    assert_eq!(get(http, &format!("/api/attempt?{q}")).await.0, 401, "the token is needed");
    let (code, body) = get(http, &format!("/api/attempt?sweep=sw-none&treatment=CONTROL&uid=skillshift.gitlab.v1.0&condition=src&rep=0&attempt=0&token={TOKEN}")).await;
    assert_eq!(code, 404, "an unknown sweep: {body}");

    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), worker).await;
    cancel.cancel();
    coordinator.wait().await.expect("the coordinator stops cleanly");
}
