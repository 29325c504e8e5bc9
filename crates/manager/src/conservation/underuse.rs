//! Underused: a CPU idles while an app runs fewer threads or on fewer CPUs
//! than it could use — a DoP or a partition below what is free
//! (`conservation.rs`).
//!
//! Neither shows as a waiting thread: a team held to one thread by its DoP
//! has no thread to queue, and a team packed onto fewer CPUs than its threads
//! may sleep at its barriers instead of queueing (libgomp waits passively
//! when its team outnumbers the CPUs it started on). Over an interval with an
//! idle CPU, an app falls short
//! - on its **team** when its OpenMP runtime answers on the DoP channel, it
//!   is inside a parallel region at the observation, and its team is smaller
//!   than the thread count it asked for (at most the machine's CPUs): any
//!   idle CPU could run a member of the larger team;
//! - on its **CPUs** when its placement allows its busy threads (those that
//!   ran for more than [`super::IDLE_BELOW`] of the interval) fewer CPUs than
//!   they are, and an idle CPU lies outside them. An app whose waiting
//!   threads were already found kept off idle CPUs (`waiting.rs`) is not
//!   counted twice.
//!
//! Unmanaged placement never falls short on CPUs; it may on its team, since
//! a DoP is coloc's doing whatever the placement.
//!
//! Limits: a smaller team chosen on evidence (`auto`'s stored solo times that
//! favour fewer threads) is flagged too — the event says a CPU idled, not
//! that the choice was wrong; a program that sizes a region below its thread
//! count with its own `num_threads` clause is flagged as well.

use std::collections::BTreeSet;

use coloc_model::{AppId, AppSample, AppView, CpuSet, Observation, Placement, Shortage, Topology};

use super::Interval;

/// An app that ran below what it could use over one interval while CPUs idled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Underuse {
    pub app: AppId,
    /// The idle CPUs it could have used.
    pub idle: CpuSet,
    pub short: Shortage,
}

/// The underused apps of the interval from `prev` to `last`, judged against
/// each app's plan in force (`AppView::current`); apps with waiting threads
/// kept off idle CPUs are left to that check.
pub fn underuses(
    topology: &Topology,
    apps: &[AppView],
    prev: &Observation,
    last: &Observation,
) -> Vec<Underuse> {
    let Some(iv) = Interval::new(prev, last) else {
        return Vec::new();
    };
    let idle = iv.idle_cpus(topology);
    let waiting: BTreeSet<AppId> = super::waiting::shortfalls_in(apps, &iv, &idle)
        .iter()
        .map(|s| s.app)
        .collect();
    underuses_in(topology, apps, &iv, &idle, &waiting)
}

/// The underused apps of one interval whose idle CPUs are `idle`
/// ([`Interval::idle_cpus`]).
pub(super) fn underuses_in(
    topology: &Topology,
    apps: &[AppView],
    iv: &Interval<'_>,
    idle: &CpuSet,
    waiting: &BTreeSet<AppId>,
) -> Vec<Underuse> {
    if idle.is_empty() {
        return Vec::new();
    }
    let cpus = topology.cpus().len() as u32;
    let mut out = Vec::new();
    for a in apps.iter().filter(|a| a.is_running()) {
        // Without schedstat a sample carries no threads, and nothing says
        // what the CPUs did.
        let Some(sample) = iv.last.app(a.id).filter(|s| !s.threads.is_empty()) else {
            continue;
        };
        let wanted = a.threads_requested.min(cpus);
        let found = short_team(sample, wanted)
            .map(|short| (idle.clone(), short))
            .or_else(|| short_cpus(a, sample, iv, idle).filter(|_| !waiting.contains(&a.id)));
        if let Some((idle, short)) = found {
            out.push(Underuse {
                app: a.id,
                idle,
                short,
            });
        }
    }
    out
}

/// A team inside a region smaller than `wanted`, for an app whose DoP coloc
/// steers.
fn short_team(sample: &AppSample, wanted: u32) -> Option<Shortage> {
    let omp = sample.omp.as_ref()?;
    let steered = omp.dop_seen.is_some();
    (steered && omp.in_parallel && omp.team_size < wanted).then_some(Shortage::Team {
        team: omp.team_size,
        wanted,
    })
}

/// Busy threads allowed fewer CPUs than they are, with idle CPUs outside
/// them: those idle CPUs and the shortage.
fn short_cpus(
    a: &AppView,
    sample: &AppSample,
    iv: &Interval<'_>,
    idle: &CpuSet,
) -> Option<(CpuSet, Shortage)> {
    let placement = &a.current.as_ref()?.placement;
    if *placement == Placement::Unmanaged {
        return None;
    }
    let busy = iv.busy(sample);
    let planned = placement.by_thread();
    let mut allowed = CpuSet::new();
    for c in busy.iter().filter_map(|&tid| planned.get(tid)) {
        allowed.union_with(c);
    }
    let outside = idle.difference(&allowed);
    if allowed.len() >= busy.len() || outside.is_empty() {
        return None;
    }
    let busy = busy.len() as u32;
    Some((outside, Shortage::Cpus { allowed, busy }))
}
