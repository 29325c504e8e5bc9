//! coloc's harness (docs/architecture.md, Crates): what the commands that
//! run workloads share, as a library with typed errors; the CLI's command
//! files parse arguments, call it and render (anyhow stays at the binary's
//! edge).
//!
//! Here so far: where a workload runs and running it there ([`target`]: the
//! real machine, [`host`], or a simulated platform, through the one Manager
//! loop), loading a workload for the real machine ([`load`]), run
//! directories and trace files ([`output`]), reading traces back
//! ([`trace_file`]) and what runs and comparisons saved ([`saved`]), a measurement procedure's planned runs made on a
//! target ([`runner`]) and its steps that need no machine ([`procedure`]: a
//! planned run's workload, its traces, the profile they give, the
//! procedure's manifest), which `coloc profile`, `coloc calibrate` and
//! `coloc solo` share, `coloc profile`'s characterization
//! ([`characterize`]), `coloc calibrate`'s runs ([`calibrate`]) and
//! `coloc calibrate-sim`'s measured cases ([`calibrate_sim`]), one run of a workload under one policy ([`single`]), solo runs ([`solo`]), comparisons of several
//! policies ([`compare`]), mixes judged against their solo runs
//! ([`mixes`], the real-program suite's among them: [`suite`]), NuPoCo's Table 2 ([`nupoco_table`]), `bench overhead`'s
//! runs ([`overhead`]) and what `bench sim`, `bench decide` and `bench
//! nupoco` time ([`timing`]), watched by what the
//! command shows ([`watch`]); what it says beside results goes to the
//! command as `tracing` events ([`said`]).

pub mod calibrate;
pub mod calibrate_sim;
pub mod characterize;
pub mod compare;
pub mod context;
pub mod data;
pub mod error;
pub mod host;
pub mod knowledge;
pub mod load;
pub mod mixes;
pub mod nupoco_table;
pub mod output;
pub mod overhead;
pub mod papers;
pub mod procedure;
pub mod runner;
pub mod runs;
pub mod said;
pub mod saved;
pub mod single;
pub mod solo;
pub mod suite;
pub mod target;
#[cfg(test)]
mod testing;
pub mod timing;
pub mod trace_file;
pub mod watch;

pub use error::HarnessError;
pub use host::Host;
pub use target::{resolve_platform, Target};
pub use trace_file::read_trace;
