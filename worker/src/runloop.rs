//! The run loop's former path: everything it offered now lives in
//! [`crate::attempt`], whose rooms run one attempt from its reset to its
//! record; kept so the callers of `runloop::...` need not change.

pub(crate) use crate::attempt::set_cookies;
pub use crate::attempt::{
    run_attempt, run_attempt_traced, trace_id, AgentFactory, Event, EventSink, Finished, NetworkTrace, RunContext,
    TaskFn, TaskSource, EARLY_STOP_UNPARSED,
};
