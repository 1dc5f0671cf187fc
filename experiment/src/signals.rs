//! Process signals: the first Ctrl-C or SIGTERM cancels the returned token
//! (an orderly shutdown: stop leasing, drain, flush); a second exits at once.

use skillshift_taskcenter::TaskCenter;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// A root token cancelled by the first Ctrl-C or SIGTERM; a second one exits with 130.
/// Must be called inside a tokio runtime.
pub fn cancel_on_signals() -> CancellationToken {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    // Both listeners exist from here on, so a second signal that comes while the first is handled
    // is kept, not lost between two listeners.
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut term = signal(SignalKind::terminate()).ok();
    // The listener outlives every shutdown it starts, so it has a centre of its own that
    // nothing waits for.
    let signals = TaskCenter::new("signals");
    signals.spawn("listen", move |_| async move {
        for round in 0..2 {
            tokio::select! {
                _ = next(&mut int) => {}
                _ = next(&mut term) => {}
            }
            if round == 0 {
                eprintln!("shutting down (again to exit at once)");
                c.cancel();
            } else {
                // An exit skips every destructor: the browsers and external agents are killed here or never.
                skillshift_worker::groups::kill_all();
                std::process::exit(130);
            }
        }
    });
    cancel
}

/// The next delivery of a signal; never, when it could not be listened for.
async fn next(signal: &mut Option<Signal>) {
    match signal.as_mut() {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}
