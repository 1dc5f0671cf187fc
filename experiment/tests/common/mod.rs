//! Shared by the experiment's browser tests on the embedded fixture sites:
//! attempt specs, the example skill library and the record validator.
#![allow(dead_code)]

use std::path::Path;

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
