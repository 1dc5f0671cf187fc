//! Running a task's evaluators (docs/webarena.md) on the simulator, through the
//! same `skillshift_common::evaluate` the worker's scorer uses: this module
//! only supplies the page side. A check's URL is loaded in the same session
//! (the final page is put back for `last`), `''` reads the page's serialised
//! HTML, and of JavaScript only `document.querySelector("<css>").innerText`,
//! `.outerText` and `.value` can be read; any other expression makes the
//! check invalid here, where a browser would evaluate it.

use axum::http::Method;
use serde_json::Value;
use skillshift_common::evaluate::program::{Property, SimpleQuery};
use skillshift_common::evaluate::{self, FinalState, Options, PageError, PageReader, Verdict};
use skillshift_common::task::Task;

use super::{Browser, Page};

/// The verdict of a task and, per evaluator, what was compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub verdict: Verdict,
    pub details: Vec<String>,
}

/// The simulator as the evaluators' page reader.
struct SimReader<'a> {
    browser: &'a mut Browser,
    /// The agent's final page while a check's own page is shown.
    saved_final: Option<Page>,
}

impl PageReader for SimReader<'_> {
    async fn open(&mut self, url: &str) -> Result<(), PageError> {
        let absolute = self.browser.absolute(url).map_err(|e| PageError::Navigation(e.to_string()))?;
        let page = self
            .browser
            .request(Method::GET, absolute, None)
            .await
            .map_err(|e| PageError::Navigation(e.to_string()))?;
        let previous = self.browser.page.replace(page);
        if self.saved_final.is_none() {
            self.saved_final = previous;
        }
        Ok(())
    }

    async fn use_final_page(&mut self) -> Result<(), PageError> {
        if let Some(p) = self.saved_final.take() {
            self.browser.page = Some(p);
        }
        Ok(())
    }

    async fn content(&mut self) -> Result<String, PageError> {
        let page = self.browser.page.as_ref().ok_or_else(|| PageError::Navigation("no page is loaded".into()))?;
        Ok(page.doc.html())
    }

    async fn eval(&mut self, expression: &str) -> Result<Value, PageError> {
        let query = SimpleQuery::parse(expression).ok_or_else(|| {
            PageError::Unsupported(format!("the HTTP checker cannot evaluate {expression:?} (no JavaScript)"))
        })?;
        let page = self.browser.page.as_ref().ok_or_else(|| PageError::Script("no page is loaded".into()))?;
        let el = page.query(&query.selector).map_err(PageError::Unsupported)?;
        let Some(el) = el else {
            return Err(PageError::Script(format!("document.querySelector({:?}) is null", query.selector)));
        };
        Ok(Value::String(match query.property {
            Property::InnerText | Property::OuterText => page.inner_text(el),
            Property::Value => page.value(el),
        }))
    }
}

impl Browser {
    /// Scores `task` given the run's `answer`; may navigate (for `program_html`).
    pub async fn score(&mut self, task: &Task, answer: Option<&str>) -> Scored {
        let task = task.map_strings(&|s| self.resolve_placeholders(s));
        let url = self.url().unwrap_or("").to_string();
        let state = FinalState { answer: answer.unwrap_or(""), url: &url };
        let opts = Options::default();
        let mut reader = SimReader { browser: self, saved_final: None };
        match evaluate::evaluate(&task.intent, &task.eval, &state, &mut reader, &opts).await {
            Ok(scored) => Scored { details: scored.lines(), verdict: scored.verdict },
            Err(e) => Scored { verdict: Verdict::Fail, details: vec![format!("scoring stopped: {e}")] },
        }
    }
}
