//! WebArena's evaluators (`docs/formats.md`, task files), run once at the end of an attempt.
//!
//! The matching itself is `skillshift_common::evaluate` (shared with the fixture
//! sites' HTTP-level checker); this module supplies what only a browser knows:
//! the final URL and, for `program_html`, the page text or element read by the
//! locator, after navigating to the check's `url` (or staying, for `last`).
//! Perturbation scripts are removed before scoring so the evaluators read the
//! site itself, not the perturbed rendering of it; a `last` check on a
//! perturbed attempt reloads the final page for the same reason.

use serde_json::json;
use skillshift_common::evaluate::{self, Locator, Property, Verdict};
use skillshift_common::task::{EvalType, Task};

use crate::browser::{BrowserError, Session};
use crate::skill_runtime::Placeholders;

/// The verdict and a one-line reason per evaluator, for the trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub verdict: Verdict,
    pub details: Vec<String>,
}

fn js_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The JavaScript that reads a locator; an absent element reads as "" (as WebArena).
pub fn locator_js(locator: &Locator) -> String {
    match locator {
        Locator::PageText => "document.body ? document.body.innerText : ''".to_string(),
        Locator::Query { selector, property } => {
            let prop = match property {
                Property::InnerText => "innerText",
                Property::Value => "value",
            };
            format!(
                "(() => {{ const e = document.querySelector({}); return e ? String(e.{prop} ?? '') : ''; }})()",
                js_string(selector)
            )
        }
    }
}

/// Scores the attempt. `final_url` is the page the agent ended on; `answer` its stop answer.
pub async fn score(
    session: &Session,
    task: &Task,
    ph: &Placeholders,
    final_url: &str,
    answer: &str,
    perturbed: bool,
) -> Result<Score, BrowserError> {
    let mut verdicts = Vec::new();
    let mut details = Vec::new();
    let eval = &task.eval;
    for kind in &eval.eval_types {
        match kind {
            EvalType::StringMatch => {
                let v = match &eval.reference_answers {
                    Some(r) => evaluate::string_match(r, answer),
                    None => Verdict::Invalid("string_match without reference_answers".into()),
                };
                details.push(format!("string_match {v:?} (answer {:?})", answer));
                verdicts.push(v);
            }
            EvalType::UrlMatch => {
                let reference = ph.apply(eval.reference_url.as_deref().unwrap_or(""));
                let v = Verdict::from_bool(evaluate::url_match(&reference, final_url));
                details.push(format!("url_match {v:?} ({final_url} against {reference})"));
                verdicts.push(v);
            }
            EvalType::ProgramHtml => {
                for (i, check) in eval.program_html.iter().enumerate() {
                    let locator = match evaluate::parse_locator(&check.locator) {
                        Ok(l) => l,
                        Err(e) => {
                            details.push(format!("program_html[{i}] invalid: {e}"));
                            verdicts.push(Verdict::Invalid(e.to_string()));
                            continue;
                        }
                    };
                    let target = if check.url.trim() == "last" {
                        perturbed.then(|| final_url.to_string())
                    } else {
                        Some(ph.apply(&check.url))
                    };
                    if let Some(url) = &target {
                        if let Err(e) = session.goto(url).await {
                            if e.is_fatal() {
                                return Err(e);
                            }
                            details.push(format!("program_html[{i}] Fail (cannot open {url}: {e})"));
                            verdicts.push(Verdict::Fail);
                            continue;
                        }
                    }
                    let text = match session.eval(&locator_js(&locator)).await {
                        Ok(v) => v.as_str().unwrap_or("").to_string(),
                        Err(e) if e.is_fatal() => return Err(e),
                        Err(_) => String::new(),
                    };
                    let v = evaluate::contents_match(&check.required_contents, &text);
                    let shown: String = text.chars().take(80).collect();
                    details.push(format!("program_html[{i}] {v:?} ({} read {:?})", check.locator, shown));
                    verdicts.push(v);
                }
            }
        }
    }
    Ok(Score { verdict: Verdict::all(verdicts), details })
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
    fn locators_become_safe_javascript() {
        let js = locator_js(&Locator::Query { selector: "#a[title=\"x\"]".into(), property: Property::Value });
        assert!(js.contains(r##"document.querySelector("#a[title=\"x\"]")"##), "{js}");
        assert!(locator_js(&Locator::PageText).contains("innerText"));
    }
}
