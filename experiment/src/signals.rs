//! Process signals: the first Ctrl-C or SIGTERM cancels the returned token
//! (an orderly shutdown: stop leasing, drain, flush); a second exits at once.

use skillshift_taskcenter::TaskCenter;
use tokio_util::sync::CancellationToken;

/// A root token cancelled by the first Ctrl-C or SIGTERM; a second one exits with 130.
/// Must be called inside a tokio runtime.
pub fn cancel_on_signals() -> CancellationToken {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    // The listener outlives every shutdown it starts, so it has a centre of its own that
    // nothing waits for.
    let signals = TaskCenter::new("signals");
    signals.spawn("listen", move |_| async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        for round in 0..2 {
            let sigterm = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = sigterm => {}
            }
            if round == 0 {
                eprintln!("shutting down (again to exit at once)");
                c.cancel();
            } else {
                // An exit skips every destructor: the browsers are killed here or never.
                skillshift_worker::browser::kill_all_browsers();
                std::process::exit(130);
            }
        }
    });
    cancel
}
