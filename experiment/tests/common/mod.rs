//! Shared by the experiment's tests: attempt specs, the example skill library, the record validator,
//! and an in-process coordinator over real gRPC with its sled store on disk.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use skillshift_coordinator::server::{self, Config};
use skillshift_worker::CancellationToken;

use skillshift_common::skills::{SkillLibrary, SKILLS_SCHEMA};
use skillshift_common::{AttemptSpec, Condition, Site, Uid};

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

/// The example library of one site, as the fixture sites define it.
pub fn example_library(site: Site) -> SkillLibrary {
    SkillLibrary { schema: SKILLS_SCHEMA.into(), method: "example".into(), skills: skillshift_sites::skills(site) }
}

/// Checks records against the record format (`docs/formats.md`, records) with the project's own validator.
pub fn validate(records: &[skillshift_common::Record]) {
    let text: String = records.iter().map(|r| serde_json::to_string(r).expect("json") + "\n").collect();
    if let Err(e) = skillshift_analysis::records::read(std::io::Cursor::new(text), Path::new("per_task.jsonl")) {
        panic!("records are not valid per docs/formats.md (records): {e}");
    }
}

/// A coordinator on a free port of 127.0.0.1 (gRPC only), its store under `dir/coordinator`, taking `token`;
/// it stops when `cancel` fires.
pub async fn coordinator(dir: &Path, token: &str, cancel: CancellationToken) -> server::Running {
    let config = Config {
        listen: "127.0.0.1:0".parse().expect("addr"),
        http: None,
        data_dir: dir.join("coordinator"),
        token: Some(token.into()),
        tls: None,
        lease_ttl: Duration::from_secs(30),
        limits: Default::default(),
        llm_budget: Default::default(),
    };
    server::start(config, cancel).await.expect("the coordinator starts")
}
