//! One loaded page of the HTTP-level simulator: the parsed HTML plus the
//! client-side state a browser would hold (toggled `hidden`, `aria-expanded`,
//! typed values, checked boxes, selected options), and what a role-and-name
//! locator sees of it: implicit and explicit roles, accessible names as
//! Chromium computes them for the markup the fixture sites use, visibility,
//! and `innerText`-like text.

use std::collections::HashMap;

use ego_tree::NodeId;
use scraper::{ElementRef, Html, Node, Selector};

/// An element in the accessibility tree: its node, role and accessible name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxNode {
    pub id: NodeId,
    pub role: String,
    pub name: String,
}

/// A CSS selector that does not parse; `reason` is the parser's (whose error borrows the selector).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid selector '{css}': {reason}")]
pub struct InvalidSelector {
    pub css: String,
    pub reason: String,
}

/// A loaded page and its client-side state.
pub struct Page {
    pub url: String,
    pub status: u16,
    pub doc: Html,
    pub(crate) hidden: HashMap<NodeId, bool>,
    pub(crate) expanded: HashMap<NodeId, bool>,
    pub(crate) values: HashMap<NodeId, String>,
    pub(crate) checked: HashMap<NodeId, bool>,
    pub(crate) selected: HashMap<NodeId, String>,
}

/// Roles whose accessible name comes from their content (WAI-ARIA "name from content").
const NAME_FROM_CONTENT: &[&str] = &[
    "button",
    "cell",
    "checkbox",
    "columnheader",
    "heading",
    "link",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "radio",
    "row",
    "rowheader",
    "switch",
    "tab",
    "term",
    "tooltip",
    "treeitem",
];

/// Elements after which `innerText` breaks the line (approximated by a space).
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "output",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "label",
    "option",
    "button",
];

/// Collapses runs of whitespace to one space and trims.
pub fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Page {
    pub fn new(url: String, status: u16, html: &str) -> Self {
        Page {
            url,
            status,
            doc: Html::parse_document(html),
            hidden: HashMap::new(),
            expanded: HashMap::new(),
            values: HashMap::new(),
            checked: HashMap::new(),
            selected: HashMap::new(),
        }
    }

    pub fn element(&self, id: NodeId) -> Option<ElementRef<'_>> {
        self.doc.tree.get(id).and_then(ElementRef::wrap)
    }

    /// The `<title>` text.
    pub fn title(&self) -> String {
        let sel = Selector::parse("title").ok();
        sel.and_then(|s| self.doc.select(&s).next().map(|t| squash(&t.text().collect::<String>()))).unwrap_or_default()
    }

    /// Whether the element itself carries `hidden` (after client-side toggles).
    pub fn has_hidden(&self, el: ElementRef<'_>) -> bool {
        match self.hidden.get(&el.id()) {
            Some(h) => *h,
            None => el.value().attr("hidden").is_some(),
        }
    }

    /// Hidden from the accessibility tree by itself (not counting ancestors).
    fn self_hidden(&self, el: ElementRef<'_>) -> bool {
        let v = el.value();
        self.has_hidden(el)
            || v.attr("aria-hidden") == Some("true")
            || matches!(v.name(), "head" | "script" | "style" | "template" | "noscript" | "title" | "meta" | "link")
            || (v.name() == "input" && v.attr("type").is_some_and(|t| t.eq_ignore_ascii_case("hidden")))
    }

    /// Whether the element and all its ancestors are shown.
    pub fn visible(&self, el: ElementRef<'_>) -> bool {
        let mut node = Some(el);
        while let Some(e) = node {
            if self.self_hidden(e) {
                return false;
            }
            node = e.parent().and_then(ElementRef::wrap);
        }
        true
    }

    pub fn aria_expanded(&self, el: ElementRef<'_>) -> Option<bool> {
        match self.expanded.get(&el.id()) {
            Some(v) => Some(*v),
            None => el.value().attr("aria-expanded").map(|v| v == "true"),
        }
    }

    /// The element whose `id` attribute is `id`.
    pub fn by_id(&self, id: &str) -> Option<ElementRef<'_>> {
        self.doc.tree.nodes().filter_map(ElementRef::wrap).find(|e| e.value().id() == Some(id))
    }

    /// The role of an element, explicit or implicit; `None` when it has none.
    pub fn role(&self, el: ElementRef<'_>) -> Option<String> {
        let v = el.value();
        if let Some(role) = v.attr("role").and_then(|r| r.split_whitespace().next()) {
            return match role {
                "presentation" | "none" => None,
                r => Some(r.to_string()),
            };
        }
        let tag = v.name();
        let role = match tag {
            "a" | "area" if v.attr("href").is_some() => "link",
            "button" => "button",
            "input" => match v.attr("type").unwrap_or("text").to_ascii_lowercase().as_str() {
                "button" | "submit" | "reset" | "image" => "button",
                "checkbox" => "checkbox",
                "radio" => "radio",
                "search" => "searchbox",
                "number" => "spinbutton",
                "range" => "slider",
                "hidden" | "file" | "color" => return None,
                _ => "textbox",
            },
            "textarea" => "textbox",
            "select" => {
                let size = v.attr("size").and_then(|s| s.parse::<u32>().ok()).unwrap_or(0);
                if v.attr("multiple").is_some() || size > 1 {
                    "listbox"
                } else {
                    "combobox"
                }
            }
            "option" => "option",
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => "heading",
            "table" => "table",
            "tr" => "row",
            "td" => "cell",
            "th" => {
                if v.attr("scope") == Some("row") {
                    "rowheader"
                } else {
                    "columnheader"
                }
            }
            "ul" | "ol" | "menu" => "list",
            "li" => "listitem",
            "nav" => "navigation",
            "main" => "main",
            "header" if !self.inside_sectioning(el) => "banner",
            "footer" if !self.inside_sectioning(el) => "contentinfo",
            "aside" => "complementary",
            "form" if !self.name(el).is_empty() => "form",
            "section" if !self.name(el).is_empty() => "region",
            "article" => "article",
            "dialog" => "dialog",
            "output" => "status",
            "dt" => "term",
            "dd" => "definition",
            "dl" => "list",
            "fieldset" => "group",
            "img" if v.attr("alt").is_some_and(|a| !a.is_empty()) => "img",
            "progress" => "progressbar",
            "hr" => "separator",
            _ => return None,
        };
        Some(role.to_string())
    }

    fn inside_sectioning(&self, el: ElementRef<'_>) -> bool {
        el.ancestors()
            .filter_map(ElementRef::wrap)
            .any(|a| matches!(a.value().name(), "article" | "aside" | "main" | "nav" | "section"))
    }

    /// The accessible name (aria-labelledby, aria-label, label, content, title, placeholder).
    pub fn name(&self, el: ElementRef<'_>) -> String {
        let v = el.value();
        if let Some(ids) = v.attr("aria-labelledby") {
            let parts: Vec<String> =
                ids.split_whitespace().filter_map(|id| self.by_id(id)).map(|e| self.content_text(e, true)).collect();
            let joined = squash(&parts.join(" "));
            if !joined.is_empty() {
                return joined;
            }
        }
        if let Some(label) = v.attr("aria-label").map(squash).filter(|l| !l.is_empty()) {
            return label;
        }
        let tag = v.name();
        if matches!(tag, "input" | "textarea" | "select") {
            let ty = v.attr("type").unwrap_or("text").to_ascii_lowercase();
            if tag == "input" && matches!(ty.as_str(), "submit" | "button" | "reset") {
                let value = v.attr("value").map(squash).unwrap_or_default();
                if !value.is_empty() {
                    return value;
                }
                return if ty == "submit" { "Submit".to_string() } else { String::new() };
            }
            if let Some(label) = self.label_of(el) {
                return label;
            }
        }
        if tag == "img" {
            if let Some(alt) = v.attr("alt").map(squash).filter(|a| !a.is_empty()) {
                return alt;
            }
        }
        if tag == "fieldset" {
            if let Some(legend) = el.child_elements().find(|c| c.value().name() == "legend") {
                return self.content_text(legend, false);
            }
        }
        if tag == "table" {
            if let Some(caption) = el.child_elements().find(|c| c.value().name() == "caption") {
                return self.content_text(caption, false);
            }
        }
        let role = self.role_for_name(el);
        if NAME_FROM_CONTENT.contains(&role.as_str()) {
            let text = self.content_text(el, false);
            if !text.is_empty() {
                return text;
            }
        }
        if let Some(title) = v.attr("title").map(squash).filter(|t| !t.is_empty()) {
            return title;
        }
        if let Some(ph) = v.attr("placeholder").map(squash).filter(|t| !t.is_empty()) {
            return ph;
        }
        String::new()
    }

    /// The role without recursion into `name` (forms and sections are named by attributes only).
    fn role_for_name(&self, el: ElementRef<'_>) -> String {
        match el.value().name() {
            "form" | "section" => String::new(),
            _ => self.role(el).unwrap_or_default(),
        }
    }

    fn label_of(&self, el: ElementRef<'_>) -> Option<String> {
        if let Some(id) = el.value().id() {
            let label = self
                .doc
                .tree
                .nodes()
                .filter_map(ElementRef::wrap)
                .find(|e| e.value().name() == "label" && e.value().attr("for") == Some(id));
            if let Some(label) = label {
                let text = self.content_text(label, false);
                if !text.is_empty() {
                    return Some(text);
                }
            }
        }
        let wrapping = el.ancestors().filter_map(ElementRef::wrap).find(|a| a.value().name() == "label")?;
        let text = self.content_text_skipping(wrapping, false, Some(el.id()));
        (!text.is_empty()).then_some(text)
    }

    /// Text for a name computed from content: hidden parts skipped (unless `include_hidden`,
    /// as for `aria-labelledby` targets), `aria-label` and `alt` used for embedded elements.
    pub fn content_text(&self, el: ElementRef<'_>, include_hidden: bool) -> String {
        self.content_text_skipping(el, include_hidden, None)
    }

    fn content_text_skipping(&self, el: ElementRef<'_>, include_hidden: bool, skip: Option<NodeId>) -> String {
        let mut out = String::new();
        self.collect_name_text(el, include_hidden, skip, &mut out);
        squash(&out)
    }

    fn collect_name_text(&self, el: ElementRef<'_>, include_hidden: bool, skip: Option<NodeId>, out: &mut String) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => out.push_str(t),
                Node::Element(_) => {
                    let Some(c) = ElementRef::wrap(child) else { continue };
                    if Some(c.id()) == skip || (!include_hidden && self.self_hidden(c)) {
                        continue;
                    }
                    let cv = c.value();
                    if matches!(cv.name(), "script" | "style" | "template") {
                        continue;
                    }
                    if let Some(label) = cv.attr("aria-label").filter(|l| !l.trim().is_empty()) {
                        out.push(' ');
                        out.push_str(label);
                        out.push(' ');
                        continue;
                    }
                    if cv.name() == "img" {
                        out.push_str(cv.attr("alt").unwrap_or(""));
                        continue;
                    }
                    if matches!(cv.name(), "input" | "textarea" | "select") {
                        out.push(' ');
                        out.push_str(&self.value(c));
                        out.push(' ');
                        continue;
                    }
                    let block = BLOCKS.contains(&cv.name());
                    if block {
                        out.push(' ');
                    }
                    self.collect_name_text(c, include_hidden, skip, out);
                    if block {
                        out.push(' ');
                    }
                }
                _ => {}
            }
        }
    }

    /// `innerText` as the locator subset reads it: the element's rendered text (hidden
    /// descendants skipped), whitespace collapsed; form controls give their value.
    pub fn inner_text(&self, el: ElementRef<'_>) -> String {
        if matches!(el.value().name(), "input" | "textarea" | "select") {
            return self.value(el);
        }
        let mut out = String::new();
        self.collect_text(el, &mut out);
        squash(&out)
    }

    fn collect_text(&self, el: ElementRef<'_>, out: &mut String) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => out.push_str(t),
                Node::Element(_) => {
                    let Some(c) = ElementRef::wrap(child) else { continue };
                    if self.self_hidden(c) && c.value().attr("aria-hidden").is_none() {
                        continue;
                    }
                    if c.value().name() == "textarea" || c.value().name() == "select" {
                        continue;
                    }
                    let block = BLOCKS.contains(&c.value().name());
                    if block {
                        out.push(' ');
                    }
                    self.collect_text(c, out);
                    if block {
                        out.push(' ');
                    }
                }
                _ => {}
            }
        }
    }

    /// The whole page's rendered text (`document.body.innerText`).
    pub fn page_text(&self) -> String {
        let body = Selector::parse("body").ok().and_then(|s| self.doc.select(&s).next());
        match body {
            Some(b) => self.inner_text(b),
            None => self.inner_text(self.doc.root_element()),
        }
    }

    /// The current value of a form control (typed, selected or from the markup).
    pub fn value(&self, el: ElementRef<'_>) -> String {
        if let Some(v) = self.values.get(&el.id()) {
            return v.clone();
        }
        let v = el.value();
        match v.name() {
            "textarea" => el.text().collect(),
            "select" => self.selected_option(el).map(|(value, _)| value).unwrap_or_default(),
            _ => v.attr("value").unwrap_or("").to_string(),
        }
    }

    /// The options of a `<select>`: (value, label).
    pub fn options(&self, select: ElementRef<'_>) -> Vec<(String, String, bool)> {
        select
            .descendent_elements()
            .filter(|e| e.value().name() == "option")
            .map(|o| {
                let label = squash(&o.text().collect::<String>());
                let value = o.value().attr("value").map(str::to_string).unwrap_or_else(|| label.clone());
                (value, label, o.value().attr("selected").is_some())
            })
            .collect()
    }

    /// The selected option of a `<select>`: (value, label).
    pub fn selected_option(&self, select: ElementRef<'_>) -> Option<(String, String)> {
        let options = self.options(select);
        if let Some(chosen) = self.selected.get(&select.id()) {
            return options.into_iter().find(|(v, _, _)| v == chosen).map(|(v, l, _)| (v, l));
        }
        let marked = options.iter().find(|(_, _, s)| *s).cloned();
        marked.or_else(|| options.first().cloned()).map(|(v, l, _)| (v, l))
    }

    pub fn is_checked(&self, el: ElementRef<'_>) -> bool {
        match self.checked.get(&el.id()) {
            Some(c) => *c,
            None => el.value().attr("checked").is_some(),
        }
    }

    /// The open modal dialog, if any: while one is shown, only its content is in the tree.
    fn open_modal(&self) -> Option<ElementRef<'_>> {
        self.doc.tree.nodes().filter_map(ElementRef::wrap).rfind(|e| {
            (e.value().attr("role") == Some("dialog") || e.value().name() == "dialog")
                && e.value().attr("aria-modal") == Some("true")
                && self.visible(*e)
        })
    }

    /// Every element of the accessibility tree, in document order.
    pub fn ax_nodes(&self) -> Vec<AxNode> {
        let scope = match self.open_modal() {
            Some(m) => m,
            None => self.doc.root_element(),
        };
        let mut out = Vec::new();
        self.walk(scope, &mut out);
        out
    }

    fn walk(&self, el: ElementRef<'_>, out: &mut Vec<AxNode>) {
        if self.self_hidden(el) {
            return;
        }
        if let Some(role) = self.role(el) {
            out.push(AxNode { id: el.id(), role, name: self.name(el) });
        }
        for child in el.child_elements() {
            self.walk(child, out);
        }
    }

    /// The elements matching a role and an exact accessible name (whitespace collapsed).
    pub fn find(&self, role: &str, name: &str) -> Vec<AxNode> {
        let want = squash(name);
        self.ax_nodes().into_iter().filter(|n| n.role == role && n.name == want).collect()
    }

    /// `document.querySelector(css)`.
    pub fn query(&self, css: &str) -> Result<Option<ElementRef<'_>>, InvalidSelector> {
        let sel = Selector::parse(css).map_err(|e| InvalidSelector { css: css.to_string(), reason: e.to_string() })?;
        Ok(self.doc.select(&sel).next())
    }

    /// A plain-text outline of the accessibility tree (for debugging and failure messages).
    pub fn outline(&self) -> String {
        self.ax_nodes()
            .iter()
            .filter(|n| !matches!(n.role.as_str(), "listitem" | "list" | "row" | "cell"))
            .map(|n| format!("{} \"{}\"", n.role, n.name))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(html: &str) -> Page {
        Page::new("http://x/".into(), 200, html)
    }

    fn names(p: &Page, role: &str) -> Vec<String> {
        p.ax_nodes().into_iter().filter(|n| n.role == role).map(|n| n.name).collect()
    }

    #[test]
    fn implicit_roles_and_names_follow_the_contract() {
        let p = page(
            r#"<body><nav aria-label="Main"><a href="/a">Issues <span aria-hidden="true">12</span></a></nav>
            <main><h1>Title <img alt="logo"></h1><label for="t">Title (required)</label><input id="t" type="text">
            <label>Bio <textarea name="bio"></textarea></label><input type="search" aria-label="Search GitLab">
            <input type="text" placeholder="YYYY-MM-DD"><select id="s"><option>A</option></select><label for="s">Label</label>
            <button title="More">⋮</button><button aria-label="Issue actions">⋮</button>
            <dl><dt id="e">Email</dt><dd aria-labelledby="e">ann@example.com</dd></dl><output aria-label="Open issues">7</output>
            <table><tr><th>Name</th></tr><tr><td>x</td></tr></table><input type="checkbox" id="c"><label for="c">Remember me</label></main></body>"#,
        );
        assert_eq!(names(&p, "link"), ["Issues"]);
        assert_eq!(names(&p, "navigation"), ["Main"]);
        assert_eq!(names(&p, "heading"), ["Title logo"]);
        assert_eq!(names(&p, "textbox"), ["Title (required)", "Bio", "YYYY-MM-DD"]);
        assert_eq!(names(&p, "searchbox"), ["Search GitLab"]);
        assert_eq!(names(&p, "combobox"), ["Label"]);
        assert_eq!(names(&p, "button"), ["⋮", "Issue actions"]);
        assert_eq!(names(&p, "definition"), ["Email"]);
        assert_eq!(names(&p, "status"), ["Open issues"]);
        assert_eq!(names(&p, "columnheader"), ["Name"]);
        assert_eq!(names(&p, "checkbox"), ["Remember me"]);
        assert_eq!(names(&p, "main").len(), 1);
    }

    #[test]
    fn hidden_content_leaves_the_tree_and_a_modal_hides_the_rest() {
        let mut p = page(
            r#"<body><button aria-expanded="false" aria-controls="m">Plan</button><ul id="m" hidden><li><a href="/ms">Milestones</a></li></ul>
            <a href="/x" aria-hidden="true">Ghost</a><div role="dialog" aria-modal="true" id="d" hidden><button>Invite</button></div></body>"#,
        );
        assert!(p.find("link", "Milestones").is_empty());
        assert!(p.find("link", "Ghost").is_empty());
        assert!(p.find("button", "Invite").is_empty());
        let list = p.by_id("m").map(|e| e.id()).unwrap();
        p.hidden.insert(list, false);
        assert_eq!(p.find("link", "Milestones").len(), 1);
        let dialog = p.by_id("d").map(|e| e.id()).unwrap();
        p.hidden.insert(dialog, false);
        assert_eq!(p.find("button", "Invite").len(), 1);
        assert!(p.find("button", "Plan").is_empty(), "outside the open modal");
    }

    #[test]
    fn inner_text_skips_hidden_parts_and_values_come_from_state() {
        let mut p = page(
            r#"<body><p id="a">Open <span hidden>secret</span>now</p><input id="i" value="x"><select id="s"><option value="1">One</option><option value="2" selected>Two</option></select></body>"#,
        );
        let a = p.by_id("a").unwrap();
        assert_eq!(p.inner_text(a), "Open now");
        let s = p.by_id("s").unwrap();
        assert_eq!(p.value(s), "2");
        let i = p.by_id("i").map(|e| e.id()).unwrap();
        p.values.insert(i, "typed".into());
        assert_eq!(p.value(p.element(i).unwrap()), "typed");
        assert!(p.page_text().contains("Open now"));
        assert!(!p.page_text().contains("secret"));
    }
}
