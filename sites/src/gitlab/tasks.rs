//! Task generation (placeholder while templates are written).
use crate::GeneratedTask;
use skillshift_common::skills::Skill;
use skillshift_common::Version;
pub fn generate(_version: Version) -> Vec<GeneratedTask> {
    Vec::new()
}
pub fn skills() -> Vec<Skill> {
    Vec::new()
}
