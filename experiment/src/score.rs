//! `skillshift score`: one task's evaluators on a final state given by hand,
//! with no agent (`docs/webarena.md`, scoring by hand). The task comes from any
//! WebArena config file by its own `task_id`; the answer, the final URL and,
//! optionally, an HTML file standing for the page are the final state. The
//! rules are `skillshift_common::evaluate`'s, as a run scores; `program_html`
//! reads pages in headless Chromium (a check's URL, or the `--page` file for
//! every check), so locators run as they run in an attempt.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use serde::Serialize;
use serde_json::Value;
use skillshift_common::evaluate::{self, EvaluatorResult, FinalState, Mode, Options, PageError, PageReader};
use skillshift_common::task::validate::validate_file;
use skillshift_common::task::{EvalType, SiteBases, SiteKey, Task};
use skillshift_common::{Site, Version};
use skillshift_worker::browser::{BrowserConfig, BrowserError, Driver, Session};
use skillshift_worker::scorer::{locator_js, CONTENT_JS};

/// What `score` is asked.
#[derive(Debug, Clone, Default)]
pub struct ScoreSettings {
    pub tasks_file: PathBuf,
    /// The task's own `task_id`.
    pub task_id: i64,
    /// The answer of the final `stop`; `None` when the agent never stopped (read as `""`).
    pub answer: Option<String>,
    /// The final URL; default the `--page` file's URL, else `""`.
    pub url: Option<String>,
    /// An HTML file every `program_html` check reads.
    pub page: Option<PathBuf>,
    /// Base URLs by site key; sites not given fall back to the embedded fixture sites.
    pub sites: Vec<(SiteKey, String)>,
    pub mode: Mode,
    /// The attempt's network trace, a HAR file (`--evaluator webarena-verified`).
    pub network: Option<PathBuf>,
    /// The agent's final response: a file's text, or the text itself (`--evaluator webarena-verified`).
    pub response: Option<String>,
}

/// The printed result (`--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScoreReport {
    pub task_id: i64,
    pub verdict: String,
    pub evaluators: Vec<EvaluatorReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvaluatorReport {
    #[serde(rename = "type")]
    pub kind: String,
    pub verdict: String,
    pub expected: String,
    pub got: String,
    pub detail: String,
}

impl From<&EvaluatorResult> for EvaluatorReport {
    fn from(e: &EvaluatorResult) -> Self {
        let kind = serde_json::to_value(e.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let detail = match &e.verdict {
            evaluate::Verdict::Invalid(why) if !e.detail.contains(why.as_str()) => format!("{} ({why})", e.detail),
            _ => e.detail.clone(),
        };
        EvaluatorReport {
            kind,
            verdict: e.verdict.as_str().to_string(),
            expected: e.expected.clone(),
            got: e.got.clone(),
            detail,
        }
    }
}

impl ScoreReport {
    /// The human-readable form: the verdict, then one line per evaluator.
    pub fn text(&self) -> String {
        let mut out = format!("task {}: {}\n", self.task_id, self.verdict);
        for e in &self.evaluators {
            out.push_str(&format!(
                "  {} {}: expected {}, got {:?} ({})\n",
                e.kind, e.verdict, e.expected, e.got, e.detail
            ));
        }
        out
    }
}

/// Finds the task by its own id; a file that cannot be read, or a task that
/// is missing or refused, is an error naming the file and the id.
pub fn find_task(path: &Path, task_id: i64) -> anyhow::Result<Task> {
    let report = validate_file(path)?;
    if let Some(p) = report.problems.iter().find(|p| p.task_id == Some(task_id)) {
        bail!("{}: task {task_id} does not load: {}: {}", path.display(), p.field, p.message);
    }
    report
        .into_tasks()
        .into_iter()
        .find(|t| i64::from(t.task_id) == task_id)
        .ok_or_else(|| anyhow!("{}: no task with task_id {task_id}", path.display()))
}

/// The version of the embedded fixture sites a grid file name (`gitlab.v2.json`) names; v1 otherwise.
fn version_of(path: &Path) -> Version {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    Version::ALL.iter().copied().find(|v| name.contains(&format!(".{v}."))).unwrap_or(Version::V1)
}

/// Scores the task of `s` and returns the report.
pub async fn score(s: &ScoreSettings) -> anyhow::Result<ScoreReport> {
    let task = find_task(&s.tasks_file, s.task_id)?;
    if s.mode != Mode::WebArenaVerified && (s.network.is_some() || s.response.is_some()) {
        bail!("--network and --response are read only by --evaluator webarena-verified");
    }
    if s.mode == Mode::WebArenaVerified && task.eval.verified.is_some() {
        return score_verified(s, &task);
    }
    let page_url = match &s.page {
        Some(p) => {
            let abs = std::fs::canonicalize(p).with_context(|| format!("reading the page file {}", p.display()))?;
            Some(
                url::Url::from_file_path(&abs)
                    .map_err(|()| anyhow!("{} is not a file path", abs.display()))?
                    .to_string(),
            )
        }
        None => None,
    };
    let mut bases = SiteBases::default();
    for (key, base) in &s.sites {
        bases.insert(*key, base);
    }
    // Sites not given: the embedded fixture sites, when the task names one of theirs.
    let missing: Vec<Site> = task.sites.iter().filter(|k| !bases.0.contains_key(*k)).filter_map(|k| k.grid()).collect();
    let _embedded = if missing.is_empty() {
        None
    } else {
        let handles =
            skillshift_sites::serve_all("127.0.0.1", 0).await.context("serving the embedded fixture sites")?;
        let version = version_of(&s.tasks_file);
        for site in missing {
            if let Some(h) = handles.iter().find(|h| h.site == site && h.version == version) {
                bases.insert(SiteKey::from(site), &h.base_url);
            }
        }
        Some(handles)
    };
    let task = task.resolved(&bases);
    if let Some(left) = skillshift_common::task::site::placeholders_in(&serde_json::to_string(&task.eval)?).first() {
        bail!("task {} still names {left} after resolving placeholders: give its site with --site NAME=URL", s.task_id);
    }
    let answer = s.answer.clone().unwrap_or_default();
    let final_url = s.url.clone().or_else(|| page_url.clone()).unwrap_or_default();
    let state = FinalState { answer: &answer, url: &final_url };
    let judge = skillshift_worker::judge::for_task(&task);
    let opts = Options { mode: s.mode, judge: judge.as_ref().map(|j| j as &dyn evaluate::Judge), ..Options::default() };

    let needs_browser = task.eval.eval_types.contains(&EvalType::ProgramHtml) && !task.eval.program_html.is_empty();
    let scored = if needs_browser {
        let driver = Driver::new(BrowserConfig::default());
        let result = async {
            let session = Session::open(&driver).await.context("starting headless chromium")?;
            let mut reader = Reader { session: &session, final_url: &final_url, page: page_url.as_deref(), away: true };
            let r = evaluate::evaluate(&task.intent, &task.eval, &state, &mut reader, &opts).await;
            session.close().await;
            r.map_err(|e| anyhow!("scoring task {} stopped: {e}", s.task_id))
        }
        .await;
        driver.shutdown().await;
        result?
    } else {
        let mut reader = NoPage;
        evaluate::evaluate(&task.intent, &task.eval, &state, &mut reader, &opts)
            .await
            .map_err(|e| anyhow!("scoring task {} stopped: {e}", s.task_id))?
    };
    Ok(ScoreReport {
        task_id: s.task_id,
        verdict: scored.verdict.as_str().to_string(),
        evaluators: scored.evaluators.iter().map(EvaluatorReport::from).collect(),
    })
}

/// The bound on a response file (`--response FILE`).
const MAX_RESPONSE_BYTES: u64 = 1 << 20;

/// A WebArena-Verified task, by its own evaluators, on the response and the HAR given.
fn score_verified(s: &ScoreSettings, task: &Task) -> anyhow::Result<ScoreReport> {
    let mut bases = SiteBases::default();
    for (key, base) in &s.sites {
        bases.insert(*key, base);
    }
    if let Some(missing) = task.sites.iter().find(|k| !bases.0.contains_key(*k)) {
        bail!("task {} runs on {missing}: give its base URL with --site {missing}=URL", s.task_id);
    }
    let has_network = task.eval.verified.as_ref().is_some_and(|v| {
        v.evaluators.iter().any(|e| matches!(e, evaluate::verified::EvaluatorCfg::NetworkEventEvaluator(_)))
    });
    let har = match &s.network {
        Some(path) => read_har(path)?,
        None if has_network => {
            bail!(
                "task {} has a NetworkEventEvaluator: give the attempt's trace with --network FILE (a HAR)",
                s.task_id
            )
        }
        None => skillshift_common::har::Har::default(),
    };
    let response = match (&s.response, &s.answer) {
        (Some(r), _) => read_response(r)?,
        (None, Some(a)) => a.clone(),
        (None, None) => String::new(),
    };
    let scored = evaluate::verified::evaluate_verified(task, &response, &har, &bases);
    let mut evaluators: Vec<EvaluatorReport> = scored
        .evaluators
        .iter()
        .map(|e| EvaluatorReport {
            kind: e.evaluator.to_string(),
            verdict: e.status.verdict().as_str().to_string(),
            expected: e.expected.to_string(),
            got: e.actual.to_string(),
            detail: if e.messages.is_empty() { e.status.as_str().to_string() } else { e.messages.join("; ") },
        })
        .collect();
    if let (evaluate::verified::EvalStatus::Error(why), true) = (&scored.status, evaluators.is_empty()) {
        evaluators.push(EvaluatorReport {
            kind: "task".into(),
            verdict: "invalid".into(),
            expected: String::new(),
            got: String::new(),
            detail: why.clone(),
        });
    }
    Ok(ScoreReport { task_id: s.task_id, verdict: scored.verdict().as_str().to_string(), evaluators })
}

/// A HAR file (ours or any browser's), bounded; one with no entries is refused, as the package refuses it.
pub fn read_har(path: &Path) -> anyhow::Result<skillshift_common::har::Har> {
    let text = skillshift_common::bounded::read_to_string(path, skillshift_common::bounded::MAX_FILE_BYTES)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let har: skillshift_common::har::Har =
        serde_json::from_str(&text).map_err(|e| anyhow!("{}: not a HAR file: {e}", path.display()))?;
    if har.log.entries.is_empty() {
        bail!("{}: the HAR holds no entries (WebArena-Verified refuses an empty trace)", path.display());
    }
    Ok(har)
}

/// `--response FILE|TEXT`: an existing file's text (bounded), else the text itself.
fn read_response(arg: &str) -> anyhow::Result<String> {
    let path = Path::new(arg);
    if arg.len() < 4096 && path.is_file() {
        return skillshift_common::bounded::read_to_string(path, MAX_RESPONSE_BYTES)
            .map_err(|e| anyhow!("{}: {e}", path.display()));
    }
    Ok(arg.to_string())
}

/// The page reader when no check reads a page.
struct NoPage;

impl PageReader for NoPage {
    async fn open(&mut self, url: &str) -> Result<(), PageError> {
        Err(PageError::Navigation(format!("no browser to open {url}")))
    }
    async fn use_final_page(&mut self) -> Result<(), PageError> {
        Ok(())
    }
    async fn content(&mut self) -> Result<String, PageError> {
        Ok(String::new())
    }
    async fn eval(&mut self, _expression: &str) -> Result<Value, PageError> {
        Err(PageError::Script("no page".into()))
    }
}

/// Headless Chromium as the evaluators' page: with a page file, every check
/// reads that file, loaded afresh (so each check's `prep_actions` start from
/// it); without one, a check's URL is loaded and `last` is the final URL.
struct Reader<'a> {
    session: &'a Session,
    final_url: &'a str,
    page: Option<&'a str>,
    /// The tab is not on the final page.
    away: bool,
}

fn page_error(e: BrowserError, other: fn(String) -> PageError) -> PageError {
    if e.is_fatal() {
        PageError::Fatal(e.to_string())
    } else {
        other(e.to_string())
    }
}

impl Reader<'_> {
    async fn load(&mut self, url: &str) -> Result<(), PageError> {
        self.session.goto(url).await.map_err(|e| page_error(e, PageError::Navigation))
    }
}

impl PageReader for Reader<'_> {
    async fn open(&mut self, url: &str) -> Result<(), PageError> {
        self.away = true;
        match self.page {
            Some(p) => self.load(p).await,
            None => self.load(url).await,
        }
    }

    async fn use_final_page(&mut self) -> Result<(), PageError> {
        if let Some(p) = self.page {
            return self.load(p).await;
        }
        if self.away {
            self.away = false;
            if self.final_url.is_empty() {
                return Err(PageError::Navigation("a 'last' check needs --url or --page".into()));
            }
            let url = self.final_url;
            return self.load(url).await;
        }
        Ok(())
    }

    async fn content(&mut self) -> Result<String, PageError> {
        match self.session.eval(CONTENT_JS).await {
            Ok(v) => Ok(v.as_str().unwrap_or("").to_string()),
            Err(e) => Err(page_error(e, PageError::Script)),
        }
    }

    async fn eval(&mut self, expression: &str) -> Result<Value, PageError> {
        self.session.eval(&locator_js(expression)).await.map_err(|e| page_error(e, PageError::Script))
    }
}

/// A `--site NAME=URL` that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteFlagError {
    #[error("--site '{0}' is not NAME=URL")]
    NotNameEqualsUrl(String),
    #[error("--site '{text}': {source}")]
    UnknownSite { text: String, source: skillshift_common::ids::ParseIdError },
    #[error("--site '{0}': the URL must start with http:// or https://")]
    NotHttp(String),
}

/// Parses `NAME=URL` (`gitlab=http://localhost:8023`).
pub fn parse_site(text: &str) -> Result<(SiteKey, String), SiteFlagError> {
    let (name, url) = text.split_once('=').ok_or_else(|| SiteFlagError::NotNameEqualsUrl(text.to_string()))?;
    let key: SiteKey =
        name.trim().parse().map_err(|source| SiteFlagError::UnknownSite { text: text.to_string(), source })?;
    let url = url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(SiteFlagError::NotHttp(text.to_string()));
    }
    Ok((key, url.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_parse_as_name_equals_url() {
        assert_eq!(
            parse_site("shopping_admin=http://h:7780/admin"),
            Ok((SiteKey::ShoppingAdmin, "http://h:7780/admin".to_string()))
        );
        assert_eq!(parse_site("gitlab").unwrap_err().to_string(), "--site 'gitlab' is not NAME=URL");
        assert!(parse_site("nowhere=http://x")
            .unwrap_err()
            .to_string()
            .starts_with("--site 'nowhere=http://x': unknown"));
        assert_eq!(
            parse_site("gitlab=localhost:8023").unwrap_err().to_string(),
            "--site 'gitlab=localhost:8023': the URL must start with http:// or https://"
        );
        assert_eq!(version_of(Path::new("data/tasks/gitlab.v2.json")), Version::V2);
        assert_eq!(version_of(Path::new("test.raw.json")), Version::V1);
    }
}
