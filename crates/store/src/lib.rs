//! The profile store.
