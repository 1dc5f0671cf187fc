//! Write a synthetic `per_task.jsonl` (generated noise, for benchmarks and
//! demonstrations of the analysis commands; never a result of any method).
//!
//! `cargo run -p skillshift-common --example gen_records -- OUT [REPS] [TREATMENT] [SEED] [SUCCESS_PCT] [MAX_CALLS]`

use std::io::{BufWriter, Write};

use skillshift_analysis::synth::{write_grid, Plan};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: gen_records OUT [REPS] [TREATMENT] [SEED] [SUCCESS_PCT] [MAX_CALLS]");
        std::process::exit(2);
    };
    let num = |i: usize, d: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let plan = Plan {
        treatment: args.get(2).cloned().unwrap_or_else(|| "SYNTHETIC".to_string()),
        reps: num(1, 1) as u32,
        error_pct: 2,
        skills: true,
        max_calls: num(5, 2),
        success_pct: num(4, 40),
        seed: num(3, 1),
    };
    let mut w = BufWriter::new(std::fs::File::create(out)?);
    let n = write_grid(&plan, &mut w)?;
    w.flush()?;
    eprintln!("wrote {n} records to {out}");
    Ok(())
}
