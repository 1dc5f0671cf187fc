//! The Chrome trace scripts (`scripts/bench/chrome_trace.py`, `scripts/bench/trace_split.py`) on a real sweep
//! in real headless Chromium: the trace is taken over the worker's browser's DevTools port while its attempts
//! run, and the split finds the attempts' work in it. The split's arithmetic (self time, the DevTools join)
//! is also checked on a small trace whose answer is known.

#[path = "support/cli.rs"]
mod cli;

use std::process::Command;

fn split(args: &[&str]) -> (bool, String, String) {
    let out = Command::new("python3")
        .arg(cli::root().join("scripts/bench/trace_split.py"))
        .args(args)
        .output()
        .expect("run trace_split.py");
    (out.status.success(), cli::stdout(&out), cli::stderr(&out))
}

#[test]
fn the_split_counts_self_time_and_joins_devtools_commands_on_their_call_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    // Renderer main thread: a 10 ms task holding a 6 ms command dispatch that holds a 4 ms script call;
    // the browser's record of the command names its method. The file is cut mid-event, as a trace whose
    // browser closed while it was read.
    let trace = r#"{"traceEvents":[
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"Renderer"}},
{"ph":"M","name":"thread_name","pid":1,"tid":5,"args":{"name":"CrRendererMain"}},
{"ph":"M","name":"process_name","pid":2,"tid":0,"args":{"name":"Browser"}},
{"ph":"M","name":"thread_name","pid":2,"tid":2,"args":{"name":"CrBrowserMain"}},
{"ph":"X","name":"RunTask","pid":1,"tid":5,"ts":1000,"dur":10000},
{"ph":"X","name":"DevToolsSession::DispatchProtocolCommand","pid":1,"tid":5,"ts":2000,"dur":6000,"args":{"call_id":7}},
{"ph":"X","name":"api_call","pid":1,"tid":5,"ts":3000,"dur":4000},
{"ph":"X","name":"DevToolsSession::HandleCommand in Browser","pid":2,"tid":2,"ts":1500,"dur":500,"args":{"call_id":7,"method":"Accessibility.getFullAXTree"}},
{"ph":"X","name":"RenderFrameHostImpl::DidCommitNavigation","pid":2,"tid":2,"ts":20000,"dur":1000},
{"ph":"X","name":"DirectRen"#;
    std::fs::write(&path, trace).expect("write the trace");
    let (ok, out, err) = split(&[path.to_str().expect("utf-8")]);
    assert!(ok, "{err}");
    assert!(err.contains("cut at byte"), "the cut is reported: {err}");
    assert!(out.contains("| Renderer/CrRendererMain | 10 | 87.0% |"), "{out}");
    assert!(out.contains("| RunTask | 4.0 | 40.0% |"), "10 ms less the 6 ms dispatch: {out}");
    assert!(out.contains("| DevToolsSession::DispatchProtocolCommand | 2.0 | 20.0% |"), "{out}");
    assert!(out.contains("| api_call | 4.0 | 40.0% |"), "{out}");
    assert!(out.contains("| Accessibility.getFullAXTree | 1 | 6.0 | 6.00 | 60.0% |"), "{out}");
    assert!(out.contains("Per navigation (1 committed)"), "{out}");

    let (ok, _, err) = split(&[dir.path().join("absent.json").to_str().expect("utf-8")]);
    assert!(!ok && err.contains("absent.json"), "{err}");
}

#[test]
fn a_trace_of_a_real_sweep_splits_its_attempts_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let families = dir.path().join("families.json");
    // 48 attempts, all on one browser (a worker starts a new one every 50): the sweep outlasts the window and
    // the trace's reading twice over here, so a machine twice as fast still has the window in the sweep.
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0, 11, 23, 34, 46, 57, 69, 81]}}}"#)
        .expect("families");
    let traces = dir.path().join("traces");
    let sweep = dir.path().join("sweep");
    // A port of its own, so a browser another test left listening is not the one traced.
    let port = 9400 + std::process::id() % 500;
    let out = Command::new("python3")
        .current_dir(cli::root())
        .arg("scripts/bench/chrome_trace.py")
        .args(["--port", &port.to_string(), "--window", "1.5", "--windows", "1", "--out"])
        .arg(&traces)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_skillshift"))
        .args(["local", "--workers", "1", "--sites", "gitlab", "--screenshots", "none", "--families"])
        .arg(&families)
        .arg("--out")
        .arg(&sweep)
        .output()
        .expect("run chrome_trace.py");
    let err = cli::stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("trace-1.json"), "one window taken: {err}");
    let records = std::fs::read_to_string(sweep.join("per_task.jsonl")).expect("the sweep's records");
    assert_eq!(records.lines().count(), 48, "the traced sweep still ran every attempt");

    let (ok, out, err) = split(&[traces.join("trace-1.json").to_str().expect("utf-8")]);
    assert!(ok, "{err}");
    for part in ["| Renderer/CrRendererMain |", "| Browser/CrBrowserMain |", "DevTools commands run in the renderers"] {
        assert!(out.contains(part), "{part} missing from the split:\n{out}");
    }
    assert!(out.contains("| Accessibility.getFullAXTree |"), "the attempts' observations are in it:\n{out}");
    assert!(out.contains("Per navigation ("), "{out}");
}
