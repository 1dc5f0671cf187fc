//! skillshift-coordinator.
