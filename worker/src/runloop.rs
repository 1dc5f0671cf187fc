//! One attempt, start to record: reset the site (per policy), take a clean
//! browser (a kept one in a fresh tab, or a new one), log in, install the
//! condition's perturbations, go to the start URL, then observe and act up to
//! `max_steps`, score with the task's evaluators and write the record
//! (`docs/formats.md`, records), its identity stamped from the spec by
//! [`Record::for_attempt`]. A WebArena-Verified task under `--evaluator
//! webarena-verified` is scored on the agent's answer and the attempt's
//! network trace as its last step left it ([`scorer::score_verified`]); the
//! trace (and the response bodies its evaluators read) is then recorded
//! whatever [`NetworkTrace`] says.
//!
//! Faults never escape: each ends the attempt as `error` with an
//! [`ErrorReason`]. The wall-clock ceiling (`task_timeout`, enforced by a
//! tokio timeout around everything, so a browser that never answers cannot
//! hold the attempt) gives `task_timeout`; a lost browser gives `browser` and
//! the slot's chromedriver is restarted so the next attempt works; a failed
//! reset `site_reset`; a failed login `site_login`; an agent fault `agent`; an
//! undecidable evaluator `evaluator`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use skillshift_common::blob::Blob;
use skillshift_common::evaluate::verified::{self, Verified};
use skillshift_common::evaluate::Verdict;
use skillshift_common::task::Task;
use skillshift_common::trajectory::ScreenshotPolicy;
use skillshift_common::{AttemptSpec, ErrorReason, Outcome, Record, Site, Version};
use skillshift_telemetry::metrics::WorkerMetrics;
use skillshift_telemetry::spans;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::action::Action;
use crate::actions::ActError;
use crate::agent::{Agent, AgentError, Move, Observation, SkillSummary, TaskBrief};
use crate::browser::{BrowserError, Driver, Session};
use crate::capture::{self, Capture, Shoot};
use crate::perturb::{Perturbation, Profile};
use crate::recorder::{Recorder, SkillEvent};
use crate::scorer;
use crate::sites::SiteManager;
use crate::skill_runtime::{run_skill, run_steps, Placeholders};
use crate::tabs::{self, Tabs};

/// WebArena's `--parsing_failure_th`: consecutive unparseable actions that end an attempt.
pub const EARLY_STOP_UNPARSED: u32 = 3;

/// Where task definitions come from.
#[derive(Clone)]
pub enum TaskSource {
    /// `data/tasks/<site>.<version>.json` under this directory.
    Dir(PathBuf),
    /// As `Dir`, but the site-versions listed run on real instances and read the tasks adapted to
    /// them where the directory has those ([`skillshift_common::task::task_file_path_on`]).
    DirReal(PathBuf, Vec<(Site, Version)>),
    /// Tasks in memory, by site-version, from whoever assembles the worker (the
    /// embedded fixture sites' generated tasks, for one).
    Given(TaskFn),
}

/// The tasks of a site-version, in task-id order.
pub type TaskFn = Arc<dyn Fn(Site, Version) -> Vec<Task> + Send + Sync>;

impl std::fmt::Debug for TaskSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskSource::Dir(dir) => f.debug_tuple("Dir").field(dir).finish(),
            TaskSource::DirReal(dir, real) => f.debug_tuple("DirReal").field(dir).field(real).finish(),
            TaskSource::Given(_) => f.write_str("Given(..)"),
        }
    }
}

/// Loaded task files, by site-version.
type TaskCache = Mutex<HashMap<(Site, Version), Arc<Vec<Task>>>>;

/// What every attempt of a worker shares.
pub struct RunContext {
    pub sites: Arc<dyn SiteManager>,
    pub tasks: TaskSource,
    pub worker: String,
    pub screenshots: Option<PathBuf>,
    /// Which steps of the trajectory keep a screenshot.
    pub screenshot_policy: ScreenshotPolicy,
    /// Used when the attempt carries no profile of its own.
    pub profile: Profile,
    /// What every attempt records of its network (`SKILLSHIFT_NETWORK_TRACE`, [`NetworkTrace`]).
    pub network_trace: NetworkTrace,
    // A std mutex: held only to look up or insert an Arc, never across an await.
    cache: TaskCache,
}

/// What every attempt records of its network, from `SKILLSHIFT_NETWORK_TRACE` (for measuring what the
/// trace costs, `scripts/bench/network_cost.sh`): `on` (or unset, or empty) its trace, without
/// response bodies unless its assignment or its task asks for them; `off` no trace, unless its task's
/// evaluators read one; `bodies` its trace with every response body. Whatever the setting, a
/// WebArena-Verified task scored by its own evaluators gets the trace (and the bodies) they read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NetworkTrace {
    #[default]
    On,
    Off,
    Bodies,
}

impl NetworkTrace {
    /// The environment variable it is read from.
    pub const VAR: &'static str = "SKILLSHIFT_NETWORK_TRACE";

    /// The setting of the environment; a value other than `on`, `off` or `bodies` is an error naming
    /// it. Every command that runs attempts checks it before it starts ([`RunContext::new`] reads it
    /// again and keeps the trace on for a value nobody checked).
    pub fn from_env() -> Result<NetworkTrace, String> {
        match std::env::var(Self::VAR) {
            Err(std::env::VarError::NotPresent) => Ok(NetworkTrace::On),
            Ok(v) => v.parse(),
            Err(std::env::VarError::NotUnicode(v)) => {
                Err(format!("{} is {v:?}: expected on, off or bodies", Self::VAR))
            }
        }
    }

    /// Whether every attempt records its trace.
    pub fn records(self) -> bool {
        self != NetworkTrace::Off
    }
}

impl std::str::FromStr for NetworkTrace {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "on" | "" => Ok(NetworkTrace::On),
            "off" => Ok(NetworkTrace::Off),
            "bodies" => Ok(NetworkTrace::Bodies),
            other => Err(format!("{} is '{other}': expected on, off or bodies", NetworkTrace::VAR)),
        }
    }
}

impl RunContext {
    pub fn new(sites: Arc<dyn SiteManager>, tasks: TaskSource, worker: impl Into<String>) -> Self {
        RunContext {
            sites,
            tasks,
            worker: worker.into(),
            screenshots: None,
            screenshot_policy: ScreenshotPolicy::default(),
            profile: Profile::default_profile(),
            network_trace: NetworkTrace::from_env().unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the network trace stays on");
                NetworkTrace::On
            }),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The task of a uid, loading its file once.
    pub fn task(&self, site: Site, version: Version, task_id: u32) -> Result<Task, String> {
        let cached = self.cache.lock().ok().and_then(|c| c.get(&(site, version)).cloned());
        let tasks = match cached {
            Some(t) => t,
            None => {
                let loaded = match &self.tasks {
                    TaskSource::Dir(dir) => {
                        let path = skillshift_common::task::task_file_path(dir, site, version);
                        skillshift_common::task::load_task_file(&path, site).map_err(|e| e.to_string())?
                    }
                    TaskSource::DirReal(dir, real) => {
                        let on_real = real.contains(&(site, version));
                        let path = skillshift_common::task::task_file_path_on(dir, site, version, on_real);
                        skillshift_common::task::load_task_file(&path, site).map_err(|e| e.to_string())?
                    }
                    TaskSource::Given(tasks) => tasks(site, version),
                };
                let arc = Arc::new(loaded);
                if let Ok(mut c) = self.cache.lock() {
                    c.insert((site, version), arc.clone());
                }
                arc
            }
        };
        tasks
            .get(task_id as usize)
            .cloned()
            .ok_or_else(|| format!("{site}.{version} has no task {task_id} ({} tasks)", tasks.len()))
    }
}

/// One line of the trajectory.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Step {
        step: u32,
        url: String,
        action: String,
        error: Option<String>,
    },
    Skill {
        step: u32,
        name: String,
        ok: bool,
        error: Option<String>,
        answer: Option<String>,
    },
    Reported {
        step: u32,
        name: String,
        ok: bool,
        error: Option<String>,
    },
    Score {
        details: Vec<String>,
    },
    /// The observation shown to the agent at a step.
    Observation {
        step: u32,
        text: String,
    },
    Note(String),
}

/// Observes the trajectory as it happens (`skillshift run` prints it).
pub type EventSink = Box<dyn FnMut(&Event) + Send>;

/// Builds the attempt's agent once its task is known.
pub type AgentFactory = Box<dyn FnOnce(&Task) -> Result<Box<dyn Agent>, AgentError> + Send>;

/// What an attempt accumulated, kept outside the timed future so a timeout loses nothing.
struct Progress {
    steps: u32,
    answer: Option<String>,
    recorder: Recorder,
    images: BTreeMap<String, String>,
    agent: Option<Box<dyn Agent>>,
    sink: Option<EventSink>,
    /// The trajectory being written.
    capture: Capture,
}

impl Progress {
    fn emit(&mut self, e: Event) {
        if let Some(s) = self.sink.as_mut() {
            s(&e);
        }
    }
}

/// How the attempt body ended.
enum End {
    Scored { success: bool },
    Timeout,
    Error { reason: ErrorReason, message: String },
}

fn err(reason: ErrorReason, message: impl Into<String>) -> End {
    End::Error { reason, message: message.into() }
}

fn browser_end(e: BrowserError) -> End {
    err(ErrorReason::Browser, e.to_string())
}

/// Whether an attempt that ended this way may have left its browser session wedged.
fn wedges_the_browser(reason: ErrorReason) -> bool {
    matches!(reason, ErrorReason::TaskTimeout | ErrorReason::Browser | ErrorReason::Cancelled)
}

/// An attempt's record and its trajectory (with the screenshots it keeps), redacted.
#[derive(Debug, Clone)]
pub struct Finished {
    pub record: Record,
    pub trajectory: Blob,
    /// Screenshots the attempt took from the browser, kept or not (steps that kept the previous one
    /// of an unchanged page took none).
    pub screenshots_taken: u32,
}

/// Puts the JavaScript dialogs answered during the step into its trajectory step, and says so.
fn note_dialogs(session: &Session, p: &mut Progress) {
    let (dialogs, unnoted) = session.take_dialogs();
    for d in &dialogs {
        let done = if d.accepted { "accepted" } else { "dismissed" };
        p.emit(Event::Note(format!("{} dialog {:?} {done}", d.kind, d.message)));
    }
    if unnoted > 0 {
        tracing::warn!(unnoted, "a page opened more javascript dialogs in one step than are kept; all were answered");
    }
    p.capture.dialogs(dialogs);
}

/// Runs one attempt to its record.
pub async fn run_attempt(
    ctx: &RunContext,
    driver: &Driver,
    spec: &AttemptSpec,
    make_agent: AgentFactory,
    sink: Option<EventSink>,
    cancel: CancellationToken,
) -> Record {
    run_attempt_traced(ctx, driver, spec, make_agent, sink, cancel).await.record
}

/// Runs one attempt to its record and its trajectory.
pub async fn run_attempt_traced(
    ctx: &RunContext,
    driver: &Driver,
    spec: &AttemptSpec,
    make_agent: AgentFactory,
    sink: Option<EventSink>,
    cancel: CancellationToken,
) -> Finished {
    // The site-version is this attempt's alone from its reset to its score; the wait is not part
    // of the attempt's time.
    let turn = tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        t = ctx.sites.turn(spec.uid.site, spec.uid.version) => Some(t),
    };
    let started = chrono::Utc::now();
    let clock = Instant::now();
    let mut progress = Progress {
        steps: 0,
        answer: None,
        recorder: Recorder::new(spec.skills.is_some()),
        images: BTreeMap::new(),
        agent: None,
        sink,
        capture: Capture::new(spec, ctx.screenshot_policy),
    };
    let limit = Duration::from_millis(spec.task_timeout_ms.max(1));
    // Telemetry: the worker's root span, a child of the coordinator's attempt span.
    let run_span = spans::run(spec, &ctx.worker);
    let end = if let Some(_turn) = turn {
        let body = attempt_body(ctx, driver, spec, make_agent, &mut progress).instrument(run_span.clone());
        tokio::select! {
            r = tokio::time::timeout(limit, body) => r.unwrap_or_else(|_| err(ErrorReason::TaskTimeout, format!("the attempt exceeded its {} ms ceiling", limit.as_millis()))),
            _ = cancel.cancelled() => err(ErrorReason::Cancelled, "the attempt was cancelled"),
        }
    } else {
        err(ErrorReason::Cancelled, "the attempt was cancelled")
    };
    if let End::Error { reason, message } = &end {
        progress.emit(Event::Note(format!("error ({reason}): {message}")));
        if wedges_the_browser(*reason) {
            // The session may be wedged: restart chromedriver (and its browsers) for the next attempt.
            driver.shutdown().await;
            WorkerMetrics::global().browser_restarted();
        }
    }
    let finished = chrono::Utc::now();
    let mut r = Record::for_attempt(spec);
    let (calls, failures) = progress.recorder.counts();
    r.steps = Some(progress.steps);
    r.skill_calls = calls;
    r.skill_failures = failures;
    match &end {
        End::Scored { success } => {
            let success = *success;
            r.success = Some(success);
            r.outcome = Some(if success { Outcome::Success } else { Outcome::Failure });
        }
        End::Timeout => {
            r.success = Some(false);
            r.outcome = Some(Outcome::Timeout);
        }
        End::Error { reason, .. } => {
            // It measured nothing: no counts, as every error record (simulated, or made by the coordinator
            // for a lost worker) has; how far it got is in its trajectory.
            r.success = None;
            r.steps = None;
            r.skill_calls = None;
            r.skill_failures = None;
            r.outcome = Some(Outcome::Error);
            r.error = Some(reason.as_str().to_string());
        }
    }
    r.duration_ms = Some(clock.elapsed().as_millis() as u64);
    r.started_at = Some(started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    r.finished_at = Some(finished.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    let usage = progress.agent.as_ref().map(|a| a.usage()).unwrap_or_default();
    r.llm_calls = Some(usage.llm_calls);
    r.tokens_in = Some(usage.tokens_in);
    r.tokens_out = Some(usage.tokens_out);
    r.cost_usd = usage.cost_usd;
    r.answer = progress.answer.clone();
    r.worker = Some(ctx.worker.clone());
    r.images = Some(progress.images.clone());
    // The attempt's own trace: its run span's (a child of the coordinator's, or, for `skillshift run`
    // with no coordinator, the trace it started), else the assignment's `traceparent`.
    r.trace_id = spans::record_trace_id(&run_span, spec);
    spans::record_steps(&run_span, progress.steps);
    spans::record_outcome(&run_span, r.outcome.map_or("error", Outcome::as_str), r.error.as_deref());
    let message = match &end {
        End::Error { message, .. } => Some(message.as_str()),
        _ => None,
    };
    let screenshots_taken = progress.capture.taken();
    let trajectory = run_span.in_scope(spans::finish).in_scope(|| progress.capture.finish(&mut r, message));
    Finished { record: r, trajectory, screenshots_taken }
}

/// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`).
pub fn trace_id(traceparent: &str) -> Option<String> {
    let parts: Vec<&str> = traceparent.trim().split('-').collect();
    match parts.as_slice() {
        [_, id, _, _] if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) => Some(id.to_ascii_lowercase()),
        _ => None,
    }
}

async fn attempt_body(
    ctx: &RunContext,
    driver: &Driver,
    spec: &AttemptSpec,
    make_agent: AgentFactory,
    p: &mut Progress,
) -> End {
    let uid = spec.uid;
    if uid.version != spec.condition.version() {
        return err(
            ErrorReason::Spec,
            format!("{uid} does not run under {} (a {} condition)", spec.condition, spec.condition.version()),
        );
    }
    let task = match ctx.task(uid.site, uid.version, uid.task_id) {
        Ok(t) => t,
        Err(e) => return err(ErrorReason::Task, e),
    };
    let endpoint = match ctx.sites.endpoint(uid.site, uid.version) {
        Ok(e) => e,
        Err(e) => return err(ErrorReason::Site, e.to_string()),
    };
    p.images.insert(endpoint.image.clone(), endpoint.digest.clone().unwrap_or_else(|| "unknown".into()));
    let ph = Placeholders(vec![
        (uid.site.placeholder().to_string(), endpoint.base_url.clone()),
        ("__SITE__".to_string(), endpoint.base_url.clone()),
    ]);

    // Reset per policy.
    let sites = ctx.sites.as_ref();
    if sites.needs_reset(uid.site, uid.version) {
        let span = spans::reset(uid.site.as_str(), uid.version.as_str());
        if let Err(e) = sites.reset(uid.site, uid.version).instrument(span.clone()).await {
            spans::record_error(&span, &e.to_string());
            return err(ErrorReason::SiteReset, e.to_string());
        }
        sites.mark_clean(uid.site, uid.version);
        p.emit(Event::Note(format!("reset {}", endpoint.image)));
    }

    match make_agent(&task) {
        Ok(a) => p.agent = Some(a),
        Err(e) => return err(ErrorReason::Agent, e.to_string()),
    }

    let session = match driver.checkout().await {
        Ok(s) => s,
        Err(e) => return browser_end(e),
    };
    let end = drive(ctx, &session, spec, &task, &ph, p).await;
    // The trace of every attempt that reached the browser, however it ended; a browser that failed is
    // not asked for what it still owes.
    let healthy = !matches!(&end, End::Error { reason: ErrorReason::Browser, .. });
    if let Some(har) = session.network_take(healthy).instrument(spans::network()).await {
        p.capture.network(har);
    }
    match &end {
        // A browser that failed is not handed to the next attempt.
        End::Error { reason: ErrorReason::Browser, .. } => session.close().await,
        _ => driver.checkin(session).await,
    }
    end
}

async fn drive(
    ctx: &RunContext,
    session: &Session,
    spec: &AttemptSpec,
    task: &Task,
    ph: &Placeholders,
    p: &mut Progress,
) -> End {
    let uid = spec.uid;
    let sites = ctx.sites.as_ref();
    // Dialogs of the browser's previous attempt are not this one's.
    session.take_dialogs();
    p.capture.secrets(Capture::login_secrets(&sites.login_steps(uid.site, uid.version)));
    // WebArena's own `storage_state` (a Playwright state file the task names), when it is on this machine.
    let task_state = task.storage_state.as_deref().map(std::path::Path::new).filter(|p| p.is_file());
    if let (true, Some(path)) = (task.require_login, task_state) {
        let cookies = match crate::sites::storage_state_cookies(path) {
            Ok(c) => c,
            Err(m) => return err(ErrorReason::SiteLogin, m),
        };
        p.capture.secrets(cookies.iter().map(|(_, value)| value.clone()));
        if let Err(e) = set_cookies(session, &ph.apply("__SITE__"), cookies).await {
            return browser_end(e);
        }
    } else if task.require_login {
        let span = spans::login(uid.site.as_str());
        let capture = &mut p.capture;
        if let Some(end) = login(session, sites, uid.site, uid.version, ph, capture).instrument(span.clone()).await {
            if let End::Error { message, .. } = &end {
                spans::record_error(&span, message);
            }
            return end;
        }
    }
    let profile = match &spec.perturbation_profile {
        Some(v) => match Profile::from_value(v, "the attempt's perturbation profile") {
            Ok(p) => p,
            Err(e) => return err(ErrorReason::Spec, e.to_string()),
        },
        None => ctx.profile.clone(),
    };
    let perturbation = Perturbation::for_attempt(profile, spec.seed, uid.family(), spec.condition, spec.rep);
    // Every later tab of the attempt gets the perturbations and joins the network trace. A task scored by
    // WebArena-Verified's evaluators gets the trace, and the response bodies, they read.
    let verified = verified::scoring(task, spec.evaluator);
    let trace = ctx.network_trace.records() || verified.is_some_and(Verified::reads_network);
    let bodies = spec.network_bodies
        || ctx.network_trace == NetworkTrace::Bodies
        || verified.is_some_and(Verified::reads_response_content);
    let set_up = async {
        let script_id = perturbation.install(session).await?;
        session.begin_tabs(perturbation.script(), trace, bodies).await?;
        if let Some(geo) = &task.geolocation {
            geolocate(session, geo).await?;
        }
        Ok::<_, BrowserError>(script_id)
    };
    let script_id = match set_up.instrument(spans::setup()).await {
        Ok(id) => id,
        Err(e) => return browser_end(e),
    };
    let start_url = ph.apply(&task.start_url);
    p.capture.task(&task.intent, &start_url);
    let modal_title = perturbation.profile.execution.interstitial.as_ref().map(|m| m.title.clone());
    // WebArena opens each of ` |AND| `-joined start URLs in a tab of its own.
    let start_urls: Vec<String> = start_url.split(" |AND| ").map(str::to_string).collect();
    let start_span = spans::start(start_urls.len());
    let tabs = match open_start(session, sites, task, uid, &start_urls).instrument(start_span.clone()).await {
        Ok(t) => t,
        Err(end) => {
            if let End::Error { message, .. } = &end {
                spans::record_error(&start_span, message);
            }
            return end;
        }
    };
    drop(start_span);
    if task.require_reset {
        sites.mark_dirty(uid.site, uid.version);
    }

    let Some(agent) = p.agent.as_mut() else { return err(ErrorReason::Agent, "no agent") };
    let brief = TaskBrief {
        uid: uid.to_string(),
        intent: task.intent.clone(),
        start_url: start_url.clone(),
        max_steps: spec.max_steps,
        skills: spec
            .skills
            .as_ref()
            .map(|l| {
                l.skills
                    .iter()
                    .filter(|s| s.site == uid.site)
                    .map(|s| SkillSummary {
                        name: s.name.clone(),
                        params: s.params.clone(),
                        description: s.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    if let Err(e) = agent.start(brief).await {
        return err(ErrorReason::Agent, e.to_string());
    }

    let mut last_error: Option<String> = None;
    let mut stopped = false;
    // WebArena's early stop: this many unparseable actions in a row end the attempt.
    let mut unparsed_in_a_row = 0;
    for step in 0..spec.max_steps {
        // Telemetry: one span per step; observe, the agent's LLM calls, act and skill are its children.
        let step_span = spans::step(step);
        // The previous step's requests get their post data and bodies while their tabs are open.
        session.network_flush().await;
        session.network_step(step + 1);
        let applied = match perturbation.set_step(session, step).await {
            Ok(v) => v,
            Err(e) => return browser_end(e),
        };
        let snap = match tabs::observe(session, &tabs).instrument(step_span.in_scope(spans::observe)).await {
            Ok(s) => s,
            Err(e) => return browser_end(e),
        };
        session.touch(&snap.url);
        p.emit(Event::Observation { step, text: snap.text.clone() });
        let shown = capture::perturbations(&applied, &snap.text, modal_title.as_deref());
        p.capture.observed(step, &snap.url, &snap.title, &snap.text, shown);
        // The step's trajectory screenshot reads the page as it stands, as the agent does: it is
        // taken beside the agent's reply (a model's call hides it), and the step waits only for
        // what it outlasts the reply.
        let mut shoot = None;
        if let Some(dir) = &ctx.screenshots {
            if let Some(png) = screenshot(session).await {
                save_screenshot(dir, spec, step, &png).await;
                p.capture.screenshot(png, None);
            }
        } else {
            shoot = p.capture.wants_screenshot(last_error.is_some());
        }
        let shown_error = last_error.clone();
        let obs = Observation {
            step,
            url: snap.url.clone(),
            title: snap.title.clone(),
            axtree: snap.text.clone(),
            last_action_error: last_error.take(),
        };
        let Some(agent) = p.agent.as_mut() else { return err(ErrorReason::Agent, "no agent") };
        let reply = agent.next(obs).instrument(step_span.clone());
        let reply = match shoot {
            None => reply.await,
            Some(when) => reply_beside_screenshot(session, &mut p.capture, reply, when).await,
        };
        let reply = match reply {
            Ok(r) => r,
            Err(e) => return err(ErrorReason::Agent, e.to_string()),
        };
        p.steps = step + 1;
        let llm = p.agent.as_mut().and_then(|a| a.take_llm());
        p.capture.replied(shown_error, llm);
        WorkerMetrics::global().step();
        for rep in reply.skill_reports {
            p.capture.reported(&rep.name, rep.ok, rep.error.as_deref());
            p.recorder.record(SkillEvent {
                step,
                name: rep.name.clone(),
                ok: rep.ok,
                error: rep.error.clone(),
                reported: true,
            });
            p.emit(Event::Reported { step, name: rep.name, ok: rep.ok, error: rep.error });
        }
        match reply.mv {
            Move::Action(Action::Stop { answer }) => {
                p.emit(Event::Step { step, url: snap.url.clone(), action: format!("stop [{answer}]"), error: None });
                spans::record_step(&step_span, &format!("stop [{answer}]"), None);
                p.capture.action(format!("stop [{answer}]"));
                note_dialogs(session, p);
                p.answer = Some(answer);
                stopped = true;
                break;
            }
            Move::Action(action) => {
                let act_span = step_span.in_scope(|| spans::act(action.to_string().split(' ').next().unwrap_or("")));
                let result = tabs::execute(session, &tabs, &action, |id| snap.ids.get(&id).copied())
                    .instrument(act_span.clone())
                    .await;
                let error = match result {
                    Ok(()) => None,
                    Err(ActError::Fatal(e)) => return browser_end(e),
                    Err(ActError::Failed(m)) => Some(m),
                };
                p.emit(Event::Step { step, url: snap.url.clone(), action: action.to_string(), error: error.clone() });
                p.capture.action(action.to_string());
                note_dialogs(session, p);
                if let Some(m) = &error {
                    spans::record_error(&act_span, m);
                }
                spans::record_step(&step_span, &action.to_string(), error.as_deref());
                last_error = error;
                unparsed_in_a_row = if action.is_invalid() { unparsed_in_a_row + 1 } else { 0 };
                if unparsed_in_a_row >= EARLY_STOP_UNPARSED {
                    // As WebArena's run.py: the attempt stops with this answer and is scored.
                    let answer = format!("Early stop: Failed to parse actions for {EARLY_STOP_UNPARSED} times");
                    p.emit(Event::Note(answer.clone()));
                    p.answer = Some(answer);
                    stopped = true;
                    break;
                }
            }
            Move::Skill { name, args } => {
                unparsed_in_a_row = 0;
                let skill = spec.skills.as_ref().and_then(|l| l.get(&name)).filter(|s| s.site == uid.site).cloned();
                let skill_span = step_span.in_scope(|| spans::skill(&name));
                let outcome = match (&spec.skills, skill) {
                    (None, _) => {
                        let m = "this attempt has no skill library".to_string();
                        spans::record_skill(&skill_span, false, Some(&m));
                        p.emit(Event::Step {
                            step,
                            url: snap.url.clone(),
                            action: format!("skill {name}"),
                            error: Some(m.clone()),
                        });
                        spans::record_step(&step_span, &format!("skill {name}"), Some(&m));
                        p.capture.action(format!("skill {name}"));
                        note_dialogs(session, p);
                        last_error = Some(m);
                        continue;
                    }
                    (Some(_), None) => (Err(format!("no skill named '{name}' for {}", uid.site)), Vec::new(), 0),
                    (Some(_), Some(skill)) => {
                        let bound: Vec<_> = skill.steps.iter().map(|s| s.bind(&args)).collect();
                        let grace = sites.locator_grace(uid.site, uid.version);
                        match run_skill(session, &skill, &args, ph, grace).instrument(skill_span.clone()).await {
                            Ok(o) if o.ok => (Ok(o.answer), bound, o.steps_done),
                            Ok(o) => (Err(o.error.unwrap_or_else(|| "skill failed".into())), bound, o.steps_done),
                            Err(e) => return browser_end(e),
                        }
                    }
                };
                let (outcome, bound, steps_done) = outcome;
                let (ok, error, answer) = match outcome {
                    Ok(a) => (true, None, a),
                    Err(e) => (false, Some(e), None),
                };
                p.capture.skill(capture::skill_call(&name, &args, &bound, ok, error.as_deref(), steps_done));
                note_dialogs(session, p);
                p.recorder.record(SkillEvent { step, name: name.clone(), ok, error: error.clone(), reported: false });
                spans::record_skill(&skill_span, ok, error.as_deref());
                spans::record_step(&step_span, &format!("skill {name}"), error.as_deref());
                p.emit(Event::Skill { step, name: name.clone(), ok, error: error.clone(), answer: answer.clone() });
                if let Some(agent) = p.agent.as_mut() {
                    if let Some(a) = &answer {
                        agent.skill_answer(&name, a);
                    }
                    agent.skill_result(&name, ok, error.as_deref());
                }
                last_error = error.map(|e| format!("skill '{name}' failed: {e}"));
            }
        }
    }
    // Under `failures`, the page the agent ended on is kept only if the attempt fails. Scoring reads
    // other pages in tabs of its own, so that page is photographed once the verdict says so; only a
    // `last` check's prep actions, which run in it, make it photographed before.
    let shoot_first = !stopped || scorer::changes_the_final_page(task);
    if shoot_first {
        final_screenshot(session, &mut p.capture).await;
    }
    if !stopped {
        return End::Timeout;
    }

    // Score once, on the site itself.
    let final_url = match session.url().await {
        Ok(u) => u,
        Err(e) => return browser_end(e),
    };
    let answer = p.answer.clone().unwrap_or_default();
    // The scorer's own requests are not the agent's.
    session.network_close();
    let score = match verified {
        // WebArena-Verified's evaluators read the answer and the trace as the agent's last step left it.
        Some(v) => {
            let score_span = spans::score(v.evaluators.len());
            let har = session.network_take(true).instrument(score_span.clone()).await;
            let bases = sites.site_bases(uid.site, uid.version);
            let score = score_span.in_scope(|| scorer::score_verified(task, &answer, har.as_ref(), &bases));
            if let Some(har) = har {
                p.capture.network(har);
            }
            (score, score_span)
        }
        None => {
            let score_span = spans::score(task.eval.eval_types.len());
            let ending = scorer::Ending { final_url: &final_url, answer: &answer, perturbed: script_id.is_some() };
            let scored = scorer::score_with(session, &tabs, task, ph, ending, spec.evaluator)
                .instrument(score_span.clone())
                .await;
            match scored {
                Ok(s) => (s, score_span),
                Err(e) => return browser_end(e),
            }
        }
    };
    let (score, score_span) = score;
    let verdict = match &score.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Invalid(_) => "invalid",
    };
    spans::record_score_details(&score_span, &score.details, verdict);
    p.emit(Event::Score { details: score.details.clone() });
    match (&score.scored, &score.verified) {
        (Some(scored), _) => p.capture.score(scored),
        (None, Some(v)) => p.capture.score_verified(v),
        (None, None) => p.capture.score_stopped(&score.details.join("; ")),
    }
    if !shoot_first && score.verdict != Verdict::Pass {
        final_screenshot(session, &mut p.capture).await;
    }
    match score.verdict {
        Verdict::Pass => End::Scored { success: true },
        Verdict::Fail => End::Scored { success: false },
        Verdict::Invalid(m) => err(ErrorReason::Evaluator, m),
    }
}

/// Opens the task's start page in the attempt's tab, then each further start URL in a tab of its
/// own (WebArena's ` |AND| `), the first staying current; the attempt's tabs, or how it ended.
async fn open_start(
    session: &Session,
    sites: &dyn SiteManager,
    task: &Task,
    uid: skillshift_common::Uid,
    start_urls: &[String],
) -> Result<Tabs, End> {
    let Some(first) = start_urls.first() else { return Err(err(ErrorReason::Task, "the task has no start URL")) };
    if let Err(e) = session.goto(first).await {
        return Err(if e.is_fatal() { browser_end(e) } else { err(ErrorReason::Site, e.to_string()) });
    }
    let tabs = Tabs::adopt(session).await.map_err(browser_end)?;
    let headers = if task.require_login { sites.login_headers(uid.site, uid.version) } else { Vec::new() };
    if !headers.is_empty() {
        // Auto-login headers hold for every tab of the attempt, as for every page of WebArena's context.
        tabs.set_headers(session, &headers).await.map_err(browser_end)?;
    }
    if let Err(e) = tabs.open_start_urls(session, start_urls).await {
        return Err(if e.is_fatal() { browser_end(e) } else { err(ErrorReason::Site, e.to_string()) });
    }
    Ok(tabs)
}

/// How long a login step waits for its element to appear.
const LOGIN_GRACE: Duration = Duration::from_secs(10);

/// Signs in: with the site manager's session cookies when it has them, else
/// by running its login steps in the browser. `Some` ends the attempt.
async fn login(
    session: &Session,
    sites: &dyn SiteManager,
    site: Site,
    version: Version,
    ph: &Placeholders,
    capture: &mut Capture,
) -> Option<End> {
    let base_url = ph.apply("__SITE__");
    let headers = sites.login_headers(site, version);
    if !headers.is_empty() {
        // The headers' values are credentials, and the network trace carries them: redacted.
        capture.secrets(headers.iter().map(|(_, v)| v.clone()));
        // WebArena-Verified's auto-login: every request of the tab carries the headers.
        let map: serde_json::Map<String, serde_json::Value> =
            headers.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect();
        for (cmd, params) in [
            ("Network.enable", serde_json::json!({})),
            ("Network.setExtraHTTPHeaders", serde_json::json!({"headers": map})),
        ] {
            if let Err(e) = session.cdp(cmd, params).await {
                return Some(browser_end(e));
            }
        }
        return None;
    }
    match sites.login_cookies(site, version).await {
        Ok(Some(cookies)) => {
            // Session cookies are credentials: never stored in a trajectory.
            capture.secrets(cookies.iter().map(|(_, value)| value.clone()));
            return set_cookies(session, &base_url, cookies).await.err().map(browser_end);
        }
        Ok(None) => {}
        Err(e) => return Some(err(ErrorReason::SiteLogin, e.to_string())),
    }
    let steps = sites.login_steps(site, version);
    // Signing in is set-up, not a measured skill: a real application's next page (a form post, a
    // redirect, a confirmation screen) may take longer than a skill's grace to render.
    let ran = run_steps(session, &steps, ph, LOGIN_GRACE).await;
    match ran {
        Ok(o) if o.ok => None,
        Ok(o) => Some(err(ErrorReason::SiteLogin, o.error.unwrap_or_else(|| "login failed".into()))),
        Err(e) => Some(browser_end(e)),
    }
}

/// Sets session cookies for the site at `base_url`.
pub(crate) async fn set_cookies(
    session: &Session,
    base_url: &str,
    cookies: crate::sites::Cookies,
) -> Result<(), BrowserError> {
    for (name, value) in cookies {
        let params = serde_json::json!({"name": name, "value": value, "url": format!("{base_url}/"), "httpOnly": true});
        session.cdp("Network.setCookie", params).await?;
    }
    Ok(())
}

/// The task's `geolocation` (`{"latitude", "longitude", "accuracy"?}`), as WebArena's browser context sets it.
async fn geolocate(session: &Session, geo: &serde_json::Value) -> Result<(), BrowserError> {
    let mut params = serde_json::json!({"latitude": geo.get("latitude"), "longitude": geo.get("longitude"), "accuracy": geo.get("accuracy").cloned().unwrap_or(serde_json::json!(0))});
    if geo.get("latitude").is_none() || geo.get("longitude").is_none() {
        params = serde_json::json!({});
    }
    // A grant names the attempt's own browser context; without one it would go to the default context.
    let mut grant = serde_json::json!({"permissions": ["geolocation"]});
    if let Some(id) = session.context_id() {
        grant["browserContextId"] = serde_json::json!(id);
    }
    if let Err(e) = session.cdp("Browser.grantPermissions", grant).await {
        if e.is_fatal() {
            return Err(e);
        }
    }
    match session.cdp("Emulation.setGeolocationOverride", params).await {
        Err(e) if e.is_fatal() => Err(e),
        _ => Ok(()),
    }
}

/// The agent's reply, with the step's screenshot taken beside it: under
/// [`Shoot::WhileTheAgentThinks`] only if the reply is not ready at once. The screenshot is
/// skipped when the page is the one last photographed, unchanged.
async fn reply_beside_screenshot<T>(
    session: &Session,
    capture: &mut Capture,
    reply: impl std::future::Future<Output = T>,
    when: Shoot,
) -> T {
    let mut reply = std::pin::pin!(timed(reply));
    if when == Shoot::WhileTheAgentThinks {
        let first =
            std::future::poll_fn(|cx| std::task::Poll::Ready(std::future::Future::poll(reply.as_mut(), cx))).await;
        if let std::task::Poll::Ready((reply, _)) = first {
            return reply;
        }
    }
    let shot = async {
        let scroll = session.scroll_offsets().await;
        if scroll.as_deref().is_some_and(|s| capture.reuse_screenshot(s)) {
            WorkerMetrics::global().screenshot_reused();
            return None;
        }
        Some((timed(session.screenshot()).instrument(spans::screenshot(true)).await, scroll))
    };
    let ((reply, replied_in), shot) = tokio::join!(reply, shot);
    if let Some(((Ok(png), took), scroll)) = shot {
        WorkerMetrics::global().screenshot(took, took.saturating_sub(replied_in));
        capture.screenshot(png, scroll);
    }
    reply
}

/// A trajectory screenshot of the current tab, its time counted in the worker's metrics (all of
/// it waited for: nothing runs beside it).
async fn screenshot(session: &Session) -> Option<Vec<u8>> {
    let (png, took) = timed(session.screenshot()).instrument(spans::screenshot(false)).await;
    let png = png.ok()?;
    WorkerMetrics::global().screenshot(took, took);
    Some(png)
}

/// A future's output with the time it took.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = f.await;
    (out, started.elapsed())
}

/// The screenshot of the page the agent ended on, when the policy wants one for a last step without.
async fn final_screenshot(session: &Session, capture: &mut Capture) {
    if !capture.wants_final_screenshot() {
        return;
    }
    if let Some(scroll) = session.scroll_offsets().await {
        if capture.reuse_final_screenshot(&scroll) {
            WorkerMetrics::global().screenshot_reused();
            return;
        }
    }
    if let Some(png) = screenshot(session).await {
        capture.final_screenshot(png);
    }
}

async fn save_screenshot(dir: &std::path::Path, spec: &AttemptSpec, step: u32, png: &[u8]) {
    let folder = dir.join(format!("{}.{}.r{}.a{}", spec.uid, spec.condition, spec.rep, spec.attempt));
    if tokio::fs::create_dir_all(&folder).await.is_ok() {
        let _ = tokio::fs::write(folder.join(format!("step-{step:02}.png")), png).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::browser::BrowserConfig;
    use crate::sites::{DirtySites, Endpoint, ResetPolicy, SiteError};
    use futures::future::BoxFuture;
    use skillshift_common::skills::Step;
    use skillshift_common::task::{Eval, EvalType};
    use skillshift_common::{Condition, Uid};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// gitlab v1 at an address nothing listens on; resets fail when asked to.
    struct FakeSites {
        policy: ResetPolicy,
        reset_fails: bool,
        resets: AtomicU32,
        dirty: DirtySites,
        /// How long a reset takes, and the most resets seen under way at once.
        reset_takes: Duration,
        resetting: Arc<AtomicU32>,
        most_at_once: Arc<AtomicU32>,
    }

    impl FakeSites {
        fn new(policy: ResetPolicy, reset_fails: bool) -> FakeSites {
            FakeSites {
                policy,
                reset_fails,
                resets: AtomicU32::new(0),
                dirty: DirtySites::new(),
                reset_takes: Duration::ZERO,
                resetting: Arc::default(),
                most_at_once: Arc::default(),
            }
        }
    }

    impl SiteManager for FakeSites {
        fn hosts(&self) -> Vec<(Site, Version)> {
            vec![(Site::Gitlab, Version::V1)]
        }
        fn endpoint(&self, site: Site, version: Version) -> Result<Endpoint, SiteError> {
            Ok(Endpoint { base_url: "http://127.0.0.1:9".into(), image: site.image(version), digest: None })
        }
        fn reset(&self, site: Site, version: Version) -> BoxFuture<'_, Result<(), SiteError>> {
            self.resets.fetch_add(1, Ordering::SeqCst);
            let fails = self.reset_fails;
            let (takes, resetting, most) = (self.reset_takes, self.resetting.clone(), self.most_at_once.clone());
            Box::pin(async move {
                let now = resetting.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(takes).await;
                resetting.fetch_sub(1, Ordering::SeqCst);
                if fails {
                    return Err(SiteError::Reset { image: site.image(version), message: "refused".into() });
                }
                Ok(())
            })
        }
        fn login_steps(&self, _site: Site, _version: Version) -> Vec<Step> {
            Vec::new()
        }
        fn policy(&self) -> ResetPolicy {
            self.policy
        }
        fn dirty_sites(&self) -> &DirtySites {
            &self.dirty
        }
    }

    fn task(task_id: u32) -> Task {
        Task {
            task_id,
            sites: vec![Site::Gitlab.into()],
            require_login: false,
            storage_state: None,
            start_url: "__GITLAB__/".into(),
            geolocation: None,
            intent_template: "Say hi".into(),
            instantiation_dict: BTreeMap::new(),
            intent: "Say hi".into(),
            intent_template_id: 0,
            require_reset: false,
            eval: Eval {
                eval_types: vec![EvalType::UrlMatch],
                reference_answers: None,
                reference_url: None,
                program_html: vec![],
                ..Eval::default()
            },
            string_note: None,
        }
    }

    fn spec(uid: Uid, condition: Condition) -> AttemptSpec {
        AttemptSpec {
            sweep: "sw".into(),
            treatment: "T".into(),
            uid,
            condition,
            rep: 2,
            attempt: 1,
            seed: 3,
            max_steps: 5,
            task_timeout_ms: 10_000,
            agent: "skills".into(),
            model: None,
            skills: None,
            perturbation_profile: None,
            config_digest: Some("sha256:cfg".into()),
            traceparent: None,
            temperature: None,
            prompt_version: None,
            evaluator: Default::default(),
            network_bodies: false,
        }
    }

    fn no_agent() -> AgentFactory {
        Box::new(|_| Err(AgentError::Process("no agent in this test".into())))
    }

    /// Runs an attempt that ends before it needs a browser.
    async fn attempt(sites: Arc<FakeSites>, spec: &AttemptSpec) -> Record {
        let given: TaskFn = Arc::new(|_, _| vec![task(0)]);
        let ctx = RunContext::new(sites, TaskSource::Given(given), "w-test");
        let driver = Driver::new(BrowserConfig::default());
        run_attempt(&ctx, &driver, spec, no_agent(), None, CancellationToken::new()).await
    }

    fn check_error(r: &Record, spec: &AttemptSpec, reason: ErrorReason) {
        assert_eq!(r.identity_mismatch(spec), None, "identity stamped from the spec: {r:?}");
        assert_eq!((r.outcome, r.success), (Some(Outcome::Error), None));
        assert_eq!((r.steps, r.skill_calls, r.skill_failures), (None, None, None), "an error measured nothing: {r:?}");
        assert_eq!(ErrorReason::of(r), Some(reason), "{r:?}");
        assert_eq!(r.error.as_deref(), Some(reason.as_str()));
        assert_eq!(r.worker.as_deref(), Some("w-test"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn attempts_on_one_site_version_take_turns_and_other_site_versions_do_not_wait() {
        let run = |specs: Vec<AttemptSpec>| async move {
            let mut sites = FakeSites::new(ResetPolicy::BeforeEach, false);
            sites.reset_takes = Duration::from_millis(150);
            let sites = Arc::new(sites);
            let given: TaskFn = Arc::new(|_, _| vec![task(0)]);
            let ctx = RunContext::new(sites.clone(), TaskSource::Given(given), "w-test");
            let driver = Driver::new(BrowserConfig::default());
            let all = specs.iter().map(|s| run_attempt(&ctx, &driver, s, no_agent(), None, CancellationToken::new()));
            let records = futures::future::join_all(all).await;
            assert!(records.iter().all(|r| ErrorReason::of(r) == Some(ErrorReason::Agent)), "{records:?}");
            (sites.resets.load(Ordering::SeqCst), sites.most_at_once.load(Ordering::SeqCst))
        };
        let v1 = spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src);
        let v1_again = spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::SrcExec);
        // Another slot's reset would wipe what this attempt's agent and score read: one at a time.
        assert_eq!(run(vec![v1.clone(), v1_again]).await, (2, 1), "resets of one site-version never overlap");
        let v2 = spec(Uid::new(Site::Gitlab, Version::V2, 0), Condition::Tgt);
        assert_eq!(run(vec![v1, v2]).await, (2, 2), "two site-versions reset side by side");
    }

    #[tokio::test]
    async fn faults_before_the_browser_are_error_records_with_their_reason_and_the_spec_identity() {
        let gitlab = |id| Uid::new(Site::Gitlab, Version::V1, id);
        let sites = Arc::new(FakeSites::new(ResetPolicy::Never, false));

        let wrong_version = spec(gitlab(0), Condition::TgtExec);
        check_error(&attempt(sites.clone(), &wrong_version).await, &wrong_version, ErrorReason::Spec);

        let no_such_task = spec(gitlab(7), Condition::Src);
        check_error(&attempt(sites.clone(), &no_such_task).await, &no_such_task, ErrorReason::Task);

        let ok = spec(gitlab(0), Condition::Src);
        check_error(&attempt(sites.clone(), &ok).await, &ok, ErrorReason::Agent);
        assert_eq!(sites.resets.load(Ordering::SeqCst), 0, "policy never: no reset");

        let failing = Arc::new(FakeSites::new(ResetPolicy::BeforeEach, true));
        check_error(&attempt(failing.clone(), &ok).await, &ok, ErrorReason::SiteReset);
        assert_eq!(failing.resets.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn after_mutation_resets_a_dirty_site_once_and_marks_it_clean() {
        let sites = Arc::new(FakeSites::new(ResetPolicy::AfterMutation, false));
        sites.mark_dirty(Site::Gitlab, Version::V1);
        let s = spec(Uid::new(Site::Gitlab, Version::V1, 0), Condition::Src);
        check_error(&attempt(sites.clone(), &s).await, &s, ErrorReason::Agent);
        assert!(!sites.needs_reset(Site::Gitlab, Version::V1), "the reset cleaned it");
        check_error(&attempt(sites.clone(), &s).await, &s, ErrorReason::Agent);
        assert_eq!(sites.resets.load(Ordering::SeqCst), 1, "a clean site is not reset again");
    }

    #[test]
    fn the_network_trace_setting_is_on_off_or_bodies_and_nothing_else() {
        for (text, want) in [
            ("on", NetworkTrace::On),
            ("", NetworkTrace::On),
            ("off", NetworkTrace::Off),
            ("bodies", NetworkTrace::Bodies),
        ] {
            assert_eq!(text.parse::<NetworkTrace>(), Ok(want), "{text:?}");
        }
        let e = "Off".parse::<NetworkTrace>().expect_err("refused");
        assert_eq!(e, "SKILLSHIFT_NETWORK_TRACE is 'Off': expected on, off or bodies");
        assert!(NetworkTrace::Bodies.records() && !NetworkTrace::Off.records());
    }

    #[test]
    fn trace_ids_come_from_traceparent() {
        assert_eq!(
            trace_id("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(trace_id("garbage"), None);
    }
}
