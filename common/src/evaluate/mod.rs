//! The evaluators of a task, exactly as WebArena's
//! `evaluation_harness/evaluators.py` scores them, shared by the worker's
//! browser scorer and the fixture sites' HTTP checker (see `docs/webarena.md`).
//!
//! * [`string`]: `string_match` on the final answer;
//! * [`url`]: `url_match` on the final URL, with Python's URL parsing;
//! * [`program`]: `program_html`, around a [`PageReader`] (the browser's side:
//!   load a page, read its source, evaluate an expression) and an optional
//!   [`SiteApi`] for WebArena's REST helpers;
//! * [`judge`]: the LLM judge `fuzzy_match` needs, as an interface;
//! * [`python`], [`tokenize`]: the Python and NLTK behaviours the rules rest on;
//! * [`verified`]: WebArena-Verified's evaluators (response and network trace),
//!   for its tasks and [`Mode::WebArenaVerified`].
//!
//! [`evaluate`] runs every evaluator of `eval_types`; the task succeeds when
//! all pass (WebArena multiplies scores). [`Mode::Strict`] fixes WebArena's
//! plain bugs and is never the default.

pub mod judge;
pub mod program;
pub mod python;
pub mod string;
pub mod tokenize;
pub mod url;
pub mod verified;

pub use judge::{Judge, JudgeError};
pub use program::{PageError, PageReader, SiteApi};
pub use url::OR;

use serde::{Deserialize, Serialize};

use crate::task::{Eval, EvalType};
use tokenize::WordTokenizer;

/// The outcome of one evaluator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The evaluator cannot decide (e.g. `fuzzy_match` without a judge): the task is invalid, never passed.
    Invalid(String),
}

impl Verdict {
    pub fn from_bool(ok: bool) -> Self {
        if ok {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    /// Combines evaluators: any invalid makes the whole invalid, else all must pass.
    pub fn all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut out = Verdict::Pass;
        for v in verdicts {
            match v {
                Verdict::Invalid(_) => return v,
                Verdict::Fail => out = Verdict::Fail,
                Verdict::Pass => {}
            }
        }
        out
    }

    /// `pass`, `fail` or `invalid`.
    pub fn as_str(&self) -> &'static str {
        self.word().as_str()
    }

    /// The verdict as a trajectory's evidence records it (without the reason of an invalid one).
    pub fn word(&self) -> crate::score::ScoreVerdict {
        match self {
            Verdict::Pass => crate::score::ScoreVerdict::Pass,
            Verdict::Fail => crate::score::ScoreVerdict::Fail,
            Verdict::Invalid(_) => crate::score::ScoreVerdict::Invalid,
        }
    }
}

/// Which rules score: WebArena's own (the default), or with its plain bugs fixed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    #[serde(rename = "webarena")]
    WebArena,
    Strict,
    /// WebArena-Verified's evaluators (`verified`), for its tasks; WebArena's tasks score as under `webarena`.
    #[serde(rename = "webarena-verified")]
    WebArenaVerified,
}

impl Mode {
    /// The `url_match` rules this mode applies to a WebArena task.
    pub fn url_rules(self) -> Mode {
        match self {
            Mode::WebArenaVerified => Mode::WebArena,
            other => other,
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "webarena" => Ok(Mode::WebArena),
            "strict" => Ok(Mode::Strict),
            "webarena-verified" => Ok(Mode::WebArenaVerified),
            other => Err(format!("unknown evaluator mode '{other}' (expected webarena, strict or webarena-verified)")),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::WebArena => "webarena",
            Mode::Strict => "strict",
            Mode::WebArenaVerified => "webarena-verified",
        })
    }
}

/// Everything outside the page that scoring may use.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    pub mode: Mode,
    pub judge: Option<&'a dyn Judge>,
    pub site_api: Option<&'a dyn SiteApi>,
    /// For the one-character `must_include` rule; `None` makes such a check invalid unless it is decidable.
    pub tokenizer: Option<&'a WordTokenizer>,
}

impl Default for Options<'_> {
    /// WebArena's rules, no judge, no REST API, NLTK's model if installed.
    fn default() -> Self {
        Options { mode: Mode::WebArena, judge: None, site_api: None, tokenizer: WordTokenizer::from_environment().ok() }
    }
}

/// The end of an attempt, as the evaluators see it.
#[derive(Debug, Clone, Copy)]
pub struct FinalState<'a> {
    /// The `answer` of the final `stop` (`""` when the agent never stopped, as WebArena reads it).
    pub answer: &'a str,
    /// The final page's URL.
    pub url: &'a str,
}

/// One evaluator's verdict and what it compared (a `program_html` check each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvaluatorResult {
    pub kind: EvalType,
    pub verdict: Verdict,
    pub expected: String,
    pub got: String,
    pub detail: String,
}

/// A task's verdict and its evaluators' results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub verdict: Verdict,
    pub evaluators: Vec<EvaluatorResult>,
}

impl Scored {
    /// One line per evaluator, for trajectories and logs.
    pub fn lines(&self) -> Vec<String> {
        self.evaluators
            .iter()
            .map(|e| {
                let kind = crate::score::EvaluatorKind::from(e.kind);
                format!("{kind} {}: expected {}, got {:?} ({})", e.verdict.as_str(), e.expected, e.got, e.detail)
            })
            .collect()
    }
}

fn json(v: &impl Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Runs the evaluators of `eval` (placeholders resolved) on the final state; `Err` only when the page reader is gone.
pub async fn evaluate<P: PageReader>(
    intent: &str,
    eval: &Eval,
    state: &FinalState<'_>,
    page: &mut P,
    opts: &Options<'_>,
) -> Result<Scored, PageError> {
    let mut out = Vec::new();
    if let Some(v) = &eval.verified {
        // WebArena-Verified's evaluators read the response and the network trace, which this path lacks.
        let why = "a WebArena-Verified task: score it with its own evaluators (evaluate::verified)".to_string();
        let expected = json(&v.evaluators.iter().map(|e| e.name()).collect::<Vec<_>>());
        out.push(EvaluatorResult {
            kind: EvalType::StringMatch,
            verdict: Verdict::Invalid(why.clone()),
            expected,
            got: state.answer.to_string(),
            detail: why,
        });
    }
    for kind in &eval.eval_types {
        match kind {
            EvalType::StringMatch => {
                let r = match &eval.reference_answers {
                    None => EvaluatorResult {
                        kind: *kind,
                        verdict: Verdict::Invalid("string_match without reference_answers".to_string()),
                        expected: "null".to_string(),
                        got: state.answer.to_string(),
                        detail: "eval.reference_answers is null".to_string(),
                    },
                    Some(reference) => {
                        let cx = string::StringContext {
                            intent,
                            string_note: eval.string_note.as_deref(),
                            judge: opts.judge,
                            tokenizer: opts.tokenizer,
                        };
                        let o = string::string_match(reference, state.answer, &cx).await;
                        EvaluatorResult {
                            kind: *kind,
                            verdict: o.verdict,
                            expected: json(reference),
                            got: state.answer.to_string(),
                            detail: o.detail,
                        }
                    }
                };
                out.push(r);
            }
            EvalType::UrlMatch => {
                let reference = eval.reference_url.as_deref();
                let verdict = match reference {
                    None => Verdict::Invalid("url_match without reference_url".to_string()),
                    Some(r) => match url::url_match(r, state.url, eval.url_note.as_deref(), opts.mode.url_rules()) {
                        Ok(ok) => Verdict::from_bool(ok),
                        Err(e) => Verdict::Invalid(e.to_string()),
                    },
                };
                out.push(EvaluatorResult {
                    kind: *kind,
                    verdict,
                    expected: reference.unwrap_or("null").to_string(),
                    got: state.url.to_string(),
                    detail: url::rule_detail(eval.url_note.as_deref(), opts.mode.url_rules()),
                });
            }
            EvalType::ProgramHtml => {
                for check in &eval.program_html {
                    let o = program::run_check(check, state.url, page, opts.site_api).await?;
                    out.push(EvaluatorResult {
                        kind: *kind,
                        verdict: o.verdict,
                        expected: json(&check.required_contents),
                        got: o.got,
                        detail: o.detail,
                    });
                }
            }
        }
    }
    Ok(Scored { verdict: Verdict::all(out.iter().map(|e| e.verdict.clone())), evaluators: out })
}

/// Why a grid task's `eval` block is incomplete or undecidable without a judge; the text starts with the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalCheckError {
    #[error("eval.eval_types is empty")]
    NoEvalTypes,
    #[error("eval.reference_answers is null for string_match")]
    NoReferenceAnswers,
    #[error("eval.reference_answers must set exactly one of exact_match, must_include, fuzzy_match")]
    AnswerApproaches,
    #[error("eval.reference_answers holds an empty answer")]
    EmptyAnswer,
    #[error("eval.reference_url is empty for url_match")]
    NoReferenceUrl,
    #[error("eval.program_html is empty for program_html")]
    NoChecks,
    #[error("eval.program_html[{0}].url is empty")]
    EmptyCheckUrl(usize),
    #[error("eval.program_html[{index}].url: {error}")]
    CheckUrl { index: usize, error: program::CheckError },
    #[error("eval.program_html[{index}].locator: {error}")]
    Locator { index: usize, error: program::CheckError },
    #[error(
        "eval.program_html[{index}].locator: '{locator}' calls a helper, which needs a site's API the fixture \
         sites do not have"
    )]
    HelperLocator { index: usize, locator: String },
    #[error("eval.program_html[{0}].required_contents must set exactly one of exact_match, must_include")]
    RequiredContents(usize),
}

impl EvalCheckError {
    /// The field at fault, as a path: `eval.program_html[2].locator`.
    pub fn field(&self) -> String {
        match self {
            EvalCheckError::NoEvalTypes => "eval.eval_types".to_string(),
            EvalCheckError::NoReferenceAnswers | EvalCheckError::AnswerApproaches | EvalCheckError::EmptyAnswer => {
                "eval.reference_answers".to_string()
            }
            EvalCheckError::NoReferenceUrl => "eval.reference_url".to_string(),
            EvalCheckError::NoChecks => "eval.program_html".to_string(),
            EvalCheckError::EmptyCheckUrl(i) | EvalCheckError::CheckUrl { index: i, .. } => {
                format!("eval.program_html[{i}].url")
            }
            EvalCheckError::Locator { index: i, .. } | EvalCheckError::HelperLocator { index: i, .. } => {
                format!("eval.program_html[{i}].locator")
            }
            EvalCheckError::RequiredContents(i) => format!("eval.program_html[{i}].required_contents"),
        }
    }
}

/// Checks that a grid task's `eval` block is complete and decidable
/// without a judge (stricter than WebArena's loading: no empty answers, no
/// empty URLs, no `func:` helpers); the message starts with the field. Whether
/// it holds in a browser is `skillshift tasks audit`'s to prove.
pub fn check_eval(eval: &Eval) -> Result<(), EvalCheckError> {
    if eval.eval_types.is_empty() {
        return Err(EvalCheckError::NoEvalTypes);
    }
    for kind in &eval.eval_types {
        match kind {
            EvalType::StringMatch => {
                let r = eval.reference_answers.as_ref().ok_or(EvalCheckError::NoReferenceAnswers)?;
                let set = [r.exact_match.is_some(), r.must_include.is_some(), r.fuzzy_match.is_some()];
                if set.iter().filter(|b| **b).count() != 1 {
                    return Err(EvalCheckError::AnswerApproaches);
                }
                if r.exact_match.as_deref().is_some_and(|s| s.trim().is_empty())
                    || r.must_include.as_ref().is_some_and(|v| v.is_empty() || v.iter().any(|s| s.trim().is_empty()))
                {
                    return Err(EvalCheckError::EmptyAnswer);
                }
            }
            EvalType::UrlMatch => {
                let url = eval.reference_url.as_deref().unwrap_or("");
                if url.trim().is_empty() {
                    return Err(EvalCheckError::NoReferenceUrl);
                }
            }
            EvalType::ProgramHtml => {
                if eval.program_html.is_empty() {
                    return Err(EvalCheckError::NoChecks);
                }
                for (index, check) in eval.program_html.iter().enumerate() {
                    if check.url.as_str().trim().is_empty() {
                        return Err(EvalCheckError::EmptyCheckUrl(index));
                    }
                    check.url.class().map_err(|e| EvalCheckError::CheckUrl { index, error: e.clone() })?;
                    let locator =
                        check.locator.class().map_err(|e| EvalCheckError::Locator { index, error: e.clone() })?;
                    if let program::Locator::Helper(_) = locator {
                        return Err(EvalCheckError::HelperLocator { index, locator: check.locator.to_string() });
                    }
                    let c = &check.required_contents;
                    if c.exact_match.is_some() == c.must_include.is_some() {
                        return Err(EvalCheckError::RequiredContents(index));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The parts of a URL the fixture sites' form handling reads (not the evaluator's parse: see [`url::urlparse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    /// `host[:port]/path`, percent-decoded, without a trailing `/`.
    pub base: String,
    /// Decoded query parameters in order, blank values kept.
    pub query: Vec<(String, String)>,
}

/// Splits a URL into host+path and decoded query pairs (the fragment is dropped), for form handling.
pub fn url_parts(u: &str) -> UrlParts {
    let u = u.trim();
    let u = u.split('#').next().unwrap_or("");
    let without_scheme = match u.find("://") {
        Some(i) => &u[i + 3..],
        None => u,
    };
    let (base, query) = without_scheme.split_once('?').unwrap_or((without_scheme, ""));
    UrlParts { base: percent_decode(base.trim_end_matches('/')), query: url::form_pairs(query) }
}

/// Decodes `%XX` escapes and `+` (as space), as form bodies are encoded.
pub fn percent_decode(text: &str) -> String {
    url::unquote_plus(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{ProgramHtml, ReferenceAnswers, RequiredContents};
    use serde_json::Value;

    /// A page that answers every expression from a table and records what was done.
    struct TablePage {
        log: Vec<String>,
        content: String,
        values: Vec<(&'static str, Result<Value, PageError>)>,
    }

    impl PageReader for TablePage {
        async fn open(&mut self, url: &str) -> Result<(), PageError> {
            self.log.push(format!("open {url}"));
            Ok(())
        }
        async fn use_final_page(&mut self) -> Result<(), PageError> {
            self.log.push("final".to_string());
            Ok(())
        }
        async fn content(&mut self) -> Result<String, PageError> {
            Ok(self.content.clone())
        }
        async fn eval(&mut self, expression: &str) -> Result<Value, PageError> {
            self.log.push(format!("eval {expression}"));
            self.values
                .iter()
                .find(|(e, _)| *e == expression)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| Err(PageError::Script("not found".into())))
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        // The table page never waits: one poll finishes the future.
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => unreachable!("the table page never waits"),
        }
    }

    fn check(url: &str, locator: &str, must: &str) -> ProgramHtml {
        ProgramHtml {
            url: url.into(),
            locator: locator.into(),
            required_contents: RequiredContents { exact_match: None, must_include: Some(vec![must.into()]) },
            prep_actions: vec![],
        }
    }

    #[test]
    fn program_html_reads_source_values_and_throws_as_webarena() {
        let mut page = TablePage {
            log: vec![],
            content: "<p>Tom &amp; Jerry</p>".into(),
            values: vec![
                ("document.querySelector('#n').value", Ok(Value::from(3))),
                ("document.querySelector('#x').innerText", Err(PageError::Script("null".into()))),
                ("document.querySelector('#b').checked", Ok(Value::Bool(false))),
            ],
        };
        let eval = Eval {
            eval_types: vec![EvalType::ProgramHtml],
            program_html: vec![
                check("last", "", "tom & jerry"),
                check("http://h/a", "document.querySelector('#n').value", "3"),
                check("last", "document.querySelector('#x').innerText", ""),
                check("func:reddit_get_post_url('__last_url__')", "document.querySelector('#b').checked", "false"),
            ],
            ..Eval::default()
        };
        let state = FinalState { answer: "", url: "http://r/f/books/7/t" };
        let opts = Options { tokenizer: None, ..Options::default() };
        let scored = block_on(evaluate("", &eval, &state, &mut page, &opts)).unwrap();
        assert_eq!(scored.verdict, Verdict::Pass, "{:?}", scored.lines());
        assert_eq!(page.log[0], "final");
        assert_eq!(page.log[1], "open http://h/a");
        assert!(page.log.contains(&"open http://r/f/books/7/".to_string()), "{:?}", page.log);
    }

    #[test]
    fn fuzzy_without_judge_is_invalid_and_na_is_exact() {
        let mut page = TablePage { log: vec![], content: String::new(), values: vec![] };
        let mut eval = Eval { eval_types: vec![EvalType::StringMatch], ..Eval::default() };
        eval.reference_answers = Some(ReferenceAnswers {
            exact_match: None,
            must_include: None,
            fuzzy_match: Some(crate::task::FuzzyMatch::References(vec!["x".into()])),
        });
        let opts = Options { tokenizer: None, ..Options::default() };
        let state = FinalState { answer: "x", url: "" };
        let s = block_on(evaluate("q", &eval, &state, &mut page, &opts)).unwrap();
        assert!(matches!(s.verdict, Verdict::Invalid(m) if m.contains("LLM judge")));
        eval.reference_answers.as_mut().unwrap().fuzzy_match = Some(crate::task::FuzzyMatch::Unachievable);
        let na = FinalState { answer: " 'n/a' ", url: "" };
        assert_eq!(block_on(evaluate("q", &eval, &na, &mut page, &opts)).unwrap().verdict, Verdict::Pass);
        let other = FinalState { answer: "not possible", url: "" };
        assert_eq!(block_on(evaluate("q", &eval, &other, &mut page, &opts)).unwrap().verdict, Verdict::Fail);
    }

    #[test]
    fn a_grid_check_error_names_its_field_first() {
        let helper = check("__GITLAB__/a", "func:shopping_get_latest_order_url()", "x");
        let errors = [
            EvalCheckError::NoEvalTypes,
            EvalCheckError::AnswerApproaches,
            EvalCheckError::NoReferenceUrl,
            EvalCheckError::NoChecks,
            EvalCheckError::EmptyCheckUrl(1),
            EvalCheckError::Locator { index: 2, error: program::locator("window.x").unwrap_err() },
            EvalCheckError::HelperLocator { index: 3, locator: helper.locator.to_string() },
            EvalCheckError::RequiredContents(4),
        ];
        for e in errors {
            let text = e.to_string();
            let first = text.split_whitespace().next().unwrap_or("").trim_end_matches(':');
            assert_eq!(e.field(), first, "{text}");
        }
        let eval = Eval { eval_types: vec![EvalType::ProgramHtml], program_html: vec![helper], ..Eval::default() };
        assert_eq!(
            check_eval(&eval).map_err(|e| e.to_string()),
            Err("eval.program_html[0].locator: 'func:shopping_get_latest_order_url()' calls a helper, which needs a \
                 site's API the fixture sites do not have"
                .to_string())
        );
    }

    #[test]
    fn grid_checks_name_the_field() {
        let eval = Eval { eval_types: vec![EvalType::UrlMatch], ..Eval::default() };
        assert!(check_eval(&eval).unwrap_err().to_string().starts_with("eval.reference_url"));
        assert_eq!(Verdict::all([Verdict::Pass, Verdict::Fail]), Verdict::Fail);
        assert!(matches!(Verdict::all([Verdict::Fail, Verdict::Invalid("x".into())]), Verdict::Invalid(_)));
        assert_eq!(url_parts("http://h/a%20b/?x=1&y=").query, [("x".into(), "1".into()), ("y".into(), "".into())]);
    }
}
