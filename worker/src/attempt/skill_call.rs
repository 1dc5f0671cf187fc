//! A skill the agent calls: looked up in the attempt's library (for the
//! task's site), its steps bound to the agent's arguments and run in the
//! browser, its outcome told to the journal and to the agent (its answer and
//! whether it worked).

use std::collections::BTreeMap;

use skillshift_telemetry::spans;
use tracing::{Instrument, Span};

use super::journal::{SkillCall, StepSpans};
use super::step::Stage;
use super::{browser_end, End, Progress};
use crate::skill_runtime::run_skill;

/// Runs the skill `name` with `args` at `step` on the page at `url`; the error to show the agent
/// in its next observation, or how the attempt ended.
pub(super) async fn call(
    stage: &Stage<'_>,
    step: u32,
    step_span: &Span,
    url: &str,
    name: &str,
    args: &BTreeMap<String, String>,
    p: &mut Progress,
) -> Result<Option<String>, End> {
    let (spec, session) = (stage.spec, stage.session);
    let site = spec.uid.site;
    let skill = spec.skills.as_ref().and_then(|l| l.get(name)).filter(|s| s.site == site).cloned();
    let skill_span = step_span.in_scope(|| spans::skill(name));
    let spans = StepSpans { step: step_span, act: None, skill: Some(&skill_span) };
    let (outcome, bound, steps_done) = match (&spec.skills, skill) {
        (None, _) => {
            let m = "this attempt has no skill library".to_string();
            p.journal.acted(step, url, format!("skill {name}"), Some(m.clone()), session.take_dialogs(), spans);
            return Ok(Some(m));
        }
        (Some(_), None) => (Err(format!("no skill named '{name}' for {site}")), Vec::new(), 0),
        (Some(_), Some(skill)) => {
            let bound: Vec<_> = skill.steps.iter().map(|s| s.bind(args)).collect();
            let grace = stage.ctx.sites.locator_grace(site, spec.uid.version);
            match run_skill(session, &skill, args, stage.ph, grace).instrument(skill_span.clone()).await {
                Ok(o) if o.ok => (Ok(o.answer), bound, o.steps_done),
                Ok(o) => (Err(o.error.unwrap_or_else(|| "skill failed".into())), bound, o.steps_done),
                Err(e) => return Err(browser_end(e)),
            }
        }
    };
    let (ok, error, answer) = match outcome {
        Ok(a) => (true, None, a),
        Err(e) => (false, Some(e), None),
    };
    let call =
        SkillCall { step, name, args, bound: &bound, steps_done, ok, error: error.clone(), answer: answer.clone() };
    p.journal.skill(call, session.take_dialogs(), spans);
    if let Some(agent) = p.agent.as_mut() {
        if let Some(a) = &answer {
            agent.skill_answer(name, a);
        }
        agent.skill_result(name, ok, error.as_deref());
    }
    Ok(error.map(|e| format!("skill '{name}' failed: {e}")))
}
