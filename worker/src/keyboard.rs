//! The key names `press` knows: Playwright's US keyboard layout, which is what
//! WebArena's `page.keyboard.press` resolves names against. A name is a key
//! code (`KeyA`, `Digit3`, `Enter`, `ArrowUp`, `F5`, `Numpad7`), an alias
//! (`Shift`, `Control`, `Alt`, `Meta`), or one character the layout types
//! (`a`, `A`, `%`, ` `). Names are case-sensitive, as in Playwright.

pub const ALT: u32 = 1;
pub const CONTROL: u32 = 2;
pub const META: u32 = 4;
pub const SHIFT: u32 = 8;

/// One key as DevTools' `Input.dispatchKeyEvent` wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub key: String,
    pub code: &'static str,
    pub key_code: u32,
    pub text: Option<String>,
    pub location: u32,
    /// What the key gives with Shift held, when it was named by its code.
    shifted: Option<(String, u32)>,
}

impl Key {
    /// The modifier bit this key sets while held (0 for an ordinary key).
    pub fn modifier_bit(&self) -> u32 {
        match self.key.as_str() {
            "Alt" => ALT,
            "Control" => CONTROL,
            "Meta" => META,
            "Shift" => SHIFT,
            _ => 0,
        }
    }

    /// (key, text) sent with or without Shift held.
    pub fn as_typed(&self, shift: bool) -> (String, Option<String>) {
        match (&self.shifted, shift) {
            (Some((k, _)), true) => (k.clone(), Some(k.clone())),
            _ => (self.key.clone(), self.text.clone()),
        }
    }
}

/// (code, keyCode, key, shifted key, shifted keyCode, location).
type Row = (&'static str, u32, &'static str, Option<&'static str>, u32, u32);

#[rustfmt::skip]
const LAYOUT: &[Row] = &[
    ("Escape", 27, "Escape", None, 0, 0),
    ("F1", 112, "F1", None, 0, 0), ("F2", 113, "F2", None, 0, 0), ("F3", 114, "F3", None, 0, 0),
    ("F4", 115, "F4", None, 0, 0), ("F5", 116, "F5", None, 0, 0), ("F6", 117, "F6", None, 0, 0),
    ("F7", 118, "F7", None, 0, 0), ("F8", 119, "F8", None, 0, 0), ("F9", 120, "F9", None, 0, 0),
    ("F10", 121, "F10", None, 0, 0), ("F11", 122, "F11", None, 0, 0), ("F12", 123, "F12", None, 0, 0),
    ("Backquote", 192, "`", Some("~"), 0, 0),
    ("Digit1", 49, "1", Some("!"), 0, 0), ("Digit2", 50, "2", Some("@"), 0, 0), ("Digit3", 51, "3", Some("#"), 0, 0),
    ("Digit4", 52, "4", Some("$"), 0, 0), ("Digit5", 53, "5", Some("%"), 0, 0), ("Digit6", 54, "6", Some("^"), 0, 0),
    ("Digit7", 55, "7", Some("&"), 0, 0), ("Digit8", 56, "8", Some("*"), 0, 0), ("Digit9", 57, "9", Some("("), 0, 0),
    ("Digit0", 48, "0", Some(")"), 0, 0),
    ("Minus", 189, "-", Some("_"), 0, 0), ("Equal", 187, "=", Some("+"), 0, 0), ("Backslash", 220, "\\", Some("|"), 0, 0),
    ("Backspace", 8, "Backspace", None, 0, 0), ("Tab", 9, "Tab", None, 0, 0),
    ("BracketLeft", 219, "[", Some("{"), 0, 0), ("BracketRight", 221, "]", Some("}"), 0, 0),
    ("CapsLock", 20, "CapsLock", None, 0, 0),
    ("Semicolon", 186, ";", Some(":"), 0, 0), ("Quote", 222, "'", Some("\""), 0, 0),
    ("Enter", 13, "Enter", None, 0, 0),
    ("ShiftLeft", 16, "Shift", None, 0, 1), ("ShiftRight", 16, "Shift", None, 0, 2),
    ("Comma", 188, ",", Some("<"), 0, 0), ("Period", 190, ".", Some(">"), 0, 0), ("Slash", 191, "/", Some("?"), 0, 0),
    ("ControlLeft", 17, "Control", None, 0, 1), ("ControlRight", 17, "Control", None, 0, 2),
    ("MetaLeft", 91, "Meta", None, 0, 1), ("MetaRight", 92, "Meta", None, 0, 2),
    ("AltLeft", 18, "Alt", None, 0, 1), ("AltRight", 18, "Alt", None, 0, 2), ("AltGraph", 225, "AltGraph", None, 0, 0),
    ("Space", 32, " ", None, 0, 0), ("ContextMenu", 93, "ContextMenu", None, 0, 0),
    ("PrintScreen", 44, "PrintScreen", None, 0, 0), ("ScrollLock", 145, "ScrollLock", None, 0, 0),
    ("Pause", 19, "Pause", None, 0, 0),
    ("PageUp", 33, "PageUp", None, 0, 0), ("PageDown", 34, "PageDown", None, 0, 0), ("Insert", 45, "Insert", None, 0, 0),
    ("Delete", 46, "Delete", None, 0, 0), ("Home", 36, "Home", None, 0, 0), ("End", 35, "End", None, 0, 0),
    ("ArrowLeft", 37, "ArrowLeft", None, 0, 0), ("ArrowUp", 38, "ArrowUp", None, 0, 0),
    ("ArrowRight", 39, "ArrowRight", None, 0, 0), ("ArrowDown", 40, "ArrowDown", None, 0, 0),
    ("NumLock", 144, "NumLock", None, 0, 0),
    ("NumpadDivide", 111, "/", None, 0, 3), ("NumpadMultiply", 106, "*", None, 0, 3),
    ("NumpadSubtract", 109, "-", None, 0, 3), ("NumpadAdd", 107, "+", None, 0, 3),
    ("Numpad7", 36, "Home", Some("7"), 103, 3), ("Numpad8", 38, "ArrowUp", Some("8"), 104, 3),
    ("Numpad9", 33, "PageUp", Some("9"), 105, 3), ("Numpad4", 37, "ArrowLeft", Some("4"), 100, 3),
    ("Numpad5", 12, "Clear", Some("5"), 101, 3), ("Numpad6", 39, "ArrowRight", Some("6"), 102, 3),
    ("Numpad1", 35, "End", Some("1"), 97, 3), ("Numpad2", 40, "ArrowDown", Some("2"), 98, 3),
    ("Numpad3", 34, "PageDown", Some("3"), 99, 3), ("Numpad0", 45, "Insert", Some("0"), 96, 3),
    ("NumpadDecimal", 46, "Delete", Some("."), 110, 3), ("NumpadEnter", 13, "Enter", None, 0, 3),
];

const LETTERS: &str = "abcdefghijklmnopqrstuvwxyz";
const LETTER_CODES: [&str; 26] = [
    "KeyA", "KeyB", "KeyC", "KeyD", "KeyE", "KeyF", "KeyG", "KeyH", "KeyI", "KeyJ", "KeyK", "KeyL", "KeyM", "KeyN",
    "KeyO", "KeyP", "KeyQ", "KeyR", "KeyS", "KeyT", "KeyU", "KeyV", "KeyW", "KeyX", "KeyY", "KeyZ",
];

fn from_row(r: &Row, with_shifted: bool) -> Key {
    let (code, key_code, key, shift, shift_code, location) = *r;
    let text = if key.chars().count() == 1 {
        Some(key.to_string())
    } else if key == "Enter" {
        Some("\r".to_string())
    } else {
        None
    };
    let shifted = if with_shifted {
        shift.map(|s| (s.to_string(), if shift_code > 0 { shift_code } else { key_code }))
    } else {
        None
    };
    Key { key: key.to_string(), code, key_code, text, location, shifted }
}

fn letter(i: usize, upper: bool, with_shifted: bool) -> Option<Key> {
    let c = LETTERS.as_bytes().get(i).copied()? as char;
    let (lower, up) = (c.to_string(), c.to_ascii_uppercase().to_string());
    let key = if upper { up.clone() } else { lower };
    let shifted = with_shifted.then(|| (up.clone(), c.to_ascii_uppercase() as u32));
    Some(Key {
        key: key.clone(),
        code: LETTER_CODES[i],
        key_code: c.to_ascii_uppercase() as u32,
        text: Some(key),
        location: 0,
        shifted,
    })
}

/// The key a Playwright key name stands for, or `None` for an unknown name.
pub fn describe(name: &str) -> Option<Key> {
    // By code: the only lookup that knows the shifted form.
    if let Some(r) = LAYOUT.iter().find(|r| r.0 == name) {
        return Some(from_row(r, true));
    }
    if let Some(i) = LETTER_CODES.iter().position(|c| *c == name) {
        return letter(i, false, true);
    }
    // Aliases.
    let alias = match name {
        "Shift" => Some("ShiftLeft"),
        "Control" => Some("ControlLeft"),
        "Alt" => Some("AltLeft"),
        "Meta" => Some("MetaLeft"),
        "\n" | "\r" => Some("Enter"),
        _ => None,
    };
    if let Some(code) = alias {
        return LAYOUT.iter().find(|r| r.0 == code).map(|r| from_row(r, false));
    }
    // By the one character a key (not on the numpad) types, plain or shifted.
    let mut chars = name.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else { return None };
    if let Some(i) = LETTERS.find(c.to_ascii_lowercase()).filter(|_| c.is_ascii_alphabetic()) {
        return letter(i, c.is_ascii_uppercase(), false);
    }
    for r in LAYOUT.iter().filter(|r| r.5 == 0) {
        if r.2 == name {
            return Some(from_row(r, false));
        }
        if r.3 == Some(name) {
            let mut k = from_row(r, false);
            k.key = name.to_string();
            k.text = Some(name.to_string());
            if r.4 > 0 {
                k.key_code = r.4;
            }
            return Some(k);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_as_in_playwright() {
        let enter = describe("Enter").unwrap_or_else(|| panic!("Enter"));
        assert_eq!((enter.key_code, enter.text.as_deref()), (13, Some("\r")));
        assert_eq!(describe("a").map(|k| (k.code, k.key_code)), Some(("KeyA", 65)));
        assert_eq!(describe("A").map(|k| k.key), Some("A".to_string()));
        assert_eq!(describe("%").map(|k| k.code), Some("Digit5"));
        assert_eq!(describe("Control").map(|k| k.modifier_bit()), Some(CONTROL));
        assert_eq!(describe("KeyA").map(|k| k.as_typed(true).0), Some("A".to_string()));
        assert_eq!(describe("F12").map(|k| k.key_code), Some(123));
        assert_eq!(describe(" ").map(|k| k.code), Some("Space"));
        for unknown in ["enter", "control", "Ctrl", "NoSuchKey", "é", ""] {
            assert!(describe(unknown).is_none(), "{unknown:?}");
        }
    }
}
