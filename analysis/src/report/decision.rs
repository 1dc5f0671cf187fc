//! The decision layer of a rendered report: intervals as text, the LLM-use
//! table by population, and the readiness gates. Shared by `report` and
//! `compare`, so both show them alike.

use super::{num, Block, Cell};
use crate::gates::show;
use crate::readiness::{Gates, NOT_DETERMINED};
use crate::shape::Pair;
use crate::usage::{Population, Populations, Tally};

/// `[lo, hi]` with two decimals, `--` when there is none.
pub fn interval(i: Option<Pair>) -> String {
    i.map_or_else(|| "--".to_string(), |[lo, hi]| format!("[{lo:.2}, {hi:.2}]"))
}

/// A fraction's interval as percentages, `[lo%, hi%]`.
pub fn interval_pct(i: Option<Pair>) -> String {
    i.map_or_else(|| "--".to_string(), |[lo, hi]| format!("[{:.2}%, {:.2}%]", 100.0 * lo, 100.0 * hi))
}

fn count(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_string(), |v| format!("{v:.0}"))
}

fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_string(), |v| format!("{v:.4}"))
}

/// "total (mean per attempt)"; the mean is over attempts that record the field.
fn tally(t: &Tally, money: bool) -> String {
    if t.total.is_none() {
        return "--".to_string();
    }
    if money {
        format!("{} ({})", usd(t.total), usd(t.per_attempt))
    } else {
        format!("{} ({})", count(t.total), num(t.per_attempt))
    }
}

fn population_row(label: &str, p: &Population) -> Vec<Cell> {
    vec![
        label.into(),
        p.attempts.to_string().into(),
        tally(&p.llm_calls, false).into(),
        tally(&p.tokens_in, false).into(),
        tally(&p.tokens_out, false).into(),
        tally(&p.cost_usd, true).into(),
    ]
}

pub const USAGE_HEADER: [&str; 6] = ["population", "attempts", "LLM calls", "tokens in", "tokens out", "cost (USD)"];

/// The LLM-use table of one treatment: one row per population and one per unit.
pub fn usage_rows(p: &Populations) -> Vec<Vec<Cell>> {
    let mut rows: Vec<Vec<Cell>> = p.labelled().iter().map(|(label, pop)| population_row(label, pop)).collect();
    let u = &p.per_unit;
    rows.push(vec![
        format!("per unit ({} units)", p.units).into(),
        "".into(),
        num(u.llm_calls).into(),
        num(u.tokens_in).into(),
        num(u.tokens_out).into(),
        usd(u.cost_usd).into(),
    ]);
    rows
}

/// The heading, table and notes of one treatment's LLM use.
pub fn usage_blocks(p: &Populations) -> Vec<Block> {
    let mut out = vec![Block::Heading(
        "LLM use by population: total (mean per attempt that records it); per unit = all attempts' total / units"
            .into(),
    )];
    if !p.any_recorded() {
        out.push(Block::Note("no record carries llm_calls, tokens_in, tokens_out or cost_usd".into()));
        return out;
    }
    out.push(Block::Table { header: USAGE_HEADER.iter().map(|s| s.to_string()).collect(), rows: usage_rows(p) });
    out
}

/// The readiness section of one treatment.
pub fn gates_blocks(g: &Gates, title: &str) -> Vec<Block> {
    let mut out = vec![Block::Heading(title.to_string())];
    if g.readiness == NOT_DETERMINED {
        let missing: Vec<String> =
            g.missing.iter().flatten().map(|m| format!("{} ({} {})", m.name, m.metric, m.bound)).collect();
        out.push(Block::Note(format!(
            "readiness: not determined: no gates were declared (--gates FILE). Missing: {}.",
            missing.join("; ")
        )));
        return out;
    }
    let results = g.results.as_deref().unwrap_or_default();
    let rows = results
        .iter()
        .map(|r| {
            let bound = match (r.min, r.max) {
                (Some(t), _) => format!(">= {}", show(t)),
                (_, Some(t)) => format!("<= {}", show(t)),
                _ => "--".to_string(),
            };
            let interval =
                r.interval.map_or_else(|| "--".to_string(), |[lo, hi]| format!("[{}, {}]", show(lo), show(hi)));
            vec![
                Cell::from(r.name.as_str()),
                Cell::from(r.metric.as_str()),
                r.observed.map_or_else(|| "null".to_string(), show).into(),
                bound.into(),
                interval.into(),
                Cell::from(r.verdict.as_str()),
            ]
        })
        .collect();
    out.push(Block::Table {
        header: ["gate", "metric", "observed", "bound", "95% interval", "verdict"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows,
    });
    for r in results {
        out.push(Block::Note(format!("{}: {}: {}", r.name, r.verdict.as_str(), r.reason)));
    }
    out.push(Block::Note(format!("readiness: {}", g.readiness)));
    out
}
