//! Shared by the worker's browser tests: a site manager over a test's own
//! axum pages, task files in a temporary data directory, and a grid runner.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use skillshift_common::skills::{SkillLibrary, Step};
use skillshift_common::task::{Eval, EvalType, ReferenceAnswers, Task};
use skillshift_common::{AttemptSpec, Condition, Site, Uid, Version};
use skillshift_worker::sites::{DirtySites, Endpoint, ResetPolicy, SiteError, SiteManager};

/// Serves `router` on a free loopback port and returns its base URL.
pub async fn serve(router: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(l, router).await;
    });
    format!("http://{addr}")
}

/// One test page set standing in for gitlab v1, with no reset and no login.
pub struct TestSites {
    pub base: String,
    dirty: DirtySites,
}

impl TestSites {
    pub fn new(base: String) -> Self {
        TestSites { base, dirty: DirtySites::new() }
    }
}

impl SiteManager for TestSites {
    fn hosts(&self) -> Vec<(Site, Version)> {
        vec![(Site::Gitlab, Version::V1)]
    }
    fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
        Ok(Endpoint { base_url: self.base.clone(), image: site.image(version), digest: Some("sha256:test".into()) })
    }
    fn reset(&self, _site: Site, _version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
        Box::pin(async { Ok(()) })
    }
    fn login_steps(&self, _site: Site, _version: Version) -> Vec<Step> {
        Vec::new()
    }
    fn policy(&self) -> ResetPolicy {
        ResetPolicy::Never
    }
    fn dirty_sites(&self) -> &DirtySites {
        &self.dirty
    }
}

/// A gitlab.v1 task whose answer must be `answer`.
pub fn answer_task(task_id: u32, start_path: &str, answer: &str) -> Task {
    Task {
        task_id,
        sites: vec![Site::Gitlab.into()],
        require_login: false,
        storage_state: None,
        start_url: format!("__GITLAB__{start_path}"),
        geolocation: None,
        intent_template: "Say {{word}}".into(),
        instantiation_dict: BTreeMap::from([("word".to_string(), serde_json::json!(answer))]),
        intent: format!("Say {answer}"),
        intent_template_id: 0,
        require_reset: false,
        eval: Eval {
            eval_types: vec![EvalType::StringMatch],
            reference_answers: Some(ReferenceAnswers {
                exact_match: Some(answer.into()),
                must_include: None,
                fuzzy_match: None,
            }),
            reference_url: None,
            program_html: vec![],
            ..Eval::default()
        },
        string_note: None,
    }
}

/// Writes `data/tasks/gitlab.v1.json` under `dir`.
pub fn write_tasks(dir: &Path, tasks: &[Task]) {
    std::fs::create_dir_all(dir.join("tasks")).expect("mkdir");
    std::fs::write(dir.join("tasks/gitlab.v1.json"), serde_json::to_string(tasks).expect("json")).expect("write");
}

pub fn spec(uid: Uid, condition: Condition, seed: u64, timeout_ms: u64, skills: Option<SkillLibrary>) -> AttemptSpec {
    AttemptSpec {
        sweep: "test".into(),
        treatment: "example".into(),
        uid,
        condition,
        seed,
        task_timeout_ms: timeout_ms,
        skills,
        ..AttemptSpec::example()
    }
}

/// Checks records against the record format (`docs/formats.md`, records) with the project's own validator.
pub fn validate(records: &[skillshift_common::Record]) {
    let text: String = records.iter().map(|r| serde_json::to_string(r).expect("json") + "\n").collect();
    if let Err(e) = skillshift_analysis::records::read(std::io::Cursor::new(text), Path::new("per_task.jsonl")) {
        panic!("records are not valid per docs/formats.md (records): {e}");
    }
}

pub fn arc<T: SiteManager>(t: T) -> Arc<dyn SiteManager> {
    Arc::new(t)
}

/// The workspace's root directory.
pub fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The WebArena oracle venv (`scripts/webarena-oracle/setup.sh`, built once under
/// `target/webarena-oracle` or `SKILLSHIFT_ORACLE_DIR`): its python and its directory.
/// `None`, saying `what` was skipped, when the package registry cannot be reached outside CI.
pub fn webarena_oracle(what: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    use std::path::PathBuf;
    use std::process::{Command, Stdio};
    let root = workspace_root();
    let dir = std::env::var_os("SKILLSHIFT_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/webarena-oracle"));
    let out = Command::new("bash")
        .arg(root.join("scripts/webarena-oracle/setup.sh"))
        .arg(&dir)
        .stderr(Stdio::inherit())
        .output()
        .expect("running scripts/webarena-oracle/setup.sh");
    match out.status.code() {
        Some(0) => Some((PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string()), dir)),
        Some(3) if std::env::var_os("CI").is_none() => {
            eprintln!("\n!!!! SKIPPED {what}: the package registry cannot be reached, so WebArena's code cannot be installed. Under CI this fails. !!!!\n");
            None
        }
        code => panic!("scripts/webarena-oracle/setup.sh failed (exit {code:?})"),
    }
}
