//! Deterministic synthetic `per_task.jsonl` records, for benchmarks and
//! tests of the analysis code. They are generated noise: never present a
//! number computed from them as a result of any method.

use std::io::{self, Write};

use skillshift_common::ids::{Condition, Site};

/// SplitMix64: a small, seedable, dependency-free generator.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Shape of a generated file.
#[derive(Debug, Clone)]
pub struct Plan {
    pub treatment: String,
    pub reps: u32,
    /// Percent chance of an `error` attempt (then retried once as attempt 1).
    pub error_pct: u64,
    /// Whether the method has executable skills (`skill_calls` integers) or not (`null`).
    pub skills: bool,
    /// Largest `skill_calls` of one record (0: skills exist but are never invoked).
    pub max_calls: u64,
    /// Percent chance that an attempt succeeds.
    pub success_pct: u64,
    pub seed: u64,
}

/// Write the full grid (355 families x 6 conditions x reps), one line per
/// attempt; returns the number of lines written.
pub fn write_grid(plan: &Plan, out: &mut impl Write) -> io::Result<u64> {
    let mut rng = SplitMix(plan.seed);
    let mut lines = 0;
    for rep in 0..plan.reps {
        for &site in Site::ALL {
            for task in 0..site.n_tasks() as u32 {
                for &cond in Condition::ALL {
                    let uid = format!("skillshift.{site}.{}.{task}", cond.version());
                    let mut attempt = 0;
                    if rng.below(100) < plan.error_pct {
                        writeln!(
                            out,
                            r#"{{"uid":"{uid}","site":"{site}","condition":"{cond}","success":null,"steps":null,"skill_calls":null,"skill_failures":null,"outcome":"error","error":"task_timeout","treatment":"{}","rep":{rep},"attempt":0,"duration_ms":600000}}"#,
                            plan.treatment
                        )?;
                        lines += 1;
                        attempt = 1;
                    }
                    let success = rng.below(100) < plan.success_pct;
                    let steps = 1 + rng.below(10);
                    let (calls, fails) = if plan.skills {
                        let c = rng.below(plan.max_calls + 1);
                        (c.to_string(), rng.below(c + 1).to_string())
                    } else {
                        ("null".to_string(), "null".to_string())
                    };
                    let outcome = if success {
                        "success"
                    } else if steps == 10 {
                        "timeout"
                    } else {
                        "failure"
                    };
                    writeln!(
                        out,
                        r#"{{"uid":"{uid}","site":"{site}","condition":"{cond}","success":{success},"steps":{steps},"skill_calls":{calls},"skill_failures":{fails},"outcome":"{outcome}","treatment":"{}","rep":{rep},"attempt":{attempt},"sweep":"synthetic","config_digest":"sha256:synthetic","duration_ms":{}}}"#,
                        plan.treatment,
                        20_000 + rng.below(90_000)
                    )?;
                    lines += 1;
                }
            }
        }
    }
    Ok(lines)
}
