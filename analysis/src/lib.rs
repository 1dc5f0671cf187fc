//! The analysis: from `per_task.jsonl` to the Table 1 shape and the decisions
//! made from it. Pure functions over records; no I/O beyond reading and
//! writing files. Used by the binary and the experiment crate, never by the
//! worker or the coordinator.
//!
//! * [`shape`]: the shared shapes, a value per website, per condition and per cell, the ten numbers and the macro means; a leaf.
//! * [`records`]: reading and validating record files, line by line (docs/formats.md#records).
//! * [`outcome`]: the unit outcome rule, evaluable records, invalid units (docs/formats.md#from-records-to-numbers).
//! * [`cells`]: per-cell SR, AS, ASC, SFR and invocation counts, and [`cells::analyse`], everything one treatment's records hold.
//! * [`ledger`]: attempts, units, rates and latency beside the rates (docs/formats.md#ledger).
//! * [`usage`]: LLM calls, tokens and cost by population, and the summary's `cost` block (docs/formats.md#cost).
//! * [`failures`]: non-success attempts by failure category per cell, with representative trajectories.
//! * [`interval`]: Wilson and stratified Wilson 95% intervals beside SR and the ledger rates (docs/formats.md#intervals).
//! * [`reliability`]: pass@k and pass^k over repetitions.
//! * [`summary`]: the `skillshift.summary/1` object (docs/formats.md#summary).
//! * [`schema`]: every key a summary may hold, for the leaderboard and for gate paths.
//! * [`readiness`]: the summary's `gates` block: readiness, verdicts, the recommended gates.
//! * [`gates`]: readiness gates, `skillshift.gates/1`: pass, fail or inconclusive (docs/formats.md#gates).
//! * [`style`]: the stylesheet and the low-invocation flag the report and the leaderboard share.
//! * [`report`]: the summary as text, Markdown, JSON or HTML.
//! * [`compare`]: two treatments or two runs, deltas, intervals and a verdict (docs/formats.md#contract).
//! * [`calibration`]: the calibration set, the anchor and the gate (docs/formats.md#calibration).
//! * [`leaderboard`]: entry validation and the static page (docs/formats.md#leaderboard).
//! * [`table1`]: the paper's Table 1 transcription and its identity check.
//! * [`synth`]: synthetic record grids for benchmarks and property tests.
//!
//! The modules form layers, each naming only modules below it: the leaves
//! (`shape`, `records`, `schema`, `style`, `readiness`); what is computed from
//! records (`outcome`, `usage`, `failures`, `ledger`, `reliability`); `cells`,
//! whose `analyse` gathers them, and `interval` over its cells; `summary`,
//! whose `summarise` assembles the summary object; `gates`, evaluated over a
//! summary; and the users at the top (`report`, `compare`, `calibration`,
//! `leaderboard`, `table1`).
#![warn(clippy::disallowed_methods)] // every spawn goes through the task centre (clippy.toml)

pub mod calibration;
pub mod cells;
pub mod compare;
pub mod failures;
pub mod gates;
pub mod interval;
pub mod leaderboard;
pub mod ledger;
pub mod outcome;
pub mod readiness;
pub mod records;
pub mod reliability;
pub mod report;
pub mod schema;
pub mod shape;
pub mod style;
pub mod summary;
pub mod synth;
pub mod table1;
pub mod usage;
