//! The coordinator's edge: sweep specs, statuses and worker lists to and from
//! their wire forms. Wire -> domain conversions validate and name the field.

use std::collections::BTreeMap;

use skillshift_common::skills::SkillLibrary;
use skillshift_common::{Condition, Site};
use skillshift_proto::convert::{site_version_from_wire, site_version_to_wire, WireError};
use skillshift_proto::v1;

use crate::planner::{SweepSpec, TreatmentSpec};
use crate::status::{AttemptCounts, CellProgress, SweepState, SweepStatus, UnitCounts, WorkerInfo};

fn invalid(field: &'static str, message: impl ToString) -> WireError {
    WireError::Invalid { field, message: message.to_string() }
}

pub fn spec_to_wire(s: &SweepSpec) -> v1::SweepSpec {
    v1::SweepSpec {
        treatments: s
            .treatments
            .iter()
            .map(|t| v1::Treatment {
                name: t.name.clone(),
                skills_json: t.skills.as_ref().and_then(|l| serde_json::to_string(l).ok()),
            })
            .collect(),
        agent: s.agent.clone(),
        model: s.model.clone(),
        provider: s.provider.clone(),
        sites: s.sites.iter().map(|x| x.to_string()).collect(),
        conditions: s.conditions.iter().map(|x| x.to_string()).collect(),
        families: s
            .families
            .iter()
            .map(|(site, ids)| (site.to_string(), v1::FamilyList { task_ids: ids.clone() }))
            .collect(),
        count: s.count,
        max_steps: s.max_steps,
        task_timeout_s: s.task_timeout_s,
        max_retries: s.max_retries,
        seed: s.seed,
        cost_budget_usd: s.cost_budget_usd,
        perturbation_profile_json: s.perturbation_profile.as_ref().map(|p| p.to_string()),
        task_file_digests: s.task_file_digests.clone().into_iter().collect(),
        image_digests: s.image_digests.clone().into_iter().collect(),
        prompt_version: s.prompt_version.clone(),
        temperature: s.temperature,
        agent_version: s.agent_version.clone(),
        harness_version: s.harness_version.clone(),
        evaluator: Some(s.evaluator.to_string()),
        simulated: s.simulated,
    }
}

pub fn spec_from_wire(w: v1::SweepSpec) -> Result<SweepSpec, WireError> {
    let treatments = w
        .treatments
        .into_iter()
        .map(|t| {
            let skills = t
                .skills_json
                .as_deref()
                .map(serde_json::from_str::<SkillLibrary>)
                .transpose()
                .map_err(|e| invalid("treatments.skills_json", format!("treatment '{}': {e}", t.name)))?;
            Ok(TreatmentSpec { name: t.name, skills })
        })
        .collect::<Result<Vec<_>, WireError>>()?;
    let sites =
        w.sites.iter().map(|s| s.parse::<Site>().map_err(|e| invalid("sites", e))).collect::<Result<Vec<_>, _>>()?;
    let conditions = w
        .conditions
        .iter()
        .map(|s| s.parse::<Condition>().map_err(|e| invalid("conditions", e)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut families = BTreeMap::new();
    for (site, list) in w.families {
        let site: Site = site.parse().map_err(|e| invalid("families", e))?;
        families.insert(site, list.task_ids);
    }
    let perturbation_profile = w
        .perturbation_profile_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| invalid("perturbation_profile_json", e))?;
    Ok(SweepSpec {
        treatments,
        agent: w.agent,
        agent_version: w.agent_version,
        model: w.model,
        provider: w.provider,
        prompt_version: w.prompt_version,
        temperature: w.temperature,
        sites,
        conditions,
        families,
        count: w.count,
        max_steps: w.max_steps,
        task_timeout_s: w.task_timeout_s,
        max_retries: w.max_retries,
        seed: w.seed,
        cost_budget_usd: w.cost_budget_usd,
        perturbation_profile,
        task_file_digests: w.task_file_digests.into_iter().collect(),
        image_digests: w.image_digests.into_iter().collect(),
        harness_version: w.harness_version,
        evaluator: match w.evaluator.as_deref() {
            None | Some("") => Default::default(),
            Some(m) => m.parse().map_err(|e: String| invalid("evaluator", e))?,
        },
        simulated: w.simulated,
    })
}

pub fn status_to_wire(s: &SweepStatus) -> v1::SweepStatus {
    v1::SweepStatus {
        id: s.id.to_string(),
        state: s.state.as_str().into(),
        units: Some(v1::UnitCounts {
            total: s.units.total,
            done: s.units.done,
            running: s.units.running,
            queued: s.units.queued,
            invalid: s.units.invalid,
        }),
        attempts: Some(v1::AttemptCounts { total: s.attempts.total, error: s.attempts.error }),
        cells: s
            .cells
            .iter()
            .map(|c| v1::CellProgress {
                site: c.site.to_string(),
                condition: c.condition.to_string(),
                total: c.total,
                done: c.done,
                running: c.running,
                invalid: c.invalid,
                successes: c.successes,
            })
            .collect(),
        workers: s.workers,
        eta_ms: s.eta_ms,
        config_digest: s.config_digest.clone(),
        created_ms: s.created_ms,
        cost_usd: s.cost_usd,
        stopped: s.stopped.clone(),
        top_errors: s
            .top_errors
            .iter()
            .map(|(error, count)| v1::ErrorCount { error: error.clone(), count: *count })
            .collect(),
        unrunnable: s
            .unrunnable
            .iter()
            .map(|u| v1::Unrunnable { site: u.site.to_string(), version: u.version.to_string(), queued: u.queued })
            .collect(),
    }
}

pub fn status_from_wire(w: v1::SweepStatus) -> Result<SweepStatus, WireError> {
    let state = SweepState::parse(&w.state).ok_or_else(|| invalid("state", format!("unknown state '{}'", w.state)))?;
    let u = w.units.ok_or(WireError::Missing("units"))?;
    let a = w.attempts.ok_or(WireError::Missing("attempts"))?;
    let cells = w
        .cells
        .into_iter()
        .map(|c| {
            Ok(CellProgress {
                site: c.site.parse().map_err(|e| invalid("cells.site", e))?,
                condition: c.condition.parse().map_err(|e| invalid("cells.condition", e))?,
                total: c.total,
                done: c.done,
                running: c.running,
                invalid: c.invalid,
                successes: c.successes,
            })
        })
        .collect::<Result<Vec<_>, WireError>>()?;
    Ok(SweepStatus {
        id: w.id.into(),
        state,
        units: UnitCounts { total: u.total, done: u.done, running: u.running, queued: u.queued, invalid: u.invalid },
        attempts: AttemptCounts { total: a.total, error: a.error },
        cells,
        workers: w.workers,
        eta_ms: w.eta_ms,
        config_digest: w.config_digest,
        created_ms: w.created_ms,
        cost_usd: w.cost_usd,
        stopped: w.stopped,
        // Bounded whatever the server sent: the summary's few lines, each clipped.
        top_errors: w
            .top_errors
            .into_iter()
            .take(crate::status::TOP_ERRORS)
            .map(|e| (skillshift_common::record::error_detail(&e.error), e.count))
            .collect(),
        // Bounded: one row per site-version at most.
        unrunnable: w
            .unrunnable
            .into_iter()
            .take(skillshift_common::ids::Site::ALL.len() * 2)
            .map(|u| {
                Ok(crate::status::Unrunnable {
                    site: u.site.parse().map_err(|e| invalid("unrunnable.site", e))?,
                    version: u.version.parse().map_err(|e| invalid("unrunnable.version", e))?,
                    queued: u.queued,
                })
            })
            .collect::<Result<Vec<_>, WireError>>()?,
    })
}

pub fn worker_to_wire(w: &WorkerInfo) -> v1::WorkerInfo {
    v1::WorkerInfo {
        id: w.id.clone(),
        name: w.name.clone(),
        hosts: w.hosts.iter().map(|(s, v)| site_version_to_wire(*s, *v)).collect(),
        slots: w.slots,
        connected: w.connected,
        running: w.running,
        last_seen_ms_ago: w.last_seen_ms_ago,
        unavailable: w.unavailable.clone(),
    }
}

pub fn worker_from_wire(w: v1::WorkerInfo) -> Result<WorkerInfo, WireError> {
    Ok(WorkerInfo {
        hosts: w.hosts.iter().map(site_version_from_wire).collect::<Result<_, _>>()?,
        id: w.id,
        name: w.name,
        slots: w.slots,
        connected: w.connected,
        running: w.running,
        last_seen_ms_ago: w.last_seen_ms_ago,
        unavailable: w.unavailable.map(|u| skillshift_common::record::error_detail(&u)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_round_trips_and_bad_names_are_refused() {
        let mut s = SweepSpec::full_grid(TreatmentSpec { name: "CONTROL".into(), skills: None });
        s.families.insert(Site::Magento, vec![1, 2]);
        s.model = Some("gpt".into());
        assert_eq!(spec_from_wire(spec_to_wire(&s)).expect("valid"), s);
        let mut w = spec_to_wire(&s);
        w.conditions.push("tgt-pert".into());
        let e = spec_from_wire(w).unwrap_err().to_string();
        assert!(e.contains("conditions") && e.contains("tgt-pert"), "{e}");
    }
}
