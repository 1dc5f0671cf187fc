//! Task-building helpers shared by the Magento and WordPress generators:
//! step constructors, the three evaluator shapes of formats §2, intent
//! instantiation, and the round-robin that interleaves templates so every
//! stretch of task ids (and so the calibration subset) covers many templates.

use std::collections::BTreeMap;

use serde_json::Value;
use skillshift_common::skills::{Skill, Step, Target};
use skillshift_common::task::{Eval, EvalType, ProgramHtml, ReferenceAnswers, RequiredContents, Task};
use skillshift_common::{Site, Version};

use crate::GeneratedTask;

pub fn tgt(role: &str, name: &str) -> Target {
    Target { role: role.into(), name: name.into(), nth: None }
}
pub fn goto(url: impl Into<String>) -> Step {
    Step::Goto { url: url.into() }
}
pub fn click(role: &str, name: &str) -> Step {
    Step::Click { target: tgt(role, name) }
}
pub fn click_nth(role: &str, name: &str, nth: u32) -> Step {
    Step::Click { target: Target { role: role.into(), name: name.into(), nth: Some(nth) } }
}
pub fn fill(role: &str, name: &str, text: &str) -> Step {
    Step::Fill { target: tgt(role, name), text: text.into() }
}
pub fn select(name: &str, option: &str) -> Step {
    Step::Select { target: tgt("combobox", name), option: option.into() }
}
pub fn read(role: &str, name: &str) -> Step {
    Step::Read { target: tgt(role, name) }
}

/// The evaluator of a task.
pub enum Check {
    /// string_match, exact.
    Answer(String),
    /// url_match against this URL.
    Url(String),
    /// program_html: at `url`, `locator` must equal (`exact`) or include the text.
    Html { url: String, locator: String, text: String, exact: bool },
}

impl Check {
    fn eval(self) -> Eval {
        match self {
            Check::Answer(a) => Eval {
                eval_types: vec![EvalType::StringMatch],
                reference_answers: Some(ReferenceAnswers {
                    exact_match: Some(a),
                    must_include: None,
                    fuzzy_match: None,
                }),
                reference_url: None,
                program_html: vec![],
                ..Eval::default()
            },
            Check::Url(u) => Eval {
                eval_types: vec![EvalType::UrlMatch],
                reference_answers: None,
                reference_url: Some(u),
                program_html: vec![],
                ..Eval::default()
            },
            Check::Html { url, locator, text, exact } => Eval {
                eval_types: vec![EvalType::ProgramHtml],
                reference_answers: None,
                reference_url: None,
                program_html: vec![ProgramHtml {
                    url,
                    locator,
                    required_contents: if exact {
                        RequiredContents { exact_match: Some(text), must_include: None }
                    } else {
                        RequiredContents { exact_match: None, must_include: Some(vec![text]) }
                    },
                    prep_actions: vec![],
                }],
                ..Eval::default()
            },
        }
    }
}

/// An intent template and how to build its skill.
pub struct Template {
    pub id: u32,
    pub name: &'static str,
    pub intent: &'static str,
    pub params: &'static [&'static str],
}

/// One instantiation: its values (in `params` order), start URL, evaluator and solution.
pub struct Inst {
    pub values: Vec<String>,
    pub start: String,
    pub check: Check,
    pub solution: Vec<Step>,
}

/// `{{key}}` replaced by the values.
pub fn instantiate(template: &str, params: &[&str], values: &[String]) -> String {
    let map: BTreeMap<String, String> = params.iter().map(|p| p.to_string()).zip(values.iter().cloned()).collect();
    skillshift_common::skills::substitute(template, &map)
}

/// The values `{{param}}` of a template's params, for writing skills.
pub fn placeholders(params: &[&str]) -> Vec<String> {
    params.iter().map(|p| format!("{{{{{p}}}}}")).collect()
}

/// Interleaves the templates' instantiations round-robin and numbers them.
pub fn assemble(site: Site, groups: Vec<(&Template, Vec<Inst>)>, n: usize) -> Vec<GeneratedTask> {
    let mut queues: Vec<(&Template, std::collections::VecDeque<Inst>)> =
        groups.into_iter().map(|(t, v)| (t, v.into_iter().collect())).collect();
    let mut out = Vec::with_capacity(n);
    while out.len() < n && queues.iter().any(|(_, q)| !q.is_empty()) {
        for (tpl, q) in queues.iter_mut() {
            if out.len() >= n {
                break;
            }
            let Some(inst) = q.pop_front() else { continue };
            let require_reset = matches!(inst.check, Check::Html { .. });
            let dict: BTreeMap<String, Value> = tpl
                .params
                .iter()
                .map(|p| p.to_string())
                .zip(inst.values.iter().map(|v| Value::String(v.clone())))
                .collect();
            out.push(GeneratedTask {
                task: Task {
                    task_id: out.len() as u32,
                    sites: vec![site.into()],
                    require_login: true,
                    storage_state: None,
                    start_url: inst.start,
                    geolocation: None,
                    intent_template: tpl.intent.to_string(),
                    intent: instantiate(tpl.intent, tpl.params, &inst.values),
                    instantiation_dict: dict,
                    intent_template_id: tpl.id,
                    require_reset,
                    eval: inst.check.eval(),
                    string_note: None,
                },
                solution: inst.solution,
            });
        }
    }
    out
}

/// The example skill of a template: its v1 solution built from `{{param}}` placeholders.
pub fn skill(site: Site, tpl: &Template, steps: Vec<Step>) -> Skill {
    Skill {
        name: tpl.name.to_string(),
        site,
        params: tpl.params.iter().map(|p| p.to_string()).collect(),
        description: tpl.intent.to_string(),
        steps,
    }
}

/// Whether `v` is v2 (readability in solution builders).
pub fn is_v2(v: Version) -> bool {
    v == Version::V2
}

/// Running tasks through the HTTP simulator, for the site modules' tests.
#[cfg(test)]
pub mod testing {
    use skillshift_common::evaluate::Verdict;
    use skillshift_common::skills::Step;
    use skillshift_common::{Site, Version};

    use crate::sim::Browser;
    use crate::GeneratedTask;

    const ORIGIN: &str = "http://fixture.test";

    /// Resets the site, logs in, opens the start URL, runs `steps` and scores
    /// the task: the verdict and a description for failure messages.
    pub async fn run(site: Site, version: Version, t: &GeneratedTask, steps: &[Step]) -> (Verdict, String) {
        let (router, app, _) = crate::site_router(site, version);
        app.reset();
        let mut b = Browser::new(router, ORIGIN);
        let login = b.run(&app.login_steps()).await;
        if let Some((i, e)) = login.error {
            return (Verdict::Fail, format!("login step {i}: {e}"));
        }
        if let Err(e) = b.goto(&t.task.start_url).await {
            return (Verdict::Fail, format!("start url: {e}"));
        }
        let out = b.run(steps).await;
        let page = b.page().map(|p| p.outline()).unwrap_or_default();
        let scored = b.score(&t.task, out.answer.as_deref()).await;
        let why = format!(
            "task {} ({}): step error {:?}; {:?}\n--- page at the end ---\n{}",
            t.task.task_id,
            t.task.intent,
            out.error,
            scored.details,
            page.chars().take(3000).collect::<String>()
        );
        (scored.verdict, why)
    }

    /// Every task passes with its solution and fails with no steps; returns the failures.
    pub async fn check_all(site: Site, version: Version, tasks: &[GeneratedTask]) -> Vec<String> {
        let mut bad = Vec::new();
        for t in tasks {
            let (v, why) = run(site, version, t, &t.solution).await;
            if v != Verdict::Pass {
                bad.push(format!("solution fails: {why}"));
            }
            let (v, why) = run(site, version, t, &[]).await;
            if v == Verdict::Pass {
                bad.push(format!("doing nothing passes: {why}"));
            }
        }
        bad
    }

    /// Logs in and loads each of `paths`, checking what every page must have:
    /// status 200, the behaviours script, one `main`, a heading, and a name on
    /// every control and link in the accessibility tree (with any open modal
    /// closed first). Returns the problems found.
    pub async fn lint(site: Site, version: Version, paths: &[String]) -> Vec<String> {
        let (router, app, _) = crate::site_router(site, version);
        app.reset();
        let mut b = Browser::new(router, ORIGIN);
        let login = b.run(&app.login_steps()).await;
        let mut bad = Vec::new();
        if let Some((i, e)) = login.error {
            return vec![format!("{site} {version}: login step {i}: {e}")];
        }
        for path in paths {
            if let Err(e) = b.goto(path).await {
                bad.push(format!("{path}: {e}"));
                continue;
            }
            let Some(page) = b.page() else { continue };
            if page.status != 200 {
                bad.push(format!("{path}: status {}", page.status));
            }
            if page.query("script[src='/static/behaviors.js']").ok().flatten().is_none() {
                bad.push(format!("{path}: no behaviors.js"));
            }
            if page.query("main").ok().flatten().is_none() {
                bad.push(format!("{path}: no <main>"));
            }
            if page.query("h1").ok().flatten().is_none() {
                bad.push(format!("{path}: no h1"));
            }
            let nodes = page.ax_nodes();
            for n in &nodes {
                let control = matches!(
                    n.role.as_str(),
                    "textbox"
                        | "searchbox"
                        | "combobox"
                        | "checkbox"
                        | "radio"
                        | "spinbutton"
                        | "button"
                        | "link"
                        | "menuitem"
                );
                if control && n.name.is_empty() {
                    bad.push(format!("{path}: a {} without an accessible name", n.role));
                }
            }
            if nodes.iter().any(|n| n.role == "table") && !nodes.iter().any(|n| n.role == "columnheader") {
                bad.push(format!("{path}: a table without column headers"));
            }
        }
        bad
    }
}
