//! WebArena's action syntax (`docs/webarena.md`, actions): parsing an agent's
//! text into an [`Action`] and printing it back.
//!
//! Parsing follows WebArena's `create_id_based_action` rule for rule: the verb
//! is the text before the first `[` (or the first word when there is none), and
//! each verb's arguments are found by the same searches WebArena makes, so the
//! action-history form `click [12] where [12] is link 'Issues'` is a click,
//! `scroll down` a scroll, and the greedy `stop [a] [b]` answers `a] [b`.
//! Text that WebArena could not parse is [`Action::Invalid`]: the step is taken
//! with `last_action_error` set, as WebArena takes a `none` action. One
//! departure: free text (a `type` text, a `stop` answer, a `goto` URL, `press`
//! keys) may span lines, where WebArena's `.` stops at a newline and drops a
//! multi-line answer.

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;

/// One primitive browser action. Element ids are the `[id]`s of the observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Click {
        id: u64,
    },
    /// `type [id] [text] [1]` presses Enter after typing; any other flag does
    /// not (default 1, as WebArena). The text is typed where the click on the
    /// element put the caret, after what the field already holds.
    Type {
        id: u64,
        text: String,
        enter: bool,
    },
    Hover {
        id: u64,
    },
    Press {
        keys: String,
    },
    Scroll {
        down: bool,
    },
    Goto {
        url: String,
    },
    GoBack,
    GoForward,
    NewTab,
    TabFocus {
        index: usize,
    },
    CloseTab,
    Stop {
        answer: String,
    },
    /// A skill's `fill` replayed by the skills agent: the field's text is
    /// replaced (then Enter when asked). Not WebArena's syntax: it is never
    /// parsed from text and prints as `fill [id] [text] [0|1]`.
    Fill {
        id: u64,
        text: String,
        enter: bool,
    },
    /// An action string WebArena's parser refuses; executing it is an action
    /// error carrying `reason`.
    Invalid {
        text: String,
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse action '{text}': {reason}")]
pub struct ParseActionError {
    pub text: String,
    pub reason: String,
}

/// WebArena's argument searches, compiled once.
struct Patterns {
    click: Regex,
    hover: Regex,
    typ: Regex,
    press: Regex,
    scroll: Regex,
    goto: Regex,
    tab_focus: Regex,
    stop: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        // Literal patterns: compiling them cannot fail.
        #[allow(clippy::unwrap_used)]
        let re = |p: &str| Regex::new(p).unwrap();
        Patterns {
            click: re(r"click ?\[(\d+)\]"),
            hover: re(r"hover ?\[(\d+)\]"),
            typ: re(r"(?s)type ?\[(\d+)\] ?\[(.+)\] ?\[(\d+)\]"),
            press: re(r"(?s)press ?\[(.+)\]"),
            scroll: re(r"scroll ?\[?(up|down)\]?"),
            goto: re(r"(?s)goto ?\[(.+)\]"),
            tab_focus: re(r"tab_focus ?\[(\d+)\]"),
            stop: re(r"(?s)stop ?\[(.+)\]"),
        }
    })
}

impl Action {
    /// Parses one action as WebArena's parser does; surrounding whitespace is ignored.
    pub fn parse(text: &str) -> Result<Action, ParseActionError> {
        let t = text.trim();
        let err = |reason: String| ParseActionError { text: t.to_string(), reason };
        let verb = match t.find('[') {
            Some(i) => t[..i].trim(),
            None => t.split_whitespace().next().unwrap_or(""),
        };
        let p = patterns();
        let group = |re: &Regex, what: &str| -> Result<Vec<String>, ParseActionError> {
            re.captures(t)
                .map(|c| c.iter().skip(1).map(|m| m.map_or(String::new(), |m| m.as_str().to_string())).collect())
                .ok_or_else(|| err(format!("expected {what}")))
        };
        let id = |s: &str| s.parse::<u64>().map_err(|_| err(format!("element id '{s}' is out of range")));
        match verb {
            "click" => Ok(Action::Click { id: id(&group(&p.click, "click [id]")?[0])? }),
            "hover" => Ok(Action::Hover { id: id(&group(&p.hover, "hover [id]")?[0])? }),
            "type" => {
                // WebArena adds the default enter flag when the text does not end with one.
                let with_flag =
                    if t.ends_with("[0]") || t.ends_with("[1]") { t.to_string() } else { format!("{t} [1]") };
                let c = p.typ.captures(&with_flag).ok_or_else(|| err("expected type [id] [text] [0|1]".into()))?;
                let part = |i: usize| c.get(i).map_or("", |m| m.as_str());
                Ok(Action::Type { id: id(part(1))?, text: part(2).to_string(), enter: part(3) == "1" })
            }
            "press" => Ok(Action::Press { keys: group(&p.press, "press [keys]")?.remove(0) }),
            "scroll" => Ok(Action::Scroll { down: group(&p.scroll, "scroll [up|down]")?[0] == "down" }),
            "goto" => Ok(Action::Goto { url: group(&p.goto, "goto [url]")?.remove(0) }),
            "new_tab" => Ok(Action::NewTab),
            "go_back" => Ok(Action::GoBack),
            "go_forward" => Ok(Action::GoForward),
            "tab_focus" => {
                let n = group(&p.tab_focus, "tab_focus [index]")?.remove(0);
                let index = n.parse().map_err(|_| err(format!("tab index '{n}' is out of range")))?;
                Ok(Action::TabFocus { index })
            }
            "close_tab" => Ok(Action::CloseTab),
            // Some tasks need no answer: `stop` alone answers "".
            "stop" => {
                Ok(Action::Stop { answer: p.stop.captures(t).and_then(|c| c.get(1)).map_or("", |m| m.as_str()).into() })
            }
            "" => Err(err("empty action".into())),
            other => Err(err(format!("unknown action '{other}'"))),
        }
    }

    /// [`Action::parse`], with text WebArena's parser refuses kept as [`Action::Invalid`].
    pub fn parse_lenient(text: &str) -> Action {
        Action::parse(text).unwrap_or_else(|e| Action::Invalid { text: e.text, reason: e.reason })
    }

    /// The parse failure this action stands for, if it is one.
    pub fn is_invalid(&self) -> bool {
        matches!(self, Action::Invalid { .. })
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Click { id } => write!(f, "click [{id}]"),
            Action::Type { id, text, enter } => write!(f, "type [{id}] [{text}] [{}]", u8::from(*enter)),
            Action::Hover { id } => write!(f, "hover [{id}]"),
            Action::Press { keys } => write!(f, "press [{keys}]"),
            Action::Scroll { down } => write!(f, "scroll [{}]", if *down { "down" } else { "up" }),
            Action::Goto { url } => write!(f, "goto [{url}]"),
            Action::GoBack => f.write_str("go_back"),
            Action::GoForward => f.write_str("go_forward"),
            Action::NewTab => f.write_str("new_tab"),
            Action::TabFocus { index } => write!(f, "tab_focus [{index}]"),
            Action::CloseTab => f.write_str("close_tab"),
            Action::Stop { answer } => write!(f, "stop [{answer}]"),
            Action::Fill { id, text, enter } => write!(f, "fill [{id}] [{text}] [{}]", u8::from(*enter)),
            Action::Invalid { text, .. } => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_webarena_action_and_round_trips() {
        for text in [
            "click [12]",
            "type [5] [hello world] [0]",
            "hover [3]",
            "press [Control+a]",
            "scroll [down]",
            "goto [http://x/a?b=1]",
            "go_back",
            "go_forward",
            "new_tab",
            "tab_focus [2]",
            "close_tab",
            "stop [The answer is [42]]",
        ] {
            let a = Action::parse(text).unwrap();
            assert_eq!(a.to_string(), text);
        }
        assert_eq!(Action::parse("type [5] [hi]").unwrap(), Action::Type { id: 5, text: "hi".into(), enter: true });
        assert_eq!(Action::parse("stop").unwrap(), Action::Stop { answer: String::new() });
    }

    #[test]
    fn parses_as_leniently_as_webarena() {
        let cases = [
            ("click [12] where [12] is link 'Issues'", Action::Click { id: 12 }),
            ("click[7]", Action::Click { id: 7 }),
            ("hover [3] where [3] is button 'Save'", Action::Hover { id: 3 }),
            ("scroll down", Action::Scroll { down: true }),
            ("scroll [up]", Action::Scroll { down: false }),
            ("scroll [downward]", Action::Scroll { down: true }),
            ("stop [a] [b]", Action::Stop { answer: "a] [b".into() }),
            ("stop []", Action::Stop { answer: String::new() }),
            ("type [1] [a] [2]", Action::Type { id: 1, text: "a] [2".into(), enter: true }),
            ("stop [line one\nline two]", Action::Stop { answer: "line one\nline two".into() }),
            ("type [1] [a] [0] where [1] is textbox", Action::Type { id: 1, text: "a".into(), enter: false }),
            ("go_back [now]", Action::GoBack),
            ("new_tab please", Action::NewTab),
            ("tab_focus [0]", Action::TabFocus { index: 0 }),
        ];
        for (text, want) in cases {
            assert_eq!(Action::parse(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn refuses_what_webarena_refuses() {
        for bad in [
            "",
            "click",
            "click [x]",
            "jump [3]",
            "scroll [left]",
            "click [1",
            "type [5] [abc] where [5] is textbox",
            "tab_focus",
            "Click [3]",
        ] {
            assert!(Action::parse(bad).is_err(), "{bad:?} should not parse");
            assert!(Action::parse_lenient(bad).is_invalid());
        }
    }
}
