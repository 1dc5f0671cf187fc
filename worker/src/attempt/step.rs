//! The agent's steps, up to `max_steps`: each one settles the previous
//! step's network requests, sets the step's perturbations, observes the page
//! (the observation and the step's screenshot), asks the agent for its move
//! and carries it out (an action in the browser, a skill call, or the stop
//! with its answer). WebArena's early stop ends the attempt after
//! [`EARLY_STOP_UNPARSED`] unparseable actions in a row.

use skillshift_common::AttemptSpec;
use skillshift_telemetry::metrics::WorkerMetrics;
use skillshift_telemetry::spans;
use tracing::{Instrument, Span};

use super::journal::StepSpans;
use super::prepare::SetUp;
use super::screenshots::{reply_beside_screenshot, save_screenshot, screenshot};
use super::source::RunContext;
use super::{browser_end, err, skill_call, End, Progress, EARLY_STOP_UNPARSED};
use crate::action::Action;
use crate::actions::ActError;
use crate::agent::{Move, Observation, Reply};
use crate::axtree::Snapshot;
use crate::browser::Session;
use crate::capture;
use crate::skill_runtime::Placeholders;
use crate::tabs::{self, Tabs};
use skillshift_common::ErrorReason;

/// What every step of the attempt works on.
pub(super) struct Stage<'a> {
    pub ctx: &'a RunContext,
    pub session: &'a Session,
    pub spec: &'a AttemptSpec,
    pub ph: &'a Placeholders,
    pub tabs: &'a Tabs,
    pub set_up: &'a SetUp<'a>,
    /// The title of the condition's interstitial, when it has one.
    pub modal_title: Option<&'a str>,
}

/// What one step hands the next.
#[derive(Default)]
struct Carry {
    /// The error of the last action, shown to the agent in its next observation.
    last_error: Option<String>,
    /// WebArena's early stop: this many unparseable actions in a row end the attempt.
    unparsed_in_a_row: u32,
}

/// Whether the agent's move ended its steps.
enum Next {
    Go,
    Stop,
}

/// Runs the agent's steps; whether it stopped (with its answer in `p.answer`) before running out
/// of steps, or how the attempt ended.
pub(super) async fn walk(stage: &Stage<'_>, p: &mut Progress) -> Result<bool, End> {
    let mut carry = Carry::default();
    for step in 0..stage.spec.max_steps {
        if let Next::Stop = one_step(stage, step, &mut carry, p).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

async fn one_step(stage: &Stage<'_>, step: u32, carry: &mut Carry, p: &mut Progress) -> Result<Next, End> {
    // Telemetry: one span per step; observe, the agent's LLM calls, act and skill are its children.
    let step_span = spans::step(step);
    let snap = observe(stage, step, &step_span, p).await?;
    let reply = ask(stage, step, &step_span, &snap, carry, p).await?;
    for rep in reply.skill_reports {
        p.journal.reported(step, rep);
    }
    let session = stage.session;
    match reply.mv {
        Move::Action(Action::Stop { answer }) => {
            let spans = StepSpans { step: &step_span, act: None, skill: None };
            p.journal.acted(step, &snap.url, format!("stop [{answer}]"), None, session.take_dialogs(), spans);
            p.answer = Some(answer);
            Ok(Next::Stop)
        }
        Move::Action(action) => act(stage, step, &step_span, &snap, action, carry, p).await,
        Move::Skill { name, args } => {
            carry.unparsed_in_a_row = 0;
            carry.last_error = skill_call::call(stage, step, &step_span, &snap.url, &name, &args, p).await?;
            Ok(Next::Go)
        }
    }
}

/// Settles the previous step's requests, sets the step's perturbations and observes the page.
async fn observe(stage: &Stage<'_>, step: u32, step_span: &Span, p: &mut Progress) -> Result<Snapshot, End> {
    let session = stage.session;
    // The previous step's requests get their post data and bodies while their tabs are open.
    session.network_flush().await;
    session.network_step(step + 1);
    let applied = stage.set_up.perturbation.set_step(session, step).await.map_err(browser_end)?;
    let snap =
        tabs::observe(session, stage.tabs).instrument(step_span.in_scope(spans::observe)).await.map_err(browser_end)?;
    session.touch(&snap.url);
    let shown = capture::perturbations(&applied, &snap.text, stage.modal_title);
    p.journal.observed(step, &snap, shown);
    Ok(snap)
}

/// Shows the agent the observation and waits for its reply, the step's screenshot taken beside it.
async fn ask(
    stage: &Stage<'_>,
    step: u32,
    step_span: &Span,
    snap: &Snapshot,
    carry: &mut Carry,
    p: &mut Progress,
) -> Result<Reply, End> {
    let session = stage.session;
    // The step's trajectory screenshot reads the page as it stands, as the agent does: it is
    // taken beside the agent's reply (a model's call hides it), and the step waits only for
    // what it outlasts the reply.
    let mut shoot = None;
    if let Some(dir) = &stage.ctx.screenshots {
        if let Some(png) = screenshot(session).await {
            save_screenshot(dir, stage.spec, step, &png).await;
            p.journal.capture.screenshot(png, None);
        }
    } else {
        shoot = p.journal.capture.wants_screenshot(carry.last_error.is_some());
    }
    let shown_error = carry.last_error.clone();
    let obs = Observation {
        step,
        url: snap.url.clone(),
        title: snap.title.clone(),
        axtree: snap.text.clone(),
        last_action_error: carry.last_error.take(),
    };
    let Some(agent) = p.agent.as_mut() else { return Err(err(ErrorReason::Agent, "no agent")) };
    let reply = agent.next(obs).instrument(step_span.clone());
    let reply = match shoot {
        None => reply.await,
        Some(when) => reply_beside_screenshot(session, &mut p.journal.capture, reply, when).await,
    };
    let reply = reply.map_err(|e| err(ErrorReason::Agent, e.to_string()))?;
    p.steps = step + 1;
    let llm = p.agent.as_mut().and_then(|a| a.take_llm());
    p.journal.capture.replied(shown_error, llm);
    WorkerMetrics::global().step();
    Ok(reply)
}

/// Carries out a browser action; an unparseable one counts towards WebArena's early stop.
async fn act(
    stage: &Stage<'_>,
    step: u32,
    step_span: &Span,
    snap: &Snapshot,
    action: Action,
    carry: &mut Carry,
    p: &mut Progress,
) -> Result<Next, End> {
    let session = stage.session;
    let act_span = step_span.in_scope(|| spans::act(action.to_string().split(' ').next().unwrap_or("")));
    let result =
        tabs::execute(session, stage.tabs, &action, |id| snap.ids.get(&id).copied()).instrument(act_span.clone()).await;
    let error = match result {
        Ok(()) => None,
        Err(ActError::Fatal(e)) => return Err(browser_end(e)),
        Err(ActError::Failed(m)) => Some(m),
    };
    let spans = StepSpans { step: step_span, act: Some(&act_span), skill: None };
    p.journal.acted(step, &snap.url, action.to_string(), error.clone(), session.take_dialogs(), spans);
    carry.last_error = error;
    carry.unparsed_in_a_row = if action.is_invalid() { carry.unparsed_in_a_row + 1 } else { 0 };
    if carry.unparsed_in_a_row >= EARLY_STOP_UNPARSED {
        // As WebArena's run.py: the attempt stops with this answer and is scored.
        let answer = format!("Early stop: Failed to parse actions for {EARLY_STOP_UNPARSED} times");
        p.journal.note(answer.clone());
        p.answer = Some(answer);
        return Ok(Next::Stop);
    }
    Ok(Next::Go)
}
