//! The planner: a sweep spec expanded into run units, and the frozen
//! comparison contract with its `config_digest` (`docs/formats.md`, contract).
//!
//! A unit is (treatment, family, condition, rep); its index in the plan is its
//! identity on the wire and in the store. The plan order is site, condition,
//! family, rep, treatment, so it is the same for the same spec, and the
//! treatments of one (family, condition, rep) sit next to each other: queues
//! follow plan order, so a sweep stopped part way is still paired unit by unit.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use skillshift_common::ids::{Family, SweepId};
use skillshift_common::skills::SkillLibrary;
use skillshift_common::{AttemptSpec, Condition, Site, Uid};

use crate::limits::{self, Limits};

/// The version of the contract's shape.
pub const CONTRACT_SCHEMA: &str = "skillshift.contract/1";

/// A spec the planner refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid sweep spec: {0}")]
pub struct PlanError(pub String);

/// A method label and its skill library (`None`: no executable skills).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreatmentSpec {
    pub name: String,
    pub skills: Option<SkillLibrary>,
}

/// Everything a sweep runs: what `skillshift sweep start` submits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    pub treatments: Vec<TreatmentSpec>,
    pub agent: String,
    pub agent_version: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub prompt_version: Option<String>,
    pub temperature: Option<f64>,
    pub sites: Vec<Site>,
    pub conditions: Vec<Condition>,
    /// Families to run per site; a site absent here runs all of its families.
    pub families: BTreeMap<Site, Vec<u32>>,
    pub count: u32,
    pub max_steps: u32,
    pub task_timeout_s: u64,
    pub max_retries: u32,
    pub seed: u64,
    pub cost_budget_usd: Option<f64>,
    pub perturbation_profile: Option<Value>,
    /// `data/tasks/<site>.<version>.json` name -> `sha256:` digest.
    pub task_file_digests: BTreeMap<String, String>,
    /// Image name (`gitlab-v1`) -> digest.
    pub image_digests: BTreeMap<String, String>,
    pub harness_version: String,
    /// The scoring rules every attempt uses (`--evaluator`).
    #[serde(default)]
    pub evaluator: skillshift_common::evaluate::Mode,
    /// Run by `--simulate` workers, whose records are made up (`sweep start --simulated`, `local
    /// --simulate`): a frozen contract field, and only simulated workers take its units.
    #[serde(default)]
    pub simulated: bool,
}

impl SweepSpec {
    /// The full grid with the CLI's defaults (`docs/formats.md`, CLI): one rep,
    /// the `skills` agent, every site and condition.
    pub fn full_grid(treatment: TreatmentSpec) -> SweepSpec {
        SweepSpec {
            treatments: vec![treatment],
            agent: "skills".into(),
            agent_version: env!("CARGO_PKG_VERSION").into(),
            model: None,
            provider: None,
            prompt_version: None,
            temperature: None,
            sites: Site::ALL.to_vec(),
            conditions: Condition::ALL.to_vec(),
            families: BTreeMap::new(),
            count: 1,
            max_steps: 10,
            task_timeout_s: 600,
            max_retries: 2,
            seed: 0,
            cost_budget_usd: None,
            perturbation_profile: None,
            task_file_digests: BTreeMap::new(),
            image_digests: BTreeMap::new(),
            harness_version: env!("CARGO_PKG_VERSION").into(),
            evaluator: Default::default(),
            simulated: false,
        }
    }

    /// Checks the spec before anything is planned or stored.
    pub fn validate(&self) -> Result<(), PlanError> {
        let err = |m: String| Err(PlanError(m));
        if self.treatments.is_empty() {
            return err("no treatment".into());
        }
        let mut names = BTreeSet::new();
        for t in &self.treatments {
            if t.name.trim().is_empty() {
                return err("a treatment has an empty name".into());
            }
            if !names.insert(&t.name) {
                return err(format!("treatment '{}' is listed twice", t.name));
            }
            if let Some(lib) = &t.skills {
                lib.check().map_err(|m| PlanError(format!("treatment '{}': skill library: {m}", t.name)))?;
            }
        }
        if self.treatments.len() > limits::MAX_TREATMENTS {
            return err(format!("{} treatments; the limit is {}", self.treatments.len(), limits::MAX_TREATMENTS));
        }
        for t in &self.treatments {
            let Some(lib) = &t.skills else { continue };
            let bytes = serde_json::to_vec(lib).map_or(0, |v| v.len());
            if bytes > limits::MAX_SKILL_LIBRARY_BYTES {
                return err(format!(
                    "treatment '{}': skill library is {bytes} bytes; the limit is {}",
                    t.name,
                    limits::MAX_SKILL_LIBRARY_BYTES
                ));
            }
        }
        if self.agent.trim().is_empty() {
            return err("agent is empty".into());
        }
        if self.sites.is_empty() {
            return err("no site".into());
        }
        if self.conditions.is_empty() {
            return err("no condition".into());
        }
        if self.sites.iter().collect::<BTreeSet<_>>().len() != self.sites.len() {
            return err("a site is listed twice".into());
        }
        if self.conditions.iter().collect::<BTreeSet<_>>().len() != self.conditions.len() {
            return err("a condition is listed twice".into());
        }
        if self.count == 0 {
            return err("count must be at least 1".into());
        }
        if self.max_steps == 0 {
            return err("max_steps must be at least 1".into());
        }
        if self.task_timeout_s == 0 {
            return err("task_timeout must be at least 1 s".into());
        }
        for (site, ids) in &self.families {
            if !self.sites.contains(site) {
                return err(format!("families are listed for site '{site}', which the sweep does not run"));
            }
            if ids.is_empty() {
                return err(format!("the family list of site '{site}' is empty"));
            }
            if ids.len() > site.n_tasks() {
                // More entries than the site has families can only be repeats.
                return err(format!(
                    "the family list of site '{site}' has {} entries; {site} has {} families",
                    ids.len(),
                    site.n_tasks()
                ));
            }
            if let Some(bad) = ids.iter().find(|id| **id as usize >= site.n_tasks()) {
                return err(format!("family {site}.{bad} does not exist ({site} has {} families)", site.n_tasks()));
            }
        }
        if let Some(b) = self.cost_budget_usd {
            if !(b.is_finite() && b > 0.0) {
                return err(format!("cost budget {b} is not a positive number"));
            }
        }
        Ok(())
    }

    /// The family ids of one site the sweep runs, ascending and unique.
    pub fn families_of(&self, site: Site) -> Vec<u32> {
        match self.families.get(&site) {
            Some(ids) => ids.iter().copied().collect::<BTreeSet<_>>().into_iter().collect(),
            None => (0..site.n_tasks() as u32).collect(),
        }
    }
}

/// One run unit: (treatment, family, condition, rep).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Unit {
    /// Index into the spec's treatments.
    pub treatment: u16,
    #[serde(with = "family_text")]
    pub family: Family,
    pub condition: Condition,
    pub rep: u32,
}

impl Unit {
    pub fn uid(&self) -> Uid {
        self.family.uid(self.condition)
    }
}

/// A family stored as its text form, `<site>.<task_id>`.
mod family_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use skillshift_common::ids::Family;

    pub fn serialize<S: Serializer>(f: &Family, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(f)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Family, D::Error> {
        let text = String::deserialize(d)?;
        let bad = || serde::de::Error::custom(format!("family '{text}' is not <site>.<task_id>"));
        let (site, id) = text.split_once('.').ok_or_else(bad)?;
        Ok(Family { site: site.parse().map_err(|_| bad())?, task_id: id.parse().map_err(|_| bad())? })
    }
}

/// Units per rep: treatments x the families of every site x conditions.
fn units_per_rep(spec: &SweepSpec) -> u64 {
    let families: u64 = spec.sites.iter().map(|s| spec.families_of(*s).len() as u64).sum();
    spec.treatments.len() as u64 * families * spec.conditions.len() as u64
}

/// How many units `spec` plans, counted without planning them; `None` past `u64`.
pub fn unit_count(spec: &SweepSpec) -> Option<u64> {
    units_per_rep(spec).checked_mul(u64::from(spec.count))
}

/// Checks a spec and its size against `limits` before anything is allocated
/// for it; returns the number of units it plans.
pub fn check(spec: &SweepSpec, limits: &Limits) -> Result<u64, PlanError> {
    spec.validate()?;
    let per_rep = units_per_rep(spec);
    let total = unit_count(spec).filter(|n| *n <= limits.max_units_per_sweep).ok_or_else(|| {
        PlanError(format!(
            "the sweep has {} units ({per_rep} per rep x count {}); the limit is {} units per sweep \
             (--max-units-per-sweep)",
            u128::from(per_rep) * u128::from(spec.count),
            spec.count,
            limits.max_units_per_sweep
        ))
    })?;
    if spec.count > limits.max_reps {
        let (count, max) = (spec.count, limits.max_reps);
        return Err(PlanError(format!("count {count} is more than the {max} reps a sweep may have")));
    }
    if total > u64::from(u32::MAX) {
        return Err(PlanError(format!("the sweep has {total} units, more than fit a u32 unit index")));
    }
    Ok(total)
}

/// Expands a spec into its units, in plan order, once [`check`] has counted
/// them against `limits`.
pub fn plan(spec: &SweepSpec, limits: &Limits) -> Result<Vec<Unit>, PlanError> {
    let total = check(spec, limits)?;
    let mut units = Vec::with_capacity(total as usize);
    let sites: Vec<Site> = Site::ALL.iter().copied().filter(|s| spec.sites.contains(s)).collect();
    let conditions: Vec<Condition> = Condition::ALL.iter().copied().filter(|c| spec.conditions.contains(c)).collect();
    for &site in &sites {
        let families = spec.families_of(site);
        for &condition in &conditions {
            for &task_id in &families {
                for rep in 0..spec.count {
                    for t in 0..spec.treatments.len() {
                        units.push(Unit { treatment: t as u16, family: Family { site, task_id }, condition, rep });
                    }
                }
            }
        }
    }
    Ok(units)
}

/// Sorts object keys recursively, so equal contracts serialize equally.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// `sha256:<hex>` over the canonical compact JSON of `v`.
pub fn digest_json(v: &Value) -> String {
    let text = canonical(v).to_string();
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// The digest of a treatment's skill library, `None` for a treatment without one.
pub fn library_digest(t: &TreatmentSpec) -> Option<String> {
    t.skills.as_ref().and_then(|l| serde_json::to_value(l).ok()).map(|v| digest_json(&v))
}

/// The frozen fields of the comparison contract (`docs/formats.md`, contract):
/// everything that must agree for two runs to be compared, and nothing a
/// treatment changes on purpose.
pub fn frozen(spec: &SweepSpec) -> Value {
    let conditions: Vec<&str> =
        Condition::ALL.iter().filter(|c| spec.conditions.contains(c)).map(|c| c.as_str()).collect();
    let mut body = json!({
        "schema": CONTRACT_SCHEMA,
        "task_files": spec.task_file_digests,
        "conditions": conditions,
        "perturbation_profile": spec.perturbation_profile.as_ref().map(digest_json),
        "seed": spec.seed,
        "agent": {"name": spec.agent, "version": spec.agent_version},
        "model": spec.model,
        "provider": spec.provider,
        "prompt_version": spec.prompt_version,
        "temperature": spec.temperature,
        "max_steps": spec.max_steps,
        "task_timeout_s": spec.task_timeout_s,
        "retry_policy": {"max_retries": spec.max_retries, "retried": "error"},
        "images": spec.image_digests,
        "harness_version": spec.harness_version,
        "evaluator": spec.evaluator.to_string(),
    });
    // Present only when true, so a real run's digest is what it was before the field existed: old
    // contracts and the records stamped with their digests still agree.
    if spec.simulated {
        if let Value::Object(m) = &mut body {
            m.insert("simulated".into(), Value::Bool(true));
        }
    }
    body
}

/// The comparison contract and its digest. The digest covers only the
/// [`frozen`] fields; the treatments (method label -> skill library digest)
/// sit beside them under `treatments`, outside the digest, so a `CONTROL` run
/// and a library run over the same units share one `config_digest`. The
/// returned contract carries the digest as `config_digest`.
pub fn contract(spec: &SweepSpec) -> (Value, String) {
    let body = frozen(spec);
    let digest = digest_json(&body);
    let treatments: serde_json::Map<String, Value> = spec
        .treatments
        .iter()
        .map(|t| (t.name.clone(), json!({"method": t.name, "skill_library": library_digest(t)})))
        .collect();
    let mut with = body;
    if let Value::Object(m) = &mut with {
        m.insert("treatments".into(), Value::Object(treatments));
        m.insert("config_digest".into(), Value::String(digest.clone()));
    }
    (with, digest)
}

/// What a worker is sent for one attempt of `unit`.
pub fn attempt_spec(sweep: &SweepId, spec: &SweepSpec, digest: &str, unit: &Unit, attempt: u32) -> AttemptSpec {
    let t = &spec.treatments[unit.treatment as usize];
    AttemptSpec {
        sweep: sweep.to_string(),
        treatment: t.name.clone(),
        uid: unit.uid(),
        condition: unit.condition,
        rep: unit.rep,
        attempt,
        seed: spec.seed,
        max_steps: spec.max_steps,
        task_timeout_ms: spec.task_timeout_s.saturating_mul(1000),
        agent: spec.agent.clone(),
        model: spec.model.clone(),
        skills: t.skills.clone(),
        perturbation_profile: spec.perturbation_profile.clone(),
        config_digest: Some(digest.to_string()),
        traceparent: None,
        temperature: spec.temperature,
        prompt_version: spec.prompt_version.clone(),
        evaluator: spec.evaluator,
        // The grid's tasks read no response body; the coordinator holds no task's evaluators, and a
        // worker records bodies for a task whose evaluators read them whatever this says (its run loop).
        network_bodies: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SweepSpec {
        SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None })
    }

    #[test]
    fn full_grid_has_2130_units_per_rep_in_plan_order() {
        let mut s = spec();
        let units = plan(&s, &Limits::default()).expect("plan");
        assert_eq!(units.len(), 2130);
        assert_eq!(units[0].uid().to_string(), "skillshift.gitlab.v1.0");
        assert_eq!(units[162].condition, Condition::SrcPerc);
        assert_eq!(units[162 * 3].uid().to_string(), "skillshift.gitlab.v2.0");
        s.count = 3;
        assert_eq!(plan(&s, &Limits::default()).expect("plan").len(), 2130 * 3);
    }

    #[test]
    fn the_treatments_of_one_unit_are_planned_side_by_side() {
        let mut s = spec();
        s.treatments.push(TreatmentSpec { name: "ASI".into(), skills: None });
        s.sites = vec![Site::Gitlab];
        s.conditions = vec![Condition::Src];
        s.families.insert(Site::Gitlab, vec![0, 3]);
        s.count = 2;
        let units = plan(&s, &Limits::default()).expect("plan");
        let shape: Vec<(u16, u32, u32)> = units.iter().map(|u| (u.treatment, u.family.task_id, u.rep)).collect();
        assert_eq!(shape, vec![(0, 0, 0), (1, 0, 0), (0, 0, 1), (1, 0, 1), (0, 3, 0), (1, 3, 0), (0, 3, 1), (1, 3, 1)]);
    }

    #[test]
    fn family_subsets_and_bad_specs() {
        let mut s = spec();
        s.families.insert(Site::Gitlab, vec![5, 0, 5]);
        let units = plan(&s, &Limits::default()).expect("plan");
        assert_eq!(units.iter().filter(|u| u.family.site == Site::Gitlab).count(), 2 * 6);
        s.families.insert(Site::Magento, vec![114]);
        assert!(plan(&s, &Limits::default()).unwrap_err().0.contains("magento.114 does not exist"));
        let mut s = spec();
        s.count = 0;
        assert!(plan(&s, &Limits::default()).is_err());
        let mut s = spec();
        s.treatments.push(s.treatments[0].clone());
        assert!(plan(&s, &Limits::default()).unwrap_err().0.contains("listed twice"));
    }

    #[test]
    fn a_count_past_the_limit_is_refused_by_arithmetic_naming_the_numbers() {
        // 2130 x 10^9 units would need terabytes: refused before one is planned.
        let mut s = spec();
        s.count = 1_000_000_000;
        let e = plan(&s, &Limits::default()).expect_err("far too many units").0;
        assert_eq!(
            e,
            "the sweep has 2130000000000 units (2130 per rep x count 1000000000); \
             the limit is 200000 units per sweep (--max-units-per-sweep)"
        );
        assert_eq!(unit_count(&s), Some(2_130_000_000_000));
        // Few units but too many reps: the reps bound.
        let mut s = spec();
        s.sites = vec![Site::Gitlab];
        s.conditions = vec![Condition::Src];
        s.families.insert(Site::Gitlab, vec![0]);
        s.count = 10_001;
        let e = plan(&s, &Limits::default()).expect_err("too many reps").0;
        assert_eq!(e, "count 10001 is more than the 10000 reps a sweep may have");
    }

    #[test]
    fn the_unit_limit_is_inclusive() {
        let mut s = spec();
        s.count = 4;
        let at = Limits { max_units_per_sweep: 2130 * 4, ..Limits::default() };
        assert_eq!(plan(&s, &at).expect("exactly at the limit").len(), 2130 * 4);
        assert_eq!(check(&s, &at), Ok(2130 * 4));
        let below = Limits { max_units_per_sweep: 2130 * 4 - 1, ..Limits::default() };
        let e = plan(&s, &below).expect_err("one past the limit").0;
        assert!(e.starts_with("the sweep has 8520 units (2130 per rep x count 4); the limit is 8519"), "{e}");
    }

    #[test]
    fn family_lists_treatments_and_skill_libraries_are_bounded() {
        let mut s = spec();
        s.families.insert(Site::Wordpress, vec![0; Site::Wordpress.n_tasks() + 1]);
        let e = plan(&s, &Limits::default()).expect_err("a family list longer than the site").0;
        assert_eq!(e, "the family list of site 'wordpress' has 80 entries; wordpress has 79 families");
        let mut s = spec();
        s.treatments = (0..=crate::limits::MAX_TREATMENTS)
            .map(|i| TreatmentSpec { name: format!("T{i}"), skills: None })
            .collect();
        let e = plan(&s, &Limits::default()).expect_err("too many treatments").0;
        assert_eq!(e, "65 treatments; the limit is 64");
    }

    #[test]
    fn digest_is_stable_and_tracks_every_contract_field() {
        let s = spec();
        let (c, d) = contract(&s);
        assert!(d.starts_with("sha256:") && d.len() == 7 + 64);
        assert_eq!(c["config_digest"], Value::String(d.clone()));
        assert_eq!(contract(&s.clone()).1, d, "same spec, same digest");
        let mut other = s.clone();
        other.max_steps = 30;
        assert_ne!(contract(&other).1, d);
        let mut other = s.clone();
        other.task_file_digests.insert("gitlab.v1.json".into(), "sha256:00".into());
        assert_ne!(contract(&other).1, d);
        // The scoring rules are frozen: strict scoring is another experiment, and every attempt carries them.
        assert_eq!(c["evaluator"], "webarena");
        let mut strict = s.clone();
        strict.evaluator = skillshift_common::evaluate::Mode::Strict;
        let (cs, ds) = contract(&strict);
        assert_eq!(cs["evaluator"], "strict");
        assert_ne!(ds, d);
        let unit = plan(&strict, &Limits::default()).expect("plan").into_iter().next().expect("a unit");
        assert_eq!(
            attempt_spec(&"s".into(), &strict, &ds, &unit, 0).evaluator,
            skillshift_common::evaluate::Mode::Strict
        );
        // Simulated is frozen: made-up records never share a real run's digest. A real contract has no
        // `simulated` key, so its digest is what it was before the field existed.
        assert!(c.get("simulated").is_none(), "{c}");
        let mut sim = s.clone();
        sim.simulated = true;
        let (csim, dsim) = contract(&sim);
        assert_eq!(csim["simulated"], true);
        assert_ne!(dsim, d, "a simulated run and a real one have two digests");
        // The family subset is not part of the contract (`docs/formats.md`, contract).
        let mut other = s;
        other.families.insert(Site::Wordpress, vec![1]);
        assert_eq!(contract(&other).1, d);
    }

    #[test]
    fn treatments_sit_beside_the_frozen_fields_outside_the_digest() {
        let control = spec();
        let (_, d) = contract(&control);
        let lib = SkillLibrary {
            schema: skillshift_common::skills::SKILLS_SCHEMA.into(),
            method: "ASI".into(),
            skills: vec![],
        };
        let mut two = control.clone();
        two.treatments.push(TreatmentSpec { name: "ASI".into(), skills: Some(lib.clone()) });
        let (c, d2) = contract(&two);
        assert_eq!(d2, d, "adding a treatment changes no frozen field");
        assert_eq!(c["treatments"]["CONTROL"], json!({"method": "CONTROL", "skill_library": null}));
        let want = digest_json(&serde_json::to_value(&lib).expect("library json"));
        assert_eq!(c["treatments"]["ASI"]["skill_library"], Value::String(want));
        assert!(frozen(&two).get("treatments").is_none() && frozen(&two).get("skill_libraries").is_none());
        // A treatment alone, with its library: still the same digest.
        let mut only = control.clone();
        only.treatments = vec![TreatmentSpec { name: "ASI".into(), skills: Some(lib) }];
        assert_eq!(contract(&only).1, d);
        // A frozen field does move it.
        let mut hot = control;
        hot.temperature = Some(0.7);
        assert_ne!(contract(&hot).1, d);
    }
}
