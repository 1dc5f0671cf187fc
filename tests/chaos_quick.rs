//! The chaos suite at CI size: `scripts/chaos.sh --quick` (docs/reliability.md)
//! against the built binary: a simulated 60-unit sweep through a worker
//! kill -9, a coordinator kill -9, a network partition and a full disk on the
//! coordinator (the last two only as root; the script says what it skipped).

use std::process::Command;

/// Every fault of the quick suite, the full disk included: the coordinator exits 2 with one line when its
/// store cannot write, and after a restart with space the sweep finishes with nothing lost or doubled.
#[test]
fn the_quick_chaos_suite_loses_nothing_and_doubles_nothing() {
    quick(&[]);
}

fn quick(extra: &[&str]) {
    let out = tempfile::tempdir().expect("temp dir");
    let run = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/chaos.sh"))
        .args(extra)
        .args(["--quick", "--bin", env!("CARGO_BIN_EXE_skillshift"), "--out"])
        .arg(out.path())
        .output()
        .expect("run scripts/chaos.sh");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "chaos.sh failed:\n{stderr}\n{}", String::from_utf8_lossy(&run.stdout));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("chaos.json")).expect("chaos.json"))
            .expect("json");
    eprintln!("{s:#}");
    assert_eq!(s["duplicates"], 0, "{s}");
    assert_eq!(s["units_with_attempt_gaps"], 0, "{s}");
    assert_eq!(s["units_with_records"], s["units"], "{s}");
    assert_eq!(s["worker_kills"], 1);
    assert_eq!(s["coordinator_kills"], 1);
    for skipped in s["skipped"].as_array().into_iter().flatten() {
        eprintln!("chaos: skipped {skipped}");
    }
    if s["full_disk_exit"] != "skipped" {
        assert_eq!(s["full_disk_exit"], "2", "the coordinator exits 2 on a full disk: {s}");
    }
}
