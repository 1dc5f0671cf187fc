//! The skill recorder: counts an attempt's skill invocations and failures
//! (ASC and SFR come from these counts; `docs/design.md`).
//!
//! Skills the harness executed and skills an external agent ran itself and
//! reported (`skill_report`, `docs/formats.md`, agent protocol) count the same way. When the attempt
//! has no skill library and nothing was reported, the counts are `null`, not 0:
//! ASC and SFR do not apply to a method without executable skills.

/// One recorded invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEvent {
    /// The agent step it belonged to.
    pub step: u32,
    pub name: String,
    pub ok: bool,
    pub error: Option<String>,
    /// True when the agent reported it rather than the harness running it.
    pub reported: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Recorder {
    has_library: bool,
    events: Vec<SkillEvent>,
}

impl Recorder {
    pub fn new(has_library: bool) -> Self {
        Recorder { has_library, events: Vec::new() }
    }

    pub fn record(&mut self, event: SkillEvent) {
        self.events.push(event);
    }

    pub fn events(&self) -> &[SkillEvent] {
        &self.events
    }

    /// `(skill_calls, skill_failures)` for the record.
    pub fn counts(&self) -> (Option<u32>, Option<u32>) {
        if !self.has_library && self.events.is_empty() {
            return (None, None);
        }
        let calls = self.events.len() as u32;
        let failures = self.events.iter().filter(|e| !e.ok).count() as u32;
        (Some(calls), Some(failures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ok: bool, reported: bool) -> SkillEvent {
        SkillEvent { step: 0, name: "s".into(), ok, error: None, reported }
    }

    #[test]
    fn counts_are_null_without_skills_and_zero_with_an_unused_library() {
        assert_eq!(Recorder::new(false).counts(), (None, None));
        assert_eq!(Recorder::new(true).counts(), (Some(0), Some(0)));
    }

    #[test]
    fn executed_and_reported_skills_count_alike() {
        let mut r = Recorder::new(false);
        r.record(ev(true, true));
        r.record(ev(false, true));
        assert_eq!(r.counts(), (Some(2), Some(1)));
        let mut r = Recorder::new(true);
        r.record(ev(false, false));
        assert_eq!(r.counts(), (Some(1), Some(1)));
    }
}
