//! The perception and execution perturbations of the `-perc` and `-exec`
//! conditions, applied inside the page.
//!
//! A profile (`data/perturbations/default.json`, schema
//! `skillshift.perturbations/1`) holds the parameters; [`Perturbation::for_attempt`]
//! picks the half that the condition asks for and derives the attempt's seed from
//! (sweep seed, family, condition, rep). [`Perturbation::install`] registers
//! `perturb.js` with `Page.addScriptToEvaluateOnNewDocument`, so it runs before
//! every document the attempt loads, for the agent and the skills alike.
//! `docs/conditions.md` documents each perturbation and shows what an agent sees.
//! [`shown`] reads what the script reports it applied into the
//! [`AppliedPerturbation`]s a trajectory step carries.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use skillshift_common::ids::{Family, Shift};
use skillshift_common::perturbation::AppliedPerturbation;
use skillshift_common::Condition;

use crate::browser::{BrowserError, Session};

pub const PROFILE_SCHEMA: &str = "skillshift.perturbations/1";
/// The default profile, compiled in so a worker needs no data directory.
pub const DEFAULT_PROFILE: &str = include_str!("../../data/perturbations/default.json");
const SCRIPT: &str = include_str!("perturb.js");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub schema: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub perception: Perception,
    pub execution: Execution,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perception {
    pub relabel: Relabel,
    pub distractors: Distractors,
    pub reorder_nav: Share,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Relabel {
    /// Share of interactive elements whose name holds a word of `synonyms` that are relabelled.
    pub share: f64,
    /// Lowercase word or phrase -> replacements.
    pub synonyms: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Distractors {
    pub banner: Option<Banner>,
    pub links: Option<LinkBlock>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Banner {
    pub label: String,
    pub text: String,
    pub buttons: Vec<String>,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkBlock {
    pub label: String,
    pub texts: Vec<String>,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Share {
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Execution {
    pub interstitial: Option<Interstitial>,
    pub swallow_clicks: Share,
    pub late_render: LateRender,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interstitial {
    /// The modal appears at a step drawn uniformly from `first_step..=last_step`.
    pub first_step: u32,
    pub last_step: u32,
    pub title: String,
    pub text: String,
    pub dismiss: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LateRender {
    pub share: f64,
    /// An element hidden when its page loads during agent step `s` is shown from step `s + after_steps`
    /// (the page's first observation is at `s + 1`). Counted in steps, not time, so a slow machine meets
    /// the same page.
    pub after_steps: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{where_}: {cause}")]
    Read { where_: String, cause: std::io::Error },
    #[error("{where_}: {cause}")]
    Json { where_: String, cause: serde_json::Error },
    #[error("{where_}: {problem}")]
    Invalid { where_: String, problem: ProfileProblem },
}

/// What is wrong with a profile that reads as one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileProblem {
    #[error("schema is '{0}', expected '{schema}'", schema = PROFILE_SCHEMA)]
    Schema(String),
    #[error("{name} is {value}, expected a share in [0, 1]")]
    Share { name: &'static str, value: f64 },
    #[error("execution.interstitial.first_step is after last_step")]
    InterstitialSteps,
    #[error("perception.relabel.synonyms['{0}'] must be lowercase with non-empty synonyms")]
    Synonyms(String),
}

impl Profile {
    pub fn default_profile() -> Profile {
        // The compiled-in profile is checked by a unit test; should it ever be broken, say so loudly and
        // run unperturbed rather than panic in a worker.
        Profile::parse(DEFAULT_PROFILE, "the built-in default profile").unwrap_or_else(|e| {
            tracing::error!(error = %e, "perturbation profile is invalid; running without perturbations");
            Profile::inert()
        })
    }

    fn inert() -> Profile {
        Profile {
            schema: PROFILE_SCHEMA.into(),
            name: "inert".into(),
            description: String::new(),
            perception: Perception {
                relabel: Relabel { share: 0.0, synonyms: BTreeMap::new() },
                distractors: Distractors { banner: None, links: None },
                reorder_nav: Share { share: 0.0 },
            },
            execution: Execution {
                interstitial: None,
                swallow_clicks: Share { share: 0.0 },
                late_render: LateRender { share: 0.0, after_steps: 0 },
            },
        }
    }

    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let w = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|cause| ProfileError::Read { where_: w.clone(), cause })?;
        Profile::parse(&text, &w)
    }

    pub fn from_value(v: &Value, where_: &str) -> Result<Profile, ProfileError> {
        let p: Profile =
            serde_json::from_value(v.clone()).map_err(|cause| ProfileError::Json { where_: where_.into(), cause })?;
        p.check().map_err(|problem| ProfileError::Invalid { where_: where_.into(), problem })?;
        Ok(p)
    }

    pub fn parse(text: &str, where_: &str) -> Result<Profile, ProfileError> {
        let p: Profile =
            serde_json::from_str(text).map_err(|cause| ProfileError::Json { where_: where_.into(), cause })?;
        p.check().map_err(|problem| ProfileError::Invalid { where_: where_.into(), problem })?;
        Ok(p)
    }

    fn check(&self) -> Result<(), ProfileProblem> {
        if self.schema != PROFILE_SCHEMA {
            return Err(ProfileProblem::Schema(self.schema.clone()));
        }
        let shares = [
            ("perception.relabel.share", self.perception.relabel.share),
            ("perception.reorder_nav.share", self.perception.reorder_nav.share),
            ("execution.swallow_clicks.share", self.execution.swallow_clicks.share),
            ("execution.late_render.share", self.execution.late_render.share),
        ];
        for (name, value) in shares {
            if !(0.0..=1.0).contains(&value) {
                return Err(ProfileProblem::Share { name, value });
            }
        }
        if let Some(m) = &self.execution.interstitial {
            if m.first_step > m.last_step {
                return Err(ProfileProblem::InterstitialSteps);
            }
        }
        for (k, v) in &self.perception.relabel.synonyms {
            if k.to_lowercase() != *k || v.is_empty() || v.iter().any(|s| s.is_empty()) {
                return Err(ProfileProblem::Synonyms(k.clone()));
            }
        }
        Ok(())
    }
}

/// The perturbation of one attempt: which half of the profile, and its seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Perturbation {
    pub shift: Shift,
    pub seed: u64,
    pub profile: Profile,
}

/// The attempt's perturbation seed: sha256 of (sweep seed, family, condition, rep).
pub fn attempt_seed(sweep_seed: u64, family: Family, condition: Condition, rep: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(format!("skillshift.perturb|{sweep_seed}|{family}|{condition}|{rep}").as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

impl Perturbation {
    pub fn for_attempt(profile: Profile, sweep_seed: u64, family: Family, condition: Condition, rep: u32) -> Self {
        Perturbation { shift: condition.shift(), seed: attempt_seed(sweep_seed, family, condition, rep), profile }
    }

    /// The script injected into every document, or `None` for `src` / `tgt`.
    pub fn script(&self) -> Option<String> {
        let (perception, execution) = match self.shift {
            Shift::None => return None,
            Shift::Perception => (serde_json::to_value(&self.profile.perception).ok()?, Value::Null),
            Shift::Execution => (Value::Null, serde_json::to_value(&self.profile.execution).ok()?),
        };
        let cfg = json!({"seed": (self.seed & 0xffff_ffff), "perception": perception, "execution": execution});
        Some(SCRIPT.replace("__SKILLSHIFT_CFG__", &cfg.to_string()))
    }

    /// Registers the script for every later document of the session; returns
    /// its identifier, or `None` when there is none.
    pub async fn install(&self, session: &Session) -> Result<Option<String>, BrowserError> {
        let Some(source) = self.script() else { return Ok(None) };
        let r = session.cdp("Page.addScriptToEvaluateOnNewDocument", json!({"source": source})).await?;
        Ok(r.get("identifier").and_then(Value::as_str).map(str::to_string))
    }

    /// Tells the page which agent step is about to be observed (the modal
    /// interstitial appears at a seeded step). Returns what was applied so far.
    pub async fn set_step(&self, session: &Session, step: u32) -> Result<Value, BrowserError> {
        if self.shift == Shift::None {
            return Ok(Value::Null);
        }
        match session.eval(&format!("window.__skillshift ? window.__skillshift.setStep({step}) : null")).await {
            Ok(v) => Ok(v),
            Err(e) if e.is_fatal() => Err(e),
            Err(_) => Ok(Value::Null),
        }
    }
}

/// One change the page script reports it applied to the current document (`window.__skillshift.applied`).
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Reported {
    Relabel { from: String, to: String },
    Reorder { menus: u32 },
    Late { elements: u32 },
    Distractors,
    Modal,
    Swallowed { element: String },
}

/// The perturbations on the observed page, from what the page script reports it applied (`applied`,
/// as [`Perturbation::set_step`] returns it), each once, in the order first applied: no late render
/// that hid nothing, and the modal only while the interstitial titled `modal_title` is in
/// `observation`. An item the script did not write in a known shape is left out.
pub fn shown(applied: &Value, observation: &str, modal_title: Option<&str>) -> Vec<AppliedPerturbation> {
    let Some(items) = applied.as_array() else { return Vec::new() };
    let mut out = Vec::new();
    for item in items {
        let Ok(reported) = Reported::deserialize(item) else { continue };
        let p = match reported {
            Reported::Relabel { from, to } => AppliedPerturbation::Relabel { from, to },
            Reported::Reorder { menus } => AppliedPerturbation::Reorder { menus },
            Reported::Late { elements } if elements > 0 => AppliedPerturbation::LateRender { elements },
            Reported::Late { .. } => continue,
            Reported::Distractors => AppliedPerturbation::Distractors,
            Reported::Modal if modal_title.is_none_or(|t| observation.contains(t)) => AppliedPerturbation::Modal,
            Reported::Modal => continue,
            Reported::Swallowed { element } => AppliedPerturbation::SwallowedClick { element },
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillshift_common::Site;

    #[test]
    fn the_default_profile_is_valid() {
        let p = Profile::parse(DEFAULT_PROFILE, "default").unwrap();
        assert!(p.perception.relabel.share > 0.0);
        assert!(p.execution.interstitial.is_some());
    }

    #[test]
    fn seeds_depend_on_every_part_and_nothing_else() {
        let f = Family { site: Site::Gitlab, task_id: 3 };
        let a = attempt_seed(7, f, Condition::SrcPerc, 0);
        assert_eq!(a, attempt_seed(7, f, Condition::SrcPerc, 0));
        assert_ne!(a, attempt_seed(8, f, Condition::SrcPerc, 0));
        assert_ne!(a, attempt_seed(7, Family { site: Site::Gitlab, task_id: 4 }, Condition::SrcPerc, 0));
        assert_ne!(a, attempt_seed(7, f, Condition::TgtPerc, 0));
        assert_ne!(a, attempt_seed(7, f, Condition::SrcPerc, 1));
    }

    #[test]
    fn only_shifted_conditions_get_a_script() {
        let p = Profile::default_profile();
        let f = Family { site: Site::Magento, task_id: 0 };
        assert!(Perturbation::for_attempt(p.clone(), 1, f, Condition::Src, 0).script().is_none());
        let s = Perturbation::for_attempt(p.clone(), 1, f, Condition::TgtExec, 0).script().unwrap();
        assert!(s.contains("\"perception\":null") && !s.contains("__SKILLSHIFT_CFG__"));
        assert!(Perturbation::for_attempt(p, 1, f, Condition::SrcPerc, 0)
            .script()
            .unwrap()
            .contains("\"execution\":null"));
    }

    #[test]
    fn bad_profiles_are_refused_with_the_field() {
        let mut v: Value = serde_json::from_str(DEFAULT_PROFILE).unwrap();
        v["perception"]["relabel"]["share"] = json!(1.5);
        let e = Profile::from_value(&v, "p.json").unwrap_err().to_string();
        assert!(e.contains("perception.relabel.share"), "{e}");
    }

    #[test]
    fn what_the_script_applied_is_shown_once_and_the_modal_only_while_on_the_page() {
        let applied = json!([
            {"kind": "relabel", "from": "Issues", "to": "Tickets"},
            {"kind": "relabel", "from": "Issues", "to": "Tickets"},
            {"kind": "modal"},
            {"kind": "swallowed", "element": "BUTTON|Save"},
            {"kind": "late", "elements": 0},
            {"kind": "distractors"},
            "relabel:3",
            {"kind": "unknown"}
        ]);
        let phrases = |observation, title| -> Vec<String> {
            shown(&applied, observation, title).iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            phrases("dialog 'Before you continue'", Some("Before you continue")),
            vec!["relabel: 'Issues' -> 'Tickets'", "modal", "swallowed click: BUTTON|Save", "distractors"]
        );
        assert!(!phrases("gone", Some("Before you continue")).contains(&"modal".to_string()));
        assert!(shown(&Value::Null, "", None).is_empty());
    }
}
