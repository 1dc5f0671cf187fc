//! The planner: a sweep spec expanded into run units, and the frozen
//! comparison contract with its `config_digest` (`docs/formats.md`, contract).
//!
//! A unit is (treatment, family, condition, rep); its index in the plan is its
//! identity on the wire and in the store. The plan order is treatment, site,
//! condition, family, rep, so it is the same for the same spec.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use skillshift_common::ids::Family;
use skillshift_common::skills::SkillLibrary;
use skillshift_common::{AttemptSpec, Condition, Site, Uid};

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
        if self.treatments.len() > u16::MAX as usize {
            return err("too many treatments".into());
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

/// Expands a validated spec into its units, in plan order.
pub fn plan(spec: &SweepSpec) -> Result<Vec<Unit>, PlanError> {
    spec.validate()?;
    let mut units = Vec::new();
    let sites: Vec<Site> = Site::ALL.iter().copied().filter(|s| spec.sites.contains(s)).collect();
    let conditions: Vec<Condition> = Condition::ALL.iter().copied().filter(|c| spec.conditions.contains(c)).collect();
    for t in 0..spec.treatments.len() {
        for &site in &sites {
            for &condition in &conditions {
                for task_id in spec.families_of(site) {
                    for rep in 0..spec.count {
                        units.push(Unit { treatment: t as u16, family: Family { site, task_id }, condition, rep });
                    }
                }
            }
        }
    }
    if units.len() > u32::MAX as usize {
        return Err(PlanError("the sweep has more units than fit a u32".into()));
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

/// The frozen comparison contract (`docs/formats.md`, contract) and its digest. The returned
/// contract carries the digest as `config_digest`; the digest itself is
/// computed over the contract without that field.
pub fn contract(spec: &SweepSpec) -> (Value, String) {
    let libraries: BTreeMap<&str, Value> = spec
        .treatments
        .iter()
        .map(|t| {
            let d =
                t.skills.as_ref().and_then(|l| serde_json::to_value(l).ok()).map(|v| Value::String(digest_json(&v)));
            (t.name.as_str(), d.unwrap_or(Value::Null))
        })
        .collect();
    let conditions: Vec<&str> =
        Condition::ALL.iter().filter(|c| spec.conditions.contains(c)).map(|c| c.as_str()).collect();
    let body = json!({
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
        "skill_libraries": libraries,
        "images": spec.image_digests,
        "harness_version": spec.harness_version,
    });
    let digest = digest_json(&body);
    let mut with = body;
    if let Value::Object(m) = &mut with {
        m.insert("config_digest".into(), Value::String(digest.clone()));
    }
    (with, digest)
}

/// What a worker is sent for one attempt of `unit`.
pub fn attempt_spec(sweep: &str, spec: &SweepSpec, digest: &str, unit: &Unit, attempt: u32) -> AttemptSpec {
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
        let units = plan(&s).expect("plan");
        assert_eq!(units.len(), 2130);
        assert_eq!(units[0].uid().to_string(), "skillshift.gitlab.v1.0");
        assert_eq!(units[162].condition, Condition::SrcPerc);
        assert_eq!(units[162 * 3].uid().to_string(), "skillshift.gitlab.v2.0");
        s.count = 3;
        assert_eq!(plan(&s).expect("plan").len(), 2130 * 3);
    }

    #[test]
    fn family_subsets_and_bad_specs() {
        let mut s = spec();
        s.families.insert(Site::Gitlab, vec![5, 0, 5]);
        let units = plan(&s).expect("plan");
        assert_eq!(units.iter().filter(|u| u.family.site == Site::Gitlab).count(), 2 * 6);
        s.families.insert(Site::Magento, vec![114]);
        assert!(plan(&s).unwrap_err().0.contains("magento.114 does not exist"));
        let mut s = spec();
        s.count = 0;
        assert!(plan(&s).is_err());
        let mut s = spec();
        s.treatments.push(s.treatments[0].clone());
        assert!(plan(&s).unwrap_err().0.contains("listed twice"));
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
        // The family subset is not part of the contract (`docs/formats.md`, contract).
        let mut other = s;
        other.families.insert(Site::Wordpress, vec![1]);
        assert_eq!(contract(&other).1, d);
    }
}
