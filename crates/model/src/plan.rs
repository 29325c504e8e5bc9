//! What a policy decides (docs/architecture.md, The loop): per app, admission, placement,
//! degree of parallelism, memory policy and scheduling settings.

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::ids::{AppId, Tid};
use crate::settings::{MemPolicy, SchedSettings};

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
            Placement::PerThread { threads, rest } => threads
                .iter()
                .fold(rest.clone(), |acc, (_, c)| acc.union(c)),
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
        }
    }

    /// Hold a pending app back.
    pub fn hold(app: AppId) -> Self {
        Self {
            admit: false,
            ..Self::native(app)
        }
    }
}

/// A policy's decision for every app in the view, with a short reason for the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub apps: Vec<AppPlan>,
    /// One line saying why, for the trace and `coloc report` (e.g. "equal: 2 apps, 1 CPU each").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Plan {
    pub fn for_app(&self, app: AppId) -> Option<&AppPlan> {
        self.apps.iter().find(|p| p.app == app)
    }
}
