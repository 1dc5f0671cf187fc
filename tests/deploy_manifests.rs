//! deploy/ against the real binary. `scripts/check-deploy.sh` must pass (Kubernetes
//! schemas in strict mode and the project's own checks, docs/deploy.md "Validation"),
//! and every skillshift command line in deploy/k8s, deploy/compose.yaml, the Dockerfiles
//! and the deployment docs may use only subcommands and flags that `skillshift ... --help`
//! lists, and must parse with clap itself. The command lines come from
//! `scripts/deploy_check.py argv` (PyYAML in the script's venv), one per line: where, then
//! the arguments after `skillshift`, tab-separated. Without PyPI the venv cannot be made:
//! those tests say SKIPPED and pass.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "support/cli.rs"]
mod cli;

use cli::{bin, root};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

/// check-deploy.sh's exit status when it could not install kubernetes-validate.
const NO_PYPI: i32 = 3;

/// One script at a time: the first run creates the venv the others reuse.
static SCRIPT: Mutex<()> = Mutex::new(());

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn check_deploy(args: &[&str]) -> Output {
    let _one = SCRIPT.lock().unwrap_or_else(|e| e.into_inner());
    Command::new("bash").arg("scripts/check-deploy.sh").args(args).current_dir(root()).output().unwrap()
}

fn skipped(out: &Output) -> bool {
    if out.status.code() == Some(NO_PYPI) {
        eprintln!("SKIPPED: kubernetes-validate could not be installed from PyPI: {}", text(&out.stderr));
        return true;
    }
    false
}

/// How a flag takes its value, as `--help` shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Takes {
    Nothing,
    /// `--flag <V>`
    Value,
    /// `--flag [<V>]`
    MaybeValue,
}

/// What `skillshift <path> --help` offers.
#[derive(Debug, Default)]
struct Help {
    subcommands: BTreeSet<String>,
    /// Every usage line names `<COMMAND>` (`calibrate` also runs without one).
    subcommand_required: bool,
    flags: BTreeMap<String, Takes>,
}

/// Reads clap's help text: the usage lines and the `Commands:` and `Options:` sections.
fn parse_help(help: &str) -> Help {
    let mut out = Help::default();
    let mut usages = Vec::new();
    let mut section = "";
    for line in help.lines() {
        if !line.starts_with(' ') {
            section = if line.starts_with("Usage:") { "Usage:" } else { line.trim_end() };
            if section == "Usage:" {
                usages.push(line);
            }
            continue;
        }
        let mut words = line.split_whitespace();
        match (section, words.next()) {
            ("Usage:", Some(_)) => usages.push(line),
            ("Commands:", Some(cmd)) if cmd != "help" => {
                out.subcommands.insert(cmd.to_string());
            }
            ("Options:", Some(first)) if first.starts_with('-') => {
                let short = first.strip_suffix(',').filter(|s| s.len() == 2);
                let long = if short.is_some() { words.next().unwrap_or_default() } else { first };
                let takes = match words.next() {
                    Some(w) if w.starts_with('<') => Takes::Value,
                    Some(w) if w.starts_with("[<") => Takes::MaybeValue,
                    _ => Takes::Nothing,
                };
                out.flags.extend(short.into_iter().chain([long]).map(|f| (f.to_string(), takes)));
            }
            _ => {}
        }
    }
    out.subcommand_required = !usages.is_empty() && usages.iter().all(|u| u.contains("<COMMAND>"));
    out
}

/// Runs `skillshift <path> --help` once per path.
#[derive(Default)]
struct Cli {
    helps: HashMap<Vec<String>, Help>,
}

impl Cli {
    fn help(&mut self, path: &[String]) -> &Help {
        self.helps.entry(path.to_vec()).or_insert_with(|| {
            let out = bin().args(path).arg("--help").env("NO_COLOR", "1").output().unwrap();
            assert!(out.status.success(), "skillshift {} --help: {}", path.join(" "), text(&out.stderr));
            parse_help(&text(&out.stdout))
        })
    }

    /// What is wrong with `skillshift <args>`: a subcommand or a flag the binary lacks, or a
    /// command line clap refuses. Empty when it is right.
    fn problems(&mut self, args: &[String]) -> Vec<String> {
        let mut problems = Vec::new();
        let mut path: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() && args[i] != "--" {
            let arg = &args[i];
            let here = format!("skillshift {}", path.join(" ")).trim_end().to_string();
            let help = self.help(&path);
            if arg.starts_with('-') && arg.len() > 1 {
                let (flag, inline) = match arg.split_once('=') {
                    Some((f, v)) => (f, Some(v)),
                    None => (arg.as_str(), None),
                };
                let next_is_value = args.get(i + 1).is_some_and(|n| !n.starts_with('-'));
                match help.flags.get(flag) {
                    None => problems.push(format!("`{here}` has no flag {flag} (see `{here} --help`)")),
                    Some(Takes::Value) if inline.is_none() => i += 1,
                    Some(Takes::MaybeValue) if inline.is_none() && next_is_value => i += 1,
                    Some(_) => {}
                }
            } else if help.subcommands.contains(arg) {
                path.push(arg.clone());
            } else if help.subcommand_required {
                let known: Vec<&str> = help.subcommands.iter().map(String::as_str).collect();
                problems.push(format!("`{here}` has no subcommand {arg} (it has {})", known.join(", ")));
                return problems;
            }
            // Otherwise a positional argument of the command (`sweep watch ID`).
            i += 1;
        }
        if self.help(&path).subcommand_required {
            problems.push(format!("`skillshift {}` needs a subcommand", path.join(" ")));
        }
        if problems.is_empty() {
            // clap's own parse: unknown arguments and unparsable values fail before --help is seen.
            let out = bin().args(args).arg("--help").env("NO_COLOR", "1").output().unwrap();
            if !out.status.success() {
                let why = text(&out.stderr);
                problems.push(format!("clap refuses it: {}", why.lines().next().unwrap_or_default()));
            }
        }
        problems
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// (where, arguments after `skillshift`) from deploy_check.py's `argv` output.
fn command_lines(stdout: &str) -> Vec<(String, Vec<String>)> {
    stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut fields = l.split('\t');
            let place = fields.next().unwrap_or_default().to_string();
            (place, fields.map(String::from).collect())
        })
        .collect()
}

#[test]
fn check_deploy_passes() {
    let out = check_deploy(&[]);
    if skipped(&out) {
        return;
    }
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "scripts/check-deploy.sh failed:\n{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("check-deploy: deploy/ is valid"), "{stdout}");
    assert!(stdout.contains("0 problems"), "{stdout}");
    assert!(stdout.contains("breakages caught"), "{stdout}");
}

#[test]
fn every_command_line_uses_only_real_subcommands_and_flags() {
    let out = check_deploy(&["--argv"]);
    if skipped(&out) {
        return;
    }
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = command_lines(&text(&out.stdout));
    // Nothing passes by having nothing to check: the places that must hold command lines.
    for place in [
        "deploy/k8s/coordinator.yaml: StatefulSet/skillshift-coordinator container coordinator",
        "deploy/k8s/workers.yaml: Deployment/skillshift-worker container worker",
        "deploy/k8s/optional/workers-webarena-verified.yaml: Deployment/skillshift-worker-webarena-verified container worker",
        "deploy/compose.yaml: service coordinator",
        "deploy/compose.yaml: service worker-1",
        "deploy/Dockerfile.worker: ENTRYPOINT + CMD",
        "docs/deploy.md:",
    ] {
        assert!(lines.iter().any(|(w, _)| w.starts_with(place)), "no command line from {place}: {lines:?}");
    }
    let mut cli = Cli::default();
    let problems: Vec<String> = lines
        .iter()
        .flat_map(|(place, args)| cli.problems(args).into_iter().map(move |p| format!("{place}: {p}")))
        .collect();
    assert!(problems.is_empty(), "{} command lines, problems:\n{}", lines.len(), problems.join("\n"));
    eprintln!("{} command lines checked against `skillshift ... --help`", lines.len());
}

#[test]
fn the_checker_rejects_what_the_binary_lacks() {
    let mut cli = Cli::default();
    let made_up = cli.problems(&strings(&["worker", "--embedded-sites", "--no-such-flag", "1"]));
    assert!(made_up.iter().any(|p| p.contains("`skillshift worker` has no flag --no-such-flag")), "{made_up:?}");
    // The old compose header's command.
    let submit = cli.problems(&strings(&["sweep", "submit", "--coordinator", "http://localhost:50051"]));
    assert!(submit.iter().any(|p| p.contains("`skillshift sweep` has no subcommand submit")), "{submit:?}");
    // A worker flag on the coordinator.
    let misplaced = cli.problems(&strings(&["coordinator", "--data-dir", "/d", "--metrics-addr", "0.0.0.0:9100"]));
    assert!(misplaced.iter().any(|p| p.contains("has no flag --metrics-addr")), "{misplaced:?}");
    let bare = cli.problems(&strings(&["sweep", "--coordinator", "http://h:1"]));
    assert!(bare.iter().any(|p| p.contains("`skillshift sweep` needs a subcommand")), "{bare:?}");
    // clap's own parse catches a value the flag's type refuses.
    let value = cli.problems(&strings(&["worker", "--embedded-sites", "--slots", "two"]));
    assert!(value.iter().any(|p| p.contains("clap refuses it")), "{value:?}");
    // And right command lines pass: global flags before the subcommand, values skipped.
    for ok in [
        &["worker", "--embedded-sites", "--slots", "2", "--name", "$(POD_NAME)", "--drain-timeout", "120"][..],
        &["sweep", "--coordinator", "http://h:1", "start", "--sites", "gitlab", "--conditions", "src,tgt"],
        &["sweep", "watch", "$ID"],
        &["calibrate", "--dry-run", "--site", "wordpress"],
        &["coordinator", "--listen=0.0.0.0:50051", "--http", "0.0.0.0:8080", "--data-dir", "/d"],
    ] {
        let found = cli.problems(&strings(ok));
        assert!(found.is_empty(), "{ok:?}: {found:?}");
    }
}

fn copy_into(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_into(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}

#[test]
fn a_manifest_with_a_made_up_flag_fails() {
    // Make sure the venv exists (and skip without PyPI), then run the extraction on a copy
    // of the tree whose worker Deployment uses a flag the worker does not have.
    let out = check_deploy(&["--argv"]);
    if skipped(&out) {
        return;
    }
    let copy = tempfile::tempdir().unwrap();
    for part in ["deploy", "docs/deploy.md", "telemetry/src/metrics/coordinator.rs"] {
        copy_into(&root().join(part), &copy.path().join(part));
    }
    let workers = copy.path().join("deploy/k8s/workers.yaml");
    let yaml = std::fs::read_to_string(&workers).unwrap();
    let broken = yaml.replacen(
        "            - --embedded-sites\n",
        "            - --embedded-sites\n            - --max-browsers\n            - \"4\"\n",
        1,
    );
    assert_ne!(yaml, broken, "workers.yaml no longer has the line this test edits");
    std::fs::write(&workers, broken).unwrap();
    let python = root().join("target/deploy-venv/bin/python");
    let out =
        Command::new(python).arg(root().join("scripts/deploy_check.py")).arg("argv").arg(copy.path()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut cli = Cli::default();
    let problems: Vec<String> = command_lines(&text(&out.stdout))
        .iter()
        .filter(|(place, _)| place.starts_with("deploy/k8s/workers.yaml"))
        .flat_map(|(_, args)| cli.problems(args))
        .collect();
    assert!(problems.iter().any(|p| p.contains("`skillshift worker` has no flag --max-browsers")), "{problems:?}");
}
