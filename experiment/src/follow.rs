//! Following a sweep to its end: `sweep watch`, `local` and `calibrate` share
//! it. Whether to retry is decided on the error's kind (a gRPC status code or
//! a connection failure), never on its text: an unreachable or restarting
//! coordinator is retried for [`RECONNECT_FOR`], while an unknown sweep, a
//! refused token or a malformed reply ends the watch at once.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use skillshift_common::ids::SweepId;
use skillshift_coordinator::client::ClientError;
use skillshift_coordinator::status::{SweepState, SweepStatus};
use skillshift_proto::channel::ConnectError;

use crate::progress::Bars;
use crate::settings::Connect;

/// Waits a little between reconnection attempts.
pub const WATCH_RETRY: Duration = Duration::from_millis(500);
/// How long a coordinator may stay unreachable before the watch gives up.
pub const RECONNECT_FOR: Duration = Duration::from_secs(120);

/// `sw-… running  12/36 done, 3 running, 21 queued, 0 invalid; 15 attempts (0 error)`, then the
/// LLM cost when there is one and why the sweep stopped when it stopped on its own.
pub fn one_line(st: &SweepStatus) -> String {
    let mut line = format!(
        "{}  {:<9}  {}/{} done, {} running, {} queued, {} invalid; {} attempts ({} error)",
        st.id,
        st.state.as_str(),
        st.units.done + st.units.invalid,
        st.units.total,
        st.units.running,
        st.units.queued,
        st.units.invalid,
        st.attempts.total,
        st.attempts.error
    );
    // A sweep stops on its own only on its cost budget, and that reason states the spend: said once.
    if st.cost_usd > 0.0 && st.stopped.is_none() {
        line.push_str(&format!("; ${:.2} spent", st.cost_usd));
    }
    if let Some(reason) = &st.stopped {
        line.push_str(&format!("; stopped: {reason}"));
    }
    if let Some(unrunnable) = st.unrunnable_line() {
        line.push_str(&format!("; {unrunnable}"));
    }
    line
}

/// Whether an error means "try again later" (the coordinator is down or restarting)
/// rather than "this will never work".
pub fn is_transient(e: &anyhow::Error) -> bool {
    match e.downcast_ref::<ClientError>() {
        Some(ClientError::Connect(ConnectError::Unreachable { .. })) => true,
        Some(ClientError::Connect(_)) => false,
        Some(ClientError::Status(s)) => matches!(
            s.code(),
            tonic::Code::Unavailable
                | tonic::Code::Unknown
                | tonic::Code::Cancelled
                | tonic::Code::Aborted
                | tonic::Code::DeadlineExceeded
                | tonic::Code::ResourceExhausted
        ),
        Some(ClientError::Malformed { .. }) => false,
        None => e.downcast_ref::<tonic::Status>().is_some_and(|s| s.code() == tonic::Code::Unavailable),
    }
}

/// Follows a sweep until it is done or cancelled, drawing the 18 cells when `draw`,
/// and returns its final status.
pub async fn follow(conn: &Connect, id: &SweepId, draw: bool) -> anyhow::Result<SweepStatus> {
    let bars = draw.then(Bars::new);
    let mut last_ok = Instant::now();
    let mut last: Option<SweepStatus> = None;
    loop {
        let attempt = async {
            let mut client = conn.client().await?;
            let mut stream = client.watch(id).await?;
            while let Some(st) = stream.next().await {
                let st = st?;
                if let Some(b) = &bars {
                    let workers = client.workers().await.map(|w| w.iter().filter(|x| x.connected).count()).ok();
                    b.draw(&st, workers);
                }
                let state = st.state;
                last = Some(st);
                if state.is_final() {
                    return Ok::<bool, anyhow::Error>(true);
                }
            }
            Ok(false)
        }
        .await;
        match attempt {
            Ok(true) => break,
            Ok(false) => last_ok = Instant::now(),
            Err(e) => {
                if !is_transient(&e) || last_ok.elapsed() > RECONNECT_FOR {
                    return Err(e);
                }
            }
        }
        tokio::time::sleep(WATCH_RETRY).await;
    }
    let st = last.context("the coordinator sent no status")?;
    if let Some(b) = bars {
        b.finish();
    }
    Ok(st)
}

/// Whether a finished sweep counts as done (`watch` exits 0) or cancelled (exit 1).
pub fn finished_ok(state: SweepState) -> bool {
    state != SweepState::Cancelled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spend_is_said_once() {
        use skillshift_coordinator::status::{AttemptCounts, UnitCounts};
        let mut st = SweepStatus {
            id: "sw-1".into(),
            state: SweepState::Running,
            units: UnitCounts { total: 4, done: 2, running: 1, queued: 1, invalid: 0 },
            attempts: AttemptCounts { total: 3, error: 0 },
            cells: Vec::new(),
            workers: 1,
            eta_ms: None,
            config_digest: "sha256:0".into(),
            created_ms: 0,
            cost_usd: 0.0477,
            stopped: None,
            top_errors: Vec::new(),
            unrunnable: Vec::new(),
        };
        assert!(one_line(&st).ends_with("; $0.05 spent"), "{}", one_line(&st));
        st.stopped = Some("cost budget of $0.05 reached ($0.0477 spent)".into());
        let line = one_line(&st);
        assert_eq!(line.matches("spent").count(), 1, "{line}");
        assert!(line.ends_with("; stopped: cost budget of $0.05 reached ($0.0477 spent)"), "{line}");
    }

    #[test]
    fn a_refused_connection_is_retried_but_a_refused_token_is_not() {
        let down = anyhow::Error::from(ClientError::Connect(ConnectError::Unreachable {
            url: "http://127.0.0.1:1".into(),
            message: "Connection refused (os error 111)".into(),
        }));
        assert!(is_transient(&down));
        let token = anyhow::Error::from(ClientError::Status(tonic::Status::unauthenticated("refused: bad token")));
        assert!(!is_transient(&token));
        let unknown = anyhow::Error::from(ClientError::Status(tonic::Status::not_found("no sweep sw-1")));
        assert!(!is_transient(&unknown));
        let restarting = anyhow::Error::from(ClientError::Status(tonic::Status::unavailable("refused stream")));
        assert!(is_transient(&restarting));
        let url =
            anyhow::Error::from(ClientError::Connect(ConnectError::Url { url: "x".into(), message: "bad".into() }));
        assert!(!is_transient(&url));
    }
}
