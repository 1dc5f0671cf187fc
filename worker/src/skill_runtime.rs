//! Executing skill steps (`docs/formats.md`, skills) on the live page: skills (one agent step each),
//! site logins and reference solutions.
//!
//! A target is resolved on Chrome's accessibility tree as it is now: the
//! non-ignored nodes whose role equals the target's and whose accessible name
//! equals the target's (whitespace collapsed, case folded). No match, or several without
//! `nth`, fails the step; so does an action the page refuses (a covered
//! element, a field that is not editable, a missing option) and a navigation
//! that fails. Any failed step fails the whole run of steps (`docs/design.md`):
//! a skill whose steps are right but cannot be realized has failed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use skillshift_common::skills::{Skill, Step, Target};

use crate::actions::{self, ActError};
use crate::axtree::{fetch_role, fetch_tree, AxTree};
use crate::browser::{BrowserError, Session};

/// How long a locator keeps looking for an element that is not there yet, on a
/// site whose pages may render after they load (the default of
/// [`crate::sites::SiteManager::locator_grace`]). Short on purpose: a skill that
/// needs an element which renders later than this fails, as a learned script would.
pub const LOCATOR_GRACE: Duration = Duration::from_millis(300);

/// The result of running a list of steps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepsOutcome {
    pub ok: bool,
    /// Why the first failing step failed, with its index.
    pub error: Option<String>,
    /// The answer: the literal of an `answer` step, else the text of the last `read`.
    pub answer: Option<String>,
    pub steps_done: usize,
}

/// Replaces site placeholders (`__GITLAB__`, ..., and `__SITE__`) with base URLs.
#[derive(Debug, Clone, Default)]
pub struct Placeholders(pub Vec<(String, String)>);

impl Placeholders {
    pub fn apply(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (k, v) in &self.0 {
            out = out.replace(k.as_str(), v.trim_end_matches('/'));
        }
        out
    }
}

/// Names compare with whitespace collapsed and case folded, like Playwright's
/// role locators (CSS `text-transform` changes the case Chrome computes).
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The backend node ids of the elements a target matches, in document order.
pub fn matches(tree: &AxTree, target: &Target) -> Vec<i64> {
    let name = collapse(&target.name);
    tree.elements()
        .filter(|n| n.role == target.role && collapse(&n.name) == name)
        .filter_map(|n| n.backend_id)
        .collect()
}

fn describe(t: &Target) -> String {
    match t.nth {
        Some(n) => format!("{} '{}' (nth {n})", t.role, t.name),
        None => format!("{} '{}'", t.role, t.name),
    }
}

/// The nodes a target is resolved among: for a target without `nth`, whose answer depends only on
/// how many elements match, the nodes of its role ([`fetch_role`]); else, or on a page with
/// frames, the whole tree, whose order `nth` counts in.
async fn candidates(session: &Session, target: &Target) -> Result<AxTree, BrowserError> {
    if target.nth.is_none() {
        match fetch_role(session, &target.role).await {
            Ok(Some(tree)) => return Ok(tree),
            Err(e) if e.is_fatal() => return Err(e),
            // A frame on the page, or a document replaced mid-call: the full tree, with its retries.
            Ok(None) | Err(_) => {}
        }
    }
    fetch_tree(session).await
}

/// Resolves a target to one element, waiting up to the session's locator grace
/// ([`Session::locator_grace`]) for it to appear; with none, the first look decides.
pub async fn resolve(session: &Session, target: &Target) -> Result<i64, ActError> {
    let grace = session.locator_grace();
    let start = std::time::Instant::now();
    loop {
        let tree = candidates(session, target).await.map_err(ActError::from)?;
        let found = matches(&tree, target);
        let pick = match (found.len(), target.nth) {
            (0, _) => None,
            (_, Some(n)) => match found.get(n as usize) {
                Some(b) => return Ok(*b),
                None => {
                    return Err(ActError::Failed(format!(
                        "{}: only {} element(s) match",
                        describe(target),
                        found.len()
                    )))
                }
            },
            (1, None) => Some(found[0]),
            (k, None) => {
                return Err(ActError::Failed(format!("{} is ambiguous: {k} elements match", describe(target))))
            }
        };
        if let Some(b) = pick {
            return Ok(b);
        }
        if start.elapsed() >= grace {
            return Err(ActError::Failed(format!("no element matches {}", describe(target))));
        }
        // One more look when the grace is over: each look asks Chrome for the tree.
        tokio::time::sleep(grace.saturating_sub(start.elapsed()).max(Duration::from_millis(20))).await;
    }
}

const READ_TEXT: &str = r#"function() {
  if (this.tagName === "INPUT" || this.tagName === "TEXTAREA") return this.value;
  if (this.tagName === "SELECT") { const o = this.options[this.selectedIndex]; return o ? o.textContent.trim() : ""; }
  return (this.innerText || this.textContent || "").trim();
}"#;

/// Runs one step. `Ok(Some(text))` carries a read or answered value.
pub async fn run_step(session: &Session, step: &Step, ph: &Placeholders) -> Result<Option<String>, ActError> {
    match step {
        Step::Goto { url } => {
            session.goto(&ph.apply(url)).await.map_err(ActError::from)?;
            Ok(None)
        }
        Step::Click { target } => {
            let b = resolve(session, target).await?;
            actions::click(session, b).await.map(|_| None)
        }
        Step::Fill { target, text } => {
            let b = resolve(session, target).await?;
            actions::type_text(session, b, text, false).await.map(|_| None)
        }
        Step::Select { target, option } => {
            let b = resolve(session, target).await?;
            let r = actions::call_on(session, b, actions::SELECT_OPTION, vec![json!(option)]).await?;
            match r.as_str() {
                Some("") => Ok(None),
                Some(m) => Err(ActError::Failed(format!("{}: {m}", describe(target)))),
                None => Err(ActError::Failed(format!("{}: cannot select", describe(target)))),
            }
        }
        Step::Check { target } => {
            let b = resolve(session, target).await?;
            let checked = actions::call_on(session, b, "function() { return !!this.checked; }", vec![]).await?;
            if checked.as_bool() != Some(true) {
                actions::click(session, b).await?;
                let now = actions::call_on(session, b, "function() { return !!this.checked; }", vec![]).await;
                if !matches!(now, Ok(ref v) if v.as_bool() == Some(true)) {
                    return Err(ActError::Failed(format!("{} did not become checked", describe(target))));
                }
            }
            Ok(None)
        }
        Step::Press { target, key } => {
            let b = resolve(session, target).await?;
            actions::press(session, Some(b), key).await.map(|_| None)
        }
        Step::Hover { target } => {
            let b = resolve(session, target).await?;
            actions::hover(session, b).await.map(|_| None)
        }
        Step::Read { target } => {
            let b = resolve(session, target).await?;
            let v = actions::call_on(session, b, READ_TEXT, vec![]).await?;
            Ok(Some(v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
        }
        Step::Answer { text } => Ok(Some(text.clone())),
    }
}

/// Runs steps in order, stopping at the first that cannot be realized. Only a
/// lost browser is an `Err`; every other failure is in the outcome.
pub async fn run_steps(session: &Session, steps: &[Step], ph: &Placeholders) -> Result<StepsOutcome, BrowserError> {
    let mut out = StepsOutcome { ok: true, ..Default::default() };
    let mut literal = None;
    let mut last_read = None;
    for (i, step) in steps.iter().enumerate() {
        match run_step(session, step, ph).await {
            Ok(v) => {
                match step {
                    Step::Answer { .. } => literal = v,
                    Step::Read { .. } => last_read = v,
                    _ => {}
                }
                out.steps_done = i + 1;
            }
            Err(ActError::Fatal(e)) => return Err(e),
            Err(ActError::Failed(m)) => {
                out.ok = false;
                out.error = Some(format!("step {i} ({}): {m}", step_kind(step)));
                break;
            }
        }
    }
    out.answer = literal.or(last_read);
    Ok(out)
}

/// Runs a skill with its arguments bound. Missing arguments fail the call.
pub async fn run_skill(
    session: &Session,
    skill: &Skill,
    args: &BTreeMap<String, String>,
    ph: &Placeholders,
) -> Result<StepsOutcome, BrowserError> {
    if let Some(missing) = skill.params.iter().find(|p| !args.contains_key(*p)) {
        return Ok(StepsOutcome {
            ok: false,
            error: Some(format!("skill '{}' called without its parameter '{missing}'", skill.name)),
            ..Default::default()
        });
    }
    let steps: Vec<Step> = skill.steps.iter().map(|s| s.bind(args)).collect();
    run_steps(session, &steps, ph).await
}

fn step_kind(s: &Step) -> &'static str {
    match s {
        Step::Goto { .. } => "goto",
        Step::Click { .. } => "click",
        Step::Fill { .. } => "fill",
        Step::Select { .. } => "select",
        Step::Check { .. } => "check",
        Step::Press { .. } => "press",
        Step::Hover { .. } => "hover",
        Step::Read { .. } => "read",
        Step::Answer { .. } => "answer",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axtree::AxNode;

    fn n(id: &str, role: &str, name: &str, ignored: bool) -> AxNode {
        AxNode {
            id: id.into(),
            role: role.into(),
            name: name.into(),
            ignored,
            backend_id: id.parse().ok(),
            properties: vec![],
            children: vec![],
        }
    }

    #[test]
    fn locators_match_role_and_exact_name_skipping_ignored_nodes() {
        let tree = AxTree {
            nodes: vec![
                n("1", "button", "Save", false),
                n("2", "button", " Save ", false),
                n("3", "link", "Save", false),
                n("4", "button", "Save", true),
                n("5", "button", "Save changes", false),
                n("6", "button", "SAVE", false),
            ],
        };
        let t = Target { role: "button".into(), name: "Save".into(), nth: None };
        assert_eq!(matches(&tree, &t), vec![1, 2, 6]);
        assert!(matches(&tree, &Target { role: "textbox".into(), name: "Save".into(), nth: None }).is_empty());
    }

    #[test]
    fn placeholders_replace_every_site() {
        let ph = Placeholders(vec![("__GITLAB__".into(), "http://127.0.0.1:9/".into())]);
        assert_eq!(ph.apply("__GITLAB__/a/-/issues"), "http://127.0.0.1:9/a/-/issues");
    }
}
