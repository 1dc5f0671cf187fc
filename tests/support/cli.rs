//! The built `skillshift` as a user runs it, for the command-line tests: the command in the repository's
//! root, its output as text, the shape of a refusal (exit 2, one line on stderr), the repository's paths
//! and synthetic records. Include it with `#[path = "support/cli.rs"] mod cli;`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use skillshift_analysis::synth::{write_grid, Plan};

/// The repository's root, where every command runs.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped data directory.
pub fn data() -> PathBuf {
    root().join("data")
}

/// The binary, to run in the repository's root.
pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skillshift"));
    cmd.current_dir(root());
    cmd
}

/// Runs `skillshift ARGS...` to its end.
pub fn skillshift(args: &[&str]) -> Output {
    bin().args(args).output().expect("run skillshift")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A path as a flag's value.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Exit 2 with one line on stderr (docs/cli.md#exit-codes); returns it.
pub fn refused(o: &Output) -> String {
    refused_in(o, "skillshift")
}

/// [`refused`] for the case `what`, which its failures name.
pub fn refused_in(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{what}: stdout:\n{}\nstderr:\n{err}", stdout(o));
    assert_eq!(err.trim().lines().count(), 1, "{what}: one line: {err}");
    err
}

/// Writes `plan`'s synthetic records (generated noise, never results) to `dir/name`.
pub fn synthetic(dir: &Path, name: &str, plan: &Plan) -> PathBuf {
    let p = dir.join(name);
    let mut buf = Vec::new();
    write_grid(plan, &mut buf).expect("generate");
    std::fs::write(&p, buf).expect("write");
    p
}
