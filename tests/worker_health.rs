//! A worker's probes (`/healthz`, `/readyz` on `--metrics-addr`) as an
//! orchestrator sees them: ready once connected, not ready but alive while it
//! drains after SIGTERM, until it exits 0 with its record delivered.

mod support;

use std::time::{Duration, Instant};

use support::Sandbox;
use support::{free_addr, http_get as get};

#[test]
fn ready_when_connected_alive_but_not_ready_while_draining() {
    let mut sb = Sandbox::start(0, 0);
    let addr = free_addr();
    let w = sb.add_worker(3_000, &["--metrics-addr", &addr, "--slots", "1"]);
    let t0 = Instant::now();
    while get(&addr, "/readyz").map(|r| r.0) != Some(200) {
        assert!(t0.elapsed() < Duration::from_secs(30), "never ready: {:?}\n{}", get(&addr, "/readyz"), sb.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(get(&addr, "/healthz"), Some((200, "ok\n".into())));
    let id = sb.submit(1, &[]);
    sb.wait_until(&id, Duration::from_secs(30), |st| st["units"]["running"] == 1);
    sb.signal_worker(w, "TERM");
    // The 3 s attempt is still running: the drain lasts until it ends, and the probe says so meanwhile.
    let t1 = Instant::now();
    let mut ready = get(&addr, "/readyz");
    while ready.as_ref().map(|r| r.0) == Some(200) && t1.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        ready = get(&addr, "/readyz");
    }
    assert_eq!(ready, Some((503, "draining\n".into())), "a draining worker takes no work");
    assert_eq!(get(&addr, "/healthz"), Some((200, "ok\n".into())), "and is alive, so it is not killed mid-drain");
    let status = sb.workers[w].wait().expect("worker exits");
    assert!(status.success(), "{status:?}\n{}", sb.logs());
    let log = sb.read_log("worker-0.log");
    assert!(log.contains("1 attempts run, 0 records and 0 trajectories still in the outbox"), "{log}");
    let st = sb.wait_until(&id, Duration::from_secs(10), |st| st["units"]["done"].as_u64() >= Some(1));
    assert_eq!(st["units"]["running"], 0, "{st}");
}
