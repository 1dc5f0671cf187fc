//! WebArena's evaluators (`docs/formats.md`, task files), run once at the end of an attempt.
//!
//! The rules are `skillshift_common::evaluate` (shared with the fixture sites'
//! HTTP-level checker); this module is the browser's side of them
//! ([`PageReader`]): load a check's `url`, read the page's source, evaluate a
//! locator as WebArena does (`() => locator`).
//! A check's URL is read in a page of the scorer's own, as WebArena opens one per check, so the
//! agent's page stays as it ended; a `last` check on a perturbed attempt loads the final URL in
//! such a page too, so the evaluators read the site itself, not its perturbed rendering.
//!
//! A WebArena-Verified task under `--evaluator webarena-verified` reads no page:
//! [`score_verified`] judges the agent's answer and the attempt's network trace with
//! `skillshift_common::evaluate::verified`.

use serde_json::Value;
use skillshift_common::evaluate::verified::{self, VerifiedScored};
use skillshift_common::evaluate::{self, FinalState, Mode, Options, PageError, PageReader, Verdict};
use skillshift_common::har::Har;
use skillshift_common::task::{CheckUrl, EvalType, SiteBases, Task};

use crate::browser::{BrowserError, Session};
use crate::skill_runtime::Placeholders;
use crate::tabs::Tabs;

/// The verdict and a one-line reason per evaluator, for the trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub verdict: Verdict,
    pub details: Vec<String>,
    /// Each evaluator's expected and got; `None` when scoring stopped before deciding, or when
    /// WebArena-Verified's evaluators scored ([`Score::verified`]).
    pub scored: Option<evaluate::Scored>,
    /// WebArena-Verified's evaluators' outcomes, when they scored ([`score_verified`]).
    pub verified: Option<VerifiedScored>,
}

/// Playwright's `page.content()`: the doctype and the document element, serialised.
pub const CONTENT_JS: &str = "(() => { let s = ''; if (document.doctype) s = new XMLSerializer().serializeToString(document.doctype); if (document.documentElement) s += document.documentElement.outerHTML; return s; })()";

/// The JavaScript that evaluates a locator as WebArena does (`() => locator`,
/// called), its value shaped as Playwright hands it to Python: a DOM node
/// becomes the text `ref: <Node>`, `undefined` in an object `null`, and what
/// JSON cannot carry (NaN, ±Infinity, -0, a Date) a `{"$py": text}` literal
/// (see `skillshift_common::evaluate::python`).
pub fn locator_js(expression: &str) -> String {
    format!("(() => {{ const value = (() => {expression})(); {PY_SHAPE} return py(value); }})()")
}

const PY_SHAPE: &str = "const py = x => { \
    if (typeof Node !== 'undefined' && x instanceof Node) return 'ref: <Node>'; \
    if (typeof x === 'number') { \
      if (Number.isNaN(x)) return {'$py': 'nan'}; \
      if (x === Infinity) return {'$py': 'inf'}; \
      if (x === -Infinity) return {'$py': '-inf'}; \
      if (Object.is(x, -0)) return {'$py': '-0.0'}; \
      return x; } \
    if (x instanceof Date) { const s = x.toISOString(); const ms = x.getUTCMilliseconds(); \
      return {'$py': s.slice(0, 10) + ' ' + s.slice(11, 19) + (ms ? '.' + String(ms * 1000).padStart(6, '0') : '') + '+00:00'}; } \
    if (Array.isArray(x)) return x.map(py); \
    if (x && typeof x === 'object') { const o = {}; for (const k of Object.keys(x)) o[k] = x[k] === undefined ? null : py(x[k]); return o; } \
    return x; };";

/// The session as the evaluators' page reader. As WebArena's evaluator does, a check's URL is
/// loaded in a page of its own (a new tab of the attempt's context, closed after the check), and
/// a `last` check reads the agent's tab, which scoring never navigates: the page the agent ended on
/// stays as it was, for its screenshot once the verdict is known. A perturbed attempt's `last`
/// check reads the final URL loaded afresh in a page of its own, so the site itself is read.
struct Reader<'a> {
    session: &'a Session,
    tabs: &'a Tabs,
    final_url: &'a str,
    perturbed: bool,
    /// The agent's tab, once the scorer has opened a page of its own.
    agent: Option<String>,
    /// The scorer's open page, the current tab while it is open.
    page: Option<String>,
    fatal: Option<BrowserError>,
}

impl Reader<'_> {
    fn fail(&mut self, e: BrowserError, other: fn(String) -> PageError) -> PageError {
        if e.is_fatal() {
            let shown = e.to_string();
            self.fatal = Some(e);
            PageError::Fatal(shown)
        } else {
            other(e.to_string())
        }
    }

    /// Loads `url` in a new page of the scorer's own, closing the one it had.
    async fn load(&mut self, url: &str) -> Result<(), PageError> {
        let opened = async {
            self.close_page().await?;
            if self.agent.is_none() {
                self.agent = Some(self.tabs.current(self.session).await?);
            }
            self.page = Some(self.tabs.open_page(self.session).await?);
            self.session.goto(url).await
        };
        opened.await.map_err(|e| self.fail(e, PageError::Navigation))
    }

    /// Closes the scorer's page, if open, and makes the agent's tab current again.
    async fn close_page(&mut self) -> Result<(), BrowserError> {
        let (Some(page), Some(agent)) = (self.page.take(), self.agent.as_deref()) else { return Ok(()) };
        self.tabs.close_page(self.session, &page, agent).await
    }
}

impl PageReader for Reader<'_> {
    async fn open(&mut self, url: &str) -> Result<(), PageError> {
        self.load(url).await
    }

    async fn use_final_page(&mut self) -> Result<(), PageError> {
        if self.perturbed {
            return self.load(self.final_url).await;
        }
        self.close_page().await.map_err(|e| self.fail(e, PageError::Navigation))
    }

    async fn content(&mut self) -> Result<String, PageError> {
        match self.session.eval(CONTENT_JS).await {
            Ok(v) => Ok(v.as_str().unwrap_or("").to_string()),
            Err(e) => Err(self.fail(e, PageError::Script)),
        }
    }

    async fn eval(&mut self, expression: &str) -> Result<Value, PageError> {
        match self.session.eval(&locator_js(expression)).await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.fail(e, PageError::Script)),
        }
    }
}

/// How an attempt ended, as scoring reads it.
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    /// The URL of the page the agent ended on.
    pub final_url: &'a str,
    /// The agent's stop answer.
    pub answer: &'a str,
    /// Whether the attempt's pages were perturbed.
    pub perturbed: bool,
}

/// Scores the attempt with WebArena's rules, in its tabs, leaving the agent's tab current and as it was.
pub async fn score(
    session: &Session,
    tabs: &Tabs,
    task: &Task,
    ph: &Placeholders,
    ending: Ending<'_>,
) -> Result<Score, BrowserError> {
    score_with(session, tabs, task, ph, ending, Mode::WebArena).await
}

/// [`score`] under the given evaluator mode (`--evaluator webarena|strict`).
pub async fn score_with(
    session: &Session,
    tabs: &Tabs,
    task: &Task,
    ph: &Placeholders,
    ending: Ending<'_>,
    mode: Mode,
) -> Result<Score, BrowserError> {
    let task = task.map_strings(&|s| ph.apply(s));
    let state = FinalState { answer: ending.answer, url: ending.final_url };
    let mut reader = Reader {
        session,
        tabs,
        final_url: ending.final_url,
        perturbed: ending.perturbed,
        agent: None,
        page: None,
        fatal: None,
    };
    let judge = crate::judge::for_task(&task);
    let opts = Options {
        mode,
        judge: judge.as_ref().map(|j| j as &dyn skillshift_common::evaluate::Judge),
        ..Options::default()
    };
    let scored = evaluate::evaluate(&task.intent, &task.eval, &state, &mut reader, &opts).await;
    if let Some(fatal) = reader.fatal.take() {
        return Err(fatal);
    }
    match reader.close_page().await {
        Err(e) if e.is_fatal() => return Err(e),
        // The verdict stands; only the agent's tab may not be current for its screenshot.
        Err(e) => tracing::warn!(error = %e, "could not close the scorer's page"),
        Ok(()) => {}
    }
    match scored {
        Ok(scored) => {
            Ok(Score { details: scored.lines(), verdict: scored.verdict.clone(), scored: Some(scored), verified: None })
        }
        Err(e) => Ok(Score {
            verdict: Verdict::Fail,
            details: vec![format!("scoring stopped: {e}")],
            scored: None,
            verified: None,
        }),
    }
}

/// Why a WebArena-Verified task's network evaluators could not read a trace: the attempt recorded
/// none (the chromedriver relay reports no network events).
pub const NO_TRACE: &str =
    "no network trace was recorded for this attempt (DevTools through chromedriver's relay report no network events)";

/// Scores a WebArena-Verified task (placeholders unresolved) with its own evaluators, on the agent's
/// stop answer and `har`, the attempt's network trace as recorded up to the end of its last step
/// (`None` when it recorded none), the task's sites at `bases`. A task whose network evaluators have
/// no trace to read, or an empty one (which WebArena-Verified refuses), is invalid, never a failure.
pub fn score_verified(task: &Task, answer: &str, har: Option<&Har>, bases: &SiteBases) -> Score {
    let reads_network = task.eval.verified.as_ref().is_some_and(verified::Verified::reads_network);
    let scored = match har {
        None if reads_network => verified::evaluate_verified_untraced(task, answer, bases, NO_TRACE),
        Some(h) if reads_network && h.log.entries.is_empty() => verified::evaluate_verified_untraced(
            task,
            answer,
            bases,
            "the network trace holds no entries (WebArena-Verified refuses an empty trace)",
        ),
        Some(h) => verified::evaluate_verified(task, answer, h, bases),
        None => verified::evaluate_verified(task, answer, &Har::default(), bases),
    };
    let mut details = scored.lines();
    if let (verified::EvalStatus::Error(why), true) = (&scored.status, scored.evaluators.is_empty()) {
        details.push(format!("scoring stopped: {why}"));
    }
    Score { verdict: scored.verdict(), details, scored: None, verified: Some(scored) }
}

/// Whether scoring `task` may change the page the agent ended on: a `last` check's `prep_actions`
/// run in that page (of an unperturbed attempt), as WebArena runs them. Every other read leaves it
/// as it is.
pub fn changes_the_final_page(task: &Task) -> bool {
    task.eval.eval_types.contains(&EvalType::ProgramHtml)
        && task.eval.program_html.iter().any(|c| c.url.class() == Ok(&CheckUrl::Last) && !c.prep_actions.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verified_task() -> Task {
        let v = serde_json::json!({"sites": ["gitlab"], "task_id": 5, "intent_template_id": 1,
            "start_urls": ["__GITLAB__"], "intent": "Close issue 9", "intent_template": "Close issue 9",
            "instantiation_dict": {}, "revision": 1,
            "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "null"},
                      "expected": {"task_type": "mutate", "status": "SUCCESS", "retrieved_data": null}},
                     {"evaluator": "NetworkEventEvaluator",
                      "expected": {"url": "__GITLAB__/issues/9/close", "http_method": "POST", "response_status": 303}}]});
        verified::config::task_from_value(&v).expect("a verified task")
    }

    fn har(entries: serde_json::Value) -> Har {
        serde_json::from_value(serde_json::json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "0"},
            "entries": entries}}))
        .expect("a HAR")
    }

    fn entry(method: &str, url: &str, status: i64) -> serde_json::Value {
        serde_json::json!({"startedDateTime": "2026-12-05T00:00:00Z", "time": 1,
            "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1", "headers": [], "queryString": [],
                        "cookies": [], "headersSize": -1, "bodySize": 0},
            "response": {"status": status, "statusText": "", "httpVersion": "HTTP/1.1", "headers": [], "cookies": [],
                         "content": {"size": 0, "mimeType": "text/html"}, "redirectURL": "", "headersSize": -1,
                         "bodySize": 0},
            "cache": {}, "timings": {"send": 0, "wait": 0, "receive": 0}})
    }

    #[test]
    fn verified_tasks_are_scored_on_the_answer_and_the_trace_and_invalid_without_one() {
        let task = verified_task();
        let mut bases = SiteBases::default();
        bases.insert(skillshift_common::task::SiteKey::Gitlab, "http://h:8023");
        let answer = r#"{"task_type": "MUTATE", "status": "SUCCESS", "retrieved_data": null}"#;
        let closed = har(serde_json::json!([
            entry("GET", "http://h:8023/", 200),
            entry("POST", "http://h:8023/issues/9/close", 303)
        ]));
        let s = score_verified(&task, answer, Some(&closed), &bases);
        assert_eq!(s.verdict, Verdict::Pass, "{:?}", s.details);
        assert_eq!(s.details, ["AgentResponseEvaluator success", "NetworkEventEvaluator success"]);
        assert!(s.scored.is_none() && s.verified.is_some());
        let idle = har(serde_json::json!([entry("GET", "http://h:8023/", 200)]));
        assert_eq!(score_verified(&task, answer, Some(&idle), &bases).verdict, Verdict::Fail);
        assert_eq!(score_verified(&task, "Done.", Some(&closed), &bases).verdict, Verdict::Fail);
        // No trace (the chromedriver relay), or an empty one: the network evaluator cannot decide.
        let none = score_verified(&task, answer, None, &bases);
        assert!(matches!(&none.verdict, Verdict::Invalid(why) if why == NO_TRACE), "{:?}", none.verdict);
        let empty = score_verified(&task, answer, Some(&har(serde_json::json!([]))), &bases);
        assert!(matches!(&empty.verdict, Verdict::Invalid(why) if why.contains("no entries")), "{:?}", empty.verdict);
        // A site without a base URL stops scoring, and says so.
        let stopped = score_verified(&task, answer, Some(&closed), &SiteBases::default());
        assert!(matches!(stopped.verdict, Verdict::Invalid(_)));
        assert!(stopped.details.iter().any(|d| d.contains("no base URL for the site gitlab")), "{:?}", stopped.details);
    }

    #[test]
    fn locators_are_called_as_arrow_functions() {
        assert!(locator_js("document.title").contains("const value = (() => document.title)();"));
        assert!(CONTENT_JS.contains("outerHTML"));
    }
}
