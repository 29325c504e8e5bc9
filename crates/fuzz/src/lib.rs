//! Fuzz targets for coloc's parsers, on stable Rust.
//!
//! Problem: every parser of outside input (a workload file, an hwloc XML
//! export, a trace, a profile export) must answer anything with a value or a
//! clear error, never a panic, a hang or an unbounded allocation
//! (docs/safety.md: bad input harms nothing running). `cargo fuzz` needs a
//! nightly compiler; this crate is its stable equivalent, in the shape of
//! ripgrep's `fuzz/fuzz_targets/`: one function per parser taking arbitrary
//! bytes ([`targets`]), a mutation fuzzer that feeds them inputs derived from
//! real seed files under a time bound ([`fuzzer`]), and the `coloc-fuzz`
//! binary that runs it (`scripts/fuzz`). Inputs that made a target panic are
//! kept and replayed by the crate's tests, fixed or not.

pub mod fuzzer;
pub mod mutate;
pub mod targets;
