//! Chaos over real processes: kill -9 of a worker mid-attempt, kill -9 of the
//! coordinator mid-sweep followed by a restart, and a worker paused past its
//! lease TTL. Each ends with an export checked for lost and doubled records.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use support::{key, outcome, units, Options, Sandbox};

#[test]
fn kill_9_of_a_worker_mid_attempt_loses_nothing_and_counts_nothing_twice() {
    let mut sb = Sandbox::start(2, 1500);
    let id = sb.submit(2, &[]);
    // Both workers hold an attempt now (12 units, 1 slot each).
    sb.wait_until(&id, Duration::from_secs(20), |s| s["units"]["running"].as_u64().unwrap_or(0) == 2);
    sb.kill_worker(0);
    let st = sb.wait_state(&id, "done", Duration::from_secs(90));
    assert_eq!(st["units"]["total"], 12);

    let records = sb.export(&id, "per_task.jsonl");
    let by_unit = units(&records); // panics on a duplicated key
    assert_eq!(by_unit.len(), 12);
    let lost: Vec<_> = records.iter().filter(|r| r["error"] == "worker_lost").collect();
    assert_eq!(lost.len(), 1, "the killed worker's attempt is in the ledger as worker_lost");
    assert_eq!(lost[0]["outcome"], "error");
    assert!(lost[0]["success"].is_null());
    // Its unit ran again as the next attempt and has an outcome.
    let (t, uid, cond, rep, attempt) = key(lost[0]);
    let unit = &by_unit[&(t, uid, cond, rep)];
    assert!(unit.iter().any(|r| r["attempt"].as_u64() == Some(attempt + 1)), "retried as attempt {}", attempt + 1);
    assert!(by_unit.values().all(|rs| outcome(rs).is_some() || rs.iter().all(|r| r["outcome"] == "error")));
}

#[test]
fn kill_9_of_the_coordinator_then_restart_keeps_every_acknowledged_record() {
    let mut sb = Sandbox::start(3, 250);
    let id = sb.submit(6, &[]);
    sb.wait_until(&id, Duration::from_secs(30), |s| s["units"]["done"].as_u64().unwrap_or(0) >= 8);
    let before = sb.export(&id, "before.jsonl");
    assert!(before.len() >= 8);
    sb.kill_coordinator();
    // Workers finish their running attempts while it is down; records wait in their outboxes.
    std::thread::sleep(Duration::from_millis(1200));
    let addr = sb.addr.clone();
    sb.start_coordinator(&addr);
    let st = sb.wait_state(&id, "done", Duration::from_secs(90));
    assert_eq!(st["units"]["total"], 36);

    let after = sb.export(&id, "after.jsonl");
    let by_unit = units(&after); // no key twice
    assert_eq!(by_unit.len(), 36, "every unit is accounted for after the restart");
    let after_keys: BTreeSet<_> = after.iter().map(key).collect();
    for r in &before {
        assert!(after_keys.contains(&key(r)), "record {:?} stored before the kill is in the export", key(r));
        let same = after.iter().find(|a| key(a) == key(r)).expect("present");
        if r["error"] != "worker_lost" {
            assert_eq!(same, r, "a stored record is unchanged by the restart");
        }
    }
    let decided = by_unit.values().filter(|rs| outcome(rs).is_some()).count() as u64;
    assert_eq!(decided, st["units"]["done"].as_u64().unwrap_or(0));
}

#[test]
fn a_worker_paused_past_the_ttl_has_its_late_records_kept_under_their_own_attempt() {
    let mut sb = Sandbox::start_with(0, 0, Options { lease_ttl_ms: 1000, ..Options::default() });
    let paused = sb.add_worker(1500, &[]);
    let id = sb.submit(1, &[]);
    sb.wait_until(&id, Duration::from_secs(20), |s| s["units"]["running"].as_u64().unwrap_or(0) == 1);
    sb.signal_worker(paused, "STOP");
    // Past the TTL its lease is released: the attempt is recorded as worker_lost and
    // its unit queued as the next attempt; another worker runs the sweep on.
    sb.add_worker(300, &[]);
    sb.wait_until(&id, Duration::from_secs(20), |s| s["attempts"]["error"].as_u64().unwrap_or(0) >= 1);
    let snapshot = sb.export(&id, "lost.jsonl");
    let lost = snapshot.iter().find(|r| r["error"] == "worker_lost").expect("the lost attempt is in the ledger");
    let lost_key = key(lost);
    let lost_worker = lost["worker"].clone();
    sb.signal_worker(paused, "CONT");
    sb.wait_state(&id, "done", Duration::from_secs(60));

    // The woken worker finishes that attempt and delivers it late: it is stored under its
    // own attempt, replacing the coordinator's worker_lost entry, and the outcome rule
    // (lowest non-error attempt) decides the unit whatever the timing.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let records = sb.export(&id, "per_task.jsonl");
        let by_unit = units(&records); // no key twice
        let late = records.iter().find(|r| key(r) == lost_key).expect("the attempt keeps its key");
        // Every placeholder replaced (with a 1 s TTL a stall of the other worker can lose one of its own
        // attempts too, whose late record then comes the same way).
        if records.iter().all(|r| r["error"] != "worker_lost") {
            assert_eq!(late["worker"], lost_worker, "stored as the paused worker's own record");
            let (t, u, c, rep, attempt) = lost_key.clone();
            let unit = &by_unit[&(t, u, c, rep)];
            if late["outcome"] != "error" {
                let decided = outcome(unit).expect("an outcome");
                assert!(decided["attempt"].as_u64() <= Some(attempt), "lowest non-error attempt decides");
            }
            break;
        }
        assert!(std::time::Instant::now() < deadline, "a worker_lost placeholder was never replaced:\n{}", sb.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn sweep_watch_rides_out_a_coordinator_restart_and_exits_0_when_the_sweep_is_done() {
    // `watch` used to decide on the error's text: "Connection refused" contains "refused",
    // which it took for a refused token, so it quit (exit 2) the moment the coordinator went
    // down. It now retries on a connection failure and quits only on a status that says so.
    let mut sb = Sandbox::start(2, 300);
    let id = sb.submit(4, &[]);
    let mut watch = std::process::Command::new(support::BIN)
        .args(["sweep", "watch", &id])
        .env("SKILLSHIFT_COORDINATOR", sb.url())
        .env("SKILLSHIFT_TOKEN", sb.opts.token.clone().unwrap_or_default())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sweep watch");
    sb.wait_until(&id, Duration::from_secs(30), |s| s["units"]["done"].as_u64().unwrap_or(0) >= 2);
    sb.kill_coordinator();
    // Long enough for the watch to see its stream break and its reconnections refused.
    std::thread::sleep(Duration::from_millis(2000));
    if watch.try_wait().expect("watch status").is_some() {
        let out = watch.wait_with_output().expect("watch output");
        panic!("watch quit while the coordinator was down: {}", String::from_utf8_lossy(&out.stderr));
    }
    let addr = sb.addr.clone();
    sb.start_coordinator(&addr);
    sb.wait_state(&id, "done", Duration::from_secs(90));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = watch.try_wait().expect("watch status") {
            break st;
        }
        assert!(std::time::Instant::now() < deadline, "watch did not return after the sweep was done");
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = watch.wait_with_output().expect("watch output");
    assert!(status.success(), "watch exit {status}: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&id) && stdout.contains("done"), "final status line: {stdout}");
}
