//! Executing one step (see docs/formats.md#skills) on the simulator's
//! current page: locating the target by role and name, the two client-side
//! behaviours (disclosure / menu buttons and dialogs), link navigation and
//! form submission.

use axum::http::Method;
use ego_tree::NodeId;
use scraper::ElementRef;
use skillshift_common::skills::{Step, Target};

use super::dom::squash;
use super::{Browser, SimError};
use crate::kit::url::encode_form;

impl Browser {
    /// Executes one step; `read` returns the text read and `answer` its literal.
    pub async fn step(&mut self, step: &Step) -> Result<Option<String>, SimError> {
        match step {
            Step::Goto { url } => {
                self.goto(url).await?;
                Ok(None)
            }
            Step::Click { target } => {
                let id = self.locate(target)?;
                self.click(id, target).await?;
                Ok(None)
            }
            Step::Fill { target, text } => {
                let id = self.locate(target)?;
                self.fill(id, target, text)?;
                Ok(None)
            }
            Step::Select { target, option } => {
                let id = self.locate(target)?;
                self.select(id, target, option)?;
                Ok(None)
            }
            Step::Check { target } => {
                let id = self.locate(target)?;
                self.check(id, target)?;
                Ok(None)
            }
            Step::Press { target, key } => {
                let id = self.locate(target)?;
                if key.eq_ignore_ascii_case("enter") {
                    self.press_enter(id).await?;
                }
                Ok(None)
            }
            Step::Hover { target } => {
                self.locate(target)?;
                Ok(None)
            }
            Step::Read { target, .. } => {
                let id = self.locate(target)?;
                let page = self.page.as_ref().ok_or(SimError::NoPage)?;
                let el = page.element(id).ok_or(SimError::NoPage)?;
                Ok(Some(page.inner_text(el)))
            }
            Step::Answer { text } => Ok(Some(text.clone())),
        }
    }

    /// The one element matching `target` (or its `nth`).
    pub fn locate(&self, target: &Target) -> Result<NodeId, SimError> {
        let page = self.page.as_ref().ok_or(SimError::NoPage)?;
        let matches = page.find(&target.role, &target.name);
        let (role, name) = (target.role.clone(), squash(&target.name));
        match (target.nth, matches.len()) {
            (_, 0) => Err(SimError::NotFound { role, name }),
            (None, 1) => Ok(matches[0].id),
            (None, count) => Err(SimError::Ambiguous { role, name, count }),
            (Some(nth), count) => {
                matches.get(nth as usize).map(|m| m.id).ok_or(SimError::NthOutOfRange { role, name, nth, count })
            }
        }
    }

    fn action_error(target: &Target, action: &'static str, reason: &str) -> SimError {
        SimError::Action { action, role: target.role.clone(), name: target.name.clone(), reason: reason.to_string() }
    }

    async fn click(&mut self, id: NodeId, target: &Target) -> Result<(), SimError> {
        enum Effect {
            Navigate(String),
            Submit(NodeId),
            Toggle(NodeId, Option<NodeId>),
            Open(NodeId),
            Close(NodeId),
            Check(NodeId),
            Nothing,
        }
        let effect = {
            let page = self.page.as_ref().ok_or(SimError::NoPage)?;
            let el = page.element(id).ok_or(SimError::NoPage)?;
            if el.value().attr("disabled").is_some() || el.value().attr("aria-disabled") == Some("true") {
                return Err(Self::action_error(target, "click", "it is disabled"));
            }
            // The click lands on the element; the nearest actionable ancestor acts on it.
            let actionable = std::iter::once(el).chain(el.ancestors().filter_map(ElementRef::wrap)).find(|e| {
                let v = e.value();
                (v.name() == "a" && v.attr("href").is_some())
                    || v.name() == "button"
                    || (v.name() == "input"
                        && matches!(v.attr("type").unwrap_or("text"), "submit" | "button" | "checkbox" | "radio"))
            });
            match actionable {
                None => Effect::Nothing,
                Some(a) => {
                    let v = a.value();
                    match v.name() {
                        "a" => {
                            let href = v.attr("href").unwrap_or("");
                            if href.starts_with('#') {
                                Effect::Nothing
                            } else {
                                Effect::Navigate(href.to_string())
                            }
                        }
                        "input" if matches!(v.attr("type"), Some("checkbox") | Some("radio")) => Effect::Check(a.id()),
                        _ => {
                            if let (Some(controls), Some(_)) = (v.attr("aria-controls"), v.attr("aria-expanded")) {
                                Effect::Toggle(a.id(), page.by_id(controls).map(|c| c.id()))
                            } else if let Some(opens) = v.attr("data-opens") {
                                match page.by_id(opens) {
                                    Some(d) => Effect::Open(d.id()),
                                    None => return Err(Self::action_error(target, "click", "its dialog is missing")),
                                }
                            } else if v.attr("data-closes").is_some() {
                                let dialog = a
                                    .ancestors()
                                    .filter_map(ElementRef::wrap)
                                    .find(|d| d.value().attr("role") == Some("dialog") || d.value().name() == "dialog");
                                match dialog {
                                    Some(d) => Effect::Close(d.id()),
                                    None => Effect::Nothing,
                                }
                            } else {
                                let ty = v.attr("type").unwrap_or("submit").to_ascii_lowercase();
                                if ty == "submit" {
                                    Effect::Submit(a.id())
                                } else {
                                    Effect::Nothing
                                }
                            }
                        }
                    }
                }
            }
        };
        match effect {
            Effect::Navigate(href) => self.goto(&href).await,
            Effect::Submit(button) => self.submit(button, Some(button)).await,
            Effect::Toggle(button, panel) => {
                let page = self.page.as_mut().ok_or(SimError::NoPage)?;
                let open = page.element(button).and_then(|b| page.aria_expanded(b)).unwrap_or(false);
                page.expanded.insert(button, !open);
                if let Some(panel) = panel {
                    page.hidden.insert(panel, open);
                }
                Ok(())
            }
            Effect::Open(dialog) => {
                let page = self.page.as_mut().ok_or(SimError::NoPage)?;
                page.hidden.insert(dialog, false);
                Ok(())
            }
            Effect::Close(dialog) => {
                let page = self.page.as_mut().ok_or(SimError::NoPage)?;
                page.hidden.insert(dialog, true);
                Ok(())
            }
            Effect::Check(input) => {
                let page = self.page.as_mut().ok_or(SimError::NoPage)?;
                let is_radio = page.element(input).and_then(|e| e.value().attr("type")) == Some("radio");
                let now = page.element(input).map(|e| page.is_checked(e)).unwrap_or(false);
                if is_radio {
                    set_radio(page, input);
                } else {
                    page.checked.insert(input, !now);
                }
                Ok(())
            }
            Effect::Nothing => Ok(()),
        }
    }

    fn fill(&mut self, id: NodeId, target: &Target, text: &str) -> Result<(), SimError> {
        let page = self.page.as_mut().ok_or(SimError::NoPage)?;
        let el = page.element(id).ok_or(SimError::NoPage)?;
        let v = el.value();
        let editable = match v.name() {
            "textarea" => true,
            "input" => !matches!(
                v.attr("type").unwrap_or("text").to_ascii_lowercase().as_str(),
                "checkbox" | "radio" | "submit" | "button" | "reset" | "hidden" | "file" | "image"
            ),
            _ => v.attr("contenteditable") == Some("true"),
        };
        if !editable {
            return Err(Self::action_error(target, "fill", "it is not editable"));
        }
        if v.attr("disabled").is_some() || v.attr("readonly").is_some() {
            return Err(Self::action_error(target, "fill", "it is disabled or read-only"));
        }
        page.values.insert(id, text.to_string());
        Ok(())
    }

    fn select(&mut self, id: NodeId, target: &Target, option: &str) -> Result<(), SimError> {
        let page = self.page.as_mut().ok_or(SimError::NoPage)?;
        let el = page.element(id).ok_or(SimError::NoPage)?;
        if el.value().name() != "select" {
            return Err(Self::action_error(target, "select an option of", "it is not a <select>"));
        }
        let want = squash(option);
        let options = page.options(el);
        let chosen = options
            .iter()
            .find(|(_, label, _)| *label == want)
            .or_else(|| options.iter().find(|(value, _, _)| *value == want))
            .map(|(value, _, _)| value.clone())
            .ok_or_else(|| Self::action_error(target, "select an option of", &format!("it has no option '{want}'")))?;
        page.selected.insert(id, chosen);
        Ok(())
    }

    fn check(&mut self, id: NodeId, target: &Target) -> Result<(), SimError> {
        let page = self.page.as_mut().ok_or(SimError::NoPage)?;
        let el = page.element(id).ok_or(SimError::NoPage)?;
        match el.value().attr("type") {
            Some("checkbox") if el.value().name() == "input" => {
                page.checked.insert(id, true);
                Ok(())
            }
            Some("radio") if el.value().name() == "input" => {
                set_radio(page, id);
                Ok(())
            }
            _ => Err(Self::action_error(target, "check", "it is not a checkbox or radio button")),
        }
    }

    async fn press_enter(&mut self, id: NodeId) -> Result<(), SimError> {
        let (form, default_button) = {
            let page = self.page.as_ref().ok_or(SimError::NoPage)?;
            let el = page.element(id).ok_or(SimError::NoPage)?;
            if el.value().name() == "textarea" {
                return Ok(());
            }
            let Some(form) = form_of(page, el) else { return Ok(()) };
            let button = form.descendent_elements().find(|e| is_submit_button(*e)).map(|b| b.id());
            (form.id(), button)
        };
        self.submit(form, default_button).await
    }

    /// Submits the form that `from` belongs to (or is), with `submitter`'s name/value.
    async fn submit(&mut self, from: NodeId, submitter: Option<NodeId>) -> Result<(), SimError> {
        let (method, action, data) = {
            let page = self.page.as_ref().ok_or(SimError::NoPage)?;
            let el = page.element(from).ok_or(SimError::NoPage)?;
            let Some(form) = form_of(page, el) else { return Ok(()) };
            let fv = form.value();
            let method = if fv.attr("method").is_some_and(|m| m.eq_ignore_ascii_case("post")) {
                Method::POST
            } else {
                Method::GET
            };
            let action = fv.attr("action").unwrap_or("").to_string();
            let mut pairs: Vec<(String, String)> = Vec::new();
            for control in form.descendent_elements() {
                let v = control.value();
                let Some(name) = v.attr("name") else { continue };
                if v.attr("disabled").is_some() {
                    continue;
                }
                match v.name() {
                    "input" => match v.attr("type").unwrap_or("text").to_ascii_lowercase().as_str() {
                        "checkbox" | "radio" => {
                            if page.is_checked(control) {
                                pairs.push((name.into(), v.attr("value").unwrap_or("on").into()));
                            }
                        }
                        "submit" | "button" | "reset" | "image" | "file" => {}
                        _ => pairs.push((name.into(), page.value(control))),
                    },
                    "textarea" | "select" => pairs.push((name.into(), page.value(control))),
                    _ => {}
                }
            }
            if let Some(button) = submitter.and_then(|s| page.element(s)) {
                if let Some(name) = button.value().attr("name") {
                    pairs.push((name.into(), button.value().attr("value").unwrap_or("").into()));
                }
                if let Some(formaction) = button.value().attr("formaction") {
                    return self.send_form(method, formaction.to_string(), pairs).await;
                }
            }
            (method, action, pairs)
        };
        self.send_form(method, action, data).await
    }

    async fn send_form(
        &mut self,
        method: Method,
        action: String,
        pairs: Vec<(String, String)>,
    ) -> Result<(), SimError> {
        let encoded =
            pairs.iter().map(|(k, v)| format!("{}={}", encode_form(k), encode_form(v))).collect::<Vec<_>>().join("&");
        let target = self.absolute(if action.is_empty() { "" } else { &action })?;
        let page = if method == Method::GET {
            let base = target.split('?').next().unwrap_or("").to_string();
            let url = if encoded.is_empty() { base } else { format!("{base}?{encoded}") };
            self.request(Method::GET, url, None).await?
        } else {
            self.request(Method::POST, target, Some(encoded)).await?
        };
        self.page = Some(page);
        Ok(())
    }
}

fn is_submit_button(e: ElementRef<'_>) -> bool {
    let v = e.value();
    (v.name() == "button" && v.attr("type").unwrap_or("submit").eq_ignore_ascii_case("submit"))
        || (v.name() == "input" && v.attr("type").is_some_and(|t| t.eq_ignore_ascii_case("submit")))
}

fn form_of<'a>(page: &'a super::Page, el: ElementRef<'a>) -> Option<ElementRef<'a>> {
    if el.value().name() == "form" {
        return Some(el);
    }
    if let Some(form_id) = el.value().attr("form") {
        return page.by_id(form_id);
    }
    el.ancestors().filter_map(ElementRef::wrap).find(|a| a.value().name() == "form")
}

fn set_radio(page: &mut super::Page, id: NodeId) {
    let group: Vec<NodeId> = {
        let Some(el) = page.element(id) else { return };
        let name = el.value().attr("name").unwrap_or("").to_string();
        let scope = form_of(page, el).unwrap_or_else(|| page.doc.root_element());
        scope
            .descendent_elements()
            .filter(|e| e.value().attr("type") == Some("radio") && e.value().attr("name").unwrap_or("") == name)
            .map(|e| e.id())
            .collect()
    };
    for other in group {
        page.checked.insert(other, other == id);
    }
}
