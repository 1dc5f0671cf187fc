//! The attempt's journal: every attempt event is told to it once, and it fans
//! the event out to whoever keeps account of it: the caller's [`EventSink`]
//! (`skillshift run` prints the trajectory as it happens), the trajectory
//! being written ([`Capture`]), the skill [`Recorder`] (ASC and SFR) and the
//! telemetry spans of the step. Each listener sees the events in the order
//! they happened.

use skillshift_common::perturbation::AppliedPerturbation;
use skillshift_telemetry::spans;
use tracing::Span;

use crate::agent::SkillReport;
use crate::capture::{self, Capture};
use crate::cdp::Dialog;
use crate::recorder::{Recorder, SkillEvent};
use crate::scorer::Score;

/// One line of the trajectory.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Step {
        step: u32,
        url: String,
        action: String,
        error: Option<String>,
    },
    Skill {
        step: u32,
        name: String,
        ok: bool,
        error: Option<String>,
        answer: Option<String>,
    },
    Reported {
        step: u32,
        name: String,
        ok: bool,
        error: Option<String>,
    },
    Score {
        details: Vec<String>,
    },
    /// The observation shown to the agent at a step.
    Observation {
        step: u32,
        text: String,
    },
    Note(String),
}

/// Observes the trajectory as it happens (`skillshift run` prints it).
pub type EventSink = Box<dyn FnMut(&Event) + Send>;

/// The JavaScript dialogs answered during a step, and how many more were answered but not kept
/// (`Session::take_dialogs`).
pub(super) type Dialogs = (Vec<Dialog>, u64);

/// The spans a step's events are recorded on.
pub(super) struct StepSpans<'a> {
    /// The step's own span.
    pub step: &'a Span,
    /// The span of the step's browser action, when it acted.
    pub act: Option<&'a Span>,
    /// The span of the step's skill call, when it called one.
    pub skill: Option<&'a Span>,
}

/// A skill the harness ran for the agent, as the journal tells it.
pub(super) struct SkillCall<'a> {
    pub step: u32,
    pub name: &'a str,
    pub args: &'a std::collections::BTreeMap<String, String>,
    /// The skill's steps with the arguments bound.
    pub bound: &'a [skillshift_common::skills::Step],
    pub steps_done: usize,
    pub ok: bool,
    pub error: Option<String>,
    pub answer: Option<String>,
}

/// The listeners of one attempt's events.
pub(super) struct Journal {
    sink: Option<EventSink>,
    /// The trajectory being written.
    pub capture: Capture,
    recorder: Recorder,
}

impl Journal {
    pub fn new(sink: Option<EventSink>, capture: Capture, recorder: Recorder) -> Journal {
        Journal { sink, capture, recorder }
    }

    /// The skill counts for the record.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn emit(&mut self, e: Event) {
        if let Some(s) = self.sink.as_mut() {
            s(&e);
        }
    }

    /// A note for the caller alone (a reset, an early stop, how the attempt failed).
    pub fn note(&mut self, text: String) {
        self.emit(Event::Note(text));
    }

    /// The observation shown to the agent at `step`.
    pub fn observed(&mut self, step: u32, snap: &crate::axtree::Snapshot, shown: Vec<AppliedPerturbation>) {
        self.emit(Event::Observation { step, text: snap.text.clone() });
        self.capture.observed(step, &snap.url, &snap.title, &snap.text, shown);
    }

    /// A skill the agent ran by itself and reports.
    pub fn reported(&mut self, step: u32, rep: SkillReport) {
        self.capture.reported(&rep.name, rep.ok, rep.error.as_deref());
        self.recorder.record(SkillEvent {
            step,
            name: rep.name.clone(),
            ok: rep.ok,
            error: rep.error.clone(),
            reported: true,
        });
        self.emit(Event::Reported { step, name: rep.name, ok: rep.ok, error: rep.error });
    }

    /// What the agent's move did at `step` on the page at `url` (an action, its stop, or a skill
    /// the attempt cannot run), with its error and the dialogs it opened.
    pub fn acted(
        &mut self,
        step: u32,
        url: &str,
        action: String,
        error: Option<String>,
        dialogs: Dialogs,
        spans: StepSpans<'_>,
    ) {
        self.emit(Event::Step { step, url: url.to_string(), action: action.clone(), error: error.clone() });
        self.capture.action(action.clone());
        self.dialogs(dialogs);
        if let (Some(span), Some(m)) = (spans.act, &error) {
            spans::record_error(span, m);
        }
        if let Some(span) = spans.skill {
            spans::record_skill(span, error.is_none(), error.as_deref());
        }
        spans::record_step(spans.step, &action, error.as_deref());
    }

    /// A skill the harness ran, with the dialogs it opened.
    pub fn skill(&mut self, call: SkillCall<'_>, dialogs: Dialogs, spans: StepSpans<'_>) {
        let SkillCall { step, name, args, bound, steps_done, ok, error, answer } = call;
        self.capture.skill(capture::skill_call(name, args, bound, ok, error.as_deref(), steps_done));
        self.dialogs(dialogs);
        self.recorder.record(SkillEvent { step, name: name.to_string(), ok, error: error.clone(), reported: false });
        if let Some(span) = spans.skill {
            spans::record_skill(span, ok, error.as_deref());
        }
        spans::record_step(spans.step, &format!("skill {name}"), error.as_deref());
        self.emit(Event::Skill { step, name: name.to_string(), ok, error, answer });
    }

    /// The verdict of the task's evaluators.
    pub fn scored(&mut self, score: &Score, span: &Span) {
        let verdict = match &score.verdict {
            skillshift_common::evaluate::Verdict::Pass => "pass",
            skillshift_common::evaluate::Verdict::Fail => "fail",
            skillshift_common::evaluate::Verdict::Invalid(_) => "invalid",
        };
        spans::record_score_details(span, &score.details, verdict);
        self.emit(Event::Score { details: score.details.clone() });
        match (&score.scored, &score.verified) {
            (Some(scored), _) => self.capture.score(scored),
            (None, Some(v)) => self.capture.score_verified(v),
            (None, None) => self.capture.score_stopped(&score.details.join("; ")),
        }
    }

    /// The JavaScript dialogs answered during the step, into its trajectory step, and said so.
    fn dialogs(&mut self, (dialogs, unnoted): Dialogs) {
        for d in &dialogs {
            let done = if d.accepted { "accepted" } else { "dismissed" };
            self.emit(Event::Note(format!("{} dialog {:?} {done}", d.kind, d.message)));
        }
        if unnoted > 0 {
            tracing::warn!(
                unnoted,
                "a page opened more javascript dialogs in one step than are kept; all were answered"
            );
        }
        self.capture.dialogs(dialogs);
    }
}
