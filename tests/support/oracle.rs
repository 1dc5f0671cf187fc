//! The Python venv a peer's own code runs in as a test's oracle, built by the peer's `setup.sh`
//! (`scripts/webarena-oracle`, `scripts/webarena-verified-oracle`), shared by the tests that use one.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// Builds (or finds) the venv of `scripts/<script_dir>/setup.sh` in `$<dir_env>`, default
/// `target/<script_dir>`, and returns its python. `None`, said loudly, when the package registry cannot be
/// reached outside CI (`test` and `what` name the skipped test and what could not be installed); under CI
/// that fails like any other setup failure.
pub fn venv_python(script_dir: &str, dir_env: &str, test: &str, what: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os(dir_env).map(PathBuf::from).unwrap_or_else(|| root.join("target").join(script_dir));
    let setup = root.join("scripts").join(script_dir).join("setup.sh");
    let out = Command::new("bash")
        .arg(&setup)
        .arg(&dir)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", setup.display()));
    match out.status.code() {
        Some(0) => Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())),
        Some(3) if std::env::var_os("CI").is_none() => {
            eprintln!("\n!!!! SKIPPED {test}: the package registry cannot be reached, so {what} cannot be installed. Under CI this fails. !!!!\n");
            None
        }
        code => panic!("{} failed (exit {code:?}); see its output above", setup.display()),
    }
}

/// WebArena's own observations of `request`'s pages (`scripts/webarena-oracle/observe.py`, run by
/// the venv's `python`): one JSON object per page, in order.
pub fn observe(python: &Path, request: &Value) -> Vec<Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/webarena-oracle/observe.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting observe.py");
    child.stdin.take().expect("observe.py's stdin").write_all(request.to_string().as_bytes()).expect("the request");
    let out = child.wait_with_output().expect("observe.py's output");
    assert!(out.status.success(), "observe.py failed: {:?}", out.status);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("observe.py printed {l:?}: {e}")))
        .collect()
}
