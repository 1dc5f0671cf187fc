//! Assembles an experiment from the parts.
//!
//! * [`embedded`]: the fixture sites (`skillshift-sites`) served in-process, as the worker's
//!   site manager and task source.
pub mod embedded;
