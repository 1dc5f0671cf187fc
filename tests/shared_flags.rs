//! The flags several commands share (`src/cmd/flags.rs`: the agent, the attempt's budget, the sweep) work
//! in every command that takes them, the ones a command gained with the shared groups included: `local
//! --provider --task-timeout --max-retries --profile`, `run --provider`, `calibrate --provider
//! --temperature`; and `--seed` and `--data`, each declared once, keep every command's default. The built
//! binary, as a user runs it; `local` with `--simulate`, so no browser.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

#[path = "support/cli.rs"]
mod cli;

use cli::{refused, s, stderr};

fn skillshift(args: &[&str]) -> Command {
    let mut cmd = cli::bin();
    cmd.args(args).env_remove("OPENAI_BASE_URL");
    cmd
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run skillshift")
}

/// `skillshift local --simulate` over gitlab families 0 and 1 under src, writing under `dir/out`.
fn local(dir: &Path, out: &str, extra: &[&str]) -> Output {
    let families = dir.join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0, 1]}}}"#).expect("families file");
    let out = dir.join(out);
    let mut args = vec!["local", "--workers", "1", "--simulate", "5", "--sites", "gitlab", "--conditions", "src"];
    args.extend(["--families", s(&families), "--out", s(&out)]);
    args.extend(extra);
    output(skillshift(&args).env("OPENAI_API_KEY", "sk-not-used"))
}

fn contract(dir: &Path, out: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(out).join("contract.json")).expect("contract.json");
    serde_json::from_str(&text).expect("contract json")
}

/// `local` takes the sweep's attempt budget, retry policy and perturbation profile, and its contract says so.
#[test]
fn local_takes_the_task_timeout_retries_and_profile_of_sweep_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = local(dir.path(), "default", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let default = contract(dir.path(), "default");
    assert_eq!(default["task_timeout_s"], 600, "{default}");
    assert_eq!(default["retry_policy"]["max_retries"], 2, "{default}");

    // Another profile: the default one with another description, so another digest.
    let text = std::fs::read_to_string("data/perturbations/default.json").expect("default profile");
    let mut profile: Value = serde_json::from_str(&text).expect("profile json");
    profile["description"] = "the default profile, described otherwise".into();
    let file = dir.path().join("profile.json");
    std::fs::write(&file, profile.to_string()).expect("write profile");
    let o = local(dir.path(), "given", &["--task-timeout", "77", "--max-retries", "3", "--profile", s(&file)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let given = contract(dir.path(), "given");
    assert_eq!(given["task_timeout_s"], 77, "{given}");
    assert_eq!(given["retry_policy"]["max_retries"], 3, "{given}");
    assert!(given["perturbation_profile"].is_string(), "{given}");
    assert_ne!(given["perturbation_profile"], default["perturbation_profile"], "{given}");

    let missing = dir.path().join("no-such-profile.json");
    let err = refused(&local(dir.path(), "missing", &["--profile", s(&missing)]));
    assert!(err.contains("no-such-profile.json"), "{err}");
}

/// `--provider` naming another provider than the endpoint's is refused before anything runs, by `local`,
/// `run` and `calibrate` as by `sweep start`.
#[test]
fn a_provider_the_endpoint_is_not_is_refused_by_local_run_and_calibrate() {
    let expected = "--provider azure.ai.openai: the endpoint https://api.openai.com/v1 is provider 'openai'";
    let dir = tempfile::tempdir().expect("tempdir");
    let err = refused(&local(dir.path(), "local", &["--agent", "reference", "--provider", "azure.ai.openai"]));
    assert!(err.contains(expected), "{err}");
    let o = local(dir.path(), "named", &["--agent", "reference", "--provider", "openai"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(contract(dir.path(), "named")["provider"], "openai");

    let run = ["run", "skillshift.gitlab.v1.0", "--condition", "src", "--agent", "reference"];
    let o = output(skillshift(&run).args(["--provider", "azure.ai.openai"]).env("OPENAI_API_KEY", "sk-not-used"));
    let err = refused(&o);
    assert!(err.contains(expected), "{err}");
    assert!(o.stdout.is_empty(), "nothing runs");

    // A published anchor of made-up (not simulated) records, as `calibrate anchor` makes one.
    let plan = skillshift_analysis::synth::Plan {
        treatment: "reference".into(),
        reps: 1,
        error_pct: 2,
        skills: true,
        max_calls: 1,
        success_pct: 40,
        seed: 9,
    };
    cli::synthetic(dir.path(), "reference.jsonl", &plan);
    let records = dir.path().join("reference.jsonl");
    let anchor = dir.path().join("anchor.json");
    let o = output(&mut skillshift(&[
        "calibrate",
        "anchor",
        "--agent",
        "reference",
        "--records",
        s(&records),
        "--out",
        s(&anchor),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let calibrate = ["calibrate", "--reference", s(&anchor), "--coordinator", "http://127.0.0.1:9"];
    let o = output(skillshift(&calibrate).args(["--provider", "azure.ai.openai"]));
    let err = refused(&o);
    assert!(err.contains(expected), "{err}");
    // A temperature other than the anchor's is said, then the run goes on (to a coordinator that is not there).
    let o = output(skillshift(&calibrate).args(["--temperature", "0.5"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("--temperature 0.5 differs from the anchor's temperature 0"), "{err}");
    assert!(err.contains("coordinator at http://127.0.0.1:9 is unreachable"), "{err}");
}

/// A flag's entry in a command's `--help`: its line and the lines of its wrapped help below it.
fn help_entry(help: &str, flag: &str) -> Option<String> {
    let mut lines = help.lines().skip_while(|l| !l.trim_start().starts_with(flag));
    let first = lines.next()?;
    let rest = lines.take_while(|l| l.starts_with(' ') && !l.trim_start().starts_with('-'));
    Some(std::iter::once(first).chain(rest).map(str::trim).collect::<Vec<_>>().join(" "))
}

/// `--seed` and `--data` are declared once (`SeedArgs`, `DataArgs`), and every command that took them still
/// does, with its default (and `tasks` with its environment variable) as before.
#[test]
fn every_command_keeps_its_seed_and_data_flags_with_their_defaults() {
    let seed = ("--seed <SEED>", "[default: 0]");
    let data = ("--data <DATA>", "[default: data]");
    let cases: &[(&[&str], (&str, &str))] = &[
        (&["local"], seed),
        (&["local"], data),
        (&["sweep", "start"], seed),
        (&["sweep", "start"], data),
        (&["run"], seed),
        (&["run"], data),
        (&["calibrate"], seed),
        (&["calibrate"], data),
        (&["tasks", "audit"], seed),
        (&["tasks"], data),
        (&["tasks", "audit"], data),
        (&["tasks", "list"], data),
        (&["worker"], data),
    ];
    for (command, (flag, default)) in cases {
        let o = output(skillshift(command).arg("--help").env_remove("SKILLSHIFT_DATA"));
        let help = cli::stdout(&o);
        let command = command.join(" ");
        assert_eq!(o.status.code(), Some(0), "skillshift {command} --help: {}", stderr(&o));
        let entry = help_entry(&help, flag).unwrap_or_else(|| panic!("skillshift {command} takes no {flag}:\n{help}"));
        assert!(entry.contains(default), "skillshift {command}: {flag} lost its {default}: {entry}");
        if command.starts_with("tasks") && flag.starts_with("--data") {
            assert!(entry.contains("[env: SKILLSHIFT_DATA=]"), "skillshift {command}: {entry}");
        }
    }
}

#[test]
fn a_bad_flag_is_one_line_that_names_it_and_exit_2_while_help_is_exit_0() {
    // A bad value, an unknown flag and a missing one, each in a different command (docs/cli.md#exit-codes).
    for (args, names) in [
        (&["local", "--workers", "abc"][..], &["--workers", "abc"][..]),
        (&["bench", "floors", "--pages", "every"][..], &["--pages", "every", "start, tasks"][..]),
        (&["report", "--no-such-flag"][..], &["--no-such-flag"][..]),
        (&["bench", "step"][..], &["--url"][..]),
    ] {
        let err = refused(&output(&mut skillshift(args)));
        assert!(err.starts_with("skillshift: error: "), "{args:?}: {err}");
        for name in names {
            assert!(err.contains(name), "{args:?}: {name} not named in: {err}");
        }
        assert!(!err.contains("For more information"), "{args:?}: {err}");
    }
    let help = output(&mut skillshift(&["bench", "floors", "--help"]));
    assert_eq!(help.status.code(), Some(0));
    assert!(cli::stdout(&help).contains("--pages"), "{}", cli::stdout(&help));
}

/// `local` without `--workers` starts one worker per core the process may use and one more, at most 8
/// (docs/performance.md#throughput): two when it may use one core (`taskset`), and its help says so.
#[test]
fn local_starts_a_worker_per_core_and_one_more_unless_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    let families = dir.path().join("families.json");
    std::fs::write(&families, r#"{"sites": {"gitlab": {"families": [0, 1]}}}"#).expect("families file");
    let workers = |pin: Option<&str>, out: &str| {
        let out = dir.path().join(out);
        let args = ["local", "--simulate", "5", "--sites", "gitlab", "--conditions", "src"];
        let mut cmd = match pin {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpu]).arg(cli::bin().get_program()).args(args);
                c
            }
            None => skillshift(&args),
        };
        cmd.args(["--families", s(&families), "--out", s(&out)]).env("OPENAI_API_KEY", "sk-not-used");
        let o = output(cmd.env_remove("OPENAI_BASE_URL"));
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let line = err.lines().find(|l| l.starts_with("sweep ") && l.contains(" units on ")).unwrap_or_default();
        let n =
            line.rsplit(" units on ").next().and_then(|t| t.split(' ').next()).and_then(|n| n.parse::<usize>().ok());
        n.unwrap_or_else(|| panic!("no 'sweep ..: N units on W workers' line:\n{err}"))
    };
    assert_eq!(workers(Some("0"), "one-core"), 2, "one core: one worker for it and one more");
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(workers(None, "all-cores"), (cores + 1).min(8));
    let help = cli::stdout(&output(&mut skillshift(&["local", "--help"])));
    let entry = help_entry(&help, "--workers <WORKERS>").expect("local takes --workers");
    assert!(entry.contains(&format!("[default: {}]", (cores + 1).min(8))), "{entry}");
}
