//! The observation: Chrome's own accessibility tree (`Accessibility.getFullAXTree`
//! over DevTools), rendered in WebArena's text form.
//!
//! The rendering follows WebArena's `parse_accessibility_tree` and
//! `clean_accesibility_tree`: one `[id] role 'name' props` line per node,
//! indented with tabs by depth; nodes without a role or name, and name-less
//! structural nodes (generic, list, paragraph, ...) are collapsed so their
//! children move up; a `StaticText` whose text already appears in one of the three
//! previous lines is dropped. The printed id is Chrome's AX node id, mapped to
//! the node's `backendDOMNodeId` so actions can find the element.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::browser::{BrowserError, Session};

/// Properties WebArena leaves out of a line.
const IGNORED_PROPERTIES: &[&str] = &["focusable", "editable", "readonly", "level", "settable", "multiline", "invalid"];

/// Roles that say nothing without a name (WebArena's list).
const EMPTY_STRUCTURAL: &[&str] = &[
    "generic",
    "img",
    "list",
    "strong",
    "paragraph",
    "banner",
    "navigation",
    "Section",
    "LabelText",
    "Legend",
    "listitem",
];

/// One node of Chrome's accessibility tree, as far as the harness needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct AxNode {
    pub id: String,
    pub role: String,
    pub name: String,
    pub ignored: bool,
    pub backend_id: Option<i64>,
    pub properties: Vec<(String, Value)>,
    pub children: Vec<String>,
}

/// The whole tree, in Chrome's order (node 0 is the root web area).
#[derive(Debug, Clone, Default)]
pub struct AxTree {
    pub nodes: Vec<AxNode>,
}

/// A rendered observation.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub url: String,
    pub title: String,
    /// `Tab 0 (current): <title>` then a blank line and the tree.
    pub text: String,
    /// Printed id -> backendDOMNodeId.
    pub ids: HashMap<u64, i64>,
    /// The raw tree, for locator resolution.
    pub tree: AxTree,
}

impl AxTree {
    /// Parses the `nodes` of a `getFullAXTree` result, dropping repeated node ids.
    pub fn from_cdp(result: &Value) -> AxTree {
        let mut seen = std::collections::HashSet::new();
        let mut nodes = Vec::new();
        for n in result.get("nodes").and_then(Value::as_array).into_iter().flatten() {
            let Some(id) = n.get("nodeId").and_then(Value::as_str) else { continue };
            if !seen.insert(id.to_string()) {
                continue;
            }
            let str_at = |p: &str| n.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
            let properties = n
                .get("properties")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    let name = p.get("name")?.as_str()?;
                    let value = p.pointer("/value/value")?.clone();
                    Some((name.to_string(), value))
                })
                .collect();
            nodes.push(AxNode {
                id: id.to_string(),
                role: str_at("/role/value"),
                name: n.pointer("/name/value").map(value_text).unwrap_or_default(),
                ignored: n.get("ignored").and_then(Value::as_bool).unwrap_or(false),
                backend_id: n.get("backendDOMNodeId").and_then(Value::as_i64),
                properties,
                children: n
                    .get("childIds")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.as_str().map(str::to_string))
                    .collect(),
            });
        }
        AxTree { nodes }
    }

    /// Parses the JSON text of a `getFullAXTree` result straight into nodes, reading only the
    /// fields the rendering and the locators use (the same nodes as [`AxTree::from_cdp`]).
    pub fn from_json(text: &str) -> Result<AxTree, serde_json::Error> {
        let raw: RawTree = serde_json::from_str(text)?;
        let mut seen = std::collections::HashSet::new();
        let mut nodes = Vec::with_capacity(raw.nodes.len());
        for n in raw.nodes {
            if !seen.insert(n.node_id.clone()) {
                continue;
            }
            let text_of = |v: Option<RawAxValue>| v.and_then(|v| v.value);
            nodes.push(AxNode {
                id: n.node_id.into_owned(),
                role: match text_of(n.role) {
                    Some(Value::String(s)) => s,
                    _ => String::new(),
                },
                name: text_of(n.name).map(|v| value_text(&v)).unwrap_or_default(),
                ignored: n.ignored.unwrap_or(false),
                backend_id: n.backend_dom_node_id,
                properties: n
                    .properties
                    .into_iter()
                    .flatten()
                    .filter_map(|p| Some((p.name?.into_owned(), p.value?.value?)))
                    .collect(),
                children: n.child_ids.into_iter().flatten().map(Cow::into_owned).collect(),
            });
        }
        Ok(AxTree { nodes })
    }

    /// WebArena's text rendering and the id map.
    pub fn render(&self) -> (String, HashMap<u64, i64>) {
        let index: HashMap<&str, usize> = self.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
        let mut lines: Vec<(usize, String, bool)> = Vec::new();
        let mut ids = HashMap::new();
        if self.nodes.is_empty() {
            return (String::new(), ids);
        }
        // Iterative depth-first walk: (node index, depth).
        let mut stack = vec![(0usize, 0usize)];
        let mut visited = vec![false; self.nodes.len()];
        while let Some((i, depth)) = stack.pop() {
            if std::mem::replace(&mut visited[i], true) {
                continue;
            }
            let node = &self.nodes[i];
            let line = node_line(node);
            let valid = line.is_some();
            if let Some(text) = line {
                if let (Ok(printed), Some(backend)) = (node.id.parse::<u64>(), node.backend_id) {
                    ids.insert(printed, backend);
                }
                lines.push((depth, text, node.role == "StaticText"));
            }
            let child_depth = if valid { depth + 1 } else { depth };
            for c in node.children.iter().rev() {
                if let Some(&ci) = index.get(c.as_str()) {
                    stack.push((ci, child_depth));
                }
            }
        }
        // clean_accesibility_tree: drop StaticText already said in the last three kept lines.
        let mut kept: Vec<String> = Vec::with_capacity(lines.len());
        for (depth, text, is_static) in lines {
            if is_static {
                let inner = static_text_of(&text);
                let start = kept.len().saturating_sub(3);
                if let Some(t) = inner {
                    if kept[start..].iter().any(|prev| prev.contains(t)) {
                        continue;
                    }
                }
            }
            kept.push(format!("{}{}", "\t".repeat(depth), text));
        }
        (kept.join("\n"), ids)
    }

    /// Non-ignored nodes with a DOM node, in document order.
    pub fn elements(&self) -> impl Iterator<Item = &AxNode> {
        self.nodes.iter().filter(|n| !n.ignored && n.backend_id.is_some())
    }
}

#[derive(Deserialize)]
struct RawTree<'a> {
    #[serde(borrow, default)]
    nodes: Vec<RawNode<'a>>,
}

#[derive(Deserialize)]
struct RawNode<'a> {
    #[serde(rename = "nodeId", borrow)]
    node_id: Cow<'a, str>,
    ignored: Option<bool>,
    role: Option<RawAxValue>,
    name: Option<RawAxValue>,
    #[serde(rename = "backendDOMNodeId")]
    backend_dom_node_id: Option<i64>,
    #[serde(borrow)]
    properties: Option<Vec<RawProperty<'a>>>,
    #[serde(rename = "childIds", borrow)]
    child_ids: Option<Vec<Cow<'a, str>>>,
}

#[derive(Deserialize)]
struct RawAxValue {
    value: Option<Value>,
}

#[derive(Deserialize)]
struct RawProperty<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    value: Option<RawAxValue>,
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The line of one node, or `None` when WebArena would not print it.
fn node_line(node: &AxNode) -> Option<String> {
    if node.ignored || node.role.is_empty() || node.role == "InlineTextBox" {
        return None;
    }
    let mut line = format!("[{}] {} {}", node.id, node.role, py_repr(&node.name));
    let props: Vec<String> = node
        .properties
        .iter()
        .filter(|(k, _)| !IGNORED_PROPERTIES.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}: {}", py_value(v)))
        .collect();
    if !props.is_empty() {
        line.push(' ');
        line.push_str(&props.join(" "));
    }
    if node.name.trim().is_empty() {
        if props.is_empty() && EMPTY_STRUCTURAL.contains(&node.role.as_str()) {
            return None;
        }
        if !props.is_empty() && node.role == "listitem" {
            return None;
        }
    }
    Some(line)
}

/// The text of a `[n] StaticText '...'` line, as WebArena's regex reads it.
fn static_text_of(line: &str) -> Option<&str> {
    let start = line.find("StaticText '")? + "StaticText '".len();
    let rest = &line[start..];
    let end = rest.find('\'')?;
    (end > 0).then(|| &rest[..end])
}

/// Python's `repr` of a string, as WebArena prints names.
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str` of a property value (`True`, `False`, numbers, strings).
fn py_value(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// Fetches the full tree, retrying when a frame detaches or the document is
/// replaced mid-extraction (a navigation racing the call).
pub async fn fetch_tree(session: &Session) -> Result<AxTree, BrowserError> {
    let mut last = None;
    for attempt in 0..4u64 {
        match session.cdp_raw_within("Accessibility.getFullAXTree", json!({}), session.call_timeout()).await {
            Ok(r) => {
                let tree = AxTree::from_json(r.get()).map_err(|e| BrowserError::Cdp {
                    cmd: "Accessibility.getFullAXTree".into(),
                    message: format!("unreadable tree: {e}"),
                })?;
                if !tree.nodes.is_empty() {
                    return Ok(tree);
                }
                last =
                    Some(BrowserError::Cdp { cmd: "Accessibility.getFullAXTree".into(), message: "empty tree".into() });
            }
            Err(e) if e.is_fatal() => return Err(e),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(50 * (attempt + 1))).await;
    }
    Err(last.unwrap_or(BrowserError::Cdp { cmd: "Accessibility.getFullAXTree".into(), message: "no tree".into() }))
}

/// One observation of the current page.
pub async fn observe(session: &Session) -> Result<Snapshot, BrowserError> {
    // One socket carries both: the URL and title come back while Chrome serialises the tree.
    let (tree, page) = tokio::join!(fetch_tree(session), session.url_and_title());
    let (tree, (url, title)) = (tree?, page?);
    let (body, ids) = tree.render();
    let text = format!("Tab 0 (current): {title}\n\n{body}");
    Ok(Snapshot { url, title, text, ids, tree })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, role: &str, name: &str, children: &[&str]) -> Value {
        json!({"nodeId": id, "ignored": false, "role": {"type": "role", "value": role},
               "name": {"type": "computedString", "value": name}, "backendDOMNodeId": id.parse::<i64>().unwrap() + 100,
               "childIds": children})
    }

    #[test]
    fn renders_like_webarena() {
        let mut link = node("4", "link", "Issues", &["5"]);
        link["properties"] = json!([{"name": "focusable", "value": {"type": "booleanOrUndefined", "value": true}},
                                    {"name": "url", "value": {"type": "string", "value": "http://x/issues"}}]);
        let tree = json!({"nodes": [
            node("1", "RootWebArea", "Home", &["2"]),
            node("2", "generic", "", &["3", "6"]),
            node("3", "navigation", "", &["4"]),
            link,
            node("5", "StaticText", "Issues", &[]),
            {"nodeId": "6", "ignored": true, "role": {"value": "none"}, "childIds": ["7"]},
            node("7", "button", "It's \"done\"", &[]),
        ]});
        let (text, ids) = AxTree::from_cdp(&tree).render();
        assert_eq!(
            text,
            "[1] RootWebArea 'Home'\n\t[4] link 'Issues' url: http://x/issues\n\t[7] button 'It\\'s \"done\"'"
        );
        assert_eq!(ids.get(&4), Some(&104));
        assert!(!ids.contains_key(&2), "a collapsed node gets no id");
        let typed = AxTree::from_json(&tree.to_string()).unwrap();
        assert_eq!(typed.nodes, AxTree::from_cdp(&tree).nodes, "both parsers read the same nodes");
    }

    #[test]
    fn py_repr_matches_python() {
        assert_eq!(py_repr("a'b"), "\"a'b\"");
        assert_eq!(py_repr("a\"b"), "'a\"b'");
        assert_eq!(py_repr("x\ny"), "'x\\ny'");
    }
}
