//! Metrics computed from a trace alone, so `coloc report` recomputes everything
//! without re-running (docs/architecture.md: The loop, Conventions).
//!
//! - Per instance: wall time (start to exit, ReSense §3's execution time) and
//!   response time (arrival to exit: waiting plus execution), the app's own metric,
//!   and how fast coloc reacted (start to first applied plan, thread change to
//!   placement).
//! - Per run ([`RunMetrics`]): average response time and throughput (ReSense §3),
//!   makespan (NuPoCo §7.3's total turnaround time), Hmean speedup over solo runs
//!   (NuPoCo §7.3, with [`SoloTimes`]), failed instances, coloc's own CPU use and
//!   policy decision time.
//! - Across repeated runs of several policies ([`Comparison`]): mean, spread,
//!   log-scale intervals, NTT against a baseline and rank tests (ReSense §3.5;
//!   see [`crate::stats`] for why these statistics).
//! - Reference points of a mix from solo times at each thread count
//!   ([`reference`](mod@reference)): the CPU-work lower bound of its makespan and an SJF
//!   reference for its ART.
//! - Across the mixes of a bench ([`mixes`](mod@mixes)): geometric means per
//!   policy, the best policy per mix in hindsight, the worst mix first.
//! - How fast apps ran beside others ([`corun`](mod@corun)), from the runs
//!   where two shared the machine with no third app, and from every
//!   instance that shared it.
//! - How long an app's OpenMP regions last ([`regions`](mod@regions)), from
//!   its whole runs: what a DoP cut may cost.
//! - How often a trial switched arrangements per change of co-runners
//!   ([`switches`](mod@switches)).
//!
//! Everything here is pure: no I/O, tables rendered to strings with fixed decimals.

mod app;
mod compare;
pub mod corun;
pub mod mixes;
pub mod reference;
pub mod regions;
mod run;
mod solo;
pub mod switches;
pub mod table;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testtrace;
mod timeline;

pub use app::{AppMetrics, Repetition};
pub use compare::{AppStats, Comparison, PolicyStats, Samples};
pub use corun::CoRuns;
pub use reference::SoloCurves;
pub use regions::{RegionRecord, RegionRecords};
pub use run::{RunFigures, RunMetrics};
pub use solo::{
    solo_curves, solo_runs, solo_times, SoloManifest, SoloRun, SoloTimes, SOLO_MANIFEST,
};
pub use switches::{trial_switches, TrialSwitches};
