//! `tang`: Tang et al.'s heuristic thread-to-core mapping for latency-sensitive
//! apps (ISCA 2011 §5.1, Algorithm 1; docs/policies/tang-atom.md).
//!
//! Problem: a latency-sensitive service's best mapping depends on its own
//! memory-sharing characteristics and on its co-runner's (§3–4: swings of
//! 25–40%). Linux places threads by load alone.
//!
//! Approach: for each app with `class = "latency"`, in arrival order (the
//! earliest arrival is protected first and takes its cores first), Algorithm 1
//! ([`algorithm::decide`]) chooses share or distribute at the LLC level and at
//! the bus level ([`levels`]: how the paper's two levels map onto any tree)
//! from its characteristics and its co-runners' (every other app; where there
//! are several, the largest figure of each, the worst neighbour). The app gets
//! a core per thread laid out that way, keeping one core free for each latency
//! app after it and one for the batch apps; the batch apps share every core
//! left, so no batch thread ever runs on a latency app's core. Characteristics
//! come from the profile store (`coloc profile`); apps without them follow the
//! algorithm's reading of missing figures ([`algorithm`]). The decision is a
//! pure function of the view, so every trigger recomputes the same mapping
//! until an app arrives, leaves or changes its threads.

pub mod algorithm;
pub mod levels;
#[cfg(test)]
pub(crate) mod tests;

use coloc_model::profile::{self, AppProfile};
use coloc_model::reason::{PlanReason, Reason, TangChoice};
use coloc_model::workload::AppClass;
use coloc_model::{AppId, AppPlan, AppView, Placement, Plan, View};

use self::algorithm::{Line, Thresholds, Traits};
use self::levels::{Choice, Levels};
use crate::per_topology::PerTopology;
use crate::Policy;

/// The `tang` policy.
#[derive(Debug, Clone, Default)]
pub struct Tang {
    profiles: Vec<AppProfile>,
    thresholds: Thresholds,
    /// The levels of the machine it last decided on (`per_topology.rs`).
    levels: PerTopology<Levels>,
}

impl Tang {
    pub fn new(profiles: Vec<AppProfile>) -> Self {
        Self {
            profiles,
            thresholds: Thresholds::default(),
            levels: PerTopology::default(),
        }
    }

    /// What Algorithm 1 reads of `app`: its profile's characteristics, if any.
    pub fn traits(&self, app: &AppView) -> Traits {
        profile::find(&self.profiles, &app.spec)
            .and_then(|(p, _)| p.sharing.as_ref())
            .map(|s| Traits {
                data_sharing: s.data_sharing,
                sharing_is_time_saved: s.data_sharing_runs.is_some(),
                bus_usage: s.bandwidth_gbs,
                llc_footprint: s.llc_footprint,
            })
            .unwrap_or_default()
    }
}

/// The latency apps of the view, in arrival order.
pub(crate) fn latency_apps<'a>(view: &View<'a>) -> Vec<&'a AppView> {
    view.apps
        .iter()
        .filter(|a| a.spec.class == AppClass::Latency)
        .collect()
}

/// Cores a latency app wants: one per thread, the more of what it asked for
/// and what it runs now (a service's workers and helpers may outnumber its
/// `threads`; fewer cores would leave its threads waiting beside idle ones);
/// 0 for "all" (an app that asked for 0 threads).
pub(crate) fn wanted(app: &AppView) -> usize {
    match app.threads_requested {
        0 => 0,
        n => (n as usize).max(app.threads.len()),
    }
}

/// Cores the `i`-th of `latency` latency apps may take out of `free`:
/// `wanted` (all free ones for 0), leaving one core for each latency app
/// after it and one for the batch apps, when there are any; at least one.
pub(crate) fn core_budget(
    view: &View<'_>,
    latency: &[&AppView],
    i: usize,
    free: usize,
    wanted: usize,
) -> usize {
    let batch = view.apps.len() > latency.len();
    let reserve = latency.len() - i - 1 + usize::from(batch);
    let wanted = if wanted == 0 { free } else { wanted };
    wanted.min(free.saturating_sub(reserve)).max(1).min(free)
}

/// The plan giving each latency app its cores (pinned as a set, like the
/// paper's `taskset`) and every other app the cores left, shared; with no core
/// left the others are left to Linux.
pub(crate) fn plan_with(view: &View<'_>, levels: &Levels, latency: &[(AppId, Vec<usize>)]) -> Plan {
    let taken: Vec<usize> = latency
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .collect();
    let rest: Vec<usize> = (0..levels.cores.len())
        .filter(|c| !taken.contains(c))
        .collect();
    let rest_cpus = levels.cpus(&rest);
    let apps = view
        .apps
        .iter()
        .map(|a| {
            let placement = match latency.iter().find(|(id, _)| *id == a.id) {
                Some((_, cores)) => Placement::Shared(levels.cpus(cores)),
                None if rest_cpus.is_empty() => Placement::Unmanaged,
                None => Placement::Shared(rest_cpus.clone()),
            };
            AppPlan {
                placement,
                ..AppPlan::native(a.id)
            }
        })
        .collect();
    Plan::of(apps)
}

/// The characteristics of `others` (the apps beside the latency app), figure
/// by figure the largest known: the co-runner Algorithm 1 compares with.
fn corunner<'a>(tang: &Tang, others: impl IntoIterator<Item = &'a AppView>) -> Traits {
    let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    others
        .into_iter()
        .map(|a| tang.traits(a))
        .fold(Traits::default(), |acc, t| Traits {
            // Algorithm 1 reads P's data sharing only, not the co-runner's.
            data_sharing: max(acc.data_sharing, t.data_sharing),
            sharing_is_time_saved: acc.sharing_is_time_saved || t.sharing_is_time_saved,
            bus_usage: max(acc.bus_usage, t.bus_usage),
            llc_footprint: max(acc.llc_footprint, t.llc_footprint),
        })
}

/// One latency app's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub app: AppId,
    pub choice: Choice,
    pub line: Line,
    pub cores: Vec<usize>,
}

impl Tang {
    /// Algorithm 1 for latency app `app` beside `others`: its choice at both
    /// levels and the line that made it.
    pub(crate) fn choice<'a>(
        &self,
        app: &AppView,
        others: impl IntoIterator<Item = &'a AppView>,
    ) -> (Choice, Line) {
        algorithm::decide(&self.traits(app), &corunner(self, others), &self.thresholds)
    }

    /// Algorithm 1 for every latency app of the view, in arrival order.
    pub fn decisions(&self, view: &View<'_>, levels: &Levels) -> Vec<Decision> {
        let latency = latency_apps(view);
        let mut free: Vec<usize> = (0..levels.cores.len()).collect();
        let mut out = Vec::new();
        for (i, app) in latency.iter().enumerate() {
            let others = view.apps.iter().filter(|a| a.id != app.id);
            let (choice, line) = self.choice(app, others);
            let n = core_budget(view, &latency, i, free.len(), wanted(app));
            let cores = levels.place(&free, n, choice);
            free.retain(|c| !cores.contains(c));
            out.push(Decision {
                app: app.id,
                choice,
                line,
                cores,
            });
        }
        out
    }
}

impl Policy for Tang {
    fn name(&self) -> &'static str {
        "tang"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let levels = self.levels.get(view.topology, Levels::new);
        let decisions = self.decisions(view, &levels);
        let latency: Vec<(AppId, Vec<usize>)> =
            decisions.iter().map(|d| (d.app, d.cores.clone())).collect();
        let mut plan = plan_with(view, &levels, &latency);
        if decisions.is_empty() {
            plan.reasons.push(PlanReason::NoLatencyApp);
        } else {
            plan.reasons.push(PlanReason::TangLevels {
                llc: levels.llc_label.to_string(),
                bus: levels.bus_label.to_string(),
            });
        }
        for d in decisions {
            if let Some(p) = plan.apps.iter_mut().find(|p| p.app == d.app) {
                p.reasons.push(Reason::Tang(TangChoice {
                    choice: d.choice.label().to_string(),
                    line: d.line,
                    cpus: levels.cpus(&d.cores),
                }));
            }
        }
        plan
    }
}
