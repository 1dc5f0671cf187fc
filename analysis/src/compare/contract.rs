//! Do the two sides share one frozen contract? (docs/formats.md#contract)
//!
//! `contract.json` beside a records file holds the **frozen** fields (what a
//! fair comparison must hold equal: task files, conditions, perturbation
//! profile and seed, agent, model, provider, prompt version, temperature,
//! step budget, timeout, retry policy, images, harness version) and the
//! **treatment** fields (the method label and its skill library), which a
//! treatment comparison changes on purpose. Two sides are equivalent when
//! their frozen fields agree, whatever their treatments.
//!
//! Treatment fields are read from any of three places, so that both today's
//! contract and one with a separate treatment section compare alike:
//! `treatment` (one treatment: `{"method", ...}`), `treatments` (several,
//! keyed by method label, or a list of `{"method", ...}`), and
//! `skill_libraries` (method label -> library digest). Those keys and the
//! derived `config_digest` are left out of the frozen comparison.
//!
//! Without `contract.json` on both sides, the records' `config_digest`s are
//! compared instead; when neither exists, equivalence is unverified, and an
//! unverified comparison is not equivalent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Map, Value};

/// Top-level keys of `contract.json` that are not frozen fields.
pub const NOT_FROZEN: [&str; 4] = ["config_digest", "skill_libraries", "treatment", "treatments"];

/// What each side ran as its treatment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Treatments {
    pub baseline: Value,
    pub candidate: Value,
}

#[derive(Debug, Clone, Serialize)]
pub struct Contract {
    /// Both sides share one frozen contract.
    pub equivalent: bool,
    /// Frozen fields whose values differ (dotted paths).
    pub differs: Vec<String>,
    pub treatments: Treatments,
    /// `same`, `differs` or `unknown`.
    pub status: String,
    /// The same list as `differs`.
    pub differing: Vec<String>,
    pub detail: String,
    /// Things the reader should know (a contract that disagrees with its records).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// One side of the check: its contract, its records' digests and its treatment.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The file the contract was read beside, for warnings.
    pub file: &'a str,
    pub contract: Option<&'a Value>,
    pub digests: &'a BTreeSet<String>,
    pub treatment: &'a str,
}

/// Flatten a JSON value to dotted paths.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&p, x, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), v.clone());
        }
    }
}

/// Fields whose values differ between two JSON objects (dotted paths).
pub fn contract_diff(a: &Value, b: &Value) -> Vec<String> {
    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
    flatten("", a, &mut fa);
    flatten("", b, &mut fb);
    let keys: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter().filter(|k| fa.get(*k) != fb.get(*k)).cloned().collect()
}

/// The frozen part of a contract: every top-level key but the treatment ones and the digest.
pub fn frozen(contract: &Value) -> Value {
    match contract {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| !NOT_FROZEN.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
        ),
        other => other.clone(),
    }
}

/// What a contract says about treatment `name`: its section, with `method` set.
pub fn treatment_of(contract: Option<&Value>, name: &str) -> Value {
    let labelled = |v: &Value| v.get("method").and_then(Value::as_str) == Some(name);
    let found: Option<Value> = contract.and_then(|c| {
        let single = c.get("treatment").filter(|t| t.is_object());
        let several = c.get("treatments");
        single
            .filter(|t| labelled(t) || t.get("method").is_none() && t.get(name).is_none())
            .cloned()
            .or_else(|| single.and_then(|t| t.get(name)).cloned())
            .or_else(|| several.and_then(|t| t.get(name)).cloned())
            .or_else(|| several.and_then(Value::as_array).and_then(|l| l.iter().find(|t| labelled(t))).cloned())
            .or_else(|| c.get("skill_libraries").and_then(|l| l.get(name)).map(|d| json!({"skill_library": d})))
    });
    let mut out = Map::new();
    out.insert("method".into(), Value::String(name.to_string()));
    match found {
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if k != "method" {
                    out.insert(k, v);
                }
            }
        }
        Some(other) => {
            out.insert("skill_library".into(), other);
        }
        None => {}
    }
    Value::Object(out)
}

/// Why a `contract.json` that is there could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ContractFileError {
    #[error("cannot read {}: {cause}", .path.display())]
    Read { path: PathBuf, cause: std::io::Error },
    #[error("{}: not valid JSON: {}", .path.display(), skillshift_common::text::json_error(.cause))]
    Json { path: PathBuf, cause: serde_json::Error },
}

/// Read `contract.json` beside a records file, if there is one.
pub fn contract_beside(records: &Path) -> Result<Option<Value>, ContractFileError> {
    let path = records.parent().unwrap_or(Path::new(".")).join("contract.json");
    match skillshift_common::bounded::read_to_string(&path, skillshift_common::bounded::MAX_FILE_BYTES) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|cause| ContractFileError::Json { path, cause }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(cause) => Err(ContractFileError::Read { path, cause }),
    }
}

/// A warning when a side's records carry a digest other than its contract's.
fn digest_warning(side: &Side) -> Option<String> {
    let want = side.contract?.get("config_digest")?.as_str()?;
    let other: Vec<&String> = side.digests.iter().filter(|d| d.as_str() != want).collect();
    (!other.is_empty()).then(|| {
        format!(
            "the records of {} carry config_digest {} but contract.json beside them has {want}: the contract may not \
             be the one they ran under",
            side.file,
            other.iter().map(|d| d.as_str()).collect::<Vec<_>>().join(", ")
        )
    })
}

fn verdict(
    status: &str,
    differs: Vec<String>,
    detail: String,
    treatments: Treatments,
    warnings: Vec<String>,
) -> Contract {
    Contract {
        equivalent: status == "same",
        differing: differs.clone(),
        differs,
        treatments,
        status: status.to_string(),
        detail,
        warnings,
    }
}

/// Decide whether the two sides share one frozen contract.
pub fn check_contract(base: Side, cand: Side, same_file: bool) -> Contract {
    let treatments = Treatments {
        baseline: treatment_of(base.contract, base.treatment),
        candidate: treatment_of(cand.contract, cand.treatment),
    };
    let warnings: Vec<String> = [digest_warning(&base), digest_warning(&cand)].into_iter().flatten().collect();
    if let (Some(a), Some(b)) = (base.contract, cand.contract) {
        let differs = contract_diff(&frozen(a), &frozen(b));
        let treated = if contract_diff(&treatments.baseline, &treatments.candidate).is_empty() {
            ""
        } else {
            "; the treatment fields differ, as a treatment comparison intends"
        };
        return if differs.is_empty() {
            let detail = format!("the frozen fields of contract.json agree on both sides{treated}");
            verdict("same", differs, detail, treatments, warnings)
        } else {
            let detail = format!("contract.json differs in frozen fields: {}", differs.join(", "));
            verdict("differs", differs, detail, treatments, warnings)
        };
    }
    let one = |d: &BTreeSet<String>| (d.len() == 1).then(|| d.iter().next().cloned()).flatten();
    match (one(base.digests), one(cand.digests)) {
        (Some(a), Some(b)) if a == b => {
            verdict("same", vec![], format!("both sides recorded config_digest {a}"), treatments, warnings)
        }
        (Some(a), Some(b)) => verdict(
            "differs",
            vec!["config_digest".into()],
            format!(
                "config_digest differs ({a} vs {b}); without contract.json beside both files the differing fields \
                 cannot be listed"
            ),
            treatments,
            warnings,
        ),
        _ if base.digests.len() > 1 || cand.digests.len() > 1 => verdict(
            "differs",
            vec!["config_digest".into()],
            "a side's records carry several config digests: they were not run under one contract".into(),
            treatments,
            warnings,
        ),
        _ if same_file => verdict(
            "unknown",
            vec![],
            "both treatments come from one file, but no contract or digest was recorded".into(),
            treatments,
            warnings,
        ),
        _ => verdict(
            "unknown",
            vec![],
            "no contract.json beside the records and no config_digest in them: equivalence is unverified".into(),
            treatments,
            warnings,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side<'a>(contract: Option<&'a Value>, digests: &'a BTreeSet<String>, treatment: &'a str) -> Side<'a> {
        Side { file: "f", contract, digests, treatment }
    }

    #[test]
    fn frozen_fields_that_differ_are_listed() {
        let a = json!({"model": {"name": "gpt", "provider": "x"}, "max_steps": 10, "temperature": 0});
        let b = json!({"model": {"name": "gpt", "provider": "y"}, "max_steps": 15, "temperature": 0});
        assert_eq!(contract_diff(&a, &b), ["max_steps", "model.provider"]);
        let none = BTreeSet::new();
        let c = check_contract(side(Some(&a), &none, "X"), side(Some(&b), &none, "X"), false);
        assert_eq!((c.status.as_str(), c.equivalent), ("differs", false));
        assert_eq!(c.differs, ["max_steps", "model.provider"]);
        assert!(check_contract(side(Some(&a), &none, "X"), side(Some(&a), &none, "X"), false).equivalent);
        let d1: BTreeSet<String> = ["sha256:1".to_string()].into();
        let d2: BTreeSet<String> = ["sha256:2".to_string()].into();
        assert_eq!(check_contract(side(None, &d1, "X"), side(None, &d2, "X"), false).status, "differs");
        assert!(check_contract(side(None, &d1, "X"), side(None, &d1, "X"), false).equivalent);
        let unknown = check_contract(side(None, &none, "X"), side(None, &none, "Y"), false);
        assert_eq!((unknown.status.as_str(), unknown.equivalent), ("unknown", false));
    }

    #[test]
    fn treatments_differing_alone_are_equivalent_in_both_contract_shapes() {
        let none = BTreeSet::new();
        // Today's contract: libraries inside, one digest per sweep.
        let control = json!({"max_steps": 10, "skill_libraries": {"CONTROL": null}, "config_digest": "sha256:c"});
        let asi = json!({"max_steps": 10, "skill_libraries": {"ASI": "sha256:lib"}, "config_digest": "sha256:a"});
        let c = check_contract(side(Some(&control), &none, "CONTROL"), side(Some(&asi), &none, "ASI"), false);
        assert!(c.equivalent, "{}", c.detail);
        assert!(c.detail.contains("treatment fields differ"), "{}", c.detail);
        assert_eq!(c.treatments.candidate, json!({"method": "ASI", "skill_library": "sha256:lib"}));
        assert_eq!(c.treatments.baseline, json!({"method": "CONTROL", "skill_library": null}));
        // A separate treatment section, one treatment per contract.
        let a = json!({"max_steps": 10, "treatment": {"method": "CONTROL", "skill_library": null}});
        let b = json!({"max_steps": 10, "treatment": {"method": "ASI", "skill_library": "sha256:lib"}});
        let c = check_contract(side(Some(&a), &none, "CONTROL"), side(Some(&b), &none, "ASI"), false);
        assert!(c.equivalent && c.differs.is_empty());
        assert_eq!(c.treatments.candidate["skill_library"], "sha256:lib");
        // Several treatments in one sweep: one contract on both sides.
        let both = json!({"max_steps": 10, "treatments": {"CONTROL": {"skill_library": null}, "ASI": {"skill_library": "sha256:lib"}}});
        let c = check_contract(side(Some(&both), &none, "CONTROL"), side(Some(&both), &none, "ASI"), true);
        assert!(c.equivalent);
        assert_eq!(c.treatments.candidate, json!({"method": "ASI", "skill_library": "sha256:lib"}));
        // A frozen field changed beside a treatment: not equivalent, and only the frozen field is listed.
        let b15 = json!({"max_steps": 15, "treatment": {"method": "ASI", "skill_library": "sha256:lib"}});
        let c = check_contract(side(Some(&a), &none, "CONTROL"), side(Some(&b15), &none, "ASI"), false);
        assert_eq!((c.equivalent, c.differs.clone()), (false, vec!["max_steps".to_string()]));
    }

    #[test]
    fn records_that_disagree_with_their_contract_are_warned_about() {
        let a = json!({"max_steps": 10, "config_digest": "sha256:a"});
        let other: BTreeSet<String> = ["sha256:b".to_string()].into();
        let same: BTreeSet<String> = ["sha256:a".to_string()].into();
        let c = check_contract(side(Some(&a), &other, "X"), side(Some(&a), &same, "X"), false);
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains("carry config_digest sha256:b but contract.json beside them has sha256:a"));
    }
}
