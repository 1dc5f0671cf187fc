//! Running a task's evaluators (see docs/formats.md#evaluators) on the
//! simulator, as the worker's scorer does in Chromium: `string_match` on the answer,
//! `url_match` on the final URL, `program_html` by loading each check's URL
//! in the same session (or staying, for `last`) and reading its locator.

use axum::http::Method;
use skillshift_common::evaluate::{self, Locator, Property, Verdict};
use skillshift_common::task::{EvalType, Task};

use super::{Browser, SimError};

/// The verdict of a task and, per evaluator, what was compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub verdict: Verdict,
    pub details: Vec<String>,
}

impl Browser {
    /// Scores `task` given the run's `answer`; may navigate (for `program_html`).
    pub async fn score(&mut self, task: &Task, answer: Option<&str>) -> Scored {
        let mut verdicts = Vec::new();
        let mut details = Vec::new();
        let eval = &task.eval;
        if eval.eval_types.contains(&EvalType::StringMatch) {
            let v = match &eval.reference_answers {
                Some(r) => evaluate::string_match(r, answer.unwrap_or("")),
                None => Verdict::Invalid("string_match without reference_answers".to_string()),
            };
            details.push(format!("string_match {v:?}: answer {:?}", answer.unwrap_or("")));
            verdicts.push(v);
        }
        if eval.eval_types.contains(&EvalType::UrlMatch) {
            let reference = self.resolve_placeholders(eval.reference_url.as_deref().unwrap_or(""));
            let url = self.url().unwrap_or("").to_string();
            let v = Verdict::from_bool(evaluate::url_match(&reference, &url));
            details.push(format!("url_match {v:?}: {url} against {reference}"));
            verdicts.push(v);
        }
        if eval.eval_types.contains(&EvalType::ProgramHtml) {
            for check in &eval.program_html {
                let v = match self.program_html(&check.url, &check.locator).await {
                    Ok(text) => {
                        let v = evaluate::contents_match(&check.required_contents, &text);
                        let shown: String = text.chars().take(160).collect();
                        details.push(format!("program_html {v:?}: {} read {shown:?}", check.locator));
                        v
                    }
                    Err(e) => {
                        details.push(format!("program_html Fail: {e}"));
                        Verdict::Fail
                    }
                };
                verdicts.push(v);
            }
        }
        Scored { verdict: Verdict::all(verdicts), details }
    }

    async fn program_html(&mut self, url: &str, locator: &str) -> Result<String, SimError> {
        let locator = evaluate::parse_locator(locator)
            .map_err(|e| SimError::Navigation { url: url.to_string(), reason: e.to_string() })?;
        if url.trim() != "last" {
            let absolute = self.resolve_placeholders(url);
            let page = self.request(Method::GET, absolute, None).await?;
            self.page = Some(page);
        }
        let page = self.page.as_ref().ok_or(SimError::NoPage)?;
        Ok(match locator {
            Locator::PageText => page.page_text(),
            Locator::Query { selector, property } => {
                let el =
                    page.query(&selector).map_err(|reason| SimError::Navigation { url: url.to_string(), reason })?;
                match (el, property) {
                    (None, _) => String::new(),
                    (Some(el), Property::InnerText) => page.inner_text(el),
                    (Some(el), Property::Value) => page.value(el),
                }
            }
        })
    }
}
