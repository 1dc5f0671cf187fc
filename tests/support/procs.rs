//! The machine's live processes as `/proc` shows them, for tests that check what outlives what.
#![allow(dead_code)]

/// Whether process `pid` is alive: in `/proc` and neither a zombie nor dead (a container's PID 1 may
/// leave orphans unreaped).
pub fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string));
    !matches!(state.as_deref(), Some("Z") | Some("X") | None)
}

/// The live processes whose command line is exactly `argv`.
pub fn processes_running(argv: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let args: Vec<&[u8]> = raw.split(|b| *b == 0).filter(|a| !a.is_empty()).collect();
        if args.len() == argv.len() && args.iter().zip(argv).all(|(a, b)| *a == b.as_bytes()) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// A number of seconds for a `sleep` helper that no other test's helper has (the test's pid in it),
/// so `processes_running(&["sleep", &n])` finds only this test's.
pub fn unique_seconds() -> String {
    (7000 + std::process::id() % 2000).to_string()
}

/// Waits up to `limit` for process `pid`, running `argv`, to be gone. Still there, it is killed (so a
/// failing test leaves nothing behind) and the answer is `false`.
pub fn gone_within(pid: u32, argv: &[&str], limit: std::time::Duration) -> bool {
    let t0 = std::time::Instant::now();
    while processes_running(argv).contains(&pid) {
        if t0.elapsed() > limit {
            let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    true
}
