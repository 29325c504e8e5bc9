//! Metrics computed from traces.
