//! ReSense (Dey et al., TACO 2013): thread mapping from solo sensitivity scores.
//!
//! Problem: co-located multithreaded apps contend for, or benefit from sharing,
//! caches, front-side buses, memory controllers and sockets, and in a dynamic
//! workload the set of apps changes all the time, so trying mappings online is too
//! slow (§1). Which mapping is best depends on each app's character and on the
//! machine.
//!
//! Approach: each app is characterized once per platform, alone, per shared level:
//! its sensitivity score (§2.2, Equation 1; [`coloc_model::profile`]) is positive
//! when its threads gain from sharing an instance of the level and negative when
//! they suffer. On every arrival, exit, thread creation and destruction (the
//! Manager's triggers; epochs recompute the same mapping) ReSensor (Algorithm 1,
//! §2.3) walks the levels from the memory side up to the caches; at each level the
//! apps, most sensitive first, share an instance (positive score) or spread over
//! instances (negative) when there are at least as many instances as apps (case 1),
//! and otherwise the most sensitive app shares instances with the least sensitive
//! one, following the former's sign (case 2). Every thread is then pinned to one
//! CPU (`Placement::PerThread`); threads born between two decisions may use any of
//! the app's CPUs until the next decision pins them.
//!
//! Profiles come from [`crate::PolicyContext::profiles`], matched to apps by what
//! they run (model, argv) and, failing that, by name
//! ([`coloc_model::profile::find`]); the context holds this platform's profiles
//! (the CLI takes them from the store by platform fingerprint). Apps without one
//! score 0 everywhere, so Algorithm 1 maps them "on any core" (the least loaded
//! instance, as Linux balances), and are named in the plan's note.
//! `resense-positive` and `resense-negative` fix every score to +1 or −1, the
//! ablation of Table VII.

pub(crate) mod assign;
pub(crate) mod scores;
mod step;
#[cfg(test)]
pub(crate) mod tests;

use coloc_model::profile::AppProfile;
use coloc_model::reason::{LevelCases, PlanReason};
use coloc_model::topology::SharedResource;
use coloc_model::{AppPlan, CpuSet, Placement, Plan, Topology, View};

use self::assign::{assign, Assignment, Request};
use self::scores::{share_outward, vectors, ScoreSource};
use crate::per_topology::PerTopology;
use crate::Policy;

/// The ReSense policy and its fixed-sign variants.
#[derive(Debug, Clone)]
pub struct ReSense {
    source: ScoreSource,
    /// The levels of the machine it last decided on (`per_topology.rs`).
    levels: PerTopology<Vec<SharedResource>>,
}

impl ReSense {
    /// ReSensor over measured profiles.
    pub fn new(profiles: Vec<AppProfile>) -> Self {
        Self {
            source: ScoreSource::Profiles(profiles),
            levels: PerTopology::default(),
        }
    }

    /// Every score +1: every app shares (Table VII, row `C+`).
    pub fn fixed_positive() -> Self {
        Self {
            source: ScoreSource::Fixed(1.0),
            levels: PerTopology::default(),
        }
    }

    /// Every score −1: every app spreads (Table VII, row `C−`).
    pub fn fixed_negative() -> Self {
        Self {
            source: ScoreSource::Fixed(-1.0),
            levels: PerTopology::default(),
        }
    }
}

/// The levels ReSensor walks, outermost (memory side) first: the paper's
/// "bottom to top" (§2.3).
pub(crate) fn levels(topology: &Topology) -> Vec<SharedResource> {
    topology.shared_resources().into_iter().rev().collect()
}

/// The cases of Algorithm 1 each level used, as notes say them (`L2 case
/// 1+2`), outermost level first.
pub(crate) fn cases_used(levels: &[SharedResource], placed: &Assignment) -> Vec<LevelCases> {
    levels
        .iter()
        .zip(&placed.cases)
        .filter(|(_, cases)| !cases.is_empty())
        .map(|(level, cases)| LevelCases {
            level: level.kind.label(),
            cases: cases.iter().map(|c| *c as u8).collect(),
        })
        .collect()
}

impl Policy for ReSense {
    fn name(&self) -> &'static str {
        match self.source {
            ScoreSource::Profiles(_) => "resense",
            ScoreSource::Fixed(s) if s > 0.0 => "resense-positive",
            ScoreSource::Fixed(_) => "resense-negative",
        }
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let levels = self.levels.get(view.topology, levels);
        let (mut scores, missing) = vectors(view, &levels, &self.source);
        share_outward(&mut scores);
        let requests: Vec<Request> = view
            .apps
            .iter()
            .zip(scores)
            .map(|(app, scores)| Request {
                threads: app.threads.len().max(app.threads_requested as usize).max(1),
                live: app.threads.len(),
                scores,
            })
            .collect();
        let placed = assign(view.topology, view.topology.cpus(), &levels, &requests);
        let apps = view
            .apps
            .iter()
            .zip(&placed.cpus)
            .map(|(app, cpus)| AppPlan {
                placement: Placement::PerThread {
                    threads: app
                        .threads
                        .iter()
                        .zip(cpus)
                        .map(|(t, c)| (*t, CpuSet::single(*c)))
                        .collect(),
                    rest: cpus.iter().copied().collect(),
                },
                ..AppPlan::native(app.id)
            })
            .collect();
        let mut plan = Plan::of(apps);
        let cases = cases_used(&levels, &placed);
        if !cases.is_empty() {
            plan.reasons
                .push(PlanReason::SharingCases { levels: cases });
        }
        if !missing.is_empty() {
            plan.reasons.push(PlanReason::Unprofiled { apps: missing });
        }
        plan
    }
}
