//! WebArena's evaluators (`docs/formats.md`, task files), run once at the end of an attempt.
//!
//! The rules are `skillshift_common::evaluate` (shared with the fixture sites'
//! HTTP-level checker); this module is the browser's side of them
//! ([`PageReader`]): load a check's `url`, read the page's source, evaluate a
//! locator as WebArena does (`() => locator`).
//! Perturbation scripts are removed before scoring so the evaluators read the
//! site itself, not the perturbed rendering of it; a `last` check on a
//! perturbed attempt reloads the final page for the same reason.

use serde_json::{json, Value};
use skillshift_common::evaluate::{self, FinalState, Mode, Options, PageError, PageReader, Verdict};
use skillshift_common::task::{EvalType, Task};

use crate::browser::{BrowserError, Session};
use crate::skill_runtime::Placeholders;

/// The verdict and a one-line reason per evaluator, for the trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub verdict: Verdict,
    pub details: Vec<String>,
    /// Each evaluator's expected and got; `None` when scoring stopped before deciding.
    pub scored: Option<evaluate::Scored>,
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

/// The session as the evaluators' page reader: a check's URL is loaded in the
/// same tab, and the final page reloaded when a later check reads `last`.
struct Reader<'a> {
    session: &'a Session,
    final_url: &'a str,
    perturbed: bool,
    away: bool,
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
}

impl PageReader for Reader<'_> {
    async fn open(&mut self, url: &str) -> Result<(), PageError> {
        self.away = true;
        match self.session.goto(url).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e, PageError::Navigation)),
        }
    }

    async fn use_final_page(&mut self) -> Result<(), PageError> {
        // A perturbed attempt's final page is reloaded so the site itself is read.
        if self.away || self.perturbed {
            self.away = false;
            if let Err(e) = self.session.goto(self.final_url).await {
                return Err(self.fail(e, PageError::Navigation));
            }
        }
        Ok(())
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

/// Scores the attempt with WebArena's rules. `final_url` is the page the agent ended on; `answer` its stop answer.
pub async fn score(
    session: &Session,
    task: &Task,
    ph: &Placeholders,
    final_url: &str,
    answer: &str,
    perturbed: bool,
) -> Result<Score, BrowserError> {
    score_with(session, task, ph, final_url, answer, perturbed, Mode::WebArena).await
}

/// [`score`] under the given evaluator mode (`--evaluator webarena|strict`).
pub async fn score_with(
    session: &Session,
    task: &Task,
    ph: &Placeholders,
    final_url: &str,
    answer: &str,
    perturbed: bool,
    mode: Mode,
) -> Result<Score, BrowserError> {
    let task = task.map_strings(&|s| ph.apply(s));
    let state = FinalState { answer, url: final_url };
    let mut reader = Reader { session, final_url, perturbed, away: false, fatal: None };
    let judge = crate::judge::for_task(&task);
    let opts = Options {
        mode,
        judge: judge.as_ref().map(|j| j as &dyn skillshift_common::evaluate::Judge),
        ..Options::default()
    };
    match evaluate::evaluate(&task.intent, &task.eval, &state, &mut reader, &opts).await {
        Ok(scored) => Ok(Score { details: scored.lines(), verdict: scored.verdict.clone(), scored: Some(scored) }),
        Err(e) => match reader.fatal.take() {
            Some(fatal) => Err(fatal),
            None => Ok(Score { verdict: Verdict::Fail, details: vec![format!("scoring stopped: {e}")], scored: None }),
        },
    }
}

/// Whether scoring `task` leaves the page the agent ended on as it is: only `program_html` reads
/// pages, opening its checks' URLs (and reloading the final page of a perturbed attempt).
pub fn leaves_the_final_page(task: &Task) -> bool {
    !task.eval.eval_types.contains(&EvalType::ProgramHtml)
}

/// Removes the perturbation scripts registered for later documents.
pub async fn remove_scripts(session: &Session, identifiers: &[String]) -> Result<(), BrowserError> {
    for id in identifiers {
        match session.cdp("Page.removeScriptToEvaluateOnNewDocument", json!({"identifier": id})).await {
            Err(e) if e.is_fatal() => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locators_are_called_as_arrow_functions() {
        assert!(locator_js("document.title").contains("const value = (() => document.title)();"));
        assert!(CONTENT_JS.contains("outerHTML"));
    }
}
