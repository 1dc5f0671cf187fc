//! `skillshift tasks generate | validate | list | show UID`: the task files
//! of docs/formats.md#task-files, their reference solutions and the example skill library.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use skillshift_common::skills::Step;
use skillshift_common::task::{load_task_file, task_file_path, Task};
use skillshift_common::{Condition, Site, Uid, Version};

use super::flags::{help, AttemptArgs, DataArgs, SeedArgs};

#[derive(clap::Args)]
#[command(mut_arg("data", |a| a
    .global(true)
    .env("SKILLSHIFT_DATA")
    .help("The data directory (task files, solutions, skills, digests)")))]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Regenerate task files, solutions, the example skills and DIGESTS.json from code.
    Generate {
        /// Write here instead of the data directory.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check counts, ids, placeholders, evaluators, v1/v2 alignment, solutions, skills, calibration families;
    /// with FILEs, check that every task of those WebArena config files loads.
    Validate {
        /// WebArena config files (one task object or an array); without them, the grid's own data.
        files: Vec<PathBuf>,
        /// Only these sites (default: all three); for the grid's data.
        #[arg(long, value_delimiter = ',')]
        sites: Vec<Site>,
        /// With FILEs: print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One line per task: uid, template id, evaluator, intent.
    List {
        /// Only this site (default: all three).
        #[arg(long)]
        site: Option<Site>,
        /// The version whose task file is listed.
        #[arg(long, default_value = "v1")]
        version: Version,
    },
    /// A task's intent, both versions' start URLs and its reference solution(s).
    Show {
        /// The task's uid, e.g. skillshift.gitlab.v1.3.
        uid: Uid,
    },
    /// Prove every task valid in real headless Chromium: its reference solution passes and doing nothing
    /// fails, each from a fresh reset, through the worker's own attempt path. Exit 0 when every
    /// task-version is `ok`, 1 when any is not, 2 when the audit cannot run.
    Audit(AuditArgs),
}

#[derive(clap::Args)]
#[command(
    mut_arg("max_steps", help("The step budget of each attempt")),
    mut_arg("task_timeout", |a| a.default_value("120").help("The wall-clock ceiling of each attempt, in seconds")),
    mut_arg("seed", help("The seed the perturbed conditions derive theirs from (a sweep's `--seed`)")),
)]
struct AuditArgs {
    /// Only these sites (default: all three).
    #[arg(long, value_delimiter = ',')]
    sites: Vec<Site>,
    /// Only these versions (default: v1,v2).
    #[arg(long, value_delimiter = ',')]
    versions: Vec<Version>,
    /// Also run the reference solution under these perturbed conditions (src-perc, src-exec, tgt-perc,
    /// tgt-exec); reported apart, they never change a task's status.
    #[arg(long, value_delimiter = ',')]
    conditions: Vec<Condition>,
    /// A JSON file shaped like data/calibration_set.json: only the listed families of the sites it names.
    #[arg(long)]
    families: Option<PathBuf>,
    /// Browsers running attempts at once, each with its own fixture sites.
    #[arg(long, default_value_t = 2)]
    workers: u32,
    /// Runs of the reference solution per task-version; with 2 or more, runs that disagree make the
    /// task `nondeterministic`.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    #[command(flatten)]
    attempt: AttemptArgs,
    #[command(flatten)]
    seed: SeedArgs,
    /// Print the report as JSON (docs/formats.md#the-task-audit).
    #[arg(long)]
    json: bool,
    /// A sites file of real instances (`bash scripts/real-sites.sh wordpress` writes one): the site-versions
    /// it names are audited there, the rest on the fixture sites (docs/real-sites.md).
    #[arg(long, value_name = "FILE")]
    real_sites: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let data = args.data.data;
    match args.command {
        Command::Generate { out } => generate(out.unwrap_or(data)),
        Command::Validate { files, json, .. } if !files.is_empty() => validate_files(&files, json),
        Command::Validate { sites, .. } => validate(&data, sites),
        Command::List { site, version } => list(&data, site, version),
        Command::Show { uid } => show(&data, uid),
        Command::Audit(a) => audit(data, a),
    }
}

fn audit(data: PathBuf, a: AuditArgs) -> anyhow::Result<ExitCode> {
    use skillshift_experiment::audit::{self, AuditSettings};
    skillshift_worker::attempt::NetworkTrace::from_env().map_err(anyhow::Error::msg)?;
    let mut s = AuditSettings::all(data);
    if !a.sites.is_empty() {
        s.sites = a.sites;
    }
    if !a.versions.is_empty() {
        s.versions = a.versions;
    }
    s.conditions = a.conditions;
    s.families = a.families;
    s.workers = a.workers;
    s.repeat = a.repeat;
    s.max_steps = a.attempt.max_steps();
    s.task_timeout_s = a.attempt.task_timeout;
    s.seed = a.seed.seed;
    s.real_sites = a.real_sites;
    let report = audit::run(&s)?;
    if report.measured_nothing() {
        let first = report.tasks.first().and_then(|r| r.detail.clone()).unwrap_or_default();
        anyhow::bail!("every attempt of the audit errored; the first: {first}");
    }
    let text = if a.json { serde_json::to_string_pretty(&report)? + "\n" } else { report.lines().join("\n") + "\n" };
    crate::cmd::write_stdout(&text)?;
    Ok(if report.all_ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn generate(out: PathBuf) -> anyhow::Result<ExitCode> {
    let rendered = skillshift_sites::generate::write(&out)?;
    for file in &rendered.files {
        super::out!("wrote {}", out.join(&file.path).display());
    }
    for site in &rendered.skipped {
        eprintln!("skipped {site}: its module generates no tasks yet");
    }
    Ok(ExitCode::SUCCESS)
}

fn validate(data: &std::path::Path, sites: Vec<Site>) -> anyhow::Result<ExitCode> {
    let sites = if sites.is_empty() { Site::ALL.to_vec() } else { sites };
    match skillshift_sites::validate::validate(data, &sites) {
        Ok(summary) => {
            for (site, version, n) in &summary.files {
                super::out!("ok  {site} {version}: {n} tasks, {n} reference solutions");
            }
            super::out!(
                "ok  {} example skills; {} calibration families resolve; DIGESTS.json has all six images",
                summary.skills,
                summary.calibration_families
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(problems) => {
            for p in &problems {
                eprintln!("skillshift: invalid: {p}");
            }
            eprintln!("skillshift: error: {} problem(s) in {}", problems.len(), data.display());
            Ok(ExitCode::from(2))
        }
    }
}

/// `tasks validate FILE... [--json]`: exit 0 when every task loads, 1 when some are refused, 2 when a file is unreadable.
fn validate_files(files: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let (report, errors) = skillshift_common::task::validate::validate_files(files);
    warn_tokenizer(&report);
    let mut text = String::new();
    if json {
        text = serde_json::to_string_pretty(&report)? + "\n";
    } else {
        for f in &report.files {
            let mark = if f.problems.is_empty() { "ok " } else { "bad" };
            text += &format!("{mark}  {}: {} of {} tasks load\n", f.path, f.loaded, f.tasks);
            for p in &f.problems {
                let id = p.task_id.map_or("?".to_string(), |i| i.to_string());
                let field = if p.field.is_empty() { "(task)" } else { &p.field };
                text += &format!("    task {id}: {field}: {}\n", p.message);
            }
        }
    }
    super::write_stdout(&text)?;
    for e in &errors {
        eprintln!("skillshift: error: {e}");
    }
    Ok(if !errors.is_empty() {
        ExitCode::from(2)
    } else if report.all_loaded() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn load(data: &std::path::Path, site: Site, version: Version) -> anyhow::Result<Vec<Task>> {
    let path = task_file_path(data, site, version);
    Ok(load_task_file(&path, site)?)
}

fn eval_kind(t: &Task) -> String {
    t.eval
        .eval_types
        .iter()
        .map(|e| serde_json::to_value(e).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("+")
}

fn list(data: &std::path::Path, site: Option<Site>, version: Version) -> anyhow::Result<ExitCode> {
    for &s in Site::ALL {
        if site.is_some_and(|x| x != s) {
            continue;
        }
        let path = task_file_path(data, s, version);
        if site.is_none() && !path.exists() {
            eprintln!("no task file {}", path.display());
            continue;
        }
        for t in load(data, s, version)? {
            let uid = Uid::new(s, version, t.task_id);
            super::out!("{uid:<28} tpl {:<3} {:<13} {}", t.intent_template_id, eval_kind(&t), t.intent);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A step as one readable line.
pub fn describe(step: &Step) -> String {
    let target = |t: &skillshift_common::skills::Target| match t.nth {
        Some(n) => format!("{} \"{}\" (nth {n})", t.role, t.name),
        None => format!("{} \"{}\"", t.role, t.name),
    };
    match step {
        Step::Goto { url } => format!("goto {url}"),
        Step::Click { target: t } => format!("click {}", target(t)),
        Step::Fill { target: t, text } => format!("fill {} with \"{text}\"", target(t)),
        Step::Select { target: t, option } => format!("select \"{option}\" in {}", target(t)),
        Step::Check { target: t } => format!("check {}", target(t)),
        Step::Press { target: t, key } => format!("press {key} in {}", target(t)),
        Step::Hover { target: t } => format!("hover {}", target(t)),
        Step::Read { target: t, pattern, values } => {
            let mut s = format!("read {}", target(t));
            if let Some(p) = pattern {
                s.push_str(&format!(" matching /{p}/"));
            }
            for (text, value) in values.iter().flatten() {
                s.push_str(&format!(", \"{text}\" as \"{value}\""));
            }
            s
        }
        Step::Answer { text } => format!("answer \"{text}\""),
    }
}

fn solution(data: &std::path::Path, uid: Uid) -> anyhow::Result<Vec<Step>> {
    let path = data.join("solutions").join(format!("{}.{}.json", uid.site, uid.version));
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let all: Vec<Vec<Step>> =
        serde_json::from_str(&text).with_context(|| format!("{} is not a solutions file", path.display()))?;
    all.into_iter()
        .nth(uid.task_id as usize)
        .with_context(|| format!("{} has no solution for task {}", path.display(), uid.task_id))
}

fn show(data: &std::path::Path, uid: Uid) -> anyhow::Result<ExitCode> {
    let tasks = load(data, uid.site, uid.version)?;
    let task = tasks
        .get(uid.task_id as usize)
        .with_context(|| format!("{uid}: no such task ({} has {} tasks)", uid.site, tasks.len()))?;
    super::out!("uid:        {uid}");
    super::out!("family:     {}", uid.family());
    super::out!("intent:     {}", task.intent);
    super::out!("template:   {} (id {})", task.intent_template, task.intent_template_id);
    super::out!("evaluator:  {}", eval_kind(task));
    if let Some(r) = &task.eval.reference_answers {
        super::out!("answer:     {}", serde_json::to_string(r)?);
    }
    if let Some(u) = &task.eval.reference_url {
        super::out!("reference:  {u}");
    }
    for check in &task.eval.program_html {
        super::out!(
            "check:      {} {} {}",
            check.url,
            if check.locator.as_str().is_empty() { "''" } else { check.locator.as_str() },
            serde_json::to_string(&check.required_contents)?
        );
    }
    for &version in Version::ALL {
        let other = load(data, uid.site, version)?;
        if let Some(t) = other.get(uid.task_id as usize) {
            super::out!("start {version}:   {}", t.start_url);
        }
    }
    for &version in Version::ALL {
        let v_uid = Uid::new(uid.site, version, uid.task_id);
        super::out!("reference solution ({version}):");
        for (i, step) in solution(data, v_uid)?.iter().enumerate() {
            super::out!("  {:>2}. {}", i + 1, describe(step));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A warning per file whose tasks match a one-character `must_include` against word tokens while NLTK's punkt
/// model is not installed: those tasks would score `invalid`.
fn warn_tokenizer(report: &skillshift_common::task::validate::Report) {
    let Err(why) = skillshift_common::evaluate::tokenize::WordTokenizer::from_environment() else { return };
    for f in &report.files {
        let ids: Vec<String> = f
            .tasks()
            .iter()
            .filter(|t| {
                t.eval.reference_answers.as_ref().is_some_and(skillshift_common::evaluate::string::needs_tokenizer)
            })
            .map(|t| t.task_id.to_string())
            .collect();
        if !ids.is_empty() {
            eprintln!(
                "skillshift: warning: {}: task(s) {} match a one-character must_include against word tokens, which \
                 needs NLTK's punkt model; until it is installed they score invalid: {why}",
                f.path,
                ids.join(", ")
            );
        }
    }
}
