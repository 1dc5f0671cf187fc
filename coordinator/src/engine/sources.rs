//! What the engine reads from outside, behind two small traits so tests can
//! fix it: the wall clock ([`Clock`], for the times it stores: a sweep's
//! `created_ms`, an attempt's `started_ms`) and fresh ids ([`Ids`], for sweeps
//! and workers). The monotonic time that drives leases and ETAs is not here:
//! it comes with every input.
//!
//! The server uses [`SystemClock`] and [`RandomIds`]; tests use
//! [`ManualClock`] and [`SequentialIds`], which give the same answers on
//! every run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send {
    fn wall_ms(&self) -> u64;
}

/// A source of fresh ids: `<prefix>-<12 hex digits>`.
pub trait Ids: Send {
    fn new_id(&mut self, prefix: &str) -> String;
}

/// The system's wall clock; a clock before 1970 reads as 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn wall_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
}

/// Random ids (48 random bits), unique across restarts without any state.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomIds;

impl Ids for RandomIds {
    fn new_id(&mut self, prefix: &str) -> String {
        format!("{prefix}-{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
    }
}

/// A wall clock that only moves when told to. Clones share one time, so a
/// test keeps a clone to move the clock the engine reads.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    ms: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn at(ms: u64) -> ManualClock {
        ManualClock { ms: Arc::new(AtomicU64::new(ms)) }
    }

    pub fn set(&self, ms: u64) {
        self.ms.store(ms, Ordering::Relaxed);
    }

    pub fn advance(&self, ms: u64) {
        self.ms.fetch_add(ms, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn wall_ms(&self) -> u64 {
        self.ms.load(Ordering::Relaxed)
    }
}

/// Ids numbered from 1 in the order asked for: `sw-000000000001`, `w-000000000002`, ...
#[derive(Debug, Clone, Default)]
pub struct SequentialIds {
    last: u64,
}

impl Ids for SequentialIds {
    fn new_id(&mut self, prefix: &str) -> String {
        self.last += 1;
        format!("{prefix}-{:012x}", self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fakes_answer_the_same_on_every_run_and_ids_keep_the_real_shape() {
        let clock = ManualClock::at(1_000);
        let seen = clock.clone();
        clock.advance(500);
        assert_eq!(seen.wall_ms(), 1_500);
        clock.set(7);
        assert_eq!(seen.wall_ms(), 7);
        let mut ids = SequentialIds::default();
        assert_eq!(ids.new_id("sw"), "sw-000000000001");
        assert_eq!(ids.new_id("w"), "w-000000000002");
        let real = RandomIds.new_id("w");
        assert_eq!(real.len(), "w-".len() + 12, "{real}");
        assert!(real[2..].bytes().all(|b| b.is_ascii_hexdigit()), "{real}");
        assert!(SystemClock.wall_ms() > 1_600_000_000_000, "the system clock reads the present");
    }
}
