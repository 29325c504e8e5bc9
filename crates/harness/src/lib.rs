//! coloc's harness (docs/architecture.md, Crates): what the commands that
//! run workloads share, as a library with typed errors; the CLI's command
//! files parse arguments, call it and render (anyhow stays at the binary's
//! edge).
//!
//! Here so far: reading traces back ([`trace_file`]) and the steps of a
//! measurement procedure that need no machine ([`procedure`]: a planned run's
//! workload, its traces, the profile they give, the procedure's manifest),
//! which `coloc profile`, `coloc calibrate` and `coloc solo` share. Running
//! a workload on a backend (the CLI's `target.rs`), comparisons and solo runs
//! are still the CLI's.

pub mod error;
pub mod procedure;
pub mod trace_file;

pub use error::HarnessError;
pub use trace_file::read_trace;
