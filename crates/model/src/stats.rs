//! Statistics over repeated runs.
