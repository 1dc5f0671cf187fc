//! Readiness as a summary carries it: the `gates` block of
//! `skillshift.summary/1` (docs/formats.md#gates), each gate's verdict, and
//! the gates recommended when none was declared. It names only the shared
//! shapes, so the summary can hold it; the gates module above the summary
//! reads a gates file and evaluates it into these shapes.

use serde::{Deserialize, Serialize};

use crate::shape::Pair;

/// `pass`, `fail` or `inconclusive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One evaluated gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub name: String,
    pub metric: String,
    pub observed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    pub interval: Option<Pair>,
    pub verdict: Verdict,
    pub reason: String,
}

/// A kind of gate a decision needs, listed when none was declared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Missing {
    pub name: String,
    pub metric: String,
    pub bound: String,
}

/// The summary's `gates` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gates {
    /// `pass`, `fail`, `inconclusive` or `not determined`.
    pub readiness: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<GateResult>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<Missing>>,
}

pub const NOT_DETERMINED: &str = "not determined";

/// The gates recommended when none was declared: minimum autonomous success,
/// maximum timeout and invalid rates, a latency and a cost bound.
pub const RECOMMENDED: [(&str, &str, &str); 5] = [
    ("minimum autonomous success", "ledger.rates.attempt_success", "min"),
    ("maximum timeout rate", "ledger.rates.timeout", "max"),
    ("maximum invalid rate", "ledger.rates.invalid_attempt", "max"),
    ("latency bound", "ledger.latency_ms.all.p90", "max"),
    ("cost bound", "cost.total_usd", "max"),
];

impl Gates {
    /// No gate declared: readiness is not determined.
    pub fn not_determined() -> Gates {
        Gates {
            readiness: NOT_DETERMINED.to_string(),
            results: None,
            missing: Some(
                RECOMMENDED
                    .iter()
                    .map(|(n, m, b)| Missing { name: n.to_string(), metric: m.to_string(), bound: b.to_string() })
                    .collect(),
            ),
        }
    }

    /// The exit code readiness maps to: 0 pass (or not determined), 1 fail, 2 inconclusive.
    pub fn exit_code(&self) -> u8 {
        match self.readiness.as_str() {
            "fail" => 1,
            "inconclusive" => 2,
            _ => 0,
        }
    }
}

impl Default for Gates {
    fn default() -> Self {
        Gates::not_determined()
    }
}
