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
/// `Stop` does nothing here: the run loop ends the attempt.
pub async fn execute(session: &Session, action: &Action, resolve: impl Fn(u64) -> Option<i64>) -> Result<(), ActError> {
    let element =
        |id: u64| resolve(id).ok_or_else(|| ActError::Failed(format!("no element with id [{id}] on this page")));
    match action {
        Action::Click { id } => click(session, element(*id)?).await,
        Action::Type { id, text, enter } => type_text(session, element(*id)?, text, *enter).await,
        Action::Hover { id } => hover(session, element(*id)?).await,
        Action::Press { keys } => press(session, None, keys).await,
        Action::Scroll { down } => scroll(session, *down).await,
        Action::Goto { url } => session.goto(url).await.map_err(ActError::from),
        Action::GoBack => session.back().await.map_err(ActError::from),
        Action::GoForward => session.forward().await.map_err(ActError::from),
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

/// Focuses the element, replaces its content with `text` and optionally presses Enter.
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
        let token = mark(session).await?;
        key(session, "Enter", 0).await?;
        settle(session, token).await?;
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

/// Presses a key combination such as `Enter` or `Control+a`, on `target` if given.
pub async fn press(session: &Session, target: Option<i64>, keys: &str) -> Result<(), ActError> {
    if let Some(b) = target {
        call_on(session, b, "function() { this.focus(); return true; }", vec![]).await?;
    }
    let parts: Vec<&str> = keys.split('+').map(str::trim).filter(|s| !s.is_empty()).collect();
    let Some((main, mods)) = parts.split_last() else {
        return Err(ActError::Failed(format!("cannot press '{keys}': no key")));
    };
    let mut modifiers = 0;
    for m in mods {
        modifiers |= match m.to_ascii_lowercase().as_str() {
            "alt" => 1,
            "control" | "ctrl" => 2,
            "meta" | "command" | "cmd" => 4,
            "shift" => 8,
            other => return Err(ActError::Failed(format!("cannot press '{keys}': unknown modifier '{other}'"))),
        };
    }
    let token = mark(session).await?;
    key(session, main, modifiers).await?;
    settle(session, token).await
}

/// (key, code, keyCode, text) of a named key.
fn key_info(k: &str) -> Option<(String, String, u32, Option<String>)> {
    let named: &[(&str, &str, u32, Option<&str>)] = &[
        ("Enter", "Enter", 13, Some("\r")),
        ("Tab", "Tab", 9, None),
        ("Escape", "Escape", 27, None),
        ("Backspace", "Backspace", 8, None),
        ("Delete", "Delete", 46, None),
        ("ArrowUp", "ArrowUp", 38, None),
        ("ArrowDown", "ArrowDown", 40, None),
        ("ArrowLeft", "ArrowLeft", 37, None),
        ("ArrowRight", "ArrowRight", 39, None),
        ("PageUp", "PageUp", 33, None),
        ("PageDown", "PageDown", 34, None),
        ("Home", "Home", 36, None),
        ("End", "End", 35, None),
        ("Space", "Space", 32, Some(" ")),
    ];
    if let Some((key, code, kc, text)) = named.iter().find(|(n, ..)| n.eq_ignore_ascii_case(k)) {
        let key = if *key == "Space" { " " } else { key };
        return Some((key.to_string(), code.to_string(), *kc, text.map(str::to_string)));
    }
    let mut chars = k.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else { return None };
    if c.is_ascii_alphanumeric() {
        let upper = c.to_ascii_uppercase();
        let code = if c.is_ascii_digit() { format!("Digit{c}") } else { format!("Key{upper}") };
        return Some((c.to_string(), code, upper as u32, Some(c.to_string())));
    }
    Some((c.to_string(), String::new(), 0, Some(c.to_string())))
}

async fn key(session: &Session, k: &str, modifiers: u32) -> Result<(), ActError> {
    let (key, code, kc, text) = key_info(k).ok_or_else(|| ActError::Failed(format!("unknown key '{k}'")))?;
    let text = if modifiers & (1 | 2 | 4) != 0 { None } else { text };
    let mut down = json!({"type": if text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": key, "code": code,
                          "windowsVirtualKeyCode": kc, "modifiers": modifiers});
    if let Some(t) = &text {
        down["text"] = json!(t);
    }
    // Editing shortcuts need their command named in headless Chromium.
    if modifiers & (2 | 4) != 0 {
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
    session
        .cdp(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": kc, "modifiers": modifiers}),
        )
        .await?;
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
    fn key_names_map_to_devtools_keys() {
        assert_eq!(key_info("enter").map(|k| k.2), Some(13));
        assert_eq!(key_info("a").map(|k| k.1), Some("KeyA".to_string()));
        assert_eq!(key_info("7").map(|k| k.1), Some("Digit7".to_string()));
        assert!(key_info("NoSuchKey").is_none());
    }
}
