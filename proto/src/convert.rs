//! Conversions between the generated wire types and the domain types of
//! `skillshift-common`, so that no other module handles prost structs.
//!
//! Wire -> domain conversions validate: an unknown site, condition or uid, a
//! record whose site disagrees with its uid, or an unparsable embedded JSON
//! document is a [`WireError`] naming the field and the value.

use std::collections::HashMap;

use skillshift_common::evaluate::Mode;
use skillshift_common::ids::AttemptKey;
use skillshift_common::{AttemptSpec, Condition, Outcome, Record, Site, Uid, Version};

use crate::v1;

/// A wire message that does not describe a valid domain value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("missing field '{0}'")]
    Missing(&'static str),
    #[error("field '{field}': {message}")]
    Invalid { field: &'static str, message: String },
}

fn invalid(field: &'static str, message: impl ToString) -> WireError {
    WireError::Invalid { field, message: message.to_string() }
}

impl From<&AttemptKey> for v1::AttemptRef {
    fn from(k: &AttemptKey) -> Self {
        v1::AttemptRef { sweep: k.sweep.to_string(), unit: k.unit, attempt: k.attempt }
    }
}

impl TryFrom<v1::AttemptRef> for AttemptKey {
    type Error = WireError;
    fn try_from(r: v1::AttemptRef) -> Result<Self, WireError> {
        if r.sweep.is_empty() {
            return Err(WireError::Missing("attempt.sweep"));
        }
        Ok(AttemptKey { sweep: r.sweep.into(), unit: r.unit, attempt: r.attempt })
    }
}

/// The attempt key of a message's `attempt` field, which must be present.
pub fn attempt_key_from_wire(r: Option<v1::AttemptRef>) -> Result<AttemptKey, WireError> {
    AttemptKey::try_from(r.ok_or(WireError::Missing("attempt"))?)
}

pub fn site_version_to_wire(site: Site, version: Version) -> v1::SiteVersion {
    v1::SiteVersion { site: site.to_string(), version: version.to_string() }
}

pub fn site_version_from_wire(sv: &v1::SiteVersion) -> Result<(Site, Version), WireError> {
    let site = sv.site.parse().map_err(|e| invalid("hosts.site", e))?;
    let version = sv.version.parse().map_err(|e| invalid("hosts.version", e))?;
    Ok((site, version))
}

impl From<&Record> for v1::RunRecord {
    fn from(r: &Record) -> Self {
        v1::RunRecord {
            uid: r.uid.to_string(),
            site: r.site.to_string(),
            condition: r.condition.to_string(),
            success: r.success,
            steps: r.steps,
            skill_calls: r.skill_calls,
            skill_failures: r.skill_failures,
            outcome: r.outcome.map(|o| o.as_str().to_string()),
            error: r.error.clone(),
            treatment: r.treatment.clone(),
            rep: r.rep,
            attempt: r.attempt,
            sweep: r.sweep.clone(),
            config_digest: r.config_digest.clone(),
            duration_ms: r.duration_ms,
            started_at: r.started_at.clone(),
            finished_at: r.finished_at.clone(),
            llm_calls: r.llm_calls,
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
            cost_usd: r.cost_usd,
            answer: r.answer.clone(),
            worker: r.worker.clone(),
            images: r.images.clone().map(|m| m.into_iter().collect()).unwrap_or_default(),
            trace_id: r.trace_id.clone(),
            simulated: r.simulated,
            failure_category: r.failure_category.clone(),
            trajectory: r.trajectory.clone(),
            error_detail: r.error_detail.clone(),
        }
    }
}

fn parse_outcome(s: &str) -> Result<Outcome, WireError> {
    match s {
        "success" => Ok(Outcome::Success),
        "failure" => Ok(Outcome::Failure),
        "timeout" => Ok(Outcome::Timeout),
        "error" => Ok(Outcome::Error),
        other => Err(invalid("record.outcome", format!("'{other}' is not success, failure, timeout or error"))),
    }
}

impl TryFrom<v1::RunRecord> for Record {
    type Error = WireError;
    fn try_from(r: v1::RunRecord) -> Result<Self, WireError> {
        let uid: Uid = r.uid.parse().map_err(|e| invalid("record.uid", e))?;
        let site: Site = r.site.parse().map_err(|e| invalid("record.site", e))?;
        let condition: Condition = r.condition.parse().map_err(|e| invalid("record.condition", e))?;
        if site != uid.site {
            return Err(invalid("record.site", format!("'{site}' disagrees with uid '{uid}'")));
        }
        if uid.version != condition.version() {
            return Err(invalid(
                "record.uid",
                format!("'{uid}' is not the {} uid that condition '{condition}' runs", condition.version()),
            ));
        }
        let outcome = r.outcome.as_deref().map(parse_outcome).transpose()?;
        if let (Some(calls), Some(failures)) = (r.skill_calls, r.skill_failures) {
            if failures > calls {
                return Err(invalid("record.skill_failures", format!("{failures} exceeds skill_calls {calls}")));
            }
        }
        if outcome != Some(Outcome::Error) && outcome.is_some() && r.success.is_none() {
            return Err(invalid("record.success", "null on a record that is not an error"));
        }
        // A cost is money spent: finite and not negative (NaN would also make the record unequal to itself).
        if let Some(c) = r.cost_usd.filter(|c| !c.is_finite() || *c < 0.0) {
            return Err(invalid("record.cost_usd", format!("{c} is not a finite, non-negative amount")));
        }
        let mut rec = Record::new(uid, condition);
        rec.success = r.success;
        rec.steps = r.steps;
        rec.skill_calls = r.skill_calls;
        rec.skill_failures = r.skill_failures;
        rec.outcome = outcome;
        rec.error = r.error;
        rec.treatment = r.treatment;
        rec.rep = r.rep;
        rec.attempt = r.attempt;
        rec.sweep = r.sweep;
        rec.config_digest = r.config_digest;
        rec.duration_ms = r.duration_ms;
        rec.started_at = r.started_at;
        rec.finished_at = r.finished_at;
        rec.llm_calls = r.llm_calls;
        rec.tokens_in = r.tokens_in;
        rec.tokens_out = r.tokens_out;
        rec.cost_usd = r.cost_usd;
        rec.answer = r.answer;
        rec.worker = r.worker;
        rec.images = if r.images.is_empty() { None } else { Some(r.images.into_iter().collect()) };
        rec.trace_id = r.trace_id;
        rec.simulated = r.simulated;
        rec.failure_category = r.failure_category;
        rec.trajectory = r.trajectory;
        // Bounded whatever the sender did: one line of at most 200 characters.
        rec.error_detail = r.error_detail.as_deref().map(skillshift_common::record::error_detail);
        Ok(rec)
    }
}

/// The wire form of one assignment: the attempt it runs and its spec.
pub fn assignment_to_wire(key: &AttemptKey, spec: &AttemptSpec) -> v1::Assignment {
    v1::Assignment {
        attempt: Some(key.into()),
        treatment: spec.treatment.clone(),
        uid: spec.uid.to_string(),
        condition: spec.condition.to_string(),
        rep: spec.rep,
        seed: spec.seed,
        max_steps: spec.max_steps,
        task_timeout_ms: spec.task_timeout_ms,
        agent: spec.agent.clone(),
        model: spec.model.clone(),
        skills_json: spec.skills.as_ref().and_then(|s| serde_json::to_string(s).ok()),
        perturbation_profile_json: spec.perturbation_profile.as_ref().map(|p| p.to_string()),
        config_digest: spec.config_digest.clone(),
        traceparent: spec.traceparent.clone(),
        temperature: spec.temperature,
        prompt_version: spec.prompt_version.clone(),
        evaluator: Some(spec.evaluator.to_string()),
        network_bodies: spec.network_bodies,
    }
}

/// Parses an assignment into its attempt key and the spec the executor runs.
pub fn assignment_from_wire(a: v1::Assignment) -> Result<(AttemptKey, AttemptSpec), WireError> {
    let key = attempt_key_from_wire(a.attempt)?;
    let uid: Uid = a.uid.parse().map_err(|e| invalid("assign.uid", e))?;
    let condition: Condition = a.condition.parse().map_err(|e| invalid("assign.condition", e))?;
    if uid.version != condition.version() {
        return Err(invalid("assign.uid", format!("'{uid}' does not run under condition '{condition}'")));
    }
    if a.agent.is_empty() {
        return Err(WireError::Missing("assign.agent"));
    }
    let skills =
        a.skills_json.as_deref().map(serde_json::from_str).transpose().map_err(|e| invalid("assign.skills_json", e))?;
    let perturbation_profile = a
        .perturbation_profile_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| invalid("assign.perturbation_profile_json", e))?;
    let spec = AttemptSpec {
        sweep: key.sweep.to_string(),
        treatment: a.treatment,
        uid,
        condition,
        rep: a.rep,
        attempt: key.attempt,
        seed: a.seed,
        max_steps: a.max_steps,
        task_timeout_ms: a.task_timeout_ms,
        agent: a.agent,
        model: a.model,
        skills,
        perturbation_profile,
        config_digest: a.config_digest,
        traceparent: a.traceparent,
        temperature: a.temperature,
        prompt_version: a.prompt_version,
        evaluator: match a.evaluator.as_deref() {
            None | Some("") => Mode::default(),
            Some(m) => m.parse().map_err(|e: String| invalid("assign.evaluator", e))?,
        },
        network_bodies: a.network_bodies,
    };
    Ok((key, spec))
}

/// Collects a wire map into a sorted map (deterministic iteration).
pub fn sorted<V: Clone>(m: &HashMap<String, V>) -> std::collections::BTreeMap<String, V> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        let uid: Uid = "skillshift.gitlab.v2.9".parse().expect("uid");
        let mut r = Record::new(uid, Condition::TgtExec);
        r.success = Some(false);
        r.steps = Some(10);
        r.skill_calls = Some(1);
        r.skill_failures = Some(1);
        r.outcome = Some(Outcome::Failure);
        r.attempt = Some(2);
        r.images = Some([("gitlab-v2".to_string(), "sha256:ab".to_string())].into_iter().collect());
        r
    }

    #[test]
    fn record_round_trips_through_the_wire() {
        let r = record();
        let back = Record::try_from(v1::RunRecord::from(&r)).expect("valid");
        assert_eq!(back, r);
        // The fields added last survive the wire too.
        let mut r = record();
        r.simulated = Some(true);
        r.failure_category = Some("wrong_answer".into());
        r.trajectory = Some("trajectories/sw-1/0.0.json".into());
        let w = v1::RunRecord::from(&r);
        assert_eq!((w.simulated, w.failure_category.as_deref()), (Some(true), Some("wrong_answer")));
        assert_eq!(Record::try_from(w).expect("valid"), r);
    }

    #[test]
    fn an_assignment_carries_its_scoring_rules_and_refuses_unknown_ones() {
        let uid: Uid = "skillshift.gitlab.v1.3".parse().expect("uid");
        let spec = AttemptSpec {
            sweep: "s1".into(),
            treatment: "CONTROL".into(),
            uid,
            max_steps: 5,
            task_timeout_ms: 1000,
            evaluator: Mode::Strict,
            network_bodies: true,
            ..AttemptSpec::example()
        };
        let key = AttemptKey { sweep: "s1".into(), unit: 0, attempt: 0 };
        let mut w = assignment_to_wire(&key, &spec);
        assert_eq!(w.evaluator.as_deref(), Some("strict"));
        assert_eq!(assignment_from_wire(w.clone()).expect("back").1.evaluator, Mode::Strict);
        assert!(w.network_bodies && assignment_from_wire(w.clone()).expect("back").1.network_bodies);
        w.evaluator = None;
        assert_eq!(assignment_from_wire(w.clone()).expect("an old coordinator").1.evaluator, Mode::WebArena);
        w.evaluator = Some("lenient".into());
        assert!(assignment_from_wire(w).unwrap_err().to_string().contains("assign.evaluator"));
    }

    #[test]
    fn an_attempt_reference_round_trips_and_a_missing_one_is_named() {
        let key = AttemptKey { sweep: "sw-1".into(), unit: 4, attempt: 2 };
        let wire = v1::AttemptRef::from(&key);
        assert_eq!(wire.sweep, "sw-1");
        assert_eq!(attempt_key_from_wire(Some(wire)), Ok(key));
        assert_eq!(attempt_key_from_wire(None), Err(WireError::Missing("attempt")));
        let empty = v1::AttemptRef { sweep: String::new(), unit: 0, attempt: 0 };
        assert_eq!(attempt_key_from_wire(Some(empty)), Err(WireError::Missing("attempt.sweep")));
    }

    #[test]
    fn a_cost_that_is_not_a_finite_non_negative_amount_is_refused() {
        for bad in [f64::NAN, f64::INFINITY, -0.5] {
            let mut w = v1::RunRecord::from(&record());
            w.cost_usd = Some(bad);
            let e = Record::try_from(w).unwrap_err().to_string();
            assert!(e.contains("record.cost_usd"), "{bad}: {e}");
        }
        let mut w = v1::RunRecord::from(&record());
        w.cost_usd = Some(0.25);
        assert_eq!(Record::try_from(w).expect("a plain cost").cost_usd, Some(0.25));
    }

    #[test]
    fn malformed_records_are_refused_with_the_field_named() {
        let mut w = v1::RunRecord::from(&record());
        w.condition = "tgt-exect".into();
        let e = Record::try_from(w).unwrap_err().to_string();
        assert!(e.contains("record.condition"), "{e}");

        let mut w = v1::RunRecord::from(&record());
        w.site = "magento".into();
        assert!(Record::try_from(w).unwrap_err().to_string().contains("disagrees"));

        let mut w = v1::RunRecord::from(&record());
        w.condition = "src".into();
        assert!(Record::try_from(w).unwrap_err().to_string().contains("record.uid"));

        let mut w = v1::RunRecord::from(&record());
        w.skill_failures = Some(3);
        assert!(Record::try_from(w).unwrap_err().to_string().contains("skill_failures"));
    }
}
