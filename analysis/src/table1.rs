//! The paper's Table 1 as printed, `data/paper/table1.json` (docs/formats.md#leaderboard): one
//! row per (method, metric) with its ten numbers. Only rows the seeds print
//! are transcribed (AWM's SR); the others are absent, never invented.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::shape::{PerCondition, PerSite};
use skillshift_common::ids::Site;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub method: String,
    pub metric: String,
    pub websites: PerSite<f64>,
    pub conditions: PerCondition<f64>,
    pub overall: f64,
}

impl Row {
    /// Unweighted mean of the three websites: the paper's O/A.
    pub fn macro_websites(&self) -> f64 {
        Site::ALL.iter().map(|&s| *self.websites.get(s)).sum::<f64>() / 3.0
    }

    pub fn macro_conditions(&self) -> f64 {
        skillshift_common::ids::Condition::ALL.iter().map(|&c| *self.conditions.get(c)).sum::<f64>() / 6.0
    }

    /// What weighting websites by task count would give instead (wrong by design).
    pub fn task_weighted(&self) -> f64 {
        let total: usize = Site::ALL.iter().map(|s| s.n_tasks()).sum();
        Site::ALL.iter().map(|&s| *self.websites.get(s) * s.n_tasks() as f64).sum::<f64>() / total as f64
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Table1Error {
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
    #[error("{0}: {why}", why = skillshift_common::text::json_error(.1))]
    Parse(String, serde_json::Error),
}

pub fn load(path: &Path) -> Result<Vec<Row>, Table1Error> {
    let text = skillshift_common::bounded::read_to_string(path, skillshift_common::bounded::MAX_FILE_BYTES)
        .map_err(|e| Table1Error::Read(path.display().to_string(), e))?;
    serde_json::from_str(&text).map_err(|e| Table1Error::Parse(path.display().to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row> {
        load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/paper/table1.json")).unwrap()
    }

    #[test]
    fn macro_average_reproduces_the_printed_overall_and_task_weighting_does_not() {
        let awm = rows().into_iter().find(|r| r.method == "AWM" && r.metric == "SR").unwrap();
        assert_eq!(format!("{:.2}", awm.macro_websites()), "35.29");
        assert_eq!(awm.overall, 35.29);
        assert_eq!(format!("{:.2}", awm.task_weighted()), "30.21");
    }

    #[test]
    fn identity_holds_on_every_transcribed_row() {
        let rows = rows();
        assert!(!rows.is_empty());
        for r in rows {
            assert!((r.macro_websites() - r.overall).abs() <= 0.01, "{} {}: websites", r.method, r.metric);
            assert!((r.macro_conditions() - r.overall).abs() <= 0.01, "{} {}: conditions", r.method, r.metric);
        }
    }
}
