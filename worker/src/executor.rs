//! The seam between "how an attempt is run" and "who asked for it".
//!
//! The gRPC client loop (coordinator-facing) hands each assignment to an
//! [`Executor`] and ships back the record it returns. The real executor drives a
//! browser against the site manager; the simulated one (`skillshift worker
//! --simulate MS`) only waits and draws a deterministic record.

use futures::future::BoxFuture;
use skillshift_common::blob::Blob;
use skillshift_common::{AttemptSpec, Record, Site, Version};
use tokio_util::sync::CancellationToken;

use crate::preflight::PreflightError;

pub trait Executor: Send + Sync + 'static {
    /// The (site, version) pairs this executor can run.
    fn hosts(&self) -> Vec<(Site, Version)>;

    /// Number of attempts that may run at once.
    fn slots(&self) -> usize;

    /// Whether this executor makes its records up (`worker --simulate MS`): it then runs only the units of
    /// sweeps whose contract says `simulated`, and those only (docs/formats.md#contract).
    fn simulated(&self) -> bool {
        false
    }

    /// Runs one attempt to its record. Never fails: every fault becomes an
    /// `error` record with its reason. `cancel` ends the attempt early (its
    /// record is then an `error` with reason `cancelled`).
    fn execute(&self, spec: AttemptSpec, cancel: CancellationToken) -> BoxFuture<'static, Record>;

    /// Whether the executor can run attempts now (for the browser executor: a browser starts); `Err` says why
    /// not. A worker that stopped taking work after repeated browser errors asks this before it takes more.
    fn check(&self) -> BoxFuture<'static, Result<(), PreflightError>> {
        Box::pin(async { Ok(()) })
    }

    /// As [`Executor::execute`], with the attempt's trajectory when this executor keeps one.
    fn execute_traced(
        &self,
        spec: AttemptSpec,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, (Record, Option<Blob>)> {
        let attempt = self.execute(spec, cancel);
        Box::pin(async move { (attempt.await, None) })
    }
}
