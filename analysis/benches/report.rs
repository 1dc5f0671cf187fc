//! Benchmark of `skillshift report`'s whole path (read and validate, units,
//! cells, ledger, reliability, summary, table rendering) over 1,000,000
//! generated records. Prints wall time per phase and the process's peak RSS
//! (VmHWM from /proc/self/status). The records are synthetic noise.
//!
//! `cargo bench -p skillshift-common --bench report` (RECORDS=N to change the size).

use std::io::{BufWriter, Write};
use std::time::Instant;

use skillshift_analysis::cells::analyse;
use skillshift_analysis::records::read_file;
use skillshift_analysis::report::{build, document, text};
use skillshift_analysis::summary::summarise;
use skillshift_analysis::synth::{write_grid, Plan};

fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// User + system CPU seconds of this process (from /proc/self/stat, 100 ticks per second).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (u, s): (f64, f64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    Some((u + s) / 100.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target: u64 = std::env::var("RECORDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("per_task.jsonl");
    // One rep of the full grid is 2,130 units (about 2,170 lines with 2% retried errors).
    let reps = (target / 2_173).max(1) as u32;
    let plan =
        Plan { treatment: "BENCH".into(), reps, error_pct: 2, skills: true, max_calls: 2, success_pct: 40, seed: 1 };
    let t0 = Instant::now();
    let mut w = BufWriter::new(std::fs::File::create(&path)?);
    let lines = write_grid(&plan, &mut w)?;
    w.flush()?;
    drop(w);
    let bytes = std::fs::metadata(&path)?.len();
    let rss_before = peak_rss_mb();
    println!(
        "generated {lines} records ({:.0} MB, {reps} reps of the full grid) in {:.2?}; peak RSS so far {:.0} MB",
        bytes as f64 / 1e6,
        t0.elapsed(),
        rss_before.unwrap_or(f64::NAN)
    );
    // Phases, measured once on their own (the report below repeats them as one call).
    let tp = Instant::now();
    let set = read_file(&path)?;
    let t_read = tp.elapsed();
    let tp = Instant::now();
    let a = analyse(set.select(None)?);
    let t_analyse = tp.elapsed();
    let tp = Instant::now();
    let _ = summarise(&a, false)?;
    println!(
        "phases: read+validate {t_read:.2?}, units+cells+ledger+reliability {t_analyse:.2?}, summary {:.2?}",
        tp.elapsed()
    );
    drop((set, a));
    let cpu0 = cpu_seconds();
    let t1 = Instant::now();
    let r = build(&path, None, false)?;
    let t_build = t1.elapsed();
    let rendered = text::render(&document(&r));
    let total = t1.elapsed();
    let cpu = cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    println!(
        "report over {lines} records: read+validate+summarise {t_build:.2?}, total with table rendering {total:.2?} \
         ({:.0} ns/record, {:.2} s of CPU); peak RSS {:.0} MB; {} bytes of table",
        total.as_nanos() as f64 / lines as f64,
        cpu.unwrap_or(f64::NAN),
        peak_rss_mb().unwrap_or(f64::NAN),
        rendered.len()
    );
    Ok(())
}
