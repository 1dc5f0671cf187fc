//! The task centre: the one place in the workspace that spawns tokio tasks.
//!
//! Every task has a name, an owner (the [`TaskCenter`] it was spawned on) and a
//! cancellation token. A centre's children share its cancellation: cancelling
//! a centre cancels every task spawned on it and on its children, and
//! [`TaskCenter::shutdown`] waits (with a deadline) for them to finish. This is
//! the shape restate's task centre has; it replaces bare `tokio::spawn`, whose
//! tasks nobody owns and nothing stops.
//!
//! Blocking work goes through [`TaskCenter::spawn_blocking`], which is tracked
//! the same way, or [`run_blocking`] for a job its caller awaits at once.
//!
//! Clippy holds the rest of the workspace to this: `clippy.toml` disallows the
//! bare spawns, and every library crate warns on them (tests and benches may
//! spawn freely). This crate is the one that may.
#![allow(clippy::disallowed_methods)]

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// An owner of tasks: a cancellation token plus a tracker of what it spawned.
#[derive(Debug, Clone)]
pub struct TaskCenter {
    name: String,
    token: CancellationToken,
    tracker: TaskTracker,
}

/// Runs blocking work on tokio's blocking pool and waits for it: for a job its caller awaits at once
/// (a file read inside a request), owned by the future that awaits it, so no centre tracks it.
pub async fn run_blocking<F, T>(task: &'static str, f: F) -> Result<T, tokio::task::JoinError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let span = tracing::debug_span!("task", owner = "caller", task);
    tokio::task::spawn_blocking(move || span.in_scope(f)).await
}

impl TaskCenter {
    /// A root centre; its token is cancelled by [`TaskCenter::cancel`] or by the owner.
    pub fn new(name: impl Into<String>) -> Self {
        TaskCenter::with_token(name, CancellationToken::new())
    }

    /// A root centre that stops when `token` is cancelled (for example the process's shutdown token).
    pub fn with_token(name: impl Into<String>, token: CancellationToken) -> Self {
        TaskCenter { name: name.into(), token, tracker: TaskTracker::new() }
    }

    /// A child centre: cancelled with this one (or on its own), with its own tracker, so a
    /// part (one worker session, one HTTP server) can be stopped and awaited alone.
    pub fn child(&self, name: impl Into<String>) -> TaskCenter {
        TaskCenter {
            name: format!("{}/{}", self.name, name.into()),
            token: self.token.child_token(),
            tracker: TaskTracker::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The centre's token; tasks select on it (or on a child of it) in their loops.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Cancels every task of this centre and of its children.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Spawns a task that is handed the centre's token; it must return soon after the
    /// token is cancelled.
    pub fn spawn<F, Fut>(&self, task: &'static str, f: F) -> JoinHandle<Fut::Output>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let span = tracing::debug_span!("task", owner = %self.name, task);
        self.tracker.spawn(f(self.token.clone()).instrument(span))
    }

    /// Spawns a task that is dropped (stops at its next await) when the centre is cancelled;
    /// for tasks with no loop of their own, such as one request's handler. The handle
    /// yields `None` when it was cancelled.
    pub fn spawn_until_cancelled<Fut>(&self, task: &'static str, fut: Fut) -> JoinHandle<Option<Fut::Output>>
    where
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let token = self.token.clone();
        self.spawn(task, move |_| async move {
            tokio::select! {
                _ = token.cancelled() => None,
                out = fut => Some(out),
            }
        })
    }

    /// Runs blocking work (file I/O in bulk, store flushes) on tokio's blocking pool, tracked
    /// by this centre.
    pub fn spawn_blocking<F, T>(&self, task: &'static str, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let span = tracing::debug_span!("task", owner = %self.name, task);
        self.tracker.spawn_blocking(move || span.in_scope(f))
    }

    /// Cancels the centre and waits for its tasks, at most `deadline`. Returns whether
    /// they all finished in time. Children are awaited by their own owners.
    pub async fn shutdown(&self, deadline: Duration) -> bool {
        self.token.cancel();
        self.tracker.close();
        let done = tokio::time::timeout(deadline, self.tracker.wait()).await.is_ok();
        if !done {
            tracing::warn!(owner = %self.name, left = self.tracker.len(), "tasks still running at the shutdown deadline");
        }
        done
    }

    /// How many of this centre's tasks are still running.
    pub fn running(&self) -> usize {
        self.tracker.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_a_parent_stops_its_childrens_tasks_and_shutdown_waits_for_them() {
        let root = TaskCenter::new("root");
        let child = root.child("session");
        let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stopped.clone();
        child.spawn("loop", move |token| async move {
            token.cancelled().await;
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        assert_eq!(child.running(), 1);
        root.cancel();
        assert!(child.shutdown(Duration::from_secs(5)).await);
        assert!(stopped.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(child.running(), 0);
        assert_eq!(child.name(), "root/session");
    }

    #[tokio::test]
    async fn a_task_without_a_loop_is_dropped_on_cancel_and_shutdown_reports_a_stuck_one() {
        let c = TaskCenter::new("c");
        let h = c.spawn_until_cancelled("sleeper", async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            1
        });
        c.cancel();
        assert_eq!(h.await.ok().flatten(), None);

        let stuck = TaskCenter::new("stuck");
        stuck.spawn("ignores-token", |_| async { tokio::time::sleep(Duration::from_secs(3600)).await });
        assert!(!stuck.shutdown(Duration::from_millis(50)).await);
    }

    #[tokio::test]
    async fn blocking_work_is_tracked() {
        let c = TaskCenter::new("b");
        let h = c.spawn_blocking("sum", || (1..=10).sum::<u32>());
        assert_eq!(h.await.ok(), Some(55));
        assert!(c.shutdown(Duration::from_secs(1)).await);
    }
}
