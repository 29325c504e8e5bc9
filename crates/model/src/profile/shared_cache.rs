//! Tang et al.'s data sharing (ISCA 2011 §5, Figure 22) on a machine without
//! LLC counters, from the app's threads sharing a cache against apart
//! (docs/policies/tang-atom.md, Characteristics).
//!
//! Problem: the paper counts the LLC requests that hit lines in a shared
//! state; without counters that share is invisible. What data sharing does is
//! visible: threads that share data run on less CPU time when they share a
//! cache (one copy of the data, no lines moving back and forth between
//! private caches: §1, §3.1 "Data Sharing") than apart, the paper's own
//! reading of {XX..XX..} against {X.X.X.X.} on Clovertown (§3.1).
//!
//! Approach: solo runs of the app in two sharing configurations (§3, Table
//! 2), the threads under one cache instance (*contention*) and the same
//! threads under two (*baseline*), compared by ReSense's Equation 1
//! ([`Sensitivity`]: positive when the threads run faster together). The
//! substitute's data sharing is that score / 100, never below 0: the share
//! of the app's CPU time that sharing the cache saves ([`SharedCacheRuns`]).
//! Which cache, by topology ([`shared_cache_plan`]):
//! - two LLC instances or more: one LLC against two, which is ReSense's
//!   characterization of the LLC level (its Configurations: Clovertown's
//!   {XX......} against {X.X.....}; one socket's L3 against two on the
//!   fixture Xeon). The profile makes those runs anyway, so their score is
//!   read, not run again;
//! - one LLC (this VM): the only cache two threads can share or not is a
//!   core's own (L1, L2): two threads time-sharing the first PU of the first
//!   core against on the first PUs of the first two cores, measured by CPU
//!   time (task-clock), since wall time doubles on one PU whatever the data.
//!
//! What else differs between the two runs is the substitute's limit, not
//! hidden (docs/policies/tang-atom.md, Limits): on one PU the threads also
//! stop competing for memory bandwidth, and a thread spinning at a barrier
//! holds the PU its partner needs.

use serde::{Deserialize, Serialize};

use super::procedure::{level_runs, run_figure, score_runs, PlannedRun, BASELINE, CONTENTION};
use super::ProcedureError;
use super::{
    characterization_plan, Configurations, LevelProfile, LevelResult, Sensitivity, Signal,
};
use crate::topology::{ResourceKind, Topology};
use crate::trace::Trace;

/// The cache label of the one-core configurations.
pub const ONE_CORE: &str = "core";

/// The directory label of the one-core runs (`sharing-core-baseline-0`…).
const CORE_RUNS: &str = "sharing-core";

/// The runs the substitute's data sharing comes from, as stored in the
/// profile beside the figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedCacheRuns {
    /// The cache the two configurations differ in: the LLC level's label
    /// (`L3`), or [`ONE_CORE`] (a core's own caches).
    pub cache: String,
    /// Equation 1 of ReSense over the runs: baseline apart, contention
    /// together.
    pub runs: Sensitivity,
}

impl SharedCacheRuns {
    /// The share of the app's CPU time that sharing the cache saves, in
    /// [0, 1]: the score / 100, 0 when the threads ran slower together.
    pub fn data_sharing(&self) -> f64 {
        (self.runs.score / 100.0).clamp(0.0, 1.0)
    }
}

/// Where the substitute's data sharing comes from on a machine.
#[derive(Clone, Debug, PartialEq)]
pub enum SharedCachePlan {
    /// ReSense's runs of the LLC level (one instance against two), labelled
    /// as the characterization labels it (`L3+MC+socket`).
    LlcLevel { level: ResourceKind, label: String },
    /// Runs of their own: two threads on one core's first PU (contention)
    /// against on two cores (baseline).
    OneCore(Configurations),
}

/// The configurations of `t` that show the app's data sharing, or why there
/// are none (fewer than two cores).
pub fn shared_cache_plan(t: &Topology) -> Result<SharedCachePlan, ProcedureError> {
    let llc = characterization_plan(t)
        .into_iter()
        .rev()
        .find(|l| matches!(l.level, ResourceKind::Cache { .. }));
    if let Some(l) = llc.filter(|l| l.setup.is_ok()) {
        let label = l.label();
        return Ok(SharedCachePlan::LlcLevel {
            level: l.level,
            label,
        });
    }
    let cores = t.cores();
    match (
        cores.first().and_then(|c| c.first()),
        cores.get(1).and_then(|c| c.first()),
    ) {
        (Some(a), Some(b)) => Ok(SharedCachePlan::OneCore(Configurations {
            threads: 2,
            baseline: vec![a, b],
            contention: vec![a, a],
            caveats: Vec::new(),
        })),
        _ => Err(ProcedureError::SharingCores { cores: cores.len() }),
    }
}

impl SharedCachePlan {
    /// The runs to make for `app`: none for the LLC level (the profile's
    /// ReSense runs), else `repeat` pairs of one-core runs.
    pub fn runs(&self, app: &str, repeat: u32) -> Vec<PlannedRun> {
        match self {
            SharedCachePlan::LlcLevel { .. } => Vec::new(),
            SharedCachePlan::OneCore(c) => level_runs(app, CORE_RUNS, c, repeat),
        }
    }
}

/// `app`'s data sharing runs: its one-core runs among `runs` (baseline and
/// contention roles, each with its trace) where they were made, else the
/// score of the outermost cache level of `levels` (ReSense's runs); or why
/// there are none.
pub fn shared_cache_runs<'a>(
    app: &str,
    runs: impl IntoIterator<Item = (&'a PlannedRun, &'a Trace)>,
    levels: &[LevelProfile],
) -> Result<SharedCacheRuns, ProcedureError> {
    let own: Vec<(&PlannedRun, &Trace)> = runs
        .into_iter()
        .filter(|(r, _)| r.role == BASELINE || r.role == CONTENTION)
        .collect();
    if let Some((first, _)) = own.first() {
        let threads = first.apps.first().map_or(0, |a| a.cpus.len()) as u32;
        let figure = |_: &PlannedRun, t: &Trace| run_figure(t, app, Signal::TaskClock);
        return score_runs(own, Signal::TaskClock, threads, figure).map(|runs| SharedCacheRuns {
            cache: ONE_CORE.into(),
            runs,
        });
    }
    let llc = levels
        .iter()
        .rev()
        .find(|l| matches!(l.level, ResourceKind::Cache { .. }))
        .ok_or(ProcedureError::NoSharedCacheRuns)?;
    match &llc.result {
        LevelResult::Scored(s) => Ok(SharedCacheRuns {
            cache: llc.level.label(),
            runs: s.clone(),
        }),
        LevelResult::NotCharacterizable { reason } => Err(ProcedureError::SharedCacheLevel {
            level: llc.level.clone(),
            reason: reason.clone(),
        }),
    }
}

#[cfg(test)]
mod tests;
