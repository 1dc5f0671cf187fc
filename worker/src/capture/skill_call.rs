//! A skill call as a trajectory step keeps it: the bound steps it ran, in the
//! library's own words (action and locator), and the one that failed.

use std::collections::BTreeMap;

use serde_json::Value;
use skillshift_common::skills::Step as SkillStep;
use skillshift_common::trajectory::{SkillCall, SkillSubStep};

/// A skill call's record: the bound steps it ran, each ok up to `steps_done`,
/// the next one failed with `error` when the call failed.
pub fn skill_call(
    name: &str,
    args: &BTreeMap<String, String>,
    bound: &[SkillStep],
    ok: bool,
    error: Option<&str>,
    steps_done: usize,
) -> SkillCall {
    let mut steps: Vec<SkillSubStep> = bound.iter().take(steps_done).map(|s| sub_step(s, true, None)).collect();
    if !ok {
        if let Some(failed) = bound.get(steps_done) {
            steps.push(sub_step(failed, false, error));
        }
    }
    SkillCall {
        name: name.to_string(),
        args: args.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect(),
        ok,
        error: error.map(str::to_string),
        steps,
    }
}

fn sub_step(step: &SkillStep, ok: bool, error: Option<&str>) -> SkillSubStep {
    let mut v = serde_json::to_value(step).unwrap_or(Value::Null);
    let action = v.get("action").and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(o) = v.as_object_mut() {
        o.remove("action");
    }
    let target = match v.get("target") {
        Some(t) if v.as_object().is_some_and(|o| o.len() == 1) => Some(t.clone()),
        _ => Some(v),
    };
    SkillSubStep { action, target, ok, error: error.map(str::to_string) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use skillshift_common::skills::Target;

    fn click(name: &str) -> SkillStep {
        SkillStep::Click {
            target: Target {
                role: "button".into(),
                name: name.into(),
                nth: None,
                column: None,
                row: None,
                name_pattern: None,
            },
        }
    }

    #[test]
    fn a_failed_skill_call_names_its_failing_sub_step() {
        let bound = vec![SkillStep::Goto { url: "http://x/new".into() }, click("Save"), click("Done")];
        let call = skill_call("save", &BTreeMap::new(), &bound, false, Some("step 1 (click): no element"), 1);
        assert_eq!(call.steps.len(), 2, "the steps run and the failing one; not the rest");
        assert_eq!(call.failed_step(), Some(1));
        assert_eq!(call.steps[1].action, "click");
        assert_eq!(call.steps[1].target, Some(json!({"role": "button", "name": "Save"})));
        assert_eq!(call.steps[0].target, Some(json!({"url": "http://x/new"})));
    }
}
