//! The example library's WordPress skills: one per intent template, written
//! against v1 (the classic editor) as a skill-learning method would have
//! recorded them. Each is the template's v1 reference solution with
//! `{{param}}` placeholders.

use skillshift_common::skills::Skill;
use skillshift_common::{Site, Version};

use super::tasks::{solution, TEMPLATES};
use crate::kit::tasks::{placeholders, skill};

/// One skill per WordPress intent template (v1).
pub fn skills() -> Vec<Skill> {
    TEMPLATES.iter().map(|t| skill(Site::Wordpress, t, solution(t.id, Version::V1, &placeholders(t.params)))).collect()
}
