//! `skillshift compare` as aligned text.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Comparison, SideCell};
use crate::report::decision::{gates_blocks, usage_rows, USAGE_HEADER};
use crate::report::text::{blocks, table};
use crate::report::{num, Cell};

/// A treatment's method and skill library, in words.
fn treatment_line(t: &Value) -> String {
    let method = t.get("method").and_then(Value::as_str).unwrap_or("?");
    match t.get("skill_library") {
        Some(Value::String(d)) => format!("{method} (skill library {d})"),
        Some(Value::Null) => format!("{method} (no skill library)"),
        _ => method.to_string(),
    }
}

/// Both sides' LLM use, one table per side.
fn usage_text(c: &Comparison) -> String {
    let mut out = String::from(
        "\nLLM use by population: total (mean per attempt that records it); per unit = all attempts' total / units\n",
    );
    if c.usage.values().all(|p| !p.any_recorded()) {
        out.push_str("no record on either side carries llm_calls, tokens_in, tokens_out or cost_usd\n");
        return out;
    }
    let mut header: Vec<String> = vec!["side".into()];
    header.extend(USAGE_HEADER.iter().map(|s| s.to_string()));
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let mut none = Vec::new();
    for (side, p) in &c.usage {
        if !p.any_recorded() {
            none.push(side.as_str());
            continue;
        }
        for row in usage_rows(p) {
            let mut r: Vec<Cell> = vec![side.as_str().into()];
            r.extend(row);
            rows.push(r);
        }
    }
    out.push_str(&table(&header, &rows));
    for side in none {
        out.push_str(&format!("{side}: no record carries llm_calls, tokens_in, tokens_out or cost_usd\n"));
    }
    out
}

fn signed(v: Option<f64>) -> String {
    v.map_or_else(|| "--".into(), |v| format!("{v:+.2}"))
}

/// The comparison as aligned text.
pub fn render_text(c: &Comparison) -> String {
    let mut out = format!(
        "skillshift compare: baseline {} ({}) vs candidate {} ({})\n\nSR by cell (successes/evaluable), delta in percentage points\n",
        c.baseline.treatment, c.baseline.file, c.candidate.treatment, c.candidate.file
    );
    let header: Vec<String> =
        ["cell", "baseline", "candidate", "delta", "95% interval", "pairing"].iter().map(|s| s.to_string()).collect();
    let side = |s: &SideCell| format!("{} ({}/{})", num(s.sr), s.successes, s.evaluable);
    let interval = |i: Option<[f64; 2]>| i.map_or_else(|| "--".into(), |[a, b]| format!("[{a:+.2}, {b:+.2}]"));
    let mut rows: Vec<Vec<Cell>> = c
        .cells
        .iter()
        .map(|x| {
            vec![
                format!("{} {}", x.site, x.condition).into(),
                side(&x.baseline).into(),
                side(&x.candidate).into(),
                signed(x.delta).into(),
                interval(x.interval).into(),
                x.pairing.clone().into(),
            ]
        })
        .collect();
    rows.push(vec![
        "overall (macro)".into(),
        num(c.overall.baseline).into(),
        num(c.overall.candidate).into(),
        signed(c.overall.delta).into(),
        interval(c.overall.interval).into(),
        format!("{} cells", c.overall.cells).into(),
    ]);
    out.push_str(&table(&header, &rows));
    out.push_str(
        "overall interval: the macro mean of the cell deltas, the cells' half-widths combined as independent \
         errors (a normal approximation)\n",
    );
    out.push_str(&format!("\nverdict: {} ({})\n", c.verdict, c.verdict_reason));
    if let Some(v) = &c.seed004_verdict {
        out.push_str(&format!("seed-004 verdict (delta >= 0): {v}\n"));
    }
    let k = &c.contract;
    let state = match k.status.as_str() {
        "same" => "equivalent".to_string(),
        "differs" => format!("not equivalent, differs in {}", k.differs.join(", ")),
        _ => "unverified".to_string(),
    };
    out.push_str(&format!("contract: {state} ({})\n", k.detail));
    out.push_str(&format!(
        "treatments: baseline {} · candidate {}\n",
        treatment_line(&k.treatments.baseline),
        treatment_line(&k.treatments.candidate)
    ));
    if c.directional_only {
        let why = if k.status == "differs" {
            "the runs differ in their frozen contract"
        } else {
            "the runs' contract could not be verified"
        };
        out.push_str(&format!("directional only: {why}; do not claim the change caused the difference\n"));
    }
    out.push_str("\npass@k / pass^k, capability vs reliability (overall, %; informational, not a gate)\n");
    let ks: BTreeSet<&String> = c.reliability.values().flat_map(|r| r.pass_at_k.keys()).collect();
    let mut header = vec!["side".to_string(), "reps".to_string()];
    for k in &ks {
        header.extend([format!("pass@{k}"), format!("pass^{k}"), format!("gap@{k}")]);
    }
    let rows: Vec<Vec<Cell>> = c
        .reliability
        .iter()
        .map(|(side, r)| {
            let mut row: Vec<Cell> = vec![side.clone().into(), r.reps.to_string().into()];
            for k in &ks {
                let (at, hat) = (r.pass_at_k.get(*k).copied().flatten(), r.pass_hat_k.get(*k).copied().flatten());
                row.extend([num(at).into(), num(hat).into(), num(at.zip(hat).map(|(a, h)| a - h)).into()]);
            }
            row
        })
        .collect();
    out.push_str(&table(&header, &rows));
    out.push_str(&usage_text(c));
    if let Some(g) = &c.gates {
        for (side, gates) in g {
            out.push_str(&blocks(&gates_blocks(gates, &format!("Readiness gates, {side}"))));
        }
    }
    for w in &c.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
