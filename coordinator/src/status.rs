//! What control clients see: a sweep's progress and the worker list. Plain
//! domain types; the gRPC edge converts them.

use serde::Serialize;
use skillshift_common::ids::SweepId;
use skillshift_common::{Condition, Site, Version};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepState {
    Queued,
    Running,
    Done,
    Cancelled,
}

impl SweepState {
    pub fn as_str(self) -> &'static str {
        match self {
            SweepState::Queued => "queued",
            SweepState::Running => "running",
            SweepState::Done => "done",
            SweepState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<SweepState> {
        [SweepState::Queued, SweepState::Running, SweepState::Done, SweepState::Cancelled]
            .into_iter()
            .find(|st| st.as_str() == s)
    }

    /// Done or cancelled: nothing more will be assigned.
    pub fn is_final(self) -> bool {
        matches!(self, SweepState::Done | SweepState::Cancelled)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnitCounts {
    pub total: u64,
    pub done: u64,
    pub running: u64,
    pub queued: u64,
    pub invalid: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AttemptCounts {
    pub total: u64,
    pub error: u64,
}

/// Progress of one (site, condition) cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellProgress {
    pub site: Site,
    pub condition: Condition,
    pub total: u64,
    pub done: u64,
    pub running: u64,
    pub invalid: u64,
    pub successes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepStatus {
    pub id: SweepId,
    pub state: SweepState,
    pub units: UnitCounts,
    pub attempts: AttemptCounts,
    pub cells: Vec<CellProgress>,
    /// Connected workers.
    pub workers: u32,
    pub eta_ms: Option<u64>,
    pub config_digest: String,
    pub created_ms: u64,
    /// LLM cost of the sweep's stored records, in USD.
    pub cost_usd: f64,
    /// Why the sweep stopped on its own (its cost budget ran out).
    pub stopped: Option<String>,
    /// The most frequent reasons attempts errored (`error: error_detail`) and their counts, most frequent
    /// first, at most [`TOP_ERRORS`].
    pub top_errors: Vec<(String, u64)>,
    /// Queued units no connected worker can run (none hosts their site-version, or none is of the sweep's
    /// kind, simulated or real), per site-version; while any are, there is no ETA.
    pub unrunnable: Vec<Unrunnable>,
}

/// Queued units of one site-version that no connected worker can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Unrunnable {
    pub site: Site,
    pub version: Version,
    pub queued: u64,
}

impl SweepStatus {
    /// `no worker can run 12 queued units (gitlab v2)`, or `None` when every queued unit has a worker.
    pub fn unrunnable_line(&self) -> Option<String> {
        if self.unrunnable.is_empty() {
            return None;
        }
        let total: u64 = self.unrunnable.iter().map(|u| u.queued).sum();
        let where_: Vec<String> = self.unrunnable.iter().map(|u| format!("{} {}", u.site, u.version)).collect();
        let noun = if total == 1 { "unit" } else { "units" };
        Some(format!("no worker can run {total} queued {noun} ({})", where_.join(", ")))
    }
}

/// How many error reasons a status lists.
pub const TOP_ERRORS: usize = 5;

impl SweepStatus {
    /// The `skillshift sweep status ID --json` shape (`docs/formats.md`, CLI).
    /// Beside the documented keys: `cost_usd` (spent so far) and, when the
    /// sweep stopped on its own, `stopped` (why).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "id": self.id,
            "state": self.state.as_str(),
            "units": {"total": self.units.total, "done": self.units.done, "running": self.units.running,
                      "queued": self.units.queued, "invalid": self.units.invalid},
            "attempts": {"total": self.attempts.total, "error": self.attempts.error},
            "cost_usd": self.cost_usd,
        });
        if let (Some(reason), Some(obj)) = (&self.stopped, v.as_object_mut()) {
            obj.insert("stopped".into(), reason.clone().into());
        }
        if let (false, Some(obj)) = (self.top_errors.is_empty(), v.as_object_mut()) {
            let errors: Vec<serde_json::Value> = self
                .top_errors
                .iter()
                .map(|(error, count)| serde_json::json!({"error": error, "count": count}))
                .collect();
            obj.insert("top_errors".into(), errors.into());
        }
        if let (false, Some(obj)) = (self.unrunnable.is_empty(), v.as_object_mut()) {
            let rows: Vec<serde_json::Value> = self
                .unrunnable
                .iter()
                .map(|u| serde_json::json!({"site": u.site, "version": u.version, "queued": u.queued}))
                .collect();
            obj.insert("unrunnable".into(), rows.into());
        }
        v
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerInfo {
    pub id: String,
    pub name: String,
    pub hosts: Vec<(Site, Version)>,
    pub slots: u32,
    pub connected: bool,
    pub running: u32,
    pub last_seen_ms_ago: u64,
    /// Why the worker takes no new work (its browser does not start), as it last said.
    pub unavailable: Option<String>,
}
