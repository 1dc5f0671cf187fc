//! WebArena's action syntax (`docs/formats.md`, agent protocol): parsing an
//! agent's text into an [`Action`] and printing it back.

use std::fmt;

/// One primitive browser action. Element ids are the `[id]`s of the observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Click {
        id: u64,
    },
    /// `type [id] [text] [1]` presses Enter after typing; `[0]` does not (default 1, as WebArena).
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
    Stop {
        answer: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse action '{text}': {reason}")]
pub struct ParseActionError {
    pub text: String,
    pub reason: String,
}

impl Action {
    /// Parses one action; surrounding whitespace and a trailing newline are ignored.
    pub fn parse(text: &str) -> Result<Action, ParseActionError> {
        let t = text.trim();
        let err = |reason: &str| ParseActionError { text: t.to_string(), reason: reason.to_string() };
        let (verb, rest) = match t.find([' ', '[']) {
            Some(i) => (&t[..i], t[i..].trim()),
            None => (t, ""),
        };
        let args = brackets(rest).map_err(|r| err(&r))?;
        let id = |args: &[String]| -> Result<u64, ParseActionError> {
            args.first()
                .and_then(|a| a.trim().parse().ok())
                .ok_or_else(|| err("expected a numeric element id in brackets"))
        };
        let want = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(err(&format!("expected {n} bracketed argument(s), found {}", args.len())))
            }
        };
        match verb {
            "click" => {
                want(1)?;
                Ok(Action::Click { id: id(&args)? })
            }
            "hover" => {
                want(1)?;
                Ok(Action::Hover { id: id(&args)? })
            }
            "type" => {
                if args.len() != 2 && args.len() != 3 {
                    return Err(err("expected type [id] [text] [0|1]"));
                }
                let enter = match args.get(2).map(|s| s.trim()) {
                    None | Some("1") => true,
                    Some("0") => false,
                    Some(_) => return Err(err("the enter flag must be 0 or 1")),
                };
                Ok(Action::Type { id: id(&args)?, text: args[1].clone(), enter })
            }
            "press" => {
                want(1)?;
                Ok(Action::Press { keys: args[0].clone() })
            }
            "scroll" => {
                want(1)?;
                match args[0].trim() {
                    "down" => Ok(Action::Scroll { down: true }),
                    "up" => Ok(Action::Scroll { down: false }),
                    _ => Err(err("scroll takes [up] or [down]")),
                }
            }
            "goto" => {
                want(1)?;
                Ok(Action::Goto { url: args[0].trim().to_string() })
            }
            "go_back" => {
                want(0)?;
                Ok(Action::GoBack)
            }
            "go_forward" => {
                want(0)?;
                Ok(Action::GoForward)
            }
            "stop" => {
                if args.len() > 1 {
                    return Err(err("stop takes at most one [answer]"));
                }
                Ok(Action::Stop { answer: args.first().cloned().unwrap_or_default() })
            }
            "" => Err(err("empty action")),
            other => Err(err(&format!("unknown action '{other}'"))),
        }
    }
}

/// Splits `[a] [b c] [d]` into its bracketed parts. The last part may contain `]`
/// (free text such as an answer), so it runs to the final `]`.
fn brackets(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        if !rest.starts_with('[') {
            return Err(format!("unexpected text '{rest}' outside brackets"));
        }
        let close = match rest[1..].find("] [") {
            Some(i) => i + 1,
            None => rest.rfind(']').filter(|&i| i > 0).ok_or_else(|| "unclosed '['".to_string())?,
        };
        out.push(rest[1..close].to_string());
        rest = rest[close + 1..].trim_start();
    }
    Ok(out)
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
            Action::Stop { answer } => write!(f, "stop [{answer}]"),
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
            "stop [The answer is [42]]",
        ] {
            let a = Action::parse(text).unwrap();
            assert_eq!(a.to_string(), text);
        }
        assert_eq!(Action::parse("type [5] [hi]").unwrap(), Action::Type { id: 5, text: "hi".into(), enter: true });
        assert_eq!(Action::parse("stop").unwrap(), Action::Stop { answer: String::new() });
    }

    #[test]
    fn rejects_malformed_actions() {
        for bad in
            ["", "click", "click [x]", "click [1] [2]", "jump [3]", "scroll [left]", "type [1] [a] [2]", "click [1"]
        {
            assert!(Action::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }
}
