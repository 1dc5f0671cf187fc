//! Executing actions for real, as a user would: trusted input events through
//! DevTools (`Input.dispatchMouseEvent`, `Input.insertText`,
//! `Input.dispatchKeyEvent`) at the element's on-screen position after
//! scrolling it into view, and navigations through WebDriver.
//!
//! Like Playwright (and so WebArena), a click first checks that the element is
//! what receives the pointer at its centre; an element covered by another (a
//! modal, a banner) is an action error, not a silent miss. After every action
//! the page is given time to settle: a navigation it started is waited for.
//!
//! Element handles are `backendDOMNodeId`s; [`crate::axtree`] maps printed ids to them.

use std::time::Duration;

use serde_json::{json, Value};

use crate::action::Action;
use crate::browser::{BrowserError, InputMark, Session};
use crate::keyboard;

/// Why an action could not be done.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    /// The action failed; the agent sees this as `last_action_error`.
    #[error("{0}")]
    Failed(String),
    /// The browser is gone: the attempt ends as `error` / `browser`.
    #[error(transparent)]
    Fatal(BrowserError),
}

impl From<BrowserError> for ActError {
    fn from(e: BrowserError) -> Self {
        if e.is_fatal() {
            ActError::Fatal(e)
        } else {
            ActError::Failed(e.to_string())
        }
    }
}

/// The longest a click or keypress waits for a navigation it started.
const SETTLE_MAX: Duration = Duration::from_secs(10);

/// Executes one primitive action. `resolve` maps a printed id to its element.
/// `Stop` does nothing here: the run loop ends the attempt. Tab actions need
/// the attempt's tabs: the tabs module's `execute` runs them and sends the rest here.
pub async fn execute(session: &Session, action: &Action, resolve: impl Fn(u64) -> Option<i64>) -> Result<(), ActError> {
    let element =
        |id: u64| resolve(id).ok_or_else(|| ActError::Failed(format!("no element with id [{id}] on this page")));
    match action {
        Action::Click { id } => click(session, element(*id)?).await,
        Action::Type { id, text, enter } => type_at(session, element(*id)?, text, *enter).await,
        Action::Fill { id, text, enter } => type_text(session, element(*id)?, text, *enter).await,
        Action::Hover { id } => hover(session, element(*id)?).await,
        Action::Press { keys } => press(session, None, keys).await,
        Action::Scroll { down } => scroll(session, *down).await,
        Action::Goto { url } => session.goto(url).await.map_err(ActError::from),
        Action::GoBack => session.back().await.map_err(ActError::from),
        Action::GoForward => session.forward().await.map_err(ActError::from),
        Action::NewTab | Action::TabFocus { .. } | Action::CloseTab => {
            Err(ActError::Failed(format!("'{action}' needs the attempt's tabs")))
        }
        Action::Invalid { reason, .. } => Err(ActError::Failed(format!("invalid action: {reason}"))),
        Action::Stop { .. } => Ok(()),
    }
}

/// The JavaScript object id of an element, for `Runtime.callFunctionOn`.
async fn object_id(session: &Session, backend: i64) -> Result<String, ActError> {
    let r = session
        .cdp("DOM.resolveNode", json!({"backendNodeId": backend}))
        .await
        .map_err(|e| gone_or(e, "the element is no longer in the page"))?;
    r.pointer("/object/objectId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ActError::Failed("the element is no longer in the page".into()))
}

fn gone_or(e: BrowserError, msg: &str) -> ActError {
    if e.is_fatal() {
        ActError::Fatal(e)
    } else {
        ActError::Failed(msg.to_string())
    }
}

/// Calls `function` with `this` bound to the element and returns its value.
pub async fn call_on(session: &Session, backend: i64, function: &str, args: Vec<Value>) -> Result<Value, ActError> {
    let oid = object_id(session, backend).await?;
    let arguments: Vec<Value> = args.into_iter().map(|v| json!({"value": v})).collect();
    let r = session
        .cdp(
            "Runtime.callFunctionOn",
            json!({"objectId": oid, "functionDeclaration": function, "arguments": arguments,
                   "returnByValue": true, "awaitPromise": true}),
        )
        .await?;
    if let Some(ex) = r.get("exceptionDetails") {
        let text = ex.pointer("/exception/description").and_then(Value::as_str).unwrap_or("script exception");
        return Err(ActError::Failed(text.lines().next().unwrap_or("").to_string()));
    }
    Ok(r.pointer("/result/value").cloned().unwrap_or(Value::Null))
}

/// The centre of the element in viewport coordinates, after scrolling it into view.
async fn center(session: &Session, backend: i64) -> Result<(f64, f64), ActError> {
    session
        .cdp("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": backend}))
        .await
        .map_err(|e| gone_or(e, "the element is not visible"))?;
    let r = session
        .cdp("DOM.getContentQuads", json!({"backendNodeId": backend}))
        .await
        .map_err(|e| gone_or(e, "the element is not visible"))?;
    let quad = r
        .pointer("/quads/0")
        .and_then(Value::as_array)
        .filter(|q| q.len() == 8)
        .ok_or_else(|| ActError::Failed("the element is not visible (it has no box)".into()))?;
    let xs: Vec<f64> = quad.iter().step_by(2).filter_map(Value::as_f64).collect();
    let ys: Vec<f64> = quad.iter().skip(1).step_by(2).filter_map(Value::as_f64).collect();
    if xs.len() != 4 || ys.len() != 4 {
        return Err(ActError::Failed("the element has a malformed box".into()));
    }
    let (x, y) = (xs.iter().sum::<f64>() / 4.0, ys.iter().sum::<f64>() / 4.0);
    Ok((x, y))
}

/// Playwright's actionability check: the element (or its label) must be what
/// receives a pointer event at (x, y).
const HIT_TEST: &str = r##"function(x, y) {
  const hit = document.elementFromPoint(x, y);
  if (!hit) return "nothing is at the element's position";
  if (this === hit || this.contains(hit) || (this.labels && [...this.labels].some(l => l.contains(hit)))) return "";
  const desc = hit.tagName.toLowerCase() + (hit.id ? "#" + hit.id : "") +
    (hit.getAttribute("role") ? "[role=" + hit.getAttribute("role") + "]" : "");
  const text = (hit.innerText || "").trim().split("\n")[0].slice(0, 40);
  return "the element is covered by <" + desc + ">" + (text ? " '" + text + "'" : "") + ", which would receive the click";
}"##;

async fn mouse(session: &Session, kind: &str, x: f64, y: f64, clicks: u32) -> Result<(), ActError> {
    let mut p = json!({"type": kind, "x": x, "y": y, "button": "none", "clickCount": clicks});
    if kind != "mouseMoved" {
        p["button"] = json!("left");
    }
    session.cdp("Input.dispatchMouseEvent", p).await?;
    Ok(())
}

/// Marks the current document so [`settle`] can tell whether a navigation
/// started (`beforeunload` fires when one begins) and whether it has committed.
async fn mark(session: &Session) -> Result<InputMark, ActError> {
    Ok(session.mark_input().await?)
}

/// Waits until a navigation started by the last input (if any) has loaded, on
/// the page's own events ([`Session::settle`]), bounded by [`SETTLE_MAX`].
pub async fn settle(session: &Session, mark: InputMark) -> Result<(), ActError> {
    Ok(session.settle(mark, SETTLE_MAX).await?)
}

pub async fn click(session: &Session, backend: i64) -> Result<(), ActError> {
    let (x, y) = center(session, backend).await?;
    let hit = call_on(session, backend, HIT_TEST, vec![json!(x), json!(y)]).await?;
    if let Some(msg) = hit.as_str().filter(|m| !m.is_empty()) {
        return Err(ActError::Failed(msg.to_string()));
    }
    let token = mark(session).await?;
    mouse(session, "mouseMoved", x, y, 0).await?;
    mouse(session, "mousePressed", x, y, 1).await?;
    mouse(session, "mouseReleased", x, y, 1).await?;
    settle(session, token).await
}

pub async fn hover(session: &Session, backend: i64) -> Result<(), ActError> {
    let (x, y) = center(session, backend).await?;
    mouse(session, "mouseMoved", x, y, 0).await
}

/// Focuses the element, replaces its content with `text` and optionally presses Enter
/// (a skill's `fill`; the agent's `type` action is [`type_at`]).
/// On a `<select>`, typing chooses the option with that label (as BrowserGym's
/// `select_option`), since WebArena's syntax has no select action.
pub async fn type_text(session: &Session, backend: i64, text: &str, enter: bool) -> Result<(), ActError> {
    let tag = call_on(session, backend, "function() { return this.tagName; }", vec![]).await?;
    if tag.as_str() == Some("SELECT") {
        let r = call_on(session, backend, SELECT_OPTION, vec![json!(text)]).await?;
        return match r.as_str() {
            Some("") => Ok(()),
            Some(m) => Err(ActError::Failed(m.to_string())),
            None => Err(ActError::Failed("cannot select an option".into())),
        };
    }
    focus_for_typing(session, backend).await?;
    if !text.is_empty() {
        session.cdp("Input.insertText", json!({"text": text})).await?;
    }
    if enter {
        type_chars(session, "\n").await?;
    }
    Ok(())
}

/// WebArena's `type [id] [text] [enter]`: a mouse click at the element's
/// centre, then the text typed key by key where that click left the caret
/// (after what a short field already holds), then Enter when asked. On a
/// `<select>`, typing chooses the option with that label, as in
/// [`type_text`].
pub async fn type_at(session: &Session, backend: i64, text: &str, enter: bool) -> Result<(), ActError> {
    let tag = call_on(session, backend, "function() { return this.tagName; }", vec![]).await?;
    if tag.as_str() == Some("SELECT") {
        return type_text(session, backend, text, enter).await;
    }
    let (x, y) = center(session, backend).await?;
    let token = mark(session).await?;
    mouse(session, "mouseMoved", x, y, 0).await?;
    mouse(session, "mousePressed", x, y, 1).await?;
    mouse(session, "mouseReleased", x, y, 1).await?;
    settle(session, token).await?;
    type_chars(session, text).await?;
    if enter {
        type_chars(session, "\n").await?;
    }
    Ok(())
}

/// Chooses the option whose label is the argument; returns "" or why not.
pub const SELECT_OPTION: &str = r#"function(label) {
  if (this.tagName !== "SELECT") return "the element is not a select";
  if (this.disabled) return "the select is disabled";
  const norm = s => (s || "").replace(/\s+/g, " ").trim();
  const opt = [...this.options].find(o => norm(o.label || o.textContent) === norm(label));
  if (!opt) return "no option '" + label + "'";
  this.value = opt.value;
  this.dispatchEvent(new Event("input", {bubbles: true}));
  this.dispatchEvent(new Event("change", {bubbles: true}));
  return "";
}"#;

const FOCUS_EDITABLE: &str = r#"function() {
  const editable = this.isContentEditable || (this.tagName === "TEXTAREA") ||
    (this.tagName === "INPUT" && !["checkbox","radio","submit","button","reset","file","image","hidden"].includes(this.type));
  if (!editable) return "the element is not a text field";
  if (this.disabled || this.readOnly) return "the text field is not editable";
  this.focus();
  if (this.select) this.select(); else document.execCommand("selectAll");
  return "";
}"#;

async fn focus_for_typing(session: &Session, backend: i64) -> Result<(), ActError> {
    session
        .cdp("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": backend}))
        .await
        .map_err(|e| gone_or(e, "the element is not visible"))?;
    let r = call_on(session, backend, FOCUS_EDITABLE, vec![]).await?;
    match r.as_str() {
        Some("") => Ok(()),
        Some(msg) => Err(ActError::Failed(msg.to_string())),
        None => Err(ActError::Failed("cannot focus the element".into())),
    }
}

/// WebArena's key-name mapping (`SPECIAL_KEY_MAPPINGS`): each `+`-separated
/// name whose lowercase form it lists becomes Playwright's spelling; any other
/// name is kept as written (and Playwright's names are case-sensitive, so
/// `control` stays unknown, as it is in WebArena).
pub fn webarena_key_comb(keys: &str) -> String {
    const MAPPED: &[&str] = &[
        "Backquote",
        "Minus",
        "Equal",
        "Backslash",
        "Backspace",
        "Meta",
        "Tab",
        "Delete",
        "Escape",
        "ArrowDown",
        "End",
        "Enter",
        "Home",
        "Insert",
        "PageDown",
        "PageUp",
        "ArrowRight",
        "ArrowUp",
        "F1",
        "F2",
        "F3",
        "F4",
        "F5",
        "F6",
        "F7",
        "F8",
        "F9",
        "F10",
        "F11",
        "F12",
    ];
    keys.split('+')
        .map(|k| MAPPED.iter().find(|m| m.eq_ignore_ascii_case(k)).copied().unwrap_or(k))
        .collect::<Vec<_>>()
        .join("+")
}

/// Presses a key combination such as `Enter` or `Control+a`, on `target` if
/// given, as WebArena does: its key-name mapping, `Meta` read as `Control`
/// where `navigator.platform` is not a Mac's, then Playwright's `press` (every
/// key but the last held down, in order, released in reverse).
pub async fn press(session: &Session, target: Option<i64>, keys: &str) -> Result<(), ActError> {
    if let Some(b) = target {
        call_on(session, b, "function() { this.focus(); return true; }", vec![]).await?;
    }
    let mut comb = webarena_key_comb(keys);
    if comb.contains("Meta") {
        let platform = session.eval("navigator.platform").await?;
        if !platform.as_str().unwrap_or("").contains("Mac") {
            comb = comb.replace("Meta", "Control");
        }
    }
    let tokens = split_keys(&comb);
    let mut descs = Vec::with_capacity(tokens.len());
    for t in &tokens {
        descs.push(keyboard::describe(t).ok_or_else(|| ActError::Failed(format!("Unknown key: \"{t}\"")))?);
    }
    let token = mark(session).await?;
    let mut modifiers = 0;
    for d in &descs {
        modifiers |= d.modifier_bit();
        key_down(session, d, modifiers).await?;
    }
    for d in descs.iter().rev() {
        key_up(session, d, modifiers).await?;
        modifiers &= !d.modifier_bit();
    }
    settle(session, token).await
}

/// Playwright's split of a key combination: on `+`, where a `+` right after
/// another separator (or first) is the key `+` itself (`Shift++`).
fn split_keys(comb: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in comb.chars() {
        if c == '+' && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// Sends one key down, with the text it types unless a modifier other than
/// Shift is held (as Playwright).
async fn key_down(session: &Session, d: &keyboard::Key, modifiers: u32) -> Result<(), ActError> {
    let shifted = modifiers & keyboard::SHIFT != 0;
    let (key, text) = d.as_typed(shifted);
    let text = if modifiers & !keyboard::SHIFT != 0 { None } else { text };
    let mut down = json!({"type": if text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": key, "code": d.code,
                          "windowsVirtualKeyCode": d.key_code, "modifiers": modifiers, "location": d.location});
    if let Some(t) = &text {
        down["text"] = json!(t);
        down["unmodifiedText"] = json!(t);
    }
    // Editing shortcuts need their command named in headless Chromium.
    if modifiers & (keyboard::CONTROL | keyboard::META) != 0 {
        let cmd = match key.to_ascii_lowercase().as_str() {
            "a" => Some("selectAll"),
            "c" => Some("copy"),
            "v" => Some("paste"),
            "x" => Some("cut"),
            "z" => Some("undo"),
            _ => None,
        };
        if let Some(cmd) = cmd {
            down["commands"] = json!([cmd]);
        }
    }
    session.cdp("Input.dispatchKeyEvent", down).await?;
    Ok(())
}

async fn key_up(session: &Session, d: &keyboard::Key, modifiers: u32) -> Result<(), ActError> {
    let (key, _) = d.as_typed(modifiers & keyboard::SHIFT != 0);
    session
        .cdp(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": d.code, "windowsVirtualKeyCode": d.key_code,
                   "modifiers": modifiers, "location": d.location}),
        )
        .await?;
    Ok(())
}

/// Types text as Playwright's `keyboard.type` does: a key press per character
/// the keyboard has (`\n` is Enter), inserted text for any other.
async fn type_chars(session: &Session, text: &str) -> Result<(), ActError> {
    for c in text.chars() {
        let s = if c == '\n' { "Enter".to_string() } else { c.to_string() };
        match keyboard::describe(&s) {
            Some(d) => {
                let token = if c == '\n' { Some(mark(session).await?) } else { None };
                key_down(session, &d, 0).await?;
                key_up(session, &d, 0).await?;
                if let Some(t) = token {
                    settle(session, t).await?;
                }
            }
            None => {
                session.cdp("Input.insertText", json!({"text": s})).await?;
            }
        }
    }
    Ok(())
}

/// Before a wheel: the viewport's size, whether the page can move that way, and a promise
/// (`window.__skillshiftScrolled`) that resolves on the scroll's `scrollend`, or after 500 ms.
const SCROLL_PREPARE: &str = r#"(down => {
  const se = document.scrollingElement || document.documentElement;
  const can = down ? Math.ceil(scrollY + innerHeight) < se.scrollHeight : scrollY > 0;
  window.__skillshiftScrolled = can ? new Promise(r => {
    document.addEventListener("scrollend", () => r(true), {once: true, capture: true});
    setTimeout(() => r(false), 500);
  }) : null;
  return [innerWidth, innerHeight, can];
})"#;

/// Scrolls the page by one viewport with a mouse wheel at the viewport's centre,
/// done when the page says the scroll ended (at once when it cannot move).
pub async fn scroll(session: &Session, down: bool) -> Result<(), ActError> {
    let v = session.eval(&format!("{SCROLL_PREPARE}({down})")).await?;
    let w = v.get(0).and_then(Value::as_f64).unwrap_or(1280.0);
    let h = v.get(1).and_then(Value::as_f64).unwrap_or(720.0);
    let dy = if down { h } else { -h };
    session
        .cdp(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseWheel", "x": w / 2.0, "y": h / 2.0, "deltaX": 0, "deltaY": dy}),
        )
        .await?;
    if v.get(2).and_then(Value::as_bool).unwrap_or(false) {
        session.eval("window.__skillshiftScrolled").await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webarena_maps_lowercase_key_names_it_lists() {
        assert_eq!(webarena_key_comb("enter"), "Enter");
        assert_eq!(webarena_key_comb("meta+a"), "Meta+a");
        assert_eq!(webarena_key_comb("control+a"), "control+a", "WebArena does not list control");
        assert_eq!(webarena_key_comb("f5"), "F5");
        assert_eq!(split_keys("Shift++"), vec!["Shift".to_string(), "+".to_string()]);
        assert_eq!(split_keys("Control+Shift+K"), vec!["Control", "Shift", "K"]);
    }
}
