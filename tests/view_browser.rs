//! The viewer over a real run, in real headless Chromium: a small `skillshift
//! local --out` run (gitlab family 3 under src and tgt-exec: two units), then
//! `skillshift view` on its export, driven from the index to the failing
//! gitlab tgt-exec attempt. It checks the steps against the record, the
//! failure category, the screenshot, and saves the page as `docs/viewer.png`
//! for the README.

#[path = "support/cli.rs"]
mod cli;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;
use skillshift_worker::browser::{BrowserConfig, Driver, Session};

/// Kills the viewer when the test ends, however it ends.
struct Viewer(Child);

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_for(s: &Session, what: &str, js: &str) {
    let end = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if s.eval(js).await.ok() == Some(Value::Bool(true)) {
            return;
        }
        if tokio::time::Instant::now() > end {
            let body = s.eval("document.body.innerText").await.unwrap_or_default();
            panic!("timed out waiting for {what}; the page shows:\n{body}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text(s: &Session, js: &str) -> String {
    s.eval(js).await.expect("eval").as_str().unwrap_or_default().to_string()
}

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("per_task.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_local_run_seen_in_the_viewer_down_to_its_failing_tgt_exec_attempt() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let families = tmp.path().join("small.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [3]}}}"#).expect("families");
    let out = tmp.path().join("run");
    let root = cli::root();
    let local = cli::bin()
        .args(["local", "--workers", "1", "--sites", "gitlab", "--conditions", "src,tgt-exec", "--families"])
        .arg(&families)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run local");
    assert!(local.status.success(), "local failed: {}", String::from_utf8_lossy(&local.stderr));

    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    let failing = recs
        .iter()
        .find(|r| r["uid"] == "skillshift.gitlab.v2.3" && r["condition"] == "tgt-exec")
        .expect("the gitlab tgt-exec record");
    assert_eq!(failing["outcome"], "failure", "the fixture's gitlab family 3 fails under tgt-exec");
    let category = failing["failure_category"].as_str().expect("a failure category").to_string();
    let steps = failing["steps"].as_u64().expect("steps");
    assert!(failing["trajectory"].as_str().is_some_and(|t| out.join(t).is_file()), "{failing}");

    let mut child = cli::bin()
        .arg("view")
        .arg(&out)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start view");
    let stdout = child.stdout.take().expect("stdout");
    let _viewer = Viewer(child);
    let mut url = String::new();
    BufReader::new(stdout).read_line(&mut url).expect("the URL line");
    let url = url.trim_end().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let driver = Driver::new(BrowserConfig { window: (1280, 1500), ..BrowserConfig::default() });
    let s = Session::open(&driver).await.expect("a headless Chromium session");
    s.goto(&url).await.expect("open the viewer");
    wait_for(&s, "the sweeps", "!!document.querySelector('#sweeps .treatment-link')").await;
    s.eval("document.querySelector('#sweeps .treatment-link').click()").await.expect("click the treatment");
    wait_for(&s, "the grid", "document.querySelectorAll('#grid td.cell').length === 18").await;
    let cell = "document.querySelector('td.cell[data-site=\"gitlab\"][data-condition=\"tgt-exec\"]')";
    let shown = text(&s, &format!("{cell}.innerText")).await;
    assert!(shown.contains("0/1 units") && shown.contains(&category), "{shown}");
    s.eval(&format!("{cell}.querySelector('a').click()")).await.expect("click the cell");
    wait_for(&s, "the attempts", "document.querySelectorAll('#attempts tr.attempt').length === 1").await;
    s.eval("document.querySelector('#attempts .attempt-link').click()").await.expect("click the attempt");

    wait_for(&s, "the steps", &format!("document.querySelectorAll('.step').length === {steps}")).await;
    assert_eq!(text(&s, "document.querySelector('.category').textContent").await, category);
    wait_for(
        &s,
        "a screenshot",
        "[...document.querySelectorAll('.shot img')].some(i => i.complete && i.naturalWidth > 0)",
    )
    .await;
    let evidence = text(&s, "document.querySelector('.evidence').innerText").await;
    assert!(evidence.contains("fail"), "{evidence}");

    // Beside each step, the network panel lists the requests the trace holds for that step.
    let trajectory: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join(failing["trajectory"].as_str().unwrap_or_default())).expect("trajectory"),
    )
    .expect("trajectory json");
    let entries = trajectory["network"]["log"]["entries"].as_array().expect("the attempt's network trace");
    let of_step1: Vec<&Value> = entries.iter().filter(|e| e["_step"] == 1).collect();
    assert!(!of_step1.is_empty(), "the agent's first step made requests: {entries:?}");
    let panel = text(&s, "document.querySelector('#step-1 .net').innerText").await;
    let n = of_step1.len();
    assert!(panel.contains(&format!("network: {n} request{}", if n == 1 { "" } else { "s" })), "{panel}");
    for e in &of_step1 {
        let (method, url) = (e["request"]["method"].as_str().unwrap_or(""), e["request"]["url"].as_str().unwrap_or(""));
        assert!(panel.contains(method) && panel.contains(url), "{method} {url} not in\n{panel}");
    }
    let panels = s.eval("document.querySelectorAll('.step .net').length").await.expect("count");
    let with_requests = (1..=steps).filter(|k| entries.iter().any(|e| e["_step"] == *k)).count();
    assert_eq!(panels.as_u64(), Some(steps), "every step has its panel ({with_requests} with requests)");

    let page = s.screenshot().await.expect("page screenshot");

    // The same unit under src and tgt-exec, side by side.
    s.eval("[...document.querySelectorAll('a')].find(a => a.textContent === 'side by side: src vs tgt-exec').click()")
        .await
        .expect("click side by side");
    wait_for(&s, "two sides", "document.querySelectorAll('.pair .side-title').length === 2").await;
    let outcomes =
        text(&s, "[...document.querySelectorAll('.pair .side')].map(d => d.querySelector('p').innerText).join(' | ')")
            .await;
    assert!(
        outcomes.starts_with("success") && outcomes.contains(&format!("| failure · category {category}")),
        "{outcomes}"
    );
    // Neither the page nor a column overflows sideways: long URLs, answers and evidence wrap inside their side.
    let overflow = text(
        &s,
        "(() => { const d = document.documentElement; const sides = [...document.querySelectorAll('.pair .side')]; \
         return JSON.stringify({page: d.scrollWidth - d.clientWidth, \
         sides: sides.map(x => x.scrollWidth - x.clientWidth)}); })()",
    )
    .await;
    assert_eq!(overflow, r#"{"page":0,"sides":[0,0]}"#, "pixels past the right edge");
    std::fs::write(root.join("docs/viewer.png"), &page).expect("write docs/viewer.png");
    s.close().await;
    driver.shutdown().await;
}
