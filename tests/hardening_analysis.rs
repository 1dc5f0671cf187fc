//! Hostile and faulty input to `report`, `calibrate` and `leaderboard`, as a
//! user runs them: the built binary on temporary files. Each case ends the
//! way docs/cli.md#exit-codes says: a finding is exit 1, input that cannot be
//! used is exit 2 with exactly one short line on stderr, and nothing is
//! silently graded or read without bound. Records are synthetic noise.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use skillshift_analysis::synth::Plan;

#[path = "support/cli.rs"]
mod cli;

use cli::{s, skillshift, stderr as err, stdout as out};

/// [`cli::refused`]: exit 2 and exactly one short line on stderr, with no blank line around it, that contains
/// each of `want`.
fn refused(o: &Output, want: &[&str]) {
    let e = cli::refused(o);
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.len() < 600, "a short line, not {} bytes", e.len());
    for w in want {
        assert!(e.contains(w), "{e:?} should contain {w:?}");
    }
}

fn synthetic(dir: &Path, name: &str, success_pct: u64) -> PathBuf {
    let plan =
        Plan { treatment: "reference".into(), reps: 1, error_pct: 2, skills: true, max_calls: 1, success_pct, seed: 9 };
    cli::synthetic(dir, name, &plan)
}

fn anchor_from(dir: &Path, records: &Path) -> PathBuf {
    let anchor = dir.join("anchor.json");
    let o = skillshift(&["calibrate", "anchor", "--agent", "reference", "--records", s(records), "--out", s(&anchor)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    anchor
}

/// Runs the binary with a deadline; `None` when it did not end in time (then it is killed).
fn run_with_deadline(cmd: &mut Command, deadline: Duration) -> Option<Output> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
            child.stdout.take().expect("stdout").read_to_end(&mut stdout).expect("read stdout");
            child.stderr.take().expect("stderr").read_to_end(&mut stderr).expect("read stderr");
            return Some(Output { status, stdout, stderr });
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn report_of_dev_zero_is_one_line_and_exit_2_within_bounded_memory() {
    // Under a 1 GiB address-space limit: reading the endless line whole would fail to allocate, not exit 2.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -v 1048576 && exec \"$0\" report /dev/zero", env!("CARGO_BIN_EXE_skillshift")]);
    let o = run_with_deadline(&mut cmd, Duration::from_secs(60)).expect("report /dev/zero must return promptly");
    refused(&o, &["/dev/zero:1: ", "longer than 1048576 bytes (1 MiB), the bound on one record line"]);
}

#[test]
fn calibrate_refuses_a_threshold_that_would_silence_the_gate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let all_pass = synthetic(dir.path(), "pass.jsonl", 100);
    let all_fail = synthetic(dir.path(), "fail.jsonl", 0);
    let anchor = anchor_from(dir.path(), &all_pass);
    // 100 points off is a finding at the anchor's own threshold.
    let o = skillshift(&["calibrate", "--records", s(&all_fail), "--reference", s(&anchor)]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    for t in ["--threshold=NaN", "--threshold=inf", "--threshold=-inf", "--threshold=-1"] {
        let o = skillshift(&["calibrate", "--records", s(&all_fail), "--reference", s(&anchor), t]);
        refused(&o, &["threshold", "is not a finite number of sigmas >= 0"]);
        assert!(out(&o).is_empty(), "nothing graded with {t}: {}", out(&o));
    }
    // The flag is checked before anything is read: the records file is never opened.
    let o = skillshift(&["calibrate", "--records", "/nonexistent.jsonl", "--threshold", "NaN"]);
    refused(&o, &["threshold NaN is not a finite number of sigmas >= 0"]);
    // 0 is a threshold (only an exact match passes).
    let o = skillshift(&["calibrate", "--records", s(&all_pass), "--reference", s(&anchor), "--threshold", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
}

/// The anchor file with `edit` applied to its JSON.
fn edited(anchor: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(anchor).expect("read")).expect("json");
    edit(&mut v);
    let p = anchor.with_file_name(name);
    std::fs::write(&p, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    p
}

#[test]
fn calibrate_refuses_a_negative_sigma_or_threshold_in_the_anchor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = synthetic(dir.path(), "run.jsonl", 40);
    let anchor = anchor_from(dir.path(), &records);
    let bad = edited(&anchor, "sigma.json", |v| v["cells"]["magento"]["tgt-perc"]["AS"]["sigma"] = (-0.5).into());
    let o = skillshift(&["calibrate", "--records", s(&records), "--reference", s(&bad)]);
    refused(&o, &["sigma.json: not an anchor file: cell magento tgt-perc AS: sigma -0.5 is not a finite number >= 0"]);
    let bad = edited(&anchor, "threshold.json", |v| v["threshold_sigma"] = (-3.0).into());
    let o = skillshift(&["calibrate", "--records", s(&records), "--reference", s(&bad)]);
    refused(&o, &["threshold.json: not an anchor file: threshold_sigma is -3"]);
}

#[test]
fn calibrate_passes_the_records_an_anchor_was_made_from_even_with_sigma_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = synthetic(dir.path(), "run.jsonl", 40);
    let anchor = anchor_from(dir.path(), &records);
    let zero = edited(&anchor, "zero.json", |v| {
        for site in v["cells"].as_object_mut().expect("cells").values_mut() {
            for cell in site.as_object_mut().expect("site").values_mut() {
                for m in cell.as_object_mut().expect("cell").values_mut() {
                    m["sigma"] = 0.0.into();
                }
            }
        }
    });
    let o = skillshift(&["calibrate", "--records", s(&records), "--reference", s(&zero)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    assert_eq!(out(&o).lines().filter(|l| l.contains("+/- 0.00    0.0 sigma  PASS")).count(), 36, "{}", out(&o));
}

#[test]
fn calibrate_refuses_records_that_leave_families_unmeasured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = synthetic(dir.path(), "run.jsonl", 40);
    let anchor = anchor_from(dir.path(), &records);
    // Family 0 of each site only: 3 of the 30.
    let text = std::fs::read_to_string(&records).expect("read");
    let first: String =
        text.lines().filter(|l| l.contains(".v1.0\"") || l.contains(".v2.0\"")).map(|l| format!("{l}\n")).collect();
    let few = dir.path().join("few.jsonl");
    std::fs::write(&few, first).expect("write");
    let o = skillshift(&["calibrate", "--records", s(&few), "--reference", s(&anchor)]);
    refused(
        &o,
        &[
            "records missing for cell gitlab src: no evaluable record of calibration families 11, 23, 34,",
            "(13 of the subset's 14 families unmeasured)",
        ],
    );
    assert!(out(&o).is_empty(), "nothing graded: {}", out(&o));
    let a2 = dir.path().join("a2.json");
    let o = skillshift(&["calibrate", "anchor", "--agent", "reference", "--records", s(&few), "--out", s(&a2)]);
    refused(&o, &["records missing for cell gitlab src"]);
}

/// A records line of `uid` under `condition`.
fn record(uid: &str, site: &str, condition: &str) -> String {
    format!(
        r#"{{"uid": "{uid}", "site": "{site}", "condition": "{condition}", "success": true, "steps": 3, "skill_calls": 0, "skill_failures": 0}}"#
    )
}

#[test]
fn report_refuses_task_ids_that_do_not_exist_and_never_confuses_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (site, n) in [("gitlab", 162), ("magento", 114), ("wordpress", 79)] {
        let f = dir.path().join(format!("{site}.jsonl"));
        let last = record(&format!("skillshift.{site}.v1.{}", n - 1), site, "src");
        let beyond = record(&format!("skillshift.{site}.v1.{n}"), site, "src");
        std::fs::write(&f, format!("{last}\n{beyond}\n")).expect("write");
        let o = skillshift(&["report", s(&f)]);
        refused(&o, &[&format!("{}:2: uid skillshift.{site}.v1.{n} names no task: {site} has {n} tasks", s(&f))]);
    }
    // Task 2^24 under src and task 0 under src-perc: two different records, not a duplicate.
    let f = dir.path().join("big.jsonl");
    let big = record("skillshift.gitlab.v1.16777216", "gitlab", "src");
    std::fs::write(&f, format!("{big}\n{}\n", record("skillshift.gitlab.v1.0", "gitlab", "src-perc"))).expect("write");
    let o = skillshift(&["report", s(&f)]);
    refused(&o, &[":1: uid skillshift.gitlab.v1.16777216 names no task"]);
}

#[test]
fn errors_echo_a_clipped_value_not_the_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("big.jsonl");
    let name = "o".repeat(900_000);
    let line = record("skillshift.gitlab.v1.0", "gitlab", "src").replace('}', &format!(", \"outcome\": \"{name}\"}}"));
    std::fs::write(&f, format!("{line}\n")).expect("write");
    let o = skillshift(&["report", s(&f)]);
    refused(&o, &[":1: unknown outcome 'ooo", "... (899920 bytes cut)' (expected success"]);
    // A treatment name given on the command line is clipped the same way.
    let ok = dir.path().join("ok.jsonl");
    std::fs::write(&ok, format!("{}\n", record("skillshift.gitlab.v1.0", "gitlab", "src"))).expect("write");
    let o = skillshift(&["report", s(&ok), "--treatment", &"t".repeat(100_000)]);
    refused(&o, &["no records of treatment 'ttt", "bytes cut)' (treatments: default)"]);
}

#[test]
fn leaderboard_refuses_skill_call_counts_that_only_agree_by_wrapping() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = synthetic(dir.path(), "run.jsonl", 40);
    let o = skillshift(&["report", s(&records), "--format", "json"]);
    assert!(o.status.success(), "{}", err(&o));
    let mut v: Value = serde_json::from_str(&out(&o)).expect("summary");
    let total = v["n"]["skill_calls"]["overall"].as_u64().expect("overall");
    // u64::MAX + (total + 1) + 0 wraps to total: it equals the conditions' sum and the overall.
    v["n"]["skill_calls"]["websites"] = serde_json::json!({"gitlab": u64::MAX, "magento": total + 1, "wordpress": 0});
    let entry = dir.path().join("entry.json");
    std::fs::write(&entry, v.to_string()).expect("write");
    let o = skillshift(&["leaderboard", "validate", s(&entry)]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    assert!(
        out(&o).contains("refused: n.skill_calls: sum(websites) overflows a 64-bit count"),
        "{}{}",
        out(&o),
        err(&o)
    );
}

#[test]
fn score_tasks_validate_and_report_gates_of_dev_zero_are_one_line_and_exit_2_within_bounded_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = synthetic(dir.path(), "r.jsonl", 50);
    let cases: [(&[&str], &str); 3] = [
        (&["score", "/dev/zero", "--task", "0"], "/dev/zero: larger than 67108864 bytes (64 MiB)"),
        (&["tasks", "validate", "/dev/zero"], "larger than 67108864 bytes (64 MiB)"),
        (&["report", s(&records), "--gates", "/dev/zero"], "larger than 1048576 bytes (1 MiB)"),
    ];
    for (args, want) in cases {
        // Under a 1 GiB address-space limit: reading the device whole (2.1 GB) would fail to allocate, not exit 2.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "ulimit -v 1048576 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_skillshift")]).args(args);
        let o = run_with_deadline(&mut cmd, Duration::from_secs(60)).expect("the command must return promptly");
        refused(&o, &["/dev/zero", want]);
    }
}
