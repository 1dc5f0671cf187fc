//! `skillshift tasks audit`: every task proven valid in the browser that scores real attempts
//! (docs/formats.md#the-task-audit).
//!
//! For each task-version it runs, from a fresh reset and through the worker's own attempt path
//! (reset, login, start page, actions, scorer) in real headless Chromium, the task's reference
//! solution and doing nothing (`stop []` at once). A task is `ok` when the reference passes and
//! doing nothing fails. The reference solution runs as the `skills` agent with a library of one
//! skill, the solution itself, so it meets the page exactly as a skill of a sweep does; doing
//! nothing is the `skills` agent with no library, which stops at its first observation.
//!
//! The attempts are spread over `--workers` executors, each with its own fixture sites and its own
//! Chromium, as `local`'s workers are; a queue in this process hands them out. Perturbed runs of the
//! reference (`--conditions`) are reported in a list of their own and never change a task's status:
//! a shift may well break a reference solution, which is data, not a defect.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;
use skillshift_common::blob::Blob;
use skillshift_common::skills::{Skill, SkillLibrary, Step, SKILLS_SCHEMA};
use skillshift_common::task::{load_task_file, task_file_path, task_file_path_on, Task};
use skillshift_common::trajectory::EvaluatorEvidence;
use skillshift_common::{AttemptSpec, Condition, Outcome, Record, Site, Uid, Version};
use skillshift_taskcenter::TaskCenter;
use skillshift_worker::sites::ResetPolicy;

use crate::workers::{self, Runs, SiteChoice, WorkerPlan};

/// The schema tag of the audit's JSON.
pub const AUDIT_SCHEMA: &str = "skillshift.audit/1";

/// The treatment label of the reference solution's attempts.
const REFERENCE: &str = "reference-solution";
/// The treatment label of the attempts that do nothing.
const IDLE: &str = "idle";
/// The name of the one skill a reference attempt's library holds.
const SOLUTION_SKILL: &str = "reference_solution";

/// What the audit runs.
#[derive(Debug, Clone)]
pub struct AuditSettings {
    /// Data directory with `tasks/` and `solutions/`; without task files, the fixture sites' generated tasks.
    pub data: PathBuf,
    pub sites: Vec<Site>,
    pub versions: Vec<Version>,
    /// Perturbed conditions under which the reference solution also runs (clean ones are implied by the versions).
    pub conditions: Vec<Condition>,
    /// A `--families` file: only these families of the sites it names.
    pub families: Option<PathBuf>,
    /// Executors, each with its own fixture sites and Chromium.
    pub workers: u32,
    /// Runs of the reference solution per task-version; two or more can show a task `nondeterministic`.
    pub repeat: u32,
    pub max_steps: u32,
    pub task_timeout_s: u64,
    /// The sweep seed the perturbations derive theirs from.
    pub seed: u64,
    /// `--real-sites FILE`: the site-versions it names are audited on those real instances (reset
    /// before each attempt, one attempt at a time per instance), with their own reference solutions
    /// where the data directory has them (`solutions/real/`).
    pub real_sites: Option<PathBuf>,
}

impl AuditSettings {
    /// Every task of every site and version, reference and idle once each, on two workers.
    pub fn all(data: PathBuf) -> AuditSettings {
        AuditSettings {
            data,
            sites: Site::ALL.to_vec(),
            versions: Version::ALL.to_vec(),
            conditions: Vec::new(),
            families: None,
            workers: 2,
            repeat: 1,
            max_steps: 10,
            task_timeout_s: 120,
            seed: 0,
            real_sites: None,
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.sites.is_empty() {
            bail!("--sites names no site");
        }
        if self.versions.is_empty() {
            bail!("--versions names no version");
        }
        if self.workers == 0 {
            bail!("--workers must be at least 1");
        }
        if self.repeat == 0 {
            bail!("--repeat must be at least 1");
        }
        if self.max_steps == 0 {
            bail!("--max-steps must be at least 1");
        }
        for c in &self.conditions {
            if !self.versions.contains(&c.version()) {
                bail!("--conditions {c} runs {}, which --versions leaves out", c.version());
            }
        }
        Ok(())
    }
}

/// A task-version's verdict (docs/formats.md#the-task-audit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    ReferenceFails,
    IdlePasses,
    Nondeterministic,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::ReferenceFails => "reference_fails",
            Status::IdlePasses => "idle_passes",
            Status::Nondeterministic => "nondeterministic",
            Status::Error => "error",
        }
    }
}

/// One run's verdict as the audit reports it: the scorer's (`pass`, `fail`, `invalid`), or `error`
/// when the attempt measured nothing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunVerdict {
    pub verdict: String,
    pub evaluators: Vec<EvaluatorEvidence>,
}

/// The idle run's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdleVerdict {
    pub verdict: String,
}

/// One task-version's row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub uid: Uid,
    pub site: Site,
    pub version: Version,
    pub task_id: u32,
    pub status: Status,
    pub reference: RunVerdict,
    pub idle: IdleVerdict,
    pub detail: Option<String>,
}

/// One perturbed run of a reference solution.
#[derive(Debug, Clone, Serialize)]
pub struct PerturbedRow {
    pub uid: Uid,
    pub condition: Condition,
    pub verdict: String,
    pub evaluators: Vec<EvaluatorEvidence>,
    pub detail: Option<String>,
}

/// The audit's report: `--json` prints it as it is.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub tasks: Vec<Row>,
    pub perturbed: Vec<PerturbedRow>,
    pub counts: BTreeMap<&'static str, usize>,
    pub wall_s: f64,
    /// The images audited on real instances (`--real-sites`), e.g. `wordpress-v1`; absent without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub real_sites: Vec<String>,
}

impl Report {
    /// Every row `ok`.
    pub fn all_ok(&self) -> bool {
        self.tasks.iter().all(|r| r.status == Status::Ok)
    }

    /// Every attempt of every row errored: the audit measured nothing.
    pub fn measured_nothing(&self) -> bool {
        !self.tasks.is_empty() && self.tasks.iter().all(|r| r.status == Status::Error)
    }

    /// Text lines: one per row that is not `ok` (and per perturbed run that failed), then the counts.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in self.tasks.iter().filter(|r| r.status != Status::Ok) {
            out.push(format!("{} {}: {}", r.uid, r.status.as_str(), r.detail.as_deref().unwrap_or("")));
        }
        let failed: Vec<&PerturbedRow> = self.perturbed.iter().filter(|p| p.verdict != "pass").collect();
        for p in &failed {
            out.push(format!(
                "perturbed {} {}: {}{}",
                p.uid,
                p.condition,
                p.verdict,
                p.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
            ));
        }
        let counts: Vec<String> = self.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        out.push(format!("{} task-versions: {} in {:.1} s", self.tasks.len(), counts.join(", "), self.wall_s));
        if !self.real_sites.is_empty() {
            out.push(format!("on real instances: {}", self.real_sites.join(", ")));
        }
        if !self.perturbed.is_empty() {
            out.push(format!(
                "perturbed runs of the reference (never change a status): {} of {} pass",
                self.perturbed.len() - failed.len(),
                self.perturbed.len()
            ));
        }
        out
    }
}

/// A task and its reference solution.
#[derive(Debug, Clone)]
pub struct Audited {
    pub task: Task,
    pub solution: Vec<Step>,
}

/// What one attempt is for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    Reference,
    Idle,
    Perturbed,
}

struct Job {
    /// Index into the audited task-versions.
    at: usize,
    role: Role,
    spec: AttemptSpec,
}

struct Done {
    at: usize,
    role: Role,
    condition: Condition,
    record: Record,
    blob: Option<Blob>,
}

/// The tasks and solutions of one site-version: the data directory's files, or the fixture sites'
/// generated ones when the directory has no task files. On a real instance (`real`), the tasks of
/// `tasks/real/` and the solutions of `solutions/real/` (`<site>.<version>.json`) where the directory
/// has them: the tasks with the evaluators that hold on the real pages, worked through the real
/// application's screens (docs/real-sites.md).
pub fn load(data: &Path, site: Site, version: Version, real: bool) -> anyhow::Result<Vec<Audited>> {
    let path = task_file_path_on(data, site, version, real);
    if !task_file_path(data, Site::Gitlab, Version::V1).exists() {
        return Ok(skillshift_sites::tasks(site, version)
            .into_iter()
            .map(|g| Audited { task: g.task, solution: g.solution })
            .collect());
    }
    let tasks = load_task_file(&path, site)?;
    let file = format!("{site}.{version}.json");
    let real_path = data.join("solutions").join("real").join(&file);
    let sol_path = if real && real_path.exists() { real_path } else { data.join("solutions").join(&file) };
    let text = skillshift_common::bounded::read_to_string(&sol_path, skillshift_common::bounded::MAX_FILE_BYTES)
        .with_context(|| format!("reading the reference solutions {}", sol_path.display()))?;
    let solutions: Vec<Vec<Step>> = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a solutions file (an array of step arrays)", sol_path.display()))?;
    if solutions.len() != tasks.len() {
        bail!(
            "{}: {} solutions for the {} tasks of {}",
            sol_path.display(),
            solutions.len(),
            tasks.len(),
            path.display()
        );
    }
    Ok(tasks.into_iter().zip(solutions).map(|(task, solution)| Audited { task, solution }).collect())
}

/// The library a reference attempt runs: one skill, the solution, described as the task's template
/// so the `skills` agent calls it.
fn solution_library(site: Site, a: &Audited) -> SkillLibrary {
    SkillLibrary {
        schema: SKILLS_SCHEMA.into(),
        method: REFERENCE.into(),
        skills: vec![Skill {
            name: SOLUTION_SKILL.into(),
            site,
            params: Vec::new(),
            description: a.task.intent_template.clone(),
            steps: a.solution.clone(),
        }],
    }
}

fn clean_condition(version: Version) -> Condition {
    match version {
        Version::V1 => Condition::Src,
        Version::V2 => Condition::Tgt,
    }
}

fn spec(
    s: &AuditSettings,
    uid: Uid,
    condition: Condition,
    role: Role,
    rep: u32,
    library: Option<SkillLibrary>,
) -> AttemptSpec {
    AttemptSpec {
        sweep: "audit".into(),
        treatment: if role == Role::Idle { IDLE } else { REFERENCE }.into(),
        uid,
        condition,
        rep,
        attempt: 0,
        seed: s.seed,
        max_steps: s.max_steps,
        task_timeout_ms: s.task_timeout_s.saturating_mul(1000),
        agent: "skills".into(),
        model: None,
        skills: library,
        perturbation_profile: None,
        config_digest: None,
        traceparent: None,
        temperature: None,
        prompt_version: None,
        evaluator: Default::default(),
        network_bodies: false,
    }
}

/// The task-versions the settings select, with their reference solutions.
pub fn select(s: &AuditSettings, real: Option<&crate::real::RealSites>) -> anyhow::Result<Vec<(Uid, Audited)>> {
    let families = s.families.as_deref().map(crate::spec::read_families).transpose()?;
    if let Some(f) = &families {
        if let Some(site) = f.keys().find(|site| !s.sites.contains(site)) {
            bail!(
                "{}: families for {site}, which --sites leaves out",
                s.families.as_deref().unwrap_or(Path::new("")).display()
            );
        }
    }
    let mut out = Vec::new();
    for &site in &s.sites {
        for &version in &s.versions {
            let tasks = load(&s.data, site, version, real.is_some_and(|r| r.hosts(site, version)))?;
            let keep = families.as_ref().and_then(|f| f.get(&site));
            if let Some(ids) = keep {
                if let Some(bad) = ids.iter().find(|&&id| id as usize >= tasks.len()) {
                    bail!("--families: {site} has no task {bad} ({} tasks)", tasks.len());
                }
            }
            for (i, a) in tasks.into_iter().enumerate() {
                if keep.is_some_and(|ids| !ids.contains(&(i as u32))) {
                    continue;
                }
                out.push((Uid { site, version, task_id: i as u32 }, a));
            }
        }
    }
    Ok(out)
}

/// Why a reference run's solution did not run as written: the error of its failed skill call (the `skills`
/// agent then replays the steps with fuzzy matching, which must not make a wrong solution pass).
fn solution_error(record: &Record, blob: Option<&Blob>) -> Option<String> {
    if record.skill_failures.unwrap_or(0) == 0 {
        return None;
    }
    let failed = blob.and_then(|b| b.trajectory.steps.iter().find_map(|s| s.skill.as_ref().filter(|k| !k.ok)));
    Some(match failed.and_then(|k| k.error.clone()) {
        Some(e) => format!("the reference solution failed as written ({e})"),
        None => "the reference solution failed as written".to_string(),
    })
}

/// A reference run's verdict: the scorer's, but `fail` when the solution did not run as written, even if the
/// agent's fallback then passed the task.
fn reference_verdict(record: &Record, blob: Option<&Blob>) -> RunVerdict {
    let mut v = verdict(record, blob);
    if v.verdict == "pass" && solution_error(record, blob).is_some() {
        v.verdict = "fail".into();
    }
    v
}

/// A run's verdict and evidence from its record and trajectory.
fn verdict(record: &Record, blob: Option<&Blob>) -> RunVerdict {
    let score = blob.and_then(|b| b.trajectory.score.as_ref());
    let evaluators = score.map(|s| s.evaluators.clone()).unwrap_or_default();
    let verdict = match record.outcome {
        Some(Outcome::Error) => "error".to_string(),
        Some(Outcome::Success) => "pass".to_string(),
        _ => score.map(|s| s.verdict.to_string()).unwrap_or_else(|| "fail".to_string()),
    };
    RunVerdict { verdict, evaluators }
}

/// Why an attempt errored, on one line.
fn error_line(record: &Record) -> String {
    let reason = record.error.as_deref().unwrap_or("error");
    match &record.error_detail {
        Some(d) => format!("{reason}: {d}"),
        None => reason.to_string(),
    }
}

/// The evidence of a failed run: each failing evaluator's expected and got.
fn evidence(v: &RunVerdict, record: &Record) -> String {
    let failing: Vec<String> = v
        .evaluators
        .iter()
        .filter(|e| e.verdict != "pass")
        .map(|e| {
            format!(
                "{} {}: expected {}, got {}",
                e.kind,
                e.verdict,
                skillshift_common::text::clip(&e.expected, 160),
                skillshift_common::text::clip(&e.got, 160)
            )
        })
        .collect();
    let mut out = failing.join("; ");
    if record.outcome == Some(Outcome::Timeout) {
        out = format!("the step budget ran out ({} steps); {out}", record.steps.unwrap_or(0));
    }
    if let Some(c) = record.failure_category.as_deref().filter(|_| failing.is_empty()) {
        out = format!("{out}{c}");
    }
    out
}

/// Why a reference run failed: its solution's failed step, when it did not run as written, and the failing
/// evaluators' evidence.
fn failure_detail(v: &RunVerdict, record: &Record, blob: Option<&Blob>) -> String {
    let found = evidence(v, record);
    match solution_error(record, blob) {
        Some(e) if found.is_empty() => e,
        Some(e) => format!("{e}; {found}"),
        None => found,
    }
}

/// The row of one task-version from its runs.
fn classify(uid: Uid, refs: &[(Record, Option<Blob>)], idle: Option<&(Record, Option<Blob>)>) -> Row {
    let verdicts: Vec<RunVerdict> = refs.iter().map(|(r, b)| reference_verdict(r, b.as_ref())).collect();
    let idle_v = idle.map(|(r, b)| verdict(r, b.as_ref()));
    let reference = verdicts.first().cloned().unwrap_or(RunVerdict { verdict: "error".into(), evaluators: vec![] });
    let idle_verdict = IdleVerdict { verdict: idle_v.as_ref().map_or("error".to_string(), |v| v.verdict.clone()) };
    let errored: Vec<String> = refs
        .iter()
        .map(|(r, _)| ("reference", r))
        .chain(idle.map(|(r, _)| ("idle", r)))
        .filter(|(_, r)| r.outcome == Some(Outcome::Error))
        .map(|(which, r)| format!("{which}: {}", error_line(r)))
        .collect();
    let (status, detail) = if !errored.is_empty() || idle.is_none() || refs.is_empty() {
        let detail = if errored.is_empty() { "a run did not report".to_string() } else { errored.join("; ") };
        (Status::Error, Some(detail))
    } else if verdicts.iter().any(|v| v.verdict != reference.verdict) {
        let seen: Vec<&str> = verdicts.iter().map(|v| v.verdict.as_str()).collect();
        (Status::Nondeterministic, Some(format!("reference runs disagree: {}", seen.join(", "))))
    } else if reference.verdict != "pass" {
        let (record, blob) = &refs[0];
        let mut detail = failure_detail(&reference, record, blob.as_ref());
        if idle_verdict.verdict == "pass" {
            detail.push_str("; and doing nothing passes");
        }
        (Status::ReferenceFails, Some(detail))
    } else if idle_verdict.verdict == "pass" {
        let evaluators: Vec<String> = idle_v
            .iter()
            .flat_map(|v| &v.evaluators)
            .map(|e| format!("{}: expected {}, got {}", e.kind, e.expected, skillshift_common::text::clip(&e.got, 160)))
            .collect();
        (Status::IdlePasses, Some(format!("doing nothing passes: {}", evaluators.join("; "))))
    } else {
        (Status::Ok, None)
    };
    Row {
        uid,
        site: uid.site,
        version: uid.version,
        task_id: uid.task_id,
        status,
        reference,
        idle: idle_verdict,
        detail,
    }
}

/// Progress on stderr: done/total, rate and ETA; a line every ten seconds (and the last one).
struct Progress {
    total: usize,
    done: usize,
    began: Instant,
    last: Instant,
}

impl Progress {
    fn tick(&mut self, force: bool) {
        self.done += 1;
        if !force && self.last.elapsed() < Duration::from_secs(10) {
            return;
        }
        self.last = Instant::now();
        let secs = self.began.elapsed().as_secs_f64().max(0.001);
        let rate = self.done as f64 / secs;
        let left = (self.total - self.done) as f64 / rate.max(1e-9);
        eprintln!(
            "audit: {}/{} attempts, {:.2}/s, ETA {}",
            self.done,
            self.total,
            rate,
            crate::progress::fmt_duration((left * 1000.0) as u64)
        );
    }
}

/// Runs the audit and returns its report. Fails (exit 2) when it cannot run at all: bad settings,
/// unreadable task or solution files, a browser that does not start.
pub fn run(s: &AuditSettings) -> anyhow::Result<Report> {
    s.validate()?;
    // Every attempt from a fresh reset, as on the fixture sites.
    let real =
        s.real_sites.as_deref().map(|p| crate::real::RealSites::load(p, Some(ResetPolicy::BeforeEach))).transpose()?;
    let selected = select(s, real.as_ref())?;
    if selected.is_empty() {
        bail!("the audit selects no task");
    }
    let mut jobs = VecDeque::new();
    for (at, (uid, a)) in selected.iter().enumerate() {
        let clean = clean_condition(uid.version);
        let library = solution_library(uid.site, a);
        for rep in 0..s.repeat {
            jobs.push_back(Job {
                at,
                role: Role::Reference,
                spec: spec(s, *uid, clean, Role::Reference, rep, Some(library.clone())),
            });
        }
        jobs.push_back(Job { at, role: Role::Idle, spec: spec(s, *uid, clean, Role::Idle, 0, None) });
        for &c in s.conditions.iter().filter(|c| c.version() == uid.version && **c != clean) {
            jobs.push_back(Job {
                at,
                role: Role::Perturbed,
                spec: spec(s, *uid, c, Role::Perturbed, 0, Some(library.clone())),
            });
        }
    }
    let total = jobs.len();
    let began = Instant::now();
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let done = rt.block_on(execute(s, real.as_ref(), jobs, total));
    rt.shutdown_timeout(Duration::from_secs(5));
    let done = done?;

    let mut refs: Vec<Vec<(Record, Option<Blob>)>> = vec![Vec::new(); selected.len()];
    let mut idles: Vec<Option<(Record, Option<Blob>)>> = vec![None; selected.len()];
    let mut perturbed = Vec::new();
    for d in done {
        let Some((uid, _)) = selected.get(d.at) else { continue };
        match d.role {
            Role::Reference => refs[d.at].push((d.record, d.blob)),
            Role::Idle => idles[d.at] = Some((d.record, d.blob)),
            Role::Perturbed => {
                let v = reference_verdict(&d.record, d.blob.as_ref());
                let detail = match v.verdict.as_str() {
                    "pass" => None,
                    "error" => Some(error_line(&d.record)),
                    _ => Some(failure_detail(&v, &d.record, d.blob.as_ref())),
                };
                perturbed.push(PerturbedRow {
                    uid: *uid,
                    condition: d.condition,
                    verdict: v.verdict,
                    evaluators: v.evaluators,
                    detail,
                });
            }
        }
    }
    perturbed.sort_by_key(|p| (p.uid.site, p.uid.version, p.uid.task_id, p.condition));
    let tasks: Vec<Row> =
        selected.iter().enumerate().map(|(i, (uid, _))| classify(*uid, &refs[i], idles[i].as_ref())).collect();
    let mut counts = BTreeMap::new();
    for r in &tasks {
        *counts.entry(r.status.as_str()).or_insert(0) += 1;
    }
    let real_sites = real.map(|r| r.images(&s.sites)).unwrap_or_default();
    Ok(Report { schema: AUDIT_SCHEMA, tasks, perturbed, counts, wall_s: began.elapsed().as_secs_f64(), real_sites })
}

/// Runs every job on `s.workers` executors and returns what each attempt yielded.
async fn execute(
    s: &AuditSettings,
    real: Option<&crate::real::RealSites>,
    jobs: VecDeque<Job>,
    total: usize,
) -> anyhow::Result<Vec<Done>> {
    let cancel = crate::signals::cancel_on_signals();
    workers::preflight().await?;
    if let Some(r) = real {
        r.check().await?;
    }
    let queue = Arc::new(Mutex::new(jobs));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Done>(64);
    let tasks = TaskCenter::with_token("audit", cancel.child_token());
    let mut built = Vec::new();
    for i in 0..s.workers {
        let plan = WorkerPlan {
            name: format!("audit-{i}"),
            runs: Runs::Browser(match real {
                Some(r) => SiteChoice::Mixed(ResetPolicy::BeforeEach, r.clone()),
                None => SiteChoice::Embedded(ResetPolicy::BeforeEach),
            }),
            slots: 1,
            browser_reuse: skillshift_worker::browser::BrowserConfig::default().reuse,
            data: s.data.clone(),
            screenshots: skillshift_common::trajectory::ScreenshotPolicy::None,
        };
        let worker = workers::build(&plan, None).await?;
        let executor = worker.executor.clone();
        let (queue, tx) = (queue.clone(), tx.clone());
        tasks.spawn("audit-worker", move |stop| async move {
            loop {
                // A std mutex: it guards only a pop, never an await.
                let job = queue.lock().ok().and_then(|mut q| q.pop_front());
                let Some(job) = job else { break };
                let condition = job.spec.condition;
                let (record, blob) = tokio::select! {
                    r = executor.execute_traced(job.spec, stop.child_token()) => r,
                    _ = stop.cancelled() => break,
                };
                if tx.send(Done { at: job.at, role: job.role, condition, record, blob }).await.is_err() {
                    break;
                }
            }
        });
        built.push(worker);
    }
    drop(tx);
    let mut progress = Progress { total, done: 0, began: Instant::now(), last: Instant::now() };
    let mut done = Vec::with_capacity(total);
    while let Some(d) = rx.recv().await {
        done.push(d);
        progress.tick(done.len() == total);
    }
    tasks.shutdown(Duration::from_secs(10)).await;
    for w in &built {
        w.shutdown().await;
    }
    if cancel.is_cancelled() {
        bail!("the audit was cancelled after {} of {total} attempts", done.len());
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(uid: Uid, outcome: Outcome) -> Record {
        let mut r = Record::new(uid, clean_condition(uid.version));
        r.outcome = Some(outcome);
        r
    }

    #[test]
    fn a_row_is_ok_only_when_the_reference_passes_and_idle_fails() {
        let uid = Uid { site: Site::Gitlab, version: Version::V1, task_id: 3 };
        let pass = (rec(uid, Outcome::Success), None);
        let fail = (rec(uid, Outcome::Failure), None);
        assert_eq!(classify(uid, std::slice::from_ref(&pass), Some(&fail)).status, Status::Ok);
        assert_eq!(classify(uid, std::slice::from_ref(&fail), Some(&fail)).status, Status::ReferenceFails);
        assert_eq!(classify(uid, std::slice::from_ref(&pass), Some(&pass)).status, Status::IdlePasses);
        assert_eq!(classify(uid, &[pass.clone(), fail.clone()], Some(&fail)).status, Status::Nondeterministic);
        let mut broken = rec(uid, Outcome::Error);
        broken.error = Some("browser".into());
        broken.error_detail = Some("chromedriver: cannot start".into());
        let row = classify(uid, &[pass], Some(&(broken, None)));
        assert_eq!(row.status, Status::Error);
        assert_eq!(row.detail.as_deref(), Some("idle: browser: chromedriver: cannot start"));
    }
}
