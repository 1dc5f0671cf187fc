//! Building tasks: step constructors, the three evaluator shapes (see
//! docs/formats.md#evaluators), intent templates and their instantiation,
//! the stride that picks instances from seeded data, and the round-robin
//! that interleaves templates so every stretch of task ids (and so the
//! calibration subset) covers many templates. Magento and WordPress build
//! their tasks from all of it; GitLab uses the step constructors.
//!
//! A [`Template`] row carries its reference solution, one function of
//! (version, values): the tasks' solutions are that function at their
//! version and values, and the template's example skill ([`skills`]) is the
//! same function at v1 with `{{param}}` placeholders, so skills and solutions
//! cannot drift apart.

use std::collections::BTreeMap;

use serde_json::Value;
use skillshift_common::skills::{Skill, Step, Target};
use skillshift_common::task::{Eval, EvalType, ProgramHtml, ReferenceAnswers, RequiredContents, Task};
use skillshift_common::{Site, Version};

use crate::GeneratedTask;

/// The element of `role` named `name` (the first and only match).
pub fn tgt(role: &str, name: &str) -> Target {
    Target { role: role.into(), name: name.into(), nth: None, column: None, row: None, name_pattern: None }
}
/// Load `url` (site placeholders allowed).
pub fn goto(url: impl Into<String>) -> Step {
    Step::Goto { url: url.into() }
}
pub fn click(role: &str, name: &str) -> Step {
    Step::Click { target: tgt(role, name) }
}
/// Click the `nth` match (0-based) where several elements share role and name.
pub fn click_nth(role: &str, name: &str, nth: u32) -> Step {
    Step::Click {
        target: Target {
            role: role.into(),
            name: name.into(),
            nth: Some(nth),
            column: None,
            row: None,
            name_pattern: None,
        },
    }
}
pub fn fill(role: &str, name: &str, text: &str) -> Step {
    Step::Fill { target: tgt(role, name), text: text.into() }
}
/// Choose `option` in the combobox named `name`.
pub fn select(name: &str, option: &str) -> Step {
    Step::Select { target: tgt("combobox", name), option: option.into() }
}
/// Read an element's text (the answer, unless an `answer` step follows).
pub fn read(role: &str, name: &str) -> Step {
    Step::Read { target: tgt(role, name), pattern: None, values: None }
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
                    url: url.into(),
                    locator: locator.into(),
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

/// An intent template and its reference solution.
pub struct Template {
    pub id: u32,
    pub name: &'static str,
    pub intent: &'static str,
    /// At most two: the solution sees the first two values.
    pub params: &'static [&'static str],
    /// The steps that solve an instance in a version, given its first and
    /// second values ("" where the template has fewer).
    pub solution: fn(Version, &str, &str) -> Vec<Step>,
}

impl Template {
    /// The reference solution for `values` (in `params` order) in version `v`.
    pub fn solve(&self, v: Version, values: &[String]) -> Vec<Step> {
        let value = |i: usize| values.get(i).map(String::as_str).unwrap_or("");
        (self.solution)(v, value(0), value(1))
    }
}

/// `tpl!(id, name, intent, [params], solution)`: a [`Template`] in a `const` table.
macro_rules! tpl {
    ($id:expr, $name:expr, $intent:expr, [$($p:expr),*], $solution:expr) => {
        $crate::kit::tasks::Template {
            id: $id,
            name: $name,
            intent: $intent,
            params: &[$($p),*],
            solution: $solution,
        }
    };
}
pub(crate) use tpl;

/// One instantiation: its values (in `params` order), start URL and evaluator.
pub struct Inst {
    pub values: Vec<String>,
    pub start: String,
    pub check: Check,
}

/// The instantiations of a site's templates, added in table order.
pub struct Groups {
    templates: &'static [Template],
    groups: Vec<Vec<Inst>>,
}

impl Groups {
    pub fn new(templates: &'static [Template]) -> Groups {
        Groups { templates, groups: Vec::with_capacity(templates.len()) }
    }

    /// Adds the next template's instantiations: `inst` of each item.
    pub fn add<T>(&mut self, items: impl IntoIterator<Item = T>, inst: impl FnMut(T) -> Inst) {
        self.groups.push(items.into_iter().map(inst).collect());
    }

    /// Each template with its instantiations.
    pub fn done(self) -> Vec<(&'static Template, Vec<Inst>)> {
        debug_assert_eq!(self.groups.len(), self.templates.len(), "one group of instantiations per template");
        self.templates.iter().zip(self.groups).collect()
    }
}

/// Up to `n` items of `items` passing `keep`, visited from index `from` in
/// steps of `stride` (wrapping), each at most once.
pub fn spread<T>(items: &[T], n: usize, from: usize, stride: usize, keep: impl Fn(&T) -> bool) -> Vec<&T> {
    let len = items.len().max(1);
    let mut out: Vec<&T> = Vec::new();
    for k in 0..len {
        let item = &items[(from + k * stride) % len];
        if keep(item) && !out.iter().any(|o| std::ptr::eq(*o, item)) {
            out.push(item);
            if out.len() == n {
                break;
            }
        }
    }
    out
}

/// Signing in on a form with a "Password" textbox: open `url`, fill the
/// user textbox named `user_label` and the password, press `button`.
pub fn sign_in(url: &str, user_label: &str, user: &str, password: &str, button: &str) -> Vec<Step> {
    vec![goto(url), fill("textbox", user_label, user), fill("textbox", "Password", password), click("button", button)]
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

/// Interleaves the templates' instantiations round-robin and numbers them,
/// each with its template's solution in version `v`.
pub fn assemble(site: Site, v: Version, groups: Vec<(&Template, Vec<Inst>)>, n: usize) -> Vec<GeneratedTask> {
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
            let solution = tpl.solve(v, &inst.values);
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
                solution,
            });
        }
    }
    out
}

/// The example skills of `site`, one per template: its v1 solution built
/// from `{{param}}` placeholders.
pub fn skills(site: Site, templates: &[Template]) -> Vec<Skill> {
    templates
        .iter()
        .map(|tpl| Skill {
            name: tpl.name.to_string(),
            site,
            params: tpl.params.iter().map(|p| p.to_string()).collect(),
            description: tpl.intent.to_string(),
            steps: tpl.solve(Version::V1, &placeholders(tpl.params)),
        })
        .collect()
}

/// Whether `v` is v2 (readability in solution builders).
pub fn is_v2(v: Version) -> bool {
    v == Version::V2
}
