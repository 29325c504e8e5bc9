//! Policies (docs/architecture.md, Policies): each is a pure function of a [`View`] — plus
//! state it keeps itself — returning a [`Plan`]. No policy touches /proc, a clock or
//! a syscall, so the same code is unit-tested with tables, runs on Linux and runs in
//! the simulator.

use std::fmt;

use coloc_model::{Plan, View};

pub mod atom;
pub mod auto;
pub mod baseline;
pub(crate) mod cores;
pub mod guard;
pub mod invariants;
pub mod layer;
pub(crate) mod lives;
pub mod nupoco;
pub(crate) mod per_topology;
pub(crate) mod progress;
mod registry;
pub mod resense;
pub mod scalability;
pub mod tang;
pub mod tranquilizer;
pub(crate) mod trial;

pub use layer::{build, LayerError};
pub use registry::{
    by_name, by_name_with, policy_names, reads_of, PolicyInfo, Reads, UnknownPolicy, POLICIES,
};

/// What a policy may know beyond the View: knowledge measured before the run (the
/// machine's calibration, apps' characterizations from the profile store, their
/// solo times). The CLI fills it from the store and coloc's data directory; tests and the simulator fill it directly. Policies stay
/// pure: the context is plain data handed over at construction.
#[derive(Debug, Clone, Default)]
pub struct PolicyContext {
    /// Service rates of this machine's memory controllers and links (`coloc
    /// calibrate`, NuPoCo §4.3); policies check its fingerprint before use.
    pub calibration: Option<coloc_model::calibration::MemoryCalibration>,
    /// The apps' profiles measured on this platform (ReSense §2.2); `resense`
    /// matches them to apps by what they run, then by name.
    pub profiles: Vec<coloc_model::profile::AppProfile>,
    /// What `auto` optimizes (`--objective`).
    pub objective: auto::Objective,
    /// The apps' solo times per thread count stored for this workload on this
    /// machine (`coloc solo --threads`), by app name; `auto`'s team sizes and
    /// admission read them (`docs/policies/auto.md`, Team size, Admission).
    /// Empty when none are stored.
    pub solo: coloc_model::metrics::SoloCurves,
    /// How fast apps of this workload ran beside others in earlier runs on
    /// this machine (`coloc_model::metrics::corun`); `auto`'s admission reads
    /// it. Empty when none were measured.
    pub coruns: coloc_model::metrics::CoRuns,
    /// How long the apps' OpenMP regions lasted in whole earlier runs of
    /// this workload on this machine, by app name
    /// (`coloc_model::metrics::regions`); every policy that sets a DoP reads
    /// it before cutting a team (`cores/reversible.rs`). Empty when none
    /// were recorded.
    pub regions: coloc_model::metrics::RegionRecords,
    /// Which records each app's solo times, rates and region records come
    /// from, and which groups of its records were dropped for predicting
    /// badly (docs/knowledge.md, Checked against what happened next); the
    /// policies that read them name them in their reasons.
    pub provenance: coloc_model::knowledge::provenance::Provenance,
    /// The stored pairs of earlier trials of the sets the apps can form
    /// (docs/knowledge.md, Trials of a set of programs): `auto`'s trial of a
    /// set starts from them.
    pub trials: coloc_model::knowledge::trials::TrialPriors,
}

/// A placement / parallelism / scheduling policy.
pub trait Policy: fmt::Debug + Send {
    /// The name users select it by (`--policy NAME`).
    fn name(&self) -> &'static str;

    /// Decides for every app in the view. Must return one [`coloc_model::AppPlan`]
    /// per app in `view.apps`.
    fn decide(&mut self, view: &View<'_>) -> Plan;

    /// What was learned of the apps' programs, by app name
    /// (docs/knowledge.md): the node service, whose apps arrive while it
    /// runs, gives it again before each decision whose apps it has not
    /// looked up, as the harness gives it once in the [`PolicyContext`]
    /// (its `solo`, `coruns` and `regions`). Policies that read none of it
    /// ignore it.
    fn learned(&mut self, _learned: &coloc_model::knowledge::derive::Learned) {}
}

/// Tests' view of the learned records an app's plan names
/// (`Reason::Records`).
#[cfg(test)]
pub(crate) fn records_named(
    plan: &coloc_model::AppPlan,
) -> Vec<&coloc_model::reason::records::Records> {
    plan.reasons
        .iter()
        .filter_map(|r| match r {
            coloc_model::Reason::Records(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// Tests' records of earlier runs in which every region of apps 0 to 9
/// ended within an observation interval of `epoch`: their DoP may be cut
/// (`cores/reversible.rs`).
#[cfg(test)]
pub(crate) fn short_regions(epoch: std::time::Duration) -> coloc_model::metrics::RegionRecords {
    (0..10)
        .map(|i| {
            let r = coloc_model::metrics::RegionRecord {
                runs: 1,
                longest: std::time::Duration::ZERO,
                epoch,
            };
            (format!("app{i}"), r)
        })
        .collect()
}

/// A plan's reasons in words, for tests' failure messages only.
#[cfg(test)]
pub(crate) fn note(plan: &Plan) -> String {
    coloc_model::explain::plan_line(plan)
}
