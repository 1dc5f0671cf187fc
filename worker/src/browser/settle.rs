//! Settling: after an input, waiting until the page is done with it (a navigation it began has
//! loaded, the page's own requests it sent have ended), on what the page and its events say, never
//! a fixed sleep.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{BrowserError, Session};
use crate::cdp::Events;

impl Session {
    /// Notes the page's state before an input, so [`Session::settle`] can tell whether the input
    /// started a navigation (`beforeunload` fires when one begins; page events say when it ends).
    pub async fn mark_input(&self) -> Result<InputMark, BrowserError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let token = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let page = self.page();
        let events = page.as_ref().map(|p| p.conn.events(Some(&p.session)));
        self.eval(&format!(
            "window.__skillshiftMark = {token}; window.__skillshiftLeaving = false; \
             addEventListener('beforeunload', () => {{ window.__skillshiftLeaving = true; }}, {{once: true}}); true"
        ))
        .await?;
        let requests = self.trace_mark();
        Ok(InputMark { token, events, main_frame: page.map(|p| p.target).unwrap_or_default(), requests })
    }

    /// A mark in the attempt's network trace ([`crate::network::Recorder::mark`]); `None` when no
    /// trace is recorded (chromedriver's relay, or the trace turned off).
    fn trace_mark(&self) -> Option<usize> {
        let conn = self.devtools.as_ref()?;
        conn.with_trace(|t| t.is_recording().then(|| t.mark())).flatten()
    }

    /// The page's own requests (`fetch`, `XMLHttpRequest`) sent since `mark` that are still under way.
    fn fetches_in_flight(&self, mark: Option<usize>) -> usize {
        match (mark, &self.devtools) {
            (Some(since), Some(conn)) => conn.with_trace(|t| t.fetches_in_flight(since)).unwrap_or(0),
            _ => 0,
        }
    }

    /// Waits until the page is done with the input marked by `mark`, at most `limit`: when no
    /// navigation began (checked after one turn of the page's task loop, which orders it after the
    /// input's own effects), once the page's own requests (`fetch`, `XMLHttpRequest`) sent since the
    /// mark have ended, at once when there are none (a save through the REST API is part of the
    /// click that sent it; only with a network trace, which records them); else when the new
    /// document has loaded, or when the navigation ended without one (a 204, a download, a cancel),
    /// whatever the new page then fetches. No fixed sleep: the wait ends on what the page says,
    /// re-checked at most every 100 ms while a navigation or a request is under way.
    pub async fn settle(&self, mark: InputMark, limit: Duration) -> Result<(), BrowserError> {
        self.settle_within(mark, limit).await.map(|_| ())
    }

    /// [`Session::settle`], saying whether the page settled (`false`: `limit` ran out first).
    pub(super) async fn settle_within(&self, mark: InputMark, limit: Duration) -> Result<bool, BrowserError> {
        let span = skillshift_telemetry::spans::settle();
        let mut work = SettleWork::default();
        let settled = tracing::Instrument::instrument(self.settle_wait(mark, limit, &mut work), span.clone()).await;
        skillshift_telemetry::spans::record_settle_work(&span, work.probes, work.events, work.navigated);
        if let Ok(s) = &settled {
            skillshift_telemetry::spans::record_settled(&span, *s);
        }
        settled
    }

    async fn settle_wait(
        &self,
        mut mark: InputMark,
        limit: Duration,
        work: &mut SettleWork,
    ) -> Result<bool, BrowserError> {
        let start = Instant::now();
        let probe = format!(
            "new Promise(r => setTimeout(() => r([window.__skillshiftMark === {}, document.readyState, \
             window.__skillshiftLeaving === true]), 0))",
            mark.token
        );
        let mut nav = NavState::default();
        loop {
            let probed = self.eval(&probe).await;
            work.probes += 1;
            if let Some(events) = mark.events.as_mut() {
                while let Some(e) = events.try_next() {
                    work.events += 1;
                    nav.note(&e.method, &e.params, &mark.main_frame);
                }
            }
            match probed {
                Ok(v) => {
                    let same = v.get(0).and_then(Value::as_bool).unwrap_or(false);
                    let ready = v.get(1).and_then(Value::as_str) == Some("complete");
                    let leaving = v.get(2).and_then(Value::as_bool).unwrap_or(false);
                    // An input that left the page is done when the new page has loaded (or the
                    // navigation ended without one); one that stayed, when the page's own requests
                    // sent since it began (a save through the REST API, an autosave) have ended.
                    let navigated = !same || (leaving && nav.ended());
                    let stayed = same && !leaving && !nav.pending() && self.fetches_in_flight(mark.requests) == 0;
                    if ready && (navigated || stayed) {
                        work.navigated = !same;
                        return Ok(true);
                    }
                }
                // The context was destroyed by the navigation: look again.
                Err(e) if e.is_fatal() => return Err(e),
                Err(_) => {}
            }
            let left = limit.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(false);
            }
            match mark.events.as_mut() {
                Some(events) => {
                    if let Some(e) = events.next_within(left.min(Duration::from_millis(100))).await {
                        work.events += 1;
                        nav.note(&e.method, &e.params, &mark.main_frame);
                    }
                }
                // Through chromedriver there are no events: poll.
                None => tokio::time::sleep(left.min(Duration::from_millis(10))).await,
            }
        }
    }
}

/// What [`Session::mark_input`] noted; handed to [`Session::settle`].
pub struct InputMark {
    token: u64,
    events: Option<Events>,
    main_frame: String,
    /// The network trace's mark when the input began, if a trace is recorded.
    requests: Option<usize>,
}

/// What one settle cost, for its span: the page asked (one `Runtime.evaluate` each), the tab's
/// DevTools events read, and whether it ended on a new document (what a settle's CPU floor counts:
/// a navigation, or one question to the page, `scripts/bench/phases.py`).
#[derive(Debug, Default)]
struct SettleWork {
    probes: u32,
    events: u32,
    navigated: bool,
}

/// The main frame's navigation as its events tell it.
#[derive(Debug, Default)]
struct NavState {
    requested: bool,
    stopped: bool,
}

impl NavState {
    fn note(&mut self, method: &str, params: &Value, main_frame: &str) {
        let main = params.get("frameId").and_then(Value::as_str) == Some(main_frame);
        match method {
            "Page.frameRequestedNavigation"
                if main
                    && params.get("disposition").and_then(Value::as_str).unwrap_or("currentTab") == "currentTab" =>
            {
                self.requested = true;
                self.stopped = false;
            }
            "Page.frameStartedLoading" if main => {
                self.requested = true;
                self.stopped = false;
            }
            "Page.frameStoppedLoading" if main => self.stopped = true,
            "Page.loadEventFired" => self.stopped = true,
            _ => {}
        }
    }

    /// A navigation of the main frame began and has not ended.
    fn pending(&self) -> bool {
        self.requested && !self.stopped
    }

    /// The main frame stopped loading after the input.
    fn ended(&self) -> bool {
        self.stopped
    }
}
