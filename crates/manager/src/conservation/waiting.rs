//! Idle while waiting: a CPU idles while an app's threads queue for the CPUs
//! its placement gave them (`conservation.rs`).
//!
//! Plain Linux never does this (its balancer pulls waiting threads onto idle
//! CPUs). A thread is *waiting* when it spent more than [`WAITING_ABOVE`] of
//! the interval runnable but off a CPU (schedstat's run delay; the
//! simulator's queueing). An app falls short when an idle CPU is one that a
//! waiting thread of it may not use under its placement. Unmanaged placement
//! never falls short (Linux may use every CPU). Both limits of the shared
//! measures only matter when a waiting thread is also kept off that CPU,
//! which is the plan's doing either way.

use coloc_model::{AppId, AppView, CpuSet, Observation, Placement, Tid, Topology};

use super::{grew, Interval, WAITING_ABOVE};

/// An app whose waiting threads were kept off idle CPUs over one interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortfall {
    pub app: AppId,
    /// Idle CPUs that some waiting thread of the app may not use.
    pub idle: CpuSet,
    /// Its threads that waited.
    pub waiting: Vec<Tid>,
}

/// The shortfalls of the interval from `prev` to `last`, judged against each
/// app's plan in force (`AppView::current`).
pub fn shortfalls(
    topology: &Topology,
    apps: &[AppView],
    prev: &Observation,
    last: &Observation,
) -> Vec<Shortfall> {
    Interval::new(prev, last).map_or_else(Vec::new, |iv| {
        shortfalls_in(apps, &iv, &iv.idle_cpus(topology))
    })
}

/// The shortfalls of one interval whose idle CPUs are `idle`
/// ([`Interval::idle_cpus`]).
pub(super) fn shortfalls_in(apps: &[AppView], iv: &Interval<'_>, idle: &CpuSet) -> Vec<Shortfall> {
    if idle.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for a in apps.iter().filter(|a| a.is_running()) {
        let Some(placement) = a.current.as_ref().map(|p| &p.placement) else {
            continue;
        };
        if *placement == Placement::Unmanaged {
            continue;
        }
        let Some(sample) = iv.last.app(a.id) else {
            continue;
        };
        let mut off = CpuSet::new();
        let mut waiting = Vec::new();
        let planned = placement.by_thread();
        let before = iv.prev.app(a.id);
        for t in &sample.threads {
            if grew(before, t, |x| x.wait_ns) <= WAITING_ABOVE * iv.dt {
                continue;
            }
            let Some(allowed) = planned.get(t.tid) else {
                continue;
            };
            let kept_off = idle.difference(allowed);
            if !kept_off.is_empty() {
                off.union_with(&kept_off);
                waiting.push(t.tid);
            }
        }
        if !waiting.is_empty() {
            out.push(Shortfall {
                app: a.id,
                idle: off,
                waiting,
            });
        }
    }
    out
}
