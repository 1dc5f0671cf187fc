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

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::json;
use skillshift_common::skills::{Skill, Step, Target};
use skillshift_telemetry::spans;
use tracing::Instrument;

use crate::actions::{self, ActError};
use crate::axtree::{fetch_role, fetch_tree, AxTree};
use crate::browser::{BrowserError, Session};

/// How long a locator keeps looking for an element that is not there yet, on a
/// site whose pages may render after they load (the default of the site manager's
/// `locator_grace`, which the run loop passes to [`run_skill`]). Short on purpose: a skill that
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
    if target.in_table() {
        return table_matches(tree, target);
    }
    let Some(named) = NameTest::of(target) else { return Vec::new() };
    tree.elements().filter(|n| n.role == target.role && named.test(&n.name)).filter_map(|n| n.backend_id).collect()
}

/// How a target's name is compared: equal after [`collapse`], or, with `name_pattern`, matched by
/// the regular expression (an empty `name` in a table target matches any name).
enum NameTest {
    Equal(String),
    Any,
    Pattern(regex::Regex),
}

impl NameTest {
    /// `None` when the pattern does not compile (libraries are checked when loaded; nothing then matches).
    fn of(target: &Target) -> Option<NameTest> {
        match &target.name_pattern {
            Some(p) => regex::Regex::new(p).ok().map(NameTest::Pattern),
            None if target.name.is_empty() && target.in_table() => Some(NameTest::Any),
            None => Some(NameTest::Equal(collapse(&target.name))),
        }
    }

    fn test(&self, name: &str) -> bool {
        match self {
            NameTest::Equal(want) => collapse(name) == *want,
            NameTest::Any => true,
            NameTest::Pattern(re) => re.is_match(name),
        }
    }
}

const TABLES: [&str; 3] = ["table", "grid", "treegrid"];
const CELLS: [&str; 4] = ["cell", "gridcell", "rowheader", "columnheader"];

/// The cells of a row, in order: its cell-like descendants, looked for through the nodes that are
/// not cells themselves (ignored wrappers), never inside a nested table.
fn row_cells(tree: &AxTree, index: &HashMap<&str, usize>, row: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut stack: Vec<usize> =
        tree.nodes[row].children.iter().rev().filter_map(|c| index.get(c.as_str()).copied()).collect();
    // Bounded by the tree's size: every node is pushed at most once per row.
    let mut budget = tree.nodes.len();
    while let Some(i) = stack.pop() {
        if budget == 0 {
            break;
        }
        budget -= 1;
        let n = &tree.nodes[i];
        if !n.ignored && CELLS.contains(&n.role.as_str()) {
            out.push(i);
        } else if !TABLES.contains(&n.role.as_str()) && n.role != "row" {
            stack.extend(n.children.iter().rev().filter_map(|c| index.get(c.as_str()).copied()));
        }
    }
    out
}

/// A node and its descendants, in document order (bounded by the tree's size).
fn subtree(tree: &AxTree, index: &HashMap<&str, usize>, root: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(i) = stack.pop() {
        if out.len() >= tree.nodes.len() {
            break;
        }
        out.push(i);
        stack.extend(tree.nodes[i].children.iter().rev().filter_map(|c| index.get(c.as_str()).copied()));
    }
    out
}

/// [`matches`] for a target narrowed by `column` and/or `row`: in every table, the header row (the
/// first whose cells include column headers) names the columns by position; an element matches when
/// it is of the target's role (and name, when the target names one) and is, or is inside, a cell of
/// a later row in the named column, in a row one of whose cells' names contains `row`.
fn table_matches(tree: &AxTree, target: &Target) -> Vec<i64> {
    let index: HashMap<&str, usize> = tree.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let mut parent: HashMap<usize, usize> = HashMap::new();
    for (i, n) in tree.nodes.iter().enumerate() {
        for c in &n.children {
            if let Some(&ci) = index.get(c.as_str()) {
                parent.entry(ci).or_insert(i);
            }
        }
    }
    let enclosing = |mut i: usize, roles: &[&str]| -> Option<usize> {
        for _ in 0..tree.nodes.len() {
            i = *parent.get(&i)?;
            if roles.contains(&tree.nodes[i].role.as_str()) {
                return Some(i);
            }
        }
        None
    };
    let Some(named) = NameTest::of(target) else { return Vec::new() };
    let (column, row) = (target.column.as_deref().map(collapse), target.row.as_deref().map(collapse));
    // Per table: its header's column names, from the first row holding a column header.
    let mut headers: HashMap<usize, Vec<String>> = HashMap::new();
    let mut out = Vec::new();
    for (ri, r) in tree.nodes.iter().enumerate() {
        if r.ignored || r.role != "row" {
            continue;
        }
        let Some(table) = enclosing(ri, &TABLES) else { continue };
        let cells = row_cells(tree, &index, ri);
        let names = match headers.entry(table) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                if cells.iter().any(|&c| tree.nodes[c].role == "columnheader") {
                    e.insert(cells.iter().map(|&c| collapse(&tree.nodes[c].name)).collect());
                }
                continue;
            }
        };
        if let Some(want) = &row {
            if !cells.iter().any(|&c| collapse(&tree.nodes[c].name).contains(want.as_str())) {
                continue;
            }
        }
        for (pos, &c) in cells.iter().enumerate() {
            if column.as_ref().is_some_and(|want| names.get(pos) != Some(want)) {
                continue;
            }
            for i in subtree(tree, &index, c) {
                let n = &tree.nodes[i];
                if !n.ignored && n.role == target.role && named.test(&n.name) {
                    out.extend(n.backend_id);
                }
            }
        }
    }
    out
}

fn describe(t: &Target) -> String {
    let mut out = match &t.name_pattern {
        Some(p) => format!("{} /{p}/", t.role),
        None => format!("{} '{}'", t.role, t.name),
    };
    if let Some(c) = &t.column {
        out.push_str(&format!(" in column '{c}'"));
    }
    if let Some(r) = &t.row {
        out.push_str(&format!(" in the row of '{r}'"));
    }
    if let Some(n) = t.nth {
        out.push_str(&format!(" (nth {n})"));
    }
    out
}

/// The nodes a target is resolved among: for a target without `nth`, whose answer depends only on
/// how many elements match, the nodes of its role ([`fetch_role`]); else, or on a page with
/// frames, the whole tree, whose order `nth` counts in.
async fn candidates(session: &Session, target: &Target) -> Result<AxTree, BrowserError> {
    // A table's rows and headers are other roles' nodes: the whole tree.
    if target.nth.is_none() && !target.in_table() {
        match fetch_role(session, &target.role).await {
            Ok(Some(tree)) => return Ok(tree),
            Err(e) if e.is_fatal() => return Err(e),
            // A frame on the page, or a document replaced mid-call: the full tree, with its retries.
            Ok(None) | Err(_) => {}
        }
    }
    fetch_tree(session).await
}

/// Resolves a target to one element, waiting up to `grace` (the site's locator grace) for it to
/// appear; with none, the first look decides.
pub async fn resolve(session: &Session, target: &Target, grace: Duration) -> Result<i64, ActError> {
    let span = spans::locate(&target.role);
    let mut looks = 0;
    let found = resolve_looking(session, target, grace, &mut looks).instrument(span.clone()).await;
    spans::record_looks(&span, looks);
    found
}

async fn resolve_looking(
    session: &Session,
    target: &Target,
    grace: Duration,
    looks: &mut u32,
) -> Result<i64, ActError> {
    let start = std::time::Instant::now();
    loop {
        *looks += 1;
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

/// Runs one step, its target looked for up to `grace`. `Ok(Some(text))` carries a read or
/// answered value.
pub async fn run_step(
    session: &Session,
    step: &Step,
    ph: &Placeholders,
    grace: Duration,
) -> Result<Option<String>, ActError> {
    match step {
        Step::Goto { url } => {
            session.goto(&ph.apply(url)).await.map_err(ActError::from)?;
            Ok(None)
        }
        Step::Click { target } => {
            let b = resolve(session, target, grace).await?;
            actions::click(session, b).await.map(|_| None)
        }
        Step::Fill { target, text } => {
            let b = resolve(session, target, grace).await?;
            actions::type_text(session, b, text, false).await.map(|_| None)
        }
        Step::Select { target, option } => {
            let b = resolve(session, target, grace).await?;
            let r = actions::call_on(session, b, actions::SELECT_OPTION, vec![json!(option)]).await?;
            match r.as_str() {
                Some("") => Ok(None),
                Some(m) => Err(ActError::Failed(format!("{}: {m}", describe(target)))),
                None => Err(ActError::Failed(format!("{}: cannot select", describe(target)))),
            }
        }
        Step::Check { target } => {
            let b = resolve(session, target, grace).await?;
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
            let b = resolve(session, target, grace).await?;
            actions::press(session, Some(b), key).await.map(|_| None)
        }
        Step::Hover { target } => {
            let b = resolve(session, target, grace).await?;
            actions::hover(session, b).await.map(|_| None)
        }
        Step::Read { target, pattern, values } => {
            let b = resolve(session, target, grace).await?;
            let v = actions::call_on(session, b, READ_TEXT, vec![]).await?;
            let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
            let read = match pattern {
                None => text,
                Some(p) => read_pattern(p, &text).map_err(|e| ActError::Failed(e.to_string()))?,
            };
            Ok(Some(read_value(values.as_ref(), read)))
        }
        Step::Answer { text } => Ok(Some(text.clone())),
    }
}

/// Why a `read` step's `pattern` takes nothing from the text.
#[derive(Debug, thiserror::Error)]
pub enum ReadPatternError {
    #[error("read pattern /{pattern}/ is not a regular expression: {cause}")]
    NotRegex { pattern: String, cause: regex::Error },
    /// `text` is the text read, shortened.
    #[error("the text read, '{text}', does not match /{pattern}/")]
    NoMatch { text: String, pattern: String },
}

/// The answer a `read` step's `pattern` takes from the text: its first capture group, or the whole
/// match when it has none.
pub fn read_pattern(pattern: &str, text: &str) -> Result<String, ReadPatternError> {
    let re = regex::Regex::new(pattern)
        .map_err(|cause| ReadPatternError::NotRegex { pattern: pattern.to_string(), cause })?;
    let caps = re.captures(text).ok_or_else(|| ReadPatternError::NoMatch {
        text: skillshift_common::text::short(text).to_string(),
        pattern: pattern.to_string(),
    })?;
    Ok(caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_str().to_string()).unwrap_or_default())
}

/// What a `read` step answers for the text it read: the value `values` gives that text, else the text.
pub fn read_value(values: Option<&std::collections::BTreeMap<String, String>>, read: String) -> String {
    values.and_then(|m| m.get(&read)).cloned().unwrap_or(read)
}

/// Runs steps in order, stopping at the first that cannot be realized, each target looked for up
/// to `grace` ([`LOCATOR_GRACE`] unless the site says otherwise). Only a lost browser is an
/// `Err`; every other failure is in the outcome.
pub async fn run_steps(
    session: &Session,
    steps: &[Step],
    ph: &Placeholders,
    grace: Duration,
) -> Result<StepsOutcome, BrowserError> {
    let mut out = StepsOutcome { ok: true, ..Default::default() };
    let mut literal = None;
    let mut last_read = None;
    for (i, step) in steps.iter().enumerate() {
        match run_step(session, step, ph, grace).await {
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

/// Runs a skill with its arguments bound, each target looked for up to `grace` (the site's
/// locator grace). Missing arguments fail the call.
pub async fn run_skill(
    session: &Session,
    skill: &Skill,
    args: &BTreeMap<String, String>,
    ph: &Placeholders,
    grace: Duration,
) -> Result<StepsOutcome, BrowserError> {
    if let Some(missing) = skill.params.iter().find(|p| !args.contains_key(*p)) {
        return Ok(StepsOutcome {
            ok: false,
            error: Some(format!("skill '{}' called without its parameter '{missing}'", skill.name)),
            ..Default::default()
        });
    }
    let steps: Vec<Step> = skill.steps.iter().map(|s| s.bind(args)).collect();
    run_steps(session, &steps, ph, grace).await
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
        let t = Target {
            role: "button".into(),
            name: "Save".into(),
            nth: None,
            column: None,
            row: None,
            name_pattern: None,
        };
        assert_eq!(matches(&tree, &t), vec![1, 2, 6]);
        assert!(matches(
            &tree,
            &Target {
                role: "textbox".into(),
                name: "Save".into(),
                nth: None,
                column: None,
                row: None,
                name_pattern: None
            }
        )
        .is_empty());
        let shaped = Target { name: String::new(), name_pattern: Some(r"^Save\b".into()), ..t.clone() };
        assert_eq!(matches(&tree, &shaped), vec![1, 5], "a name pattern is matched as written, not folded");
    }

    fn parent(mut node: AxNode, children: &[&str]) -> AxNode {
        node.children = children.iter().map(|c| c.to_string()).collect();
        node
    }

    /// WordPress's list table as Chrome's tree has it: a header row whose first cell is a plain cell
    /// (the select-all box), data rows led by a row header, one cell behind an ignored wrapper.
    fn list_table() -> AxTree {
        AxTree {
            nodes: vec![
                parent(n("1", "table", "", false), &["2", "3"]),
                parent(n("2", "rowgroup", "", false), &["10"]),
                parent(n("3", "rowgroup", "", false), &["20", "30"]),
                parent(n("10", "row", "", false), &["11", "12", "13"]),
                n("11", "cell", "Select All", false),
                n("12", "columnheader", "Title", false),
                n("13", "columnheader", "Author", false),
                parent(n("20", "row", "", false), &["21", "22", "29"]),
                n("21", "rowheader", "Select Inside Rock Climbing", false),
                parent(n("22", "cell", "“Inside Rock Climbing” (Edit)", false), &["24"]),
                n("24", "link", "“Inside Rock Climbing” (Edit)", false),
                parent(n("29", "generic", "", true), &["23"]),
                n("23", "cell", "Ada Becker", false),
                parent(n("30", "row", "", false), &["31", "32", "33"]),
                n("31", "rowheader", "Select Notes on Jazz", false),
                n("32", "cell", "“Notes on Jazz” (Edit)", false),
                n("33", "cell", "Ada Becker", false),
            ],
        }
    }

    fn cell(column: Option<&str>, row: Option<&str>) -> Target {
        Target {
            role: "cell".into(),
            name: String::new(),
            nth: None,
            column: column.map(String::from),
            row: row.map(String::from),
            name_pattern: None,
        }
    }

    #[test]
    fn a_table_target_picks_the_cell_by_its_column_header_and_row() {
        let tree = list_table();
        assert_eq!(matches(&tree, &cell(Some("Author"), Some("Inside Rock Climbing"))), vec![23]);
        assert_eq!(matches(&tree, &cell(Some("author"), Some("notes on jazz"))), vec![33], "case folded");
        assert_eq!(matches(&tree, &cell(Some("Author"), None)), vec![23, 33], "the column, every data row");
        assert_eq!(matches(&tree, &cell(Some("Title"), Some("Notes on Jazz"))), vec![32]);
        assert!(matches(&tree, &cell(Some("Tags"), Some("Notes on Jazz"))).is_empty(), "no such column");
        assert!(matches(&tree, &cell(Some("Author"), Some("Birds"))).is_empty(), "no such row");
        let mut named = cell(Some("Author"), None);
        named.name = "Ada Becker".into();
        assert_eq!(matches(&tree, &named), vec![23, 33], "a name narrows further");
        named.role = "rowheader".into();
        assert!(matches(&tree, &named).is_empty(), "the role still counts");
        let mut link = cell(Some("Title"), Some("Inside Rock Climbing"));
        link.role = "link".into();
        assert_eq!(matches(&tree, &link), vec![24], "an element inside the cell");
    }

    #[test]
    fn a_read_pattern_takes_its_first_group_or_the_whole_match() {
        assert_eq!(read_pattern(r"^(\d+) approved", "1 approved comment").ok().as_deref(), Some("1"));
        assert_eq!(read_pattern(r"\d+", "28 items").ok().as_deref(), Some("28"));
        let miss = read_pattern(r"^(\d+)", "No comments").unwrap_err().to_string();
        assert!(miss.contains("'No comments'") && miss.contains("does not match"), "{miss}");
        assert!(read_pattern("(", "x").unwrap_err().to_string().contains("not a regular expression"));
    }

    #[test]
    fn a_read_answers_the_value_its_values_give_the_text() {
        let zero: std::collections::BTreeMap<String, String> = [("No comments".to_string(), "0".to_string())].into();
        let read = read_pattern(r"(\d+|No comments)", "—\nNo comments").unwrap();
        assert_eq!(read_value(Some(&zero), read), "0");
        let read = read_pattern(r"(\d+|No comments)", "3\n3 approved comments").unwrap();
        assert_eq!(read_value(Some(&zero), read), "3");
        assert_eq!(read_value(None, "No comments".into()), "No comments");
        let step: Step = serde_json::from_str(
            r#"{"action": "read", "target": {"role": "cell", "name": ""}, "values": {"No comments": "0"}}"#,
        )
        .unwrap();
        assert!(matches!(step, Step::Read { values: Some(v), .. } if v == zero));
    }

    #[test]
    fn placeholders_replace_every_site() {
        let ph = Placeholders(vec![("__GITLAB__".into(), "http://127.0.0.1:9/".into())]);
        assert_eq!(ph.apply("__GITLAB__/a/-/issues"), "http://127.0.0.1:9/a/-/issues");
    }
}
