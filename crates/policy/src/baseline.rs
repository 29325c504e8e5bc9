//! What users do today (docs/policies/baselines.md).
//!
//! Problem: coloc's gains must be shown against the practices they replace — the
//! plain Linux scheduler, an exclusive batch queue, a static CPU manager that hands
//! each app an equal exclusive share, and hand-written pinning.
//!
//! Approach: four small policies, each a direct transcription of that practice.
//! None of them reads observations.

use coloc_model::reason::{Admission, AdmissionRule, PlanReason};
use coloc_model::{AppPlan, AppView, CpuSet, Placement, Plan, StaticMapping, View};

use crate::Policy;

/// Change nothing: every arrived app starts at once and Linux places its threads.
#[derive(Debug, Default)]
pub struct Native;

impl Policy for Native {
    fn name(&self) -> &'static str {
        "native"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        Plan::of(view.apps.iter().map(|a| AppPlan::native(a.id)).collect())
    }
}

/// An exclusive batch queue: one app runs at a time, with the whole machine; the
/// others wait in arrival order (first come, first served). A repetition of an app
/// joins the queue when its previous run exits, behind apps that arrived earlier.
#[derive(Debug, Default)]
pub struct Batch;

impl Policy for Batch {
    fn name(&self) -> &'static str {
        "batch"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let busy = view.running().next().is_some();
        // Arrival order is the order of `view.apps`; the earliest pending goes next.
        let next = (!busy)
            .then(|| {
                view.pending()
                    .min_by_key(|a| (a.arrived_at, a.id))
                    .map(|a| a.id)
            })
            .flatten();
        let apps = view
            .apps
            .iter()
            .map(|a| {
                let admission = |admitted| Admission {
                    admitted,
                    rule: AdmissionRule::OneAtATime,
                };
                if a.is_running() {
                    AppPlan::native(a.id)
                } else if Some(a.id) == next {
                    AppPlan::native(a.id).because(admission(true))
                } else {
                    AppPlan::hold(a.id).because(admission(false))
                }
            })
            .collect();
        Plan::of(apps)
    }
}

/// Equal exclusive partitions, like Kubernetes' static CPU manager: the CPUs are cut
/// into as many contiguous slices (in topology order, so a slice keeps its cores'
/// SMT siblings and caches together) as there are apps, sizes differing by at most
/// one, older apps first; inside its slice each thread is pinned to one CPU
/// (thread i to the slice's CPU i mod size).
///
/// When more apps have arrived than there are CPUs, the apps that do not fit wait
/// (as a pod waits for an exclusive CPU), so every running app always has at
/// least one CPU of its own.
#[derive(Debug, Default)]
pub struct Equal;

impl Policy for Equal {
    fn name(&self) -> &'static str {
        "equal"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let cpus: Vec<_> = topology_order(view);
        // Running apps keep their slot; pending apps fill what is left, oldest first.
        let running: Vec<&AppView> = view.running().collect();
        let mut pending: Vec<&AppView> = view.pending().collect();
        pending.sort_by_key(|a| (a.arrived_at, a.id));
        let room = cpus.len().saturating_sub(running.len());
        let admitted: Vec<&AppView> = running
            .iter()
            .copied()
            .chain(pending.iter().copied().take(room))
            .collect();
        let slices = split_even(&cpus, admitted.len());
        let mut apps: Vec<AppPlan> = admitted
            .iter()
            .zip(slices)
            .map(|(a, slice)| AppPlan {
                placement: pin_each_thread(a, &slice),
                ..AppPlan::native(a.id)
            })
            .collect();
        apps.extend(pending.iter().skip(room).map(|a| {
            AppPlan::hold(a.id).because(Admission {
                admitted: false,
                rule: AdmissionRule::EveryCpuTaken {
                    apps: admitted.len() as u32,
                    cpus: cpus.len() as u32,
                },
            })
        }));
        let mut plan = Plan::of(apps);
        plan.reasons.push(PlanReason::Equal {
            apps: admitted.len() as u32,
            cpus: cpus.len() as u32,
        });
        plan
    }
}

/// The user's own mapping from the workload file (`cpus = "0-3"` for the whole app,
/// or a list, one entry per thread in creation order, reused round-robin). CPUs the
/// machine does not offer are dropped; an app left with none, or without `cpus`,
/// is not managed.
#[derive(Debug, Default)]
pub struct Static;

impl Policy for Static {
    fn name(&self) -> &'static str {
        "static"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let usable = view.topology.cpus();
        let apps = view
            .apps
            .iter()
            .map(|a| {
                let placement = match &a.spec.cpus {
                    None => Placement::Unmanaged,
                    Some(StaticMapping::Shared(set)) => {
                        let set = set.intersection(usable);
                        if set.is_empty() {
                            Placement::Unmanaged
                        } else {
                            Placement::Shared(set)
                        }
                    }
                    Some(StaticMapping::PerThread(list)) => {
                        let list: Vec<CpuSet> = list
                            .iter()
                            .map(|s| s.intersection(usable))
                            .filter(|s| !s.is_empty())
                            .collect();
                        if list.is_empty() {
                            Placement::Unmanaged
                        } else {
                            Placement::PerThread {
                                threads: a
                                    .threads
                                    .iter()
                                    .zip(list.iter().cycle())
                                    .map(|(t, s)| (*t, s.clone()))
                                    .collect(),
                                rest: list.iter().fold(CpuSet::new(), |acc, s| acc.union(s)),
                            }
                        }
                    }
                };
                AppPlan {
                    placement,
                    ..AppPlan::native(a.id)
                }
            })
            .collect();
        Plan::of(apps)
    }
}

/// The usable CPUs ordered core by core, as the topology tree lists them (so that
/// contiguous runs stay under the same caches).
pub(crate) fn topology_order(view: &View<'_>) -> Vec<u32> {
    view.topology.core_sets().flat_map(CpuSet::iter).collect()
}

/// How many CPUs [`topology_order`] lists, counted rather than listed (the
/// reversible-first stakes ask for every app at every decision).
pub(crate) fn topology_cpus(view: &View<'_>) -> u32 {
    view.topology.core_sets().map(CpuSet::len).sum::<usize>() as u32
}

/// Cuts `cpus` into `n` contiguous slices whose sizes differ by at most one, the
/// larger ones first. `n` must not exceed `cpus.len()` (callers hold apps back).
pub(crate) fn split_even(cpus: &[u32], n: usize) -> Vec<CpuSet> {
    if n == 0 {
        return Vec::new();
    }
    let base = cpus.len() / n;
    let extra = cpus.len() % n;
    let mut start = 0;
    (0..n)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let slice = cpus[start..start + len].iter().copied().collect();
            start += len;
            slice
        })
        .collect()
}

/// Thread i of the app on CPU i mod |slice|; threads created after the decision may
/// use the whole slice until the next decision pins them.
pub(crate) fn pin_each_thread(app: &AppView, slice: &CpuSet) -> Placement {
    let cpus: Vec<u32> = slice.iter().collect();
    Placement::PerThread {
        threads: app
            .threads
            .iter()
            .zip(cpus.iter().cycle())
            .map(|(t, c)| (*t, CpuSet::single(*c)))
            .collect(),
        rest: slice.clone(),
    }
}

#[cfg(test)]
mod tests;
