//! The deterministic `skills` agent: it exercises the harness, it is not a
//! benchmark result.
//!
//! For each task it calls the library's skill whose `description` equals the
//! task's `intent_template` (arguments: `instantiation_dict` as strings). When
//! the skill succeeds it stops, answering with the skill's `read` value. When
//! the skill fails it falls back to primitive actions: it replays the skill's
//! remaining steps itself, finding each target in the observation by role and
//! the most similar name (so a relabelled or reordered element can still be
//! found), dismissing a modal dialog that is in the way, and waiting a step or
//! two for an element that has not rendered yet. Information-seeking steps are
//! read off the page. It stops before the step budget runs out.
//!
//! So it succeeds often where the skills were learned (`src`) and measurably
//! less under shifts, which is what a sweep is meant to show.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use skillshift_common::skills::{Skill, SkillLibrary, Step, Target};
use skillshift_common::task::Task;

use crate::action::Action;
use crate::agent::{Agent, AgentError, Move, Observation, Reply, TaskBrief, Usage};

/// One parsed line of a WebArena observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub depth: usize,
    pub id: u64,
    pub role: String,
    pub name: String,
    pub rest: String,
}

/// Parses `\t\t[12] link 'Issues' url: ...` lines; others are skipped.
pub fn parse_tree(axtree: &str) -> Vec<Line> {
    axtree.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Line> {
    let depth = line.chars().take_while(|c| *c == '\t').count();
    let t = &line[depth..];
    let t = t.strip_prefix('[')?;
    let close = t.find(']')?;
    let id: u64 = t[..close].parse().ok()?;
    let t = t[close + 1..].strip_prefix(' ')?;
    let sp = t.find(' ')?;
    let role = t[..sp].to_string();
    let t = &t[sp + 1..];
    let quote = t.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut name = String::new();
    let mut chars = t[1..].char_indices();
    let mut end = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, 'n')) => name.push('\n'),
                Some((_, 't')) => name.push('\t'),
                Some((_, other)) => name.push(other),
                None => break,
            },
            c if c == quote => {
                end = Some(i + 2);
                break;
            }
            c => name.push(c),
        }
    }
    let rest = end.map(|e| t[e..].trim().to_string()).unwrap_or_default();
    Some(Line { depth, id, role, name, rest })
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Roles a learned target may have become (a textbox turned searchbox, a link turned button).
fn role_family(role: &str) -> &'static [&'static str] {
    match role {
        "textbox" | "searchbox" | "combobox" => &["textbox", "searchbox", "combobox"],
        "link" | "button" | "menuitem" | "tab" => &["link", "button", "menuitem", "tab"],
        _ => &[],
    }
}

/// The observation line that best matches a target, by role and name similarity.
pub fn best_match<'a>(lines: &'a [Line], target: &Target) -> Option<&'a Line> {
    let want = collapse(&target.name);
    let exact: Vec<&Line> = lines.iter().filter(|l| l.role == target.role && collapse(&l.name) == want).collect();
    if let Some(n) = target.nth {
        if let Some(l) = exact.get(n as usize) {
            return Some(l);
        }
    } else if let Some(l) = exact.first() {
        return Some(l);
    }
    let want_words = words(&target.name);
    let mut best: Option<(f64, &Line)> = None;
    for l in lines {
        let same = l.role == target.role;
        if !same && !role_family(&target.role).contains(&l.role.as_str()) {
            continue;
        }
        let have = words(&l.name);
        let shared = want_words.iter().filter(|w| w.len() >= 3 && have.contains(w)).count();
        if shared == 0 {
            continue;
        }
        let union = want_words.len() + have.len() - shared;
        let score = shared as f64 / union.max(1) as f64 + if same { 0.2 } else { 0.0 };
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, l));
        }
    }
    best.map(|(_, l)| l)
}

/// The text under a line: its descendants' names, else its own.
fn text_under(lines: &[Line], at: usize) -> String {
    let depth = lines[at].depth;
    let parts: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.depth > depth)
        .filter(|l| l.role == "StaticText")
        .map(|l| l.name.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        lines[at].name.clone()
    } else {
        parts.join(" ")
    }
}

/// A button inside a modal dialog, if one is showing.
fn modal_button(lines: &[Line]) -> Option<u64> {
    let at = lines.iter().position(|l| l.role == "dialog" && l.rest.contains("modal: True"))?;
    let depth = lines[at].depth;
    lines[at + 1..].iter().take_while(|l| l.depth > depth).find(|l| l.role == "button").map(|l| l.id)
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    CallSkill,
    Replay { steps: Vec<Step>, idx: usize, waits: u32 },
    Done,
}

pub struct SkillsAgent {
    task: Task,
    skill: Option<Skill>,
    args: BTreeMap<String, String>,
    phase: Phase,
    answer: Option<String>,
    /// (placeholder, base URL) for replaying `goto` steps.
    base: Option<(String, String)>,
    max_steps: u32,
    dismissed: u32,
}

impl SkillsAgent {
    pub fn new(task: Task, library: Option<SkillLibrary>) -> Self {
        let site = task.sites.first().and_then(|k| k.grid());
        let skill = library
            .and_then(|l| l.skills.into_iter().find(|s| Some(s.site) == site && s.description == task.intent_template));
        let args = task
            .instantiation_dict
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
            .collect();
        SkillsAgent { task, skill, args, phase: Phase::CallSkill, answer: None, base: None, max_steps: 0, dismissed: 0 }
    }

    fn stop(&mut self) -> Move {
        self.phase = Phase::Done;
        Move::Action(Action::Stop { answer: self.answer.clone().unwrap_or_default() })
    }

    fn resolve_url(&self, url: &str) -> String {
        match &self.base {
            Some((ph, base)) => url.replace(ph.as_str(), base),
            None => url.to_string(),
        }
    }

    fn replay(&mut self, obs: &Observation) -> Move {
        let lines = parse_tree(&obs.axtree);
        loop {
            let Phase::Replay { steps, idx, waits } = &mut self.phase else { return self.stop() };
            let Some(step) = steps.get(*idx).cloned() else { return self.stop() };
            let target = match &step {
                Step::Goto { url } => {
                    *idx += 1;
                    let url = self.resolve_url(url);
                    return Move::Action(Action::Goto { url });
                }
                Step::Answer { text } => {
                    self.answer = Some(text.clone());
                    return self.stop();
                }
                Step::Click { target }
                | Step::Fill { target, .. }
                | Step::Select { target, .. }
                | Step::Check { target }
                | Step::Press { target, .. }
                | Step::Hover { target }
                | Step::Read { target, .. } => target.clone(),
            };
            let found = best_match(&lines, &target);
            let Some(line) = found else {
                if let Some(b) = modal_button(&lines).filter(|_| self.dismissed < 2) {
                    self.dismissed += 1;
                    return Move::Action(Action::Click { id: b });
                }
                if *waits < 2 {
                    // Give a late element time to render.
                    *waits += 1;
                    return Move::Action(Action::Scroll { down: false });
                }
                return self.stop();
            };
            // A modal over the page takes the click first.
            if let Some(b) = modal_button(&lines).filter(|_| self.dismissed < 2) {
                if !matches!(step, Step::Read { .. }) {
                    self.dismissed += 1;
                    return Move::Action(Action::Click { id: b });
                }
            }
            let id = line.id;
            *idx += 1;
            *waits = 0;
            return match step {
                Step::Click { .. } | Step::Check { .. } => Move::Action(Action::Click { id }),
                // A skill's fill replaces the field's text, unlike WebArena's appending `type`.
                Step::Fill { text, .. } => Move::Action(Action::Fill { id, text, enter: false }),
                Step::Select { option, .. } => Move::Action(Action::Fill { id, text: option, enter: false }),
                Step::Press { key, .. } if key.eq_ignore_ascii_case("enter") => {
                    Move::Action(Action::Fill { id, text: String::new(), enter: true })
                }
                Step::Press { key, .. } => Move::Action(Action::Press { keys: key }),
                Step::Hover { .. } => Move::Action(Action::Hover { id }),
                Step::Read { .. } => {
                    let at = lines.iter().position(|l| l.id == id).unwrap_or(0);
                    self.answer = Some(text_under(&lines, at));
                    continue;
                }
                Step::Goto { .. } | Step::Answer { .. } => continue,
            };
        }
    }
}

/// The index of the failing step in a skill error (`step 3 (click): ...`).
fn failed_step(error: &str) -> Option<usize> {
    let rest = error.strip_prefix("step ")?;
    rest[..rest.find(' ')?].parse().ok()
}

impl Agent for SkillsAgent {
    fn start(&mut self, brief: TaskBrief) -> BoxFuture<'_, Result<(), AgentError>> {
        self.max_steps = brief.max_steps;
        // The base URL: the resolved start URL minus what follows the placeholder.
        if let Some(site) = self.task.sites.first() {
            let ph = site.placeholder();
            if let Some(tail) = self.task.start_url.strip_prefix(ph) {
                if let Some(base) = brief.start_url.strip_suffix(tail) {
                    self.base = Some((ph.to_string(), base.to_string()));
                }
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn next(&mut self, obs: Observation) -> BoxFuture<'_, Result<Reply, AgentError>> {
        let mv = if obs.step + 1 >= self.max_steps {
            self.stop()
        } else {
            match &self.phase {
                Phase::CallSkill => match &self.skill {
                    Some(s) => Move::Skill { name: s.name.clone(), args: self.args.clone() },
                    None => self.stop(),
                },
                Phase::Replay { .. } => self.replay(&obs),
                Phase::Done => self.stop(),
            }
        };
        Box::pin(async move { Ok(Reply { mv, skill_reports: Vec::new() }) })
    }

    fn skill_answer(&mut self, _name: &str, answer: &str) {
        self.answer = Some(answer.to_string());
    }

    fn skill_result(&mut self, _name: &str, ok: bool, error: Option<&str>) {
        if ok {
            self.phase = Phase::Done;
            return;
        }
        let Some(skill) = &self.skill else {
            self.phase = Phase::Done;
            return;
        };
        let mut from = error.and_then(failed_step).unwrap_or(0);
        // A target that is missing right after a click may mean the click did
        // nothing (swallowed): replay from that click.
        if from > 0
            && error.is_some_and(|e| e.contains("no element matches"))
            && matches!(skill.steps.get(from - 1), Some(Step::Click { .. }))
        {
            from -= 1;
        }
        let steps: Vec<Step> = skill.steps.iter().skip(from).map(|s| s.bind(&self.args)).collect();
        self.phase = Phase::Replay { steps, idx: 0, waits: 0 };
    }

    fn usage(&self) -> Usage {
        Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "Tab 0 (current): Home\n\n[1] RootWebArea 'Home' focused: True\n\t[5] link 'Create ticket'\n\t[6] button 'Save'\n\t[7] dialog 'Session' modal: True\n\t\t[8] StaticText 'Confirm'\n\t\t[9] button 'Stay signed in'\n\t[10] definition 'Email'\n\t\t[11] StaticText 'ann@example.com'";

    #[test]
    fn parses_observation_lines() {
        let lines = parse_tree(TREE);
        assert_eq!(lines.len(), 8);
        assert_eq!(
            lines[1],
            Line { depth: 1, id: 5, role: "link".into(), name: "Create ticket".into(), rest: String::new() }
        );
        assert_eq!(
            parse_line("\t[3] button \"It's\" x: y").map(|l| (l.name, l.rest)),
            Some(("It's".into(), "x: y".into()))
        );
    }

    #[test]
    fn finds_relabelled_targets_modals_and_values() {
        let lines = parse_tree(TREE);
        let t = |role: &str, name: &str| Target {
            role: role.into(),
            name: name.into(),
            nth: None,
            column: None,
            row: None,
            name_pattern: None,
        };
        assert_eq!(best_match(&lines, &t("link", "New ticket")).map(|l| l.id), Some(5));
        assert_eq!(best_match(&lines, &t("button", "Save")).map(|l| l.id), Some(6));
        assert!(best_match(&lines, &t("button", "Delete")).is_none());
        assert_eq!(modal_button(&lines), Some(9));
        let at = lines.iter().position(|l| l.id == 10).unwrap();
        assert_eq!(text_under(&lines, at), "ann@example.com");
        assert_eq!(failed_step("step 2 (click): no element matches"), Some(2));
    }
}
