//! Every bound the coordinator puts on what it is sent, in one place.
//!
//! Each input from outside has a stated bound, checked before anything is
//! allocated for it: a sweep's units are counted arithmetically before they
//! are planned, a worker's record is measured before it is converted, a
//! registration is counted before it is stored. The defaults are stated in
//! `skillshift coordinator --help` and in `docs/cli.md#limits`; the ones with
//! a flag can be changed there.

use std::time::Duration;

/// Units one sweep may plan (`--max-units-per-sweep`): 93 reps of the full
/// grid. Planning and storing a sweep of this size takes about 0.2 s even in
/// an unoptimized build, and a status of it about 50 ms (`docs/cli.md#limits`).
pub const MAX_UNITS_PER_SWEEP: u64 = 200_000;
/// Sweeps the store may hold, finished ones included (`--max-sweeps`).
pub const MAX_SWEEPS: usize = 1_000;
/// Units all stored sweeps may hold together: every unit is in memory, and
/// `sweep list` walks them all.
pub const MAX_UNITS_TOTAL: u64 = 2_000_000;
/// Repetitions (`--count`) of one sweep.
pub const MAX_REPS: u32 = 10_000;
/// Treatments of one sweep.
pub const MAX_TREATMENTS: usize = 64;
/// Bytes of one treatment's skill library (as JSON).
pub const MAX_SKILL_LIBRARY_BYTES: usize = 1 << 20;
/// Registered workers (`--max-workers`); connected ones and ones holding leases are never evicted.
pub const MAX_WORKERS: usize = 1_024;
/// How long a disconnected worker holding no lease stays registered (`--worker-expiry-s`).
pub const WORKER_EXPIRY: Duration = Duration::from_secs(3_600);
/// Bytes of a worker's name.
pub const MAX_WORKER_NAME_BYTES: usize = 256;
/// How long a new session may take to send its `hello`.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Worker sessions open at once (a session waiting for its hello counts).
pub const MAX_SESSIONS: usize = 2_048;
/// Status watches and exports open at once.
pub const MAX_CONTROL_STREAMS: usize = 256;
/// HTTP/2 streams one connection may have open at once (a worker needs two).
pub const MAX_STREAMS_PER_CONNECTION: u32 = 256;
/// Bytes of one gRPC message the coordinator decodes; a larger one ends its stream.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;
/// Bytes of one record (encoded); a larger one is refused with a `reject`.
pub const MAX_RECORD_BYTES: usize = 4 << 20;
/// Bytes of one trajectory blob (compressed, in chunks); a larger one is refused with a `trajectory_reject`.
pub const MAX_TRAJECTORY_BYTES: usize = skillshift_common::blob::MAX_BLOB_BYTES;
/// Bytes of trajectories (compressed JSON and screenshots) one sweep may store
/// (`--max-trajectory-bytes-per-sweep`): 4 GiB. The full fixture grid stores
/// about 6 MiB; a real-site grid with failure screenshots some hundreds of MiB.
pub const MAX_TRAJECTORY_BYTES_PER_SWEEP: u64 = 4 << 30;
/// Trajectory blobs decoded at once, by all sessions together; the next waits
/// for a permit. Each decode holds at most `blob::MAX_INFLATED_BYTES`.
pub const MAX_CONCURRENT_DECODES: usize = 2;

/// How long one store commit (a batch's writes and their flush) may take before the store counts as
/// stalled and the coordinator stops with one line and exit 2, for a supervisor to restart it once the
/// disk is fixed: a disk that stops answering (full, failing) can block a write instead of failing it. A
/// commit takes milliseconds; the largest, a sweep of the maximum size, well under a second.
pub const STORE_COMMIT_DEADLINE: Duration = Duration::from_secs(20);

/// The bounds one coordinator enforces.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_units_per_sweep: u64,
    pub max_sweeps: usize,
    pub max_units_total: u64,
    pub max_reps: u32,
    pub max_workers: usize,
    pub worker_expiry: Duration,
    pub hello_timeout: Duration,
    pub max_sessions: usize,
    pub max_control_streams: usize,
    pub max_message_bytes: usize,
    pub max_record_bytes: usize,
    pub max_trajectory_bytes: usize,
    pub max_trajectory_bytes_per_sweep: u64,
    pub max_concurrent_decodes: usize,
    pub store_commit_deadline: Duration,
    /// The `--http` port's connection cap and timeouts.
    pub http: skillshift_http::HttpLimits,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_units_per_sweep: MAX_UNITS_PER_SWEEP,
            max_sweeps: MAX_SWEEPS,
            max_units_total: MAX_UNITS_TOTAL,
            max_reps: MAX_REPS,
            max_workers: MAX_WORKERS,
            worker_expiry: WORKER_EXPIRY,
            hello_timeout: HELLO_TIMEOUT,
            max_sessions: MAX_SESSIONS,
            max_control_streams: MAX_CONTROL_STREAMS,
            max_message_bytes: MAX_MESSAGE_BYTES,
            max_record_bytes: MAX_RECORD_BYTES,
            max_trajectory_bytes: MAX_TRAJECTORY_BYTES,
            max_trajectory_bytes_per_sweep: MAX_TRAJECTORY_BYTES_PER_SWEEP,
            max_concurrent_decodes: MAX_CONCURRENT_DECODES,
            store_commit_deadline: STORE_COMMIT_DEADLINE,
            http: skillshift_http::HttpLimits::default(),
        }
    }
}
