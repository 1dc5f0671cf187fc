//! skillshift-worker.
