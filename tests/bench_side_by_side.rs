//! `scripts/bench/side_by_side.sh`: two real sweeps at the same time, each in a cgroup of its own, give each side's
//! CPU from the cgroup's counter, the ratios, and whether their records are the same; bad arguments are refused
//! with one line and exit 2.

#[path = "support/cli.rs"]
mod cli;

use std::process::{Command, Output};

fn side_by_side(args: &[&str]) -> Output {
    Command::new("bash")
        .current_dir(cli::root())
        .arg("scripts/bench/side_by_side.sh")
        .args(args)
        .output()
        .expect("run side_by_side.sh")
}

/// The CPU-s on the output line that starts with `side`.
fn cpu_of(out: &str, side: &str) -> f64 {
    let line = out.lines().find(|l| l.starts_with(side)).unwrap_or_else(|| panic!("no {side} line in {out}"));
    let (_, rest) = line.rsplit_once("): ").unwrap_or_else(|| panic!("{line}"));
    rest.split(" CPU-s").next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn two_real_sweeps_side_by_side_give_each_sides_cpu_and_compare_their_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let families = dir.path().join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0, 11]}}}"#).expect("families");
    let out_dir = dir.path().join("sbs");
    let bin = env!("CARGO_BIN_EXE_skillshift");
    let out = side_by_side(&[
        "--out",
        cli::s(&out_dir),
        "--bin-a",
        bin,
        "--env-b",
        "SKILLSHIFT_CHROMIUM_ARGS=--renderer-process-limit=1000",
        "--",
        "--workers",
        "1",
        "--sites",
        "gitlab",
        "--conditions",
        "src",
        "--screenshots",
        "none",
        "--families",
        cli::s(&families),
    ]);
    let text = cli::stdout(&out);
    assert!(out.status.success(), "{text}{}", cli::stderr(&out));
    // Each side's sweep ran whole, and its CPU (browser and renderers included) was counted in its own cgroup.
    for side in ["a", "b"] {
        let records = std::fs::read_to_string(out_dir.join(side).join("per_task.jsonl")).expect("records");
        assert_eq!(records.lines().count(), 2, "side {side}: {records}");
    }
    let (a, b) = (cpu_of(&text, "A ("), cpu_of(&text, "B ("));
    assert!(a > 0.2 && b > 0.2, "a sweep with a browser uses more than 0.2 CPU-s: {text}");
    assert!(text.contains("--renderer-process-limit=1000"), "the B side names its environment: {text}");
    // The ratio is of the unrounded counters: within the rounding of the two figures printed (each off by up
    // to 0.05 CPU-s, so b / a by up to 0.05 / a for b's rounding and 0.05 b / a² for a's).
    let ratio: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("B/A: CPU ")?.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no B/A line in {text}"));
    assert!((ratio - b / a).abs() <= 0.05 / a * (1.0 + b / a) + 0.001, "B/A {ratio} against {b} / {a}: {text}");
    assert!(text.contains("records: 2 units in both; 0 differences"), "{text}");
    // The cgroups are gone with the sweeps.
    let left = std::fs::read_dir("/sys/fs/cgroup/cpuacct")
        .or_else(|_| std::fs::read_dir("/sys/fs/cgroup"))
        .expect("cgroups")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("skillshift-side-"))
        .count();
    assert_eq!(left, 0, "side_by_side.sh left its cgroups behind");
}

#[test]
fn bad_arguments_are_refused_with_one_line() {
    let bin = env!("CARGO_BIN_EXE_skillshift");
    for (args, what) in [
        (&["--slots"][..], "--slots"),
        (&["--bin-a", bin, "--env-b", "not-an-assignment", "--"][..], "not-an-assignment"),
        (&["--bin-a", "/nonexistent/skillshift", "--"][..], "/nonexistent/skillshift"),
        (&["--out"][..], "--out"),
    ] {
        let out = side_by_side(args);
        let err = cli::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what) && err.lines().count() == 1, "{args:?}: {err}");
    }
}
