//! `skillshift report`: from a records file to a summary and its rendering.
//!
//! [`build`] reads and validates the file, selects the treatment and computes
//! the [`Summary`]. [`document`] lays the summary out
//! once as a [`Doc`] (titled tables and notes); [`text`], [`markdown`] and
//! [`html`] render that one layout, so the three formats never disagree.

pub mod decision;
pub mod html;
pub mod markdown;
#[cfg(test)]
mod properties;
pub mod text;

use std::path::{Path, PathBuf};

use crate::cells::analyse;
use crate::failures::{self, FailureCategories};
use crate::gates::{evaluate, GateSet};
use crate::interval::METHODS_NOTE;
use crate::records::{read_file, RecordsError};
use crate::shape::{Pair, PerCondition, PerSite, TenNumbers};
use crate::style::{FLAG, LOW_INVOCATIONS};
use crate::summary::{summarise, Summary, SummaryError, METRICS};
use crate::usage::Populations;
use decision::{gates_blocks, interval, interval_pct, usage_blocks};
use skillshift_common::ids::{Condition, Site};

/// Said first in a report built from records a `--simulate` worker made up.
pub const SIMULATED_NOTE: &str = "SIMULATED: some of these records were made up by a --simulate worker; they \
    measure nothing, and the summary is marked \"simulated\": true (no leaderboard admits it).";

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Records(#[from] RecordsError),
    #[error("{path}: {source}")]
    Summary { path: PathBuf, source: SummaryError },
}

/// A computed report: the summary and what the reader is told beside it.
#[derive(Debug, Clone)]
pub struct Report {
    pub path: PathBuf,
    pub records: usize,
    pub summary: Summary,
    pub notes: Vec<String>,
    /// LLM use by population, behind the summary's `cost` block.
    pub usage: Populations,
}

impl Report {
    /// Evaluate a gates file against the summary; its readiness replaces "not determined".
    pub fn apply_gates(&mut self, set: &GateSet) {
        self.summary.gates = Some(evaluate(set, &self.summary, &self.usage));
    }

    /// The exit code the gates map to: 0 all pass (or none declared), 1 any fails, 2 some inconclusive.
    pub fn exit_code(&self) -> u8 {
        self.summary.gates.as_ref().map_or(0, |g| g.exit_code())
    }
}

/// Read `path`, pick the treatment and summarise it.
pub fn build(path: &Path, treatment: Option<&str>, allow_partial: bool) -> Result<Report, ReportError> {
    let set = read_file(path)?;
    let t = set.select(treatment)?;
    let analysis = analyse(t);
    let built = summarise(&analysis, allow_partial)
        .map_err(|source| ReportError::Summary { path: path.to_path_buf(), source })?;
    Ok(Report {
        path: path.to_path_buf(),
        records: t.rows.len(),
        summary: built.summary,
        notes: built.notes,
        usage: analysis.usage,
    })
}

/// One table cell: its text and an optional hover text.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub hover: Option<String>,
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Cell { text, hover: None }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Cell { text: text.to_string(), hover: None }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(String),
    Table { header: Vec<String>, rows: Vec<Vec<Cell>> },
    Note(String),
}

/// A rendered-format-independent layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub title: String,
    pub blocks: Vec<Block>,
}

/// Two decimals, `--` for null.
pub fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_string(), |v| format!("{v:.2}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_string(), |v| format!("{:.2}%", 100.0 * v))
}

/// An SFR value with the low-invocation flag and the count on hover.
pub fn sfr_cell(v: Option<f64>, calls: Option<u64>) -> Cell {
    let Some(v) = v else { return "--".into() };
    match calls {
        Some(n) if n < LOW_INVOCATIONS => {
            Cell { text: format!("{v:.2} {FLAG}"), hover: Some(format!("{n} skill invocations")) }
        }
        Some(n) => Cell { text: format!("{v:.2}"), hover: Some(format!("{n} skill invocations")) },
        None => Cell { text: format!("{v:.2} {FLAG}"), hover: Some("count unknown".to_string()) },
    }
}

const TOP_HEADER: [&str; 11] =
    ["", "GitLab", "Magento", "WordPress", "Src", "Src-Perc", "Src-Exec", "Tgt", "Tgt-Perc", "Tgt-Exec", "O/A"];

/// The ten intervals in table order: three websites, six conditions, overall.
fn ten_intervals(
    w: &PerSite<Option<Pair>>,
    c: &PerCondition<Option<Pair>>,
    overall: Option<Pair>,
) -> [Option<Pair>; 10] {
    [w.gitlab, w.magento, w.wordpress, c.src, c.src_perc, c.src_exec, c.tgt, c.tgt_perc, c.tgt_exec, overall]
}

fn ten_row(label: &str, t: Option<&TenNumbers>) -> Vec<Cell> {
    let mut row: Vec<Cell> = vec![label.into()];
    match t {
        Some(t) => row.extend(t.values().iter().map(|v| Cell::from(num(*v)))),
        None => row.extend((0..10).map(|_| Cell::from("--"))),
    }
    row
}

/// Lay a report out once, for every format.
pub fn document(r: &Report) -> Doc {
    let s = &r.summary;
    let mut blocks = Vec::new();
    let calls = s.n.skill_calls.as_ref();
    if s.simulated == Some(true) {
        blocks.push(Block::Note(SIMULATED_NOTE.to_string()));
    }
    blocks.push(Block::Heading("Table 1 shape: ten numbers per metric (SR, SFR in %; AS, ASC per task)".into()));
    let sr_intervals = s.intervals.as_ref().map(|i| &i.sr);
    let mut rows = vec![ten_row("SR", s.metrics.sr.as_ref())];
    if let Some(i) = sr_intervals {
        let ten = ten_intervals(&i.websites, &i.conditions, i.overall);
        for (label, end) in [("SR 95% lo", 0), ("SR 95% hi", 1)] {
            let mut row: Vec<Cell> = vec![label.into()];
            row.extend(ten.iter().map(|p| Cell::from(num(p.map(|p| p[end])))));
            rows.push(row);
        }
    }
    rows.extend([ten_row("AS", s.metrics.as_.as_ref()), ten_row("ASC", s.metrics.asc.as_ref())]);
    let mut sfr: Vec<Cell> = vec!["SFR".into()];
    let counts: Option<[u64; 10]> = calls.map(|c| {
        let w = &c.websites;
        let k = &c.conditions;
        [w.gitlab, w.magento, w.wordpress, k.src, k.src_perc, k.src_exec, k.tgt, k.tgt_perc, k.tgt_exec, c.overall]
    });
    match &s.metrics.sfr {
        Some(t) => sfr.extend(t.values().iter().enumerate().map(|(i, v)| sfr_cell(*v, counts.map(|c| c[i])))),
        None => sfr.extend((0..10).map(|_| Cell::from("--"))),
    }
    rows.push(sfr);
    if let Some(c) = counts {
        let mut row: Vec<Cell> = vec!["skill calls".into()];
        row.extend(c.iter().map(|n| Cell::from(n.to_string())));
        rows.push(row);
    }
    blocks.push(Block::Table { header: TOP_HEADER.iter().map(|h| h.to_string()).collect(), rows });
    let t = &s.n.tasks;
    blocks.push(Block::Note(format!(
        "n: tasks gitlab {}, magento {}, wordpress {}; reps {}. Marginals are unweighted means of cells (macro), \
         never weighted by task count. {FLAG} marks an SFR value resting on fewer than {LOW_INVOCATIONS} skill \
         invocations (unstable).",
        t.gitlab, t.magento, t.wordpress, s.n.reps
    )));
    if s.intervals.is_some() {
        blocks.push(Block::Note(METHODS_NOTE.to_string()));
    }
    if let Some(cells) = &s.cells {
        let header: Vec<String> =
            std::iter::once(String::new()).chain(Condition::ALL.iter().map(|c| c.to_string())).collect();
        for (i, name) in METRICS.iter().enumerate() {
            let caption = match *name {
                "SR" => "SR by cell (successes/evaluable)",
                "AS" => "AS by cell (mean steps over every evaluable record)",
                "ASC" => "ASC by cell (mean skill calls)",
                _ => "SFR by cell (failed/invoked skills)",
            };
            blocks.push(Block::Heading(caption.into()));
            let rows = Site::ALL
                .iter()
                .map(|&site| {
                    let mut row: Vec<Cell> = vec![site.to_string().into()];
                    for &c in Condition::ALL {
                        let cell = cells.get(site).get(c);
                        row.push(match i {
                            0 => {
                                let ok = cell.sr.map_or(0.0, |v| v * f64::from(cell.evaluable) / 100.0).round();
                                format!("{} ({ok}/{})", num(cell.sr), cell.evaluable).into()
                            }
                            1 => num(cell.as_).into(),
                            2 => num(cell.asc).into(),
                            _ => {
                                let mut c = sfr_cell(cell.sfr, Some(cell.skill_calls));
                                let failed = cell.sfr.map_or(0.0, |v| v * cell.skill_calls as f64 / 100.0).round();
                                if cell.sfr.is_some() {
                                    c.text = format!("{} ({failed}/{})", c.text, cell.skill_calls);
                                }
                                c
                            }
                        });
                    }
                    row
                })
                .collect();
            blocks.push(Block::Table { header: header.clone(), rows });
            if let (0, Some(i)) = (i, sr_intervals) {
                blocks.push(Block::Heading("SR 95% Wilson interval by cell".into()));
                let rows = Site::ALL
                    .iter()
                    .map(|&site| {
                        let mut row: Vec<Cell> = vec![site.to_string().into()];
                        row.extend(Condition::ALL.iter().map(|&c| Cell::from(interval(*i.cells.get(site).get(c)))));
                        row
                    })
                    .collect();
                blocks.push(Block::Table { header: header.clone(), rows });
            }
        }
        let invalid: u32 = Site::ALL
            .iter()
            .flat_map(|&s| Condition::ALL.iter().map(move |&c| (s, c)))
            .map(|(s, c)| cells.get(s).get(c).invalid)
            .sum();
        if invalid > 0 {
            blocks.push(Block::Heading(
                "Invalid units by cell (every attempt an error; excluded from every rate)".into(),
            ));
            let rows = Site::ALL
                .iter()
                .map(|&site| {
                    let mut row: Vec<Cell> = vec![site.to_string().into()];
                    row.extend(Condition::ALL.iter().map(|&c| Cell::from(cells.get(site).get(c).invalid.to_string())));
                    row
                })
                .collect();
            blocks.push(Block::Table { header, rows });
        }
    }
    if let Some(f) = &s.failure_categories {
        blocks.extend(failure_blocks(f));
    }
    if let Some(l) = &s.ledger {
        blocks.push(Block::Heading("Outcome ledger".into()));
        let a = &l.attempts;
        let u = &l.units;
        blocks.push(Block::Note(format!(
            "attempts: {} all = {} success + {} failure + {} timeout + {} error ({} evaluable); units: {} all, {} invalid",
            a.all, a.success, a.failure, a.timeout, a.error, a.evaluable, u.all, u.invalid
        )));
        let rt = &l.rates;
        let li = s.intervals.as_ref().map(|i| &i.ledger);
        let row = |label: &str, num_: u64, den: u64, what: &str, rate: Option<f64>, ci: Option<Pair>| -> Vec<Cell> {
            vec![
                label.into(),
                num_.to_string().into(),
                format!("{den} {what}").into(),
                pct(rate).into(),
                interval_pct(ci).into(),
            ]
        };
        let rows = vec![
            row(
                "attempt success (attempt-level)",
                a.success,
                a.evaluable,
                "evaluable attempts",
                rt.attempt_success,
                li.and_then(|i| i.attempt_success),
            ),
            row("timeouts", a.timeout, a.evaluable, "evaluable attempts", rt.timeout, li.and_then(|i| i.timeout)),
            row("invalid attempts", a.error, a.all, "attempts", rt.invalid_attempt, li.and_then(|i| i.invalid_attempt)),
            row(
                "first-attempt completion (unit-level)",
                u.first_attempt_success,
                u.all,
                "units",
                rt.first_attempt_completion,
                li.and_then(|i| i.first_attempt_completion),
            ),
            row(
                "eventual completion",
                u.eventual_success,
                u.all - u.invalid,
                "valid units",
                rt.eventual_completion,
                li.and_then(|i| i.eventual_completion),
            ),
            row(
                "operational delivery",
                u.eventual_success,
                u.all,
                "units",
                rt.operational_delivery,
                li.and_then(|i| i.operational_delivery),
            ),
            row("retry rate (attempts per unit, not a proportion)", a.all - u.all, u.all, "units", rt.retry_rate, None),
        ];
        blocks.push(Block::Table {
            header: ["rate", "count", "of", "value", "95% Wilson interval"].iter().map(|s| s.to_string()).collect(),
            rows,
        });
        let lat = &l.latency_ms;
        let ms = |v: Option<u64>| v.map_or_else(|| "--".to_string(), |v| v.to_string());
        let rows =
            [("success", &lat.success), ("failure or timeout", &lat.non_success), ("all (errors included)", &lat.all)]
                .iter()
                .map(|(label, p)| vec![Cell::from(*label), p.n.to_string().into(), ms(p.p50).into(), ms(p.p90).into()])
                .collect();
        blocks.push(Block::Table {
            header: ["latency (ms)", "n", "p50", "p90"].iter().map(|s| s.to_string()).collect(),
            rows,
        });
    }
    if let Some(rel) = &s.reliability {
        blocks.push(Block::Heading(format!("Reliability over {} rep(s): pass@k and pass^k in %", rel.reps)));
        let mut rows = Vec::new();
        for k in &rel.k {
            let key = k.to_string();
            rows.push(ten_row(&format!("pass@{k}"), rel.pass_at_k.get(&key)));
            rows.push(ten_row(&format!("pass^{k}"), rel.pass_hat_k.get(&key)));
        }
        blocks.push(Block::Table { header: TOP_HEADER.iter().map(|h| h.to_string()).collect(), rows });
        let gaps: Vec<String> =
            rel.k.iter().map(|k| format!("k={k}: {}", num(rel.gap.get(&k.to_string()).copied().flatten()))).collect();
        blocks.push(Block::Note(format!("gap (overall pass@k - pass^k, instability): {}", gaps.join(", "))));
        if let Some(w) = &rel.warning {
            blocks.push(Block::Note(w.clone()));
        }
    }
    if s.ledger.is_some() {
        blocks.extend(usage_blocks(&r.usage));
    }
    if let Some(g) = &s.gates {
        blocks.extend(gates_blocks(g, "Readiness gates"));
    }
    if !s.reasons.is_empty() {
        blocks.push(Block::Heading("Why values are null".into()));
        let rows = s.reasons.iter().map(|(k, v)| vec![Cell::from(k.as_str()), Cell::from(v.as_str())]).collect();
        blocks.push(Block::Table { header: vec!["value".into(), "reason".into()], rows });
    }
    for n in &r.notes {
        blocks.push(Block::Note(format!("note: {n}")));
    }
    blocks.push(Block::Note(format!(
        "treatment {} · {} records from {} · config digest {}",
        s.method,
        r.records,
        r.path.display(),
        s.config_digest.as_deref().unwrap_or("not recorded or not unique")
    )));
    Doc { title: format!("skillshift report: {}", s.method), blocks }
}

/// The failure categories by cell: one row per (cell, category), most frequent first.
pub fn failure_blocks(f: &FailureCategories) -> Vec<Block> {
    let mut rows = Vec::new();
    for &site in Site::ALL {
        for &c in Condition::ALL {
            for (name, g) in failures::ordered(f.get(site).get(c)) {
                let shown = if g.trajectories.is_empty() { "--".to_string() } else { g.trajectories.join(" ") };
                rows.push(vec![
                    Cell::from(format!("{site} {c}")),
                    Cell::from(name),
                    Cell::from(g.count.to_string()),
                    Cell::from(shown),
                ]);
            }
        }
    }
    if rows.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Heading("Failure categories by cell (non-success attempts, retries included)".into()),
        Block::Table {
            header: ["cell", "category", "attempts", "representative trajectories"].map(String::from).to_vec(),
            rows,
        },
        Block::Note(format!(
            "up to {} trajectories per category, the first in file order, relative to the records file; \
             `skillshift view DIR` shows them step by step",
            failures::REPRESENTATIVES
        )),
    ]
}

/// Display width: `⚠︎`'s variation selector takes no column.
pub fn width(s: &str) -> usize {
    s.chars().filter(|&c| c != '\u{FE0E}').count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{write_grid, Plan};

    fn synthetic(skills: bool, reps: u32) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("per_task.jsonl");
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let plan = Plan { treatment: "SYN".into(), reps, error_pct: 3, skills, max_calls: 2, success_pct: 40, seed: 7 };
        write_grid(&plan, &mut f).unwrap();
        drop(f);
        (dir, path)
    }

    #[test]
    fn every_format_renders_the_same_numbers() {
        let (_d, path) = synthetic(true, 2);
        let r = build(&path, None, false).unwrap();
        let sr = r.summary.metrics.sr.unwrap().overall.unwrap();
        let doc = document(&r);
        let t = text::render(&doc);
        if std::env::var_os("SHOW_REPORT").is_some() {
            println!("{t}");
        }
        let shown = format!("{sr:.2}");
        assert!(t.contains(&shown));
        assert!(markdown::render(&doc).contains(&shown));
        let h = html::render(&doc);
        assert!(h.contains(&shown) && h.starts_with("<!DOCTYPE html>") && !h.contains("http"));
        assert_eq!(r.summary.n.tasks, crate::shape::PerSite { gitlab: 162, magento: 114, wordpress: 79 });
    }

    #[test]
    fn failure_categories_are_grouped_per_cell_in_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("per_task.jsonl");
        let mut lines = Vec::new();
        // One success, then one failing attempt per known category, each a unit of its own
        // (gitlab tgt-exec), with its trajectory named as an export names it.
        lines.push(serde_json::json!({"uid": "skillshift.gitlab.v2.0", "site": "gitlab", "condition": "tgt-exec",
            "success": true, "steps": 3, "skill_calls": 1, "skill_failures": 0, "outcome": "success",
            "failure_category": null}));
        for (i, k) in failures::KNOWN.iter().enumerate() {
            let id = i + 1;
            let (outcome, success, steps) = match *k {
                "step_budget" => ("timeout", serde_json::json!(false), serde_json::json!(10)),
                "agent" | "browser" | "site" | "task_timeout" | "worker_lost" => {
                    ("error", serde_json::Value::Null, serde_json::Value::Null)
                }
                _ => ("failure", serde_json::json!(false), serde_json::json!(4)),
            };
            lines.push(serde_json::json!({"uid": format!("skillshift.gitlab.v2.{id}"), "site": "gitlab",
                "condition": "tgt-exec", "success": success, "steps": steps, "skill_calls": 1,
                "skill_failures": 1, "outcome": outcome, "failure_category": k,
                "trajectory": format!("trajectories/default/skillshift.gitlab.v2.{id}.tgt-exec.0.0.json")}));
        }
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let r = build(&path, None, true).unwrap();
        let f = r.summary.failure_categories.as_ref().unwrap();
        let cell = f.gitlab.get(Condition::TgtExec);
        assert_eq!(cell.len(), failures::KNOWN.len());
        let json = serde_json::to_value(&r.summary).unwrap();
        let doc = document(&r);
        let (t, m, h) = (text::render(&doc), markdown::render(&doc), html::render(&doc));
        for (i, k) in failures::KNOWN.iter().enumerate() {
            let file = format!("trajectories/default/skillshift.gitlab.v2.{}.tgt-exec.0.0.json", i + 1);
            let g = &json["failure_categories"]["gitlab"]["tgt-exec"][k];
            assert_eq!(g["count"], 1, "{k}");
            assert_eq!(g["trajectories"][0], file.as_str(), "{k}");
            let row = t.lines().find(|l| l.split_whitespace().nth(2) == Some(*k));
            assert!(row.is_some_and(|l| l.starts_with("gitlab tgt-exec") && l.ends_with(&file)), "table: {k}\n{t}");
            assert!(m.contains(&format!("| gitlab tgt-exec | {k} | 1 | {file} |")), "markdown lacks {k}");
            assert!(h.contains(&format!("<td>{k}</td><td>1</td><td>{file}</td>")), "html lacks {k}");
        }
        assert!(f.gitlab.get(Condition::Src).is_empty() && f.magento.get(Condition::TgtExec).is_empty());
        // The summary with its failure categories is still a valid leaderboard entry shape.
        let mut violations = Vec::new();
        crate::schema::check(&crate::schema::summary(), &json, "", &mut violations);
        assert!(violations.is_empty(), "{violations:?}");
    }
}
