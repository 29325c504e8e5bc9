//! What a policy decides (docs/architecture.md, The loop): per app, admission, placement,
//! degree of parallelism, memory policy and scheduling settings.

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::ids::{AppId, Tid};
use crate::reason::{PlanReason, Reason, Verdict};
use crate::settings::{MemPolicy, SchedSettings};

/// A [`Placement`] indexed by thread ([`Placement::by_thread`]): the listed
/// threads sorted by tid, searched by halving (the Manager's checks index
/// every app's placement at every observation; sorting a few dozen tids
/// costs less than hashing them).
#[derive(Debug)]
pub struct ThreadCpus<'a> {
    listed: Vec<(Tid, &'a CpuSet)>,
    rest: Option<&'a CpuSet>,
}

impl<'a> ThreadCpus<'a> {
    /// The CPUs thread `tid` may run on (None when unmanaged), as
    /// [`Placement::cpus_of`].
    pub fn get(&self, tid: Tid) -> Option<&'a CpuSet> {
        match self.listed.binary_search_by_key(&tid, |&(t, _)| t) {
            Ok(i) => Some(self.listed[i].1),
            Err(_) => self.rest,
        }
    }
}

/// Where an app's threads may run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "cpus")]
pub enum Placement {
    /// Leave placement to Linux (restore the original affinity if coloc changed it).
    #[default]
    Unmanaged,
    /// Every thread may run on any of these CPUs.
    Shared(CpuSet),
    /// Each listed thread is pinned to its own set; threads not listed (created after
    /// the decision) get `rest`.
    PerThread {
        threads: Vec<(Tid, CpuSet)>,
        rest: CpuSet,
    },
}

impl Placement {
    /// Every CPU this placement lets the app use.
    pub fn cpus(&self) -> CpuSet {
        match self {
            Placement::Unmanaged => CpuSet::new(),
            Placement::Shared(c) => c.clone(),
            Placement::PerThread { threads, rest } => {
                let mut all = rest.clone();
                for (_, c) in threads {
                    all.union_with(c);
                }
                all
            }
        }
    }

    /// Every thread's CPUs, indexed once: looking each of an app's threads up
    /// with [`Placement::cpus_of`] costs time quadratic in its threads.
    pub fn by_thread(&self) -> ThreadCpus<'_> {
        match self {
            Placement::Unmanaged => ThreadCpus {
                listed: Vec::new(),
                rest: None,
            },
            Placement::Shared(c) => ThreadCpus {
                listed: Vec::new(),
                rest: Some(c),
            },
            Placement::PerThread { threads, rest } => {
                let mut listed: Vec<(Tid, &CpuSet)> =
                    threads.iter().map(|(t, c)| (*t, c)).collect();
                // Stable: of a thread listed twice the first entry stays
                // first and is the one kept, as `cpus_of` finds it.
                listed.sort_by_key(|&(t, _)| t);
                listed.dedup_by_key(|&mut (t, _)| t);
                ThreadCpus {
                    listed,
                    rest: Some(rest),
                }
            }
        }
    }

    /// The CPUs thread `tid` may run on (None when unmanaged).
    pub fn cpus_of(&self, tid: Tid) -> Option<&CpuSet> {
        match self {
            Placement::Unmanaged => None,
            Placement::Shared(c) => Some(c),
            Placement::PerThread { threads, rest } => Some(
                threads
                    .iter()
                    .find(|(t, _)| *t == tid)
                    .map_or(rest, |(_, c)| c),
            ),
        }
    }
}

/// The decision for one app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppPlan {
    pub app: AppId,
    /// Start (or keep running) the app. A pending app that is not admitted waits,
    /// as in a batch queue; a running app is never stopped by coloc.
    pub admit: bool,
    pub placement: Placement,
    /// Threads per parallel region for malleable OpenMP apps; None = unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dop: Option<u32>,
    #[serde(default)]
    pub memory: MemPolicy,
    #[serde(default)]
    pub sched: SchedSettings,
    /// Why the app got what it got, one entry per kind of decision
    /// ([`crate::reason`]); rendered at the edges, never read back as words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
}

impl AppPlan {
    /// Admit and leave everything to Linux.
    pub fn native(app: AppId) -> Self {
        Self {
            app,
            admit: true,
            placement: Placement::Unmanaged,
            dop: None,
            memory: MemPolicy::Default,
            sched: SchedSettings::default(),
            reasons: Vec::new(),
        }
    }

    /// Hold a pending app back.
    pub fn hold(app: AppId) -> Self {
        Self {
            admit: false,
            ..Self::native(app)
        }
    }

    /// With one more reason.
    pub fn because(mut self, reason: impl Into<Reason>) -> Self {
        self.reasons.push(reason.into());
        self
    }
}

/// A policy's decision for every app in the view, with why as data
/// ([`crate::reason`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub apps: Vec<AppPlan>,
    /// What the whole decision rested on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<PlanReason>,
    /// The verdicts of the trials that measure the plan against Linux
    /// (`auto`'s own, the `+guard` layer's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
    /// A version-1 trace's `note`: the English its policy wrote, kept only to
    /// be shown (`explain::note`); never written.
    #[serde(default, rename = "note", skip_serializing)]
    pub legacy_note: Option<String>,
}

impl Plan {
    /// A plan of these apps with no plan-wide reasons.
    pub fn of(apps: Vec<AppPlan>) -> Self {
        Self {
            apps,
            ..Self::default()
        }
    }

    /// The verdict of `judge`'s trial, if it ran one.
    pub fn verdict(&self, judge: crate::reason::Judge) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.judge == judge)
    }

    pub fn for_app(&self, app: AppId) -> Option<&AppPlan> {
        self.apps.iter().find(|p| p.app == app)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cpus: &[u32]) -> CpuSet {
        cpus.iter().copied().collect()
    }

    /// The index answers as `cpus_of` does for every kind of placement,
    /// listed threads, unlisted ones and a thread listed twice.
    #[test]
    fn the_thread_index_answers_as_cpus_of() {
        let placements = [
            Placement::Unmanaged,
            Placement::Shared(set(&[0, 1])),
            Placement::PerThread {
                threads: vec![(7, set(&[0])), (3, set(&[1])), (7, set(&[2]))],
                rest: set(&[3]),
            },
        ];
        for p in &placements {
            let index = p.by_thread();
            for tid in [3, 7, 9] {
                assert_eq!(index.get(tid), p.cpus_of(tid), "{p:?}, thread {tid}");
            }
        }
    }
}
