//! The perturbations a page the agent saw carried, as one type
//! ([`AppliedPerturbation`]) with its phrase (docs/formats.md#trajectories):
//! the worker renders it into a trajectory step's `perturbations`, the failure
//! categories and the viewer's marks read it back from there. The phrase is
//! the only form that crosses crates and files, so it is written and parsed
//! here alone:
//!
//! | variant | phrase |
//! |---|---|
//! | [`Relabel`](AppliedPerturbation::Relabel) | `relabel: 'Issues' -> 'Tickets'` |
//! | [`Reorder`](AppliedPerturbation::Reorder) | `reorder: 2 menus` |
//! | [`LateRender`](AppliedPerturbation::LateRender) | `late render: 3 elements` |
//! | [`Distractors`](AppliedPerturbation::Distractors) | `distractors` |
//! | [`Modal`](AppliedPerturbation::Modal) | `modal` |
//! | [`SwallowedClick`](AppliedPerturbation::SwallowedClick) | `swallowed click: <element>` |
//!
//! Any other phrase (written by an older worker, say `relabel: 3 labels`, or
//! by another tool) reads as [`Other`](AppliedPerturbation::Other) and renders
//! back unchanged, so reading and writing a trajectory never alters it.

use std::fmt;

/// One perturbation on the page of a trajectory step.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AppliedPerturbation {
    /// An element's accessible name was renamed from `from` to `to`.
    Relabel { from: String, to: String },
    /// This many navigation menus were reordered.
    Reorder { menus: u32 },
    /// This many controls are rendered some agent steps late.
    LateRender { elements: u32 },
    /// The banner and link block of distractors were inserted.
    Distractors,
    /// The interstitial modal is on the page.
    Modal,
    /// A click on `element` (the page script's signature: tag and name) was swallowed.
    SwallowedClick { element: String },
    /// A phrase this project does not write (kept as written).
    Other(String),
}

const RELABEL: &str = "relabel: '";
const RELABEL_ARROW: &str = "' -> '";
const REORDER: (&str, &str) = ("reorder: ", " menus");
const LATE_RENDER: (&str, &str) = ("late render: ", " elements");
const DISTRACTORS: &str = "distractors";
const MODAL: &str = "modal";
const SWALLOWED: &str = "swallowed click: ";

impl AppliedPerturbation {
    /// The perturbation a phrase names; a phrase of no known form is [`AppliedPerturbation::Other`].
    /// `parse(p).to_string() == p` for every phrase `p`.
    pub fn parse(phrase: &str) -> AppliedPerturbation {
        if phrase == MODAL {
            return AppliedPerturbation::Modal;
        }
        if phrase == DISTRACTORS {
            return AppliedPerturbation::Distractors;
        }
        if let Some(element) = phrase.strip_prefix(SWALLOWED) {
            return AppliedPerturbation::SwallowedClick { element: element.to_string() };
        }
        if let Some((from, to)) =
            phrase.strip_prefix(RELABEL).and_then(|p| p.strip_suffix('\'')).and_then(|p| p.split_once(RELABEL_ARROW))
        {
            return AppliedPerturbation::Relabel { from: from.to_string(), to: to.to_string() };
        }
        if let Some(menus) = count(phrase, REORDER) {
            return AppliedPerturbation::Reorder { menus };
        }
        if let Some(elements) = count(phrase, LATE_RENDER) {
            return AppliedPerturbation::LateRender { elements };
        }
        AppliedPerturbation::Other(phrase.to_string())
    }

    /// The names this perturbation put on the page (a relabel's new name), which the viewer marks in
    /// the observation. An unknown phrase's are its quoted texts (the last alone if it names a relabel).
    pub fn shown_names(&self) -> Vec<&str> {
        match self {
            AppliedPerturbation::Relabel { to, .. } => vec![to.as_str()],
            AppliedPerturbation::Other(phrase) => {
                let quoted = phrase.split('\'').skip(1).step_by(2);
                if phrase.trim_start().starts_with("relabel") {
                    quoted.last().into_iter().collect()
                } else {
                    quoted.collect()
                }
            }
            _ => Vec::new(),
        }
    }
}

/// The number `n` of a phrase `<prefix><n><suffix>`, when `n` is written as this module writes it.
fn count(phrase: &str, (prefix, suffix): (&str, &str)) -> Option<u32> {
    let digits = phrase.strip_prefix(prefix)?.strip_suffix(suffix)?;
    let n: u32 = digits.parse().ok()?;
    (n.to_string() == digits).then_some(n)
}

impl fmt::Display for AppliedPerturbation {
    /// The phrase a trajectory step carries.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppliedPerturbation::Relabel { from, to } => write!(f, "{RELABEL}{from}{RELABEL_ARROW}{to}'"),
            AppliedPerturbation::Reorder { menus } => write!(f, "{}{menus}{}", REORDER.0, REORDER.1),
            AppliedPerturbation::LateRender { elements } => write!(f, "{}{elements}{}", LATE_RENDER.0, LATE_RENDER.1),
            AppliedPerturbation::Distractors => f.write_str(DISTRACTORS),
            AppliedPerturbation::Modal => f.write_str(MODAL),
            AppliedPerturbation::SwallowedClick { element } => write!(f, "{SWALLOWED}{element}"),
            AppliedPerturbation::Other(phrase) => f.write_str(phrase),
        }
    }
}

impl From<&str> for AppliedPerturbation {
    fn from(phrase: &str) -> Self {
        AppliedPerturbation::parse(phrase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phrase_reads_back_as_it_was_written() {
        let known = [
            AppliedPerturbation::Relabel { from: "Issues".into(), to: "Tickets".into() },
            AppliedPerturbation::Relabel { from: "Don't save".into(), to: "Don't store".into() },
            AppliedPerturbation::Reorder { menus: 2 },
            AppliedPerturbation::LateRender { elements: 0 },
            AppliedPerturbation::Distractors,
            AppliedPerturbation::Modal,
            AppliedPerturbation::SwallowedClick { element: "BUTTON|Save".into() },
        ];
        for p in known {
            assert_eq!(AppliedPerturbation::parse(&p.to_string()), p, "{p}");
        }
        assert_eq!(
            AppliedPerturbation::Relabel { from: "Issues".into(), to: "Tickets".into() }.to_string(),
            "relabel: 'Issues' -> 'Tickets'",
            "the form docs/formats.md pins"
        );
        for phrase in ["relabel: 3 labels", "reorder: 02 menus", "late render: x elements", "Modal", "", "relabel: 'a'"]
        {
            assert_eq!(AppliedPerturbation::parse(phrase), AppliedPerturbation::Other(phrase.into()), "{phrase}");
            assert_eq!(AppliedPerturbation::parse(phrase).to_string(), phrase);
        }
    }

    #[test]
    fn a_relabel_shows_its_new_name_and_an_unknown_phrase_its_quoted_texts() {
        assert_eq!(AppliedPerturbation::parse("relabel: 'Issues' -> 'Tickets'").shown_names(), vec!["Tickets"]);
        assert_eq!(AppliedPerturbation::parse("distractor: 'Promo' 'Sale'").shown_names(), vec!["Promo", "Sale"]);
        assert_eq!(AppliedPerturbation::parse("relabel: 'a' 'b'").shown_names(), vec!["b"]);
        assert!(AppliedPerturbation::Modal.shown_names().is_empty());
    }
}
