//! The viewer's `/api/*` over a hand-built export directory, through the
//! router as a server sees it: status codes, the numbers, the filters, the
//! token, and a live source's server-sent events.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use futures::future::BoxFuture;
use serde_json::Value;
use skillshift_analysis::interval::wilson;
use skillshift_common::record::Record;
use skillshift_common::trajectory::Trajectory;
use skillshift_viewer::{router, ExportSource, Source, SourceError, SweepInfo};
use tower::ServiceExt;

fn export() -> (tempfile::TempDir, Arc<dyn Source>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sha = common::write_export(dir.path(), b"\x89PNG fake bytes");
    let src = ExportSource::open(dir.path()).expect("open export");
    (dir, Arc::new(src), sha)
}

async fn get(app: &axum::Router, uri: &str) -> (StatusCode, Vec<u8>) {
    get_with(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

async fn get_with(app: &axum::Router, req: Request<Body>) -> (StatusCode, Vec<u8>) {
    let res = app.clone().oneshot(req).await.expect("response");
    let status = res.status();
    let body = axum::body::to_bytes(res.into_body(), 64 << 20).await.expect("body");
    (status, body.to_vec())
}

async fn json(app: &axum::Router, uri: &str) -> Value {
    let (status, body) = get(app, uri).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("json")
}

fn cell<'a>(grid: &'a Value, site: &str, condition: &str) -> &'a Value {
    grid["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["site"] == site && c["condition"] == condition)
        .expect("cell")
}

#[tokio::test]
async fn sweeps_list_the_export_and_its_treatments() {
    let (_d, src, _) = export();
    let app = router(src, None);
    let v = json(&app, "/api/sweeps").await;
    assert_eq!(v["live"], false);
    assert_eq!(v["sweeps"][0]["id"], common::SWEEP);
    let t: Vec<(&str, u64)> = v["sweeps"][0]["treatments"]
        .as_array()
        .expect("treatments")
        .iter()
        .map(|t| (t["name"].as_str().expect("name"), t["attempts"].as_u64().expect("n")))
        .collect();
    assert_eq!(t, [("ASI", 4), ("CONTROL", 1)]);
}

#[tokio::test]
async fn the_grid_has_18_cells_with_sr_wilson_intervals_counts_and_categories() {
    let (_d, src, _) = export();
    let app = router(src, None);
    let g = json(&app, "/api/grid?sweep=sw-test&treatment=ASI").await;
    assert_eq!(g["cells"].as_array().map(Vec::len), Some(18));
    let src_cell = cell(&g, "gitlab", "src");
    assert_eq!(
        (src_cell["SR"].as_f64(), src_cell["successes"].as_u64(), src_cell["evaluable"].as_u64()),
        (Some(100.0), Some(1), Some(1))
    );
    let tgt = cell(&g, "gitlab", "tgt-exec");
    // Two failures evaluable, the worker-lost unit invalid.
    assert_eq!(tgt["SR"].as_f64(), Some(0.0));
    assert_eq!((tgt["evaluable"].as_u64(), tgt["invalid"].as_u64()), (Some(2), Some(1)));
    assert_eq!(tgt["attempts"]["failure"], 2);
    assert_eq!(tgt["attempts"]["error"], 1);
    let (lo, hi) = wilson(0, 2);
    assert_eq!(tgt["interval"][0].as_f64(), Some(100.0 * lo));
    assert_eq!(tgt["interval"][1].as_f64(), Some(100.0 * hi));
    let cats: Vec<(&str, u64)> = tgt["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .map(|c| (c["category"].as_str().expect("name"), c["count"].as_u64().expect("count")))
        .collect();
    assert_eq!(cats, [("wrong_url", 1), ("skill_failure", 1), ("worker_lost", 1)]);
    assert!(cell(&g, "magento", "src")["SR"].is_null());
    let (status, _) = get(&app, "/api/grid?sweep=sw-test&treatment=NOPE").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = get(&app, "/api/grid?sweep=other&treatment=ASI").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_cells_attempts_filter_by_outcome_and_category() {
    let (_d, src, _) = export();
    let app = router(src, None);
    let base = "/api/attempts?sweep=sw-test&treatment=ASI&site=gitlab&condition=tgt-exec";
    let all = json(&app, base).await;
    assert_eq!(all["total"], 3);
    assert_eq!(all["categories"]["skill_failure"], 1);
    let uids = |v: &Value| -> Vec<String> {
        v["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["uid"].as_str().expect("uid").to_string())
            .collect()
    };
    assert_eq!(uids(&all), ["skillshift.gitlab.v2.3", "skillshift.gitlab.v2.4", "skillshift.gitlab.v2.5"]);
    let failures = json(&app, &format!("{base}&outcome=failure")).await;
    assert_eq!(uids(&failures), ["skillshift.gitlab.v2.3", "skillshift.gitlab.v2.4"]);
    let skill = json(&app, &format!("{base}&category=skill_failure")).await;
    assert_eq!(uids(&skill), ["skillshift.gitlab.v2.3"]);
    assert_eq!(skill["attempts"][0]["trajectory"], true);
    let lost = json(&app, &format!("{base}&outcome=error&category=worker_lost")).await;
    assert_eq!(uids(&lost), ["skillshift.gitlab.v2.5"]);
    assert_eq!(lost["attempts"][0]["trajectory"], false);
    let (status, body) = get(&app, &format!("{base}&outcome=maybe")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("outcome 'maybe'"));
    let (status, _) = get(&app, "/api/attempts?sweep=sw-test&treatment=ASI&site=gitlab&condition=sideways").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_attempt_carries_its_steps_marks_failing_substep_evidence_and_screenshot() {
    let (_d, src, sha) = export();
    let app = router(src, None);
    let a = json(
        &app,
        "/api/attempt?sweep=sw-test&treatment=ASI&uid=skillshift.gitlab.v2.3&condition=tgt-exec&rep=0&attempt=0",
    )
    .await;
    assert_eq!(a["category"], "skill_failure");
    let t: Trajectory = serde_json::from_value(a["trajectory"].clone()).expect("trajectory");
    assert_eq!(t.steps.len() as u64, a["record"]["steps"].as_u64().expect("steps"));
    // Step 1's relabel marks the line showing the new name; step 2 has no perturbation.
    assert_eq!(a["marks"], serde_json::json!([[1], []]));
    assert_eq!(a["failed_substep"], serde_json::json!([null, 1]));
    assert_eq!(t.score.as_ref().map(|s| s.evaluators[0].got.as_str()), Some("no such issue"));
    // The network panel's rows, per step; the trace itself (headers, bodies) is not sent to the page.
    assert!(t.network.is_none() && a["trajectory"].get("network").is_none(), "{}", a["trajectory"]);
    let net = &a["network"];
    assert_eq!((net["entries"].as_u64(), net["dropped"].as_u64()), (Some(4), Some(3)));
    assert_eq!(net["before"]["requests"][0]["url"], "http://127.0.0.1:9/");
    assert_eq!(net["steps"].as_array().map(Vec::len), Some(2), "one row list per step");
    let urls = |i: usize| -> Vec<String> {
        net["steps"][i]["requests"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["url"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(urls(0), ["http://127.0.0.1:9/project/tickets", "http://127.0.0.1:9/static/app.css"]);
    let post = &net["steps"][1]["requests"][0];
    assert_eq!(
        (post["method"].as_str(), post["status"].as_i64(), post["tab"].as_u64()),
        (Some("POST"), Some(422), Some(1))
    );
    assert_eq!((net["steps"][0]["writes"].as_u64(), net["steps"][1]["writes"].as_u64()), (Some(0), Some(1)));
    assert!(!a.to_string().contains("a body the panel never shows") && !a.to_string().contains("sid=1"));
    let shot = t.steps[1].screenshot.as_deref().expect("screenshot");
    assert_eq!(shot, format!("screenshots/{sha}.png"));
    let (status, png) = get(&app, &format!("/api/screenshot?sweep=sw-test&sha={sha}")).await;
    assert_eq!((status, png.as_slice()), (StatusCode::OK, b"\x89PNG fake bytes".as_slice()));
    let (status, _) = get(&app, "/api/screenshot?sweep=sw-test&sha=..%2F..%2Fper_task.jsonl").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let none = json(
        &app,
        "/api/attempt?sweep=sw-test&treatment=ASI&uid=skillshift.gitlab.v2.5&condition=tgt-exec&rep=0&attempt=0",
    )
    .await;
    assert!(none["trajectory"].is_null());
    let (status, _) = get(
        &app,
        "/api/attempt?sweep=sw-test&treatment=ASI&uid=skillshift.gitlab.v2.9&condition=tgt-exec&rep=0&attempt=0",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn one_unit_side_by_side_src_against_tgt_exec() {
    let (_d, src, _) = export();
    let app = router(src, None);
    let p = json(&app, "/api/pair?sweep=sw-test&site=gitlab&task=3&rep=0&lt=ASI&lc=src&rt=ASI&rc=tgt-exec").await;
    let sides = p["sides"].as_array().expect("sides");
    assert_eq!(sides[0]["view"]["record"]["uid"], "skillshift.gitlab.v1.3");
    assert_eq!(sides[0]["view"]["record"]["outcome"], "success");
    assert_eq!(sides[1]["view"]["record"]["uid"], "skillshift.gitlab.v2.3");
    assert_eq!(sides[1]["view"]["category"], "skill_failure");
    // Two treatments, one condition: CONTROL has only src.
    let p = json(&app, "/api/pair?sweep=sw-test&site=gitlab&task=3&rep=0&lt=ASI&lc=src&rt=CONTROL&rc=tgt-exec").await;
    assert!(p["sides"][1]["view"]["missing"].as_str().is_some_and(|m| m.contains("CONTROL")));
}

#[tokio::test]
async fn a_trajectory_path_leaving_the_export_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write_export(dir.path(), b"png");
    let path = dir.path().join("per_task.jsonl");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("trajectories/ASI/skillshift.gitlab.v2.4.tgt-exec.0.0.json", "../secret.json"))
        .expect("write");
    let app = router(Arc::new(ExportSource::open(dir.path()).expect("open")), None);
    let (status, body) = get(
        &app,
        "/api/attempt?sweep=sw-test&treatment=ASI&uid=skillshift.gitlab.v2.4&condition=tgt-exec&rep=0&attempt=0",
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(String::from_utf8_lossy(&body).contains("not a relative .json path"));
}

#[test]
fn a_directory_without_records_is_not_an_export() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = ExportSource::open(dir.path()).err().expect("refused");
    assert!(e.to_string().contains("not a directory holding per_task.jsonl"), "{e}");
    std::fs::write(dir.path().join("per_task.jsonl"), "{\"uid\": 3}\n").expect("write");
    let e = ExportSource::open(dir.path()).err().expect("refused");
    assert!(e.to_string().contains("per_task.jsonl:1:"), "{e}");
}

#[tokio::test]
async fn with_a_token_every_page_and_api_needs_it_but_healthz() {
    let (_d, src, _) = export();
    let app = router(src, Some("s3cret"));
    for uri in ["/", "/app.js", "/api/sweeps", "/api/grid?sweep=sw-test&treatment=ASI", "/api/events"] {
        let (status, _) = get(&app, uri).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri}");
    }
    assert_eq!(get(&app, "/healthz").await.0, StatusCode::OK);
    assert_eq!(get(&app, "/api/sweeps?token=s3cret").await.0, StatusCode::OK);
    assert_eq!(get(&app, "/api/sweeps?token=wrong").await.0, StatusCode::UNAUTHORIZED);
    let req = Request::get("/api/sweeps").header(header::AUTHORIZATION, "Bearer s3cret").body(Body::empty());
    assert_eq!(get_with(&app, req.expect("request")).await.0, StatusCode::OK);
    assert_eq!(
        skillshift_viewer::url("127.0.0.1:80".parse().expect("addr"), Some("a b")),
        "http://127.0.0.1:80/?token=a%20b"
    );
}

#[tokio::test]
async fn the_page_is_self_contained_and_renders_text_only() {
    let (_d, src, _) = export();
    let app = router(src, None);
    let (status, html) = get(&app, "/").await;
    assert_eq!(status, StatusCode::OK);
    let html = String::from_utf8(html).expect("utf8");
    let (_, js) = get(&app, "/app.js").await;
    let js = String::from_utf8(js).expect("utf8");
    for text in [&html, &js] {
        assert!(!text.contains("http://") && !text.contains("https://"), "no external resource");
        assert!(
            !text.contains("innerHTML") && !text.contains("insertAdjacentHTML") && !text.contains("document.write")
        );
    }
    // The export's hostile text stays data in the JSON, for textContent to show.
    let a = json(
        &app,
        "/api/attempt?sweep=sw-test&treatment=ASI&uid=skillshift.gitlab.v2.3&condition=tgt-exec&rep=0&attempt=0",
    )
    .await;
    assert_eq!(a["trajectory"]["steps"][0]["llm"]["reply"], "I will click <script>alert(1)</script> Tickets");
}

/// A live source: one sweep whose changes the test announces.
struct Live {
    tx: tokio::sync::broadcast::Sender<String>,
}

impl Source for Live {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<SweepInfo>, SourceError>> {
        Box::pin(async { Ok(vec![SweepInfo { id: "sw-live".into(), live: true, state: Some("running".into()) }]) })
    }
    fn records<'a>(&'a self, _sweep: &'a str) -> BoxFuture<'a, Result<Arc<Vec<Record>>, SourceError>> {
        Box::pin(async { Ok(Arc::new(Vec::new())) })
    }
    fn trajectory<'a>(&'a self, _: &'a str, _: &'a Record) -> BoxFuture<'a, Result<Option<Trajectory>, SourceError>> {
        Box::pin(async { Ok(None) })
    }
    fn screenshot<'a>(&'a self, _: &'a str, sha: &'a str) -> BoxFuture<'a, Result<Vec<u8>, SourceError>> {
        Box::pin(async move { Err(SourceError::NotFound(format!("no screenshot {sha}"))) })
    }
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.tx.subscribe())
    }
}

#[tokio::test]
async fn a_live_source_pushes_sweep_changes_as_server_sent_events_and_an_export_does_not() {
    let (_d, src, _) = export();
    assert_eq!(get(&router(src, None), "/api/events").await.0, StatusCode::NO_CONTENT);

    let (tx, _) = tokio::sync::broadcast::channel(16);
    let app = router(Arc::new(Live { tx: tx.clone() }), None);
    assert_eq!(json(&app, "/api/sweeps").await["live"], true);
    let res = app.clone().oneshot(Request::get("/api/events").body(Body::empty()).expect("req")).await.expect("res");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = res.into_body().into_data_stream();
    tx.send("sw-live".into()).expect("send");
    let chunk = tokio::time::timeout(std::time::Duration::from_secs(5), futures::StreamExt::next(&mut body))
        .await
        .expect("an event within 5 s")
        .expect("a chunk")
        .expect("bytes");
    assert_eq!(String::from_utf8_lossy(&chunk), "event: sweep\ndata: sw-live\n\n");
}

/// A source holding one attempt whose trajectory is `steps` steps of `obs` bytes of observation each.
struct Big {
    record: Record,
    steps: usize,
    obs: usize,
}

impl Big {
    fn new(steps: usize, obs: usize) -> Big {
        let uid: skillshift_common::Uid = "skillshift.gitlab.v1.3".parse().expect("uid");
        let mut record = Record::new(uid, skillshift_common::Condition::Src);
        record.success = Some(false);
        record.steps = Some(steps as u32);
        record.treatment = Some("ASI".into());
        record.sweep = Some("sw-big".into());
        record.trajectory = Some("trajectories/ASI/x.json".into());
        Big { record, steps, obs }
    }
}

impl Source for Big {
    fn sweeps(&self) -> BoxFuture<'_, Result<Vec<SweepInfo>, SourceError>> {
        Box::pin(async { Ok(vec![SweepInfo { id: "sw-big".into(), live: false, state: None }]) })
    }
    fn records<'a>(&'a self, _sweep: &'a str) -> BoxFuture<'a, Result<Arc<Vec<Record>>, SourceError>> {
        Box::pin(async { Ok(Arc::new(vec![self.record.clone()])) })
    }
    fn trajectory<'a>(&'a self, _: &'a str, r: &'a Record) -> BoxFuture<'a, Result<Option<Trajectory>, SourceError>> {
        Box::pin(async move {
            let mut t: Trajectory = serde_json::from_value(serde_json::json!({
                "schema": "skillshift.trajectory/1",
                "key": {"sweep": "sw-big", "treatment": "ASI", "uid": r.uid, "condition": "src", "rep": 0, "attempt": 0},
                "intent": "i", "start_url": "http://x/", "agent": "skills", "model": null, "steps": [],
                "score": null, "outcome": "failure", "failure_category": null, "error": null
            }))
            .expect("trajectory");
            for i in 0..self.steps {
                t.steps.push(
                    serde_json::from_value(serde_json::json!({
                        "step": i + 1, "url": "http://x/", "title": "", "observation": "o".repeat(self.obs),
                        "action": "scroll [down]", "skill": null, "last_action_error": null, "llm": null,
                        "duration_ms": 1, "screenshot": null
                    }))
                    .expect("step"),
                );
            }
            Ok(Some(t))
        })
    }
    fn screenshot<'a>(&'a self, _: &'a str, sha: &'a str) -> BoxFuture<'a, Result<Vec<u8>, SourceError>> {
        Box::pin(async move { Err(SourceError::NotFound(format!("no screenshot {sha}"))) })
    }
}

#[tokio::test]
async fn a_long_trajectory_comes_in_pages_of_at_most_4_mib_with_each_string_clipped() {
    // 100 steps of 200 kB observations: 20 MB of steps, which used to come back whole.
    let app = router(Arc::new(Big::new(100, 200_000)), None);
    let base = "/api/attempt?sweep=sw-big&treatment=ASI&uid=skillshift.gitlab.v1.3&condition=src&rep=0&attempt=0";
    let (mut from, mut seen, mut pages) = (0u64, 0u64, 0);
    loop {
        let (status, body) = get(&app, &format!("{base}&from={from}")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.len() <= skillshift_viewer::api::MAX_PAGE_BYTES + (64 << 10), "a page of {} bytes", body.len());
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["steps_total"], 100);
        assert_eq!(v["steps_from"], from);
        let steps = v["trajectory"]["steps"].as_array().expect("steps");
        assert_eq!(steps[0]["step"], from + 1, "the page starts where it says");
        assert_eq!(v["marks"].as_array().map(Vec::len), Some(steps.len()));
        seen += steps.len() as u64;
        pages += 1;
        match v["steps_next"].as_u64() {
            Some(next) => from = next,
            None => break,
        }
    }
    assert_eq!(seen, 100, "every step once");
    assert!(pages >= 5, "{pages} pages");

    // One observation of 1 MB is cut at 256 KiB, saying so.
    let app = router(Arc::new(Big::new(1, 1 << 20)), None);
    let v = json(&app, base).await;
    let obs = v["trajectory"]["steps"][0]["observation"].as_str().expect("observation");
    assert!(obs.len() < (256 << 10) + 200, "{} bytes", obs.len());
    assert!(
        obs.ends_with("[786432 more bytes not shown: the viewer shows 262144 bytes of one field]"),
        "{}",
        &obs[obs.len() - 100..]
    );
}
