//! The trajectory's screenshots: the step's, taken beside the agent's reply
//! (a model's call hides it) or on its own, the page the agent ended on, and
//! the `--screenshots DIR` copies; each one's time counted in the worker's
//! metrics, and a page unchanged since the last one photographed not taken
//! again.

use std::time::{Duration, Instant};

use skillshift_common::AttemptSpec;
use skillshift_telemetry::metrics::WorkerMetrics;
use skillshift_telemetry::spans;
use tracing::Instrument;

use crate::browser::Session;
use crate::capture::{Capture, Shoot};

/// The agent's reply, with the step's screenshot taken beside it: under
/// [`Shoot::WhileTheAgentThinks`] only if the reply is not ready at once. The screenshot is
/// skipped when the page is the one last photographed, unchanged.
pub(super) async fn reply_beside_screenshot<T>(
    session: &Session,
    capture: &mut Capture,
    reply: impl std::future::Future<Output = T>,
    when: Shoot,
) -> T {
    let mut reply = std::pin::pin!(timed(reply));
    if when == Shoot::WhileTheAgentThinks {
        let first =
            std::future::poll_fn(|cx| std::task::Poll::Ready(std::future::Future::poll(reply.as_mut(), cx))).await;
        if let std::task::Poll::Ready((reply, _)) = first {
            return reply;
        }
    }
    let shot = async {
        let scroll = session.scroll_offsets().await;
        if scroll.as_deref().is_some_and(|s| capture.reuse_screenshot(s)) {
            WorkerMetrics::global().screenshot_reused();
            return None;
        }
        Some((timed(session.screenshot()).instrument(spans::screenshot(true)).await, scroll))
    };
    let ((reply, replied_in), shot) = tokio::join!(reply, shot);
    if let Some(((Ok(png), took), scroll)) = shot {
        WorkerMetrics::global().screenshot(took, took.saturating_sub(replied_in));
        capture.screenshot(png, scroll);
    }
    reply
}

/// A trajectory screenshot of the current tab, its time counted in the worker's metrics (all of
/// it waited for: nothing runs beside it).
pub(super) async fn screenshot(session: &Session) -> Option<Vec<u8>> {
    let (png, took) = timed(session.screenshot()).instrument(spans::screenshot(false)).await;
    let png = png.ok()?;
    WorkerMetrics::global().screenshot(took, took);
    Some(png)
}

/// A future's output with the time it took.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = f.await;
    (out, started.elapsed())
}

/// The screenshot of the page the agent ended on, when the policy wants one for a last step without.
pub(super) async fn final_screenshot(session: &Session, capture: &mut Capture) {
    if !capture.wants_final_screenshot() {
        return;
    }
    if let Some(scroll) = session.scroll_offsets().await {
        if capture.reuse_final_screenshot(&scroll) {
            WorkerMetrics::global().screenshot_reused();
            return;
        }
    }
    if let Some(png) = screenshot(session).await {
        capture.final_screenshot(png);
    }
}

pub(super) async fn save_screenshot(dir: &std::path::Path, spec: &AttemptSpec, step: u32, png: &[u8]) {
    let folder = dir.join(format!("{}.{}.r{}.a{}", spec.uid, spec.condition, spec.rep, spec.attempt));
    if tokio::fs::create_dir_all(&folder).await.is_ok() {
        let _ = tokio::fs::write(folder.join(format!("step-{step:02}.png")), png).await;
    }
}
