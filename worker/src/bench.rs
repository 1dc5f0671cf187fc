//! Per-step harness overhead on any page, no agent: what `skillshift bench step`
//! measures (`docs/performance.md` has the figures and the side-by-side with
//! BrowserGym).
//!
//! The browser is opened the way a worker opens it ([`Driver::checkout`]). Setup
//! is timed on the attempt path a worker's slot takes after its first attempt:
//! the kept browser handed out again (fresh tab, storage cleared) and the page
//! loaded. Each step is the observation the run loop builds plus one action
//! chosen from it in rotation: a click on the next link whose `href` starts with
//! `#`, typing `text <i>` into the next textbox, `scroll [down]`. A kind the page
//! has no element for gives its turn to the next kind.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::action::Action;
use crate::actions::{self, ActError};
use crate::axtree::{Observer, Snapshot};
use crate::browser::{BrowserError, Driver};

/// Setups timed after the first (cold) one.
pub const SETUPS: usize = 5;

/// The timings of one run.
#[derive(Debug, Clone, Default)]
pub struct StepBench {
    pub url: String,
    pub steps: usize,
    /// Actions that failed (the agent would have seen `last_action_error`).
    pub errors: usize,
    pub setup: Vec<Duration>,
    pub observe: Vec<Duration>,
    pub act: Vec<Duration>,
    pub step: Vec<Duration>,
    pub obs_chars: (usize, usize),
    /// The actions taken, in order (for a person reading the run).
    pub actions: Vec<String>,
}

/// Nearest-rank percentile in milliseconds; 0 for no samples.
pub fn percentile_ms(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort();
    let rank = ((s.len() as f64 * p).ceil() as usize).clamp(1, s.len());
    (s[rank - 1].as_secs_f64() * 1e6).round() / 1e3
}

/// `{"p50", "p90"}` of `v`, in milliseconds (the shape every bench's JSON uses).
pub fn p50_p90(v: &[Duration]) -> Value {
    json!({"p50": percentile_ms(v, 0.5), "p90": percentile_ms(v, 0.9)})
}

impl StepBench {
    /// The JSON `skillshift bench step --json` prints.
    pub fn to_json(&self) -> Value {
        let pair = p50_p90;
        json!({
            "url": self.url,
            "steps": self.steps,
            "errors": self.errors,
            "setup_ms": {"n": self.setup.len(), "p50": percentile_ms(&self.setup, 0.5), "p90": percentile_ms(&self.setup, 0.9)},
            "observe_ms": pair(&self.observe),
            "act_ms": pair(&self.act),
            "step_ms": pair(&self.step),
            "obs_chars": {"first": self.obs_chars.0, "last": self.obs_chars.1},
        })
    }
}

/// Printed ids of links whose `href` starts with `#` (their URL is the page's own plus a fragment).
fn fragment_links(snap: &Snapshot) -> Vec<u64> {
    let page = snap.url.split('#').next().unwrap_or("");
    snap.tree
        .nodes
        .iter()
        .filter(|n| !n.ignored && n.role == "link")
        .filter(|n| {
            n.properties.iter().any(|(k, v)| {
                k == "url" && v.as_str().and_then(|u| u.strip_prefix(page)).is_some_and(|rest| rest.starts_with('#'))
            })
        })
        .filter_map(|n| n.id.parse::<u64>().ok())
        .filter(|id| snap.ids.contains_key(id))
        .collect()
}

fn textboxes(snap: &Snapshot) -> Vec<u64> {
    snap.tree
        .nodes
        .iter()
        .filter(|n| !n.ignored && n.role == "textbox")
        .filter_map(|n| n.id.parse::<u64>().ok())
        .filter(|id| snap.ids.contains_key(id))
        .collect()
}

/// The action of step `i`, from its observation; `cursor` holds the next link and textbox to use.
fn choose(snap: &Snapshot, i: usize, cursor: &mut (usize, usize)) -> Action {
    let links = fragment_links(snap);
    let boxes = textboxes(snap);
    for k in 0..3 {
        match (i + k) % 3 {
            0 if !links.is_empty() => {
                let id = links[cursor.0 % links.len()];
                cursor.0 += 1;
                return Action::Click { id };
            }
            1 if !boxes.is_empty() => {
                let id = boxes[cursor.1 % boxes.len()];
                cursor.1 += 1;
                return Action::Type { id, text: format!("text {i}"), enter: false };
            }
            2 => return Action::Scroll { down: true },
            _ => {}
        }
    }
    Action::Scroll { down: true }
}

/// Runs the bench: setups, then `steps` steps on `url`.
pub async fn run(driver: &Driver, url: &str, steps: usize) -> Result<StepBench, BrowserError> {
    let mut out = StepBench { url: url.to_string(), steps, ..StepBench::default() };
    // The cold start (chromedriver and Chromium) is not an attempt's setup; the worker pays it once.
    let session = driver.checkout().await?;
    session.goto(url).await?;
    driver.checkin(session).await;
    for _ in 0..SETUPS {
        let t = Instant::now();
        let s = driver.checkout().await?;
        s.goto(url).await?;
        out.setup.push(t.elapsed());
        driver.checkin(s).await;
    }
    let session = driver.checkout().await?;
    session.goto(url).await?;
    let mut cursor = (0, 0);
    let observer = Observer::default();
    for i in 0..steps {
        let t = Instant::now();
        let snap = observer.observe(&session).await?;
        let observed = t.elapsed();
        let chars = snap.text.chars().count();
        if i == 0 {
            out.obs_chars.0 = chars;
        }
        out.obs_chars.1 = chars;
        let action = choose(&snap, i, &mut cursor);
        let a = Instant::now();
        match actions::execute(&session, &action, |id| snap.ids.get(&id).copied()).await {
            Ok(()) => {}
            Err(ActError::Failed(m)) => {
                out.errors += 1;
                tracing::debug!(step = i, error = %m, "action failed");
            }
            Err(ActError::Fatal(e)) => return Err(e),
        }
        out.act.push(a.elapsed());
        out.observe.push(observed);
        out.step.push(t.elapsed());
        out.actions.push(action.to_string());
    }
    session.close().await;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<Duration> = (1..=10).map(Duration::from_millis).collect();
        assert_eq!(percentile_ms(&v, 0.5), 5.0);
        assert_eq!(percentile_ms(&v, 0.9), 9.0);
        assert_eq!(percentile_ms(&[], 0.5), 0.0);
    }
}
