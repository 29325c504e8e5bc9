//! Work conservation, checked from observations for every policy
//! (`docs/architecture.md`, The loop: decisions are checked against outcomes).
//!
//! Problem: a plan can leave a CPU idle while an app's threads queue for the
//! CPUs it was given — an app pinned below its team size after its co-runner
//! left, two threads pinned to one CPU beside an idle one. Plain Linux never
//! does this (its balancer pulls waiting threads onto idle CPUs), so a manager
//! that does it is worse than doing nothing, and must at least know it.
//!
//! Approach: over each observation interval, a CPU is *idle* when the managed
//! threads last seen on it ran for less than [`IDLE_BELOW`] of the interval,
//! and a thread is *waiting* when it spent more than [`WAITING_ABOVE`] of the
//! interval runnable but off a CPU (schedstat's run delay; the simulator's
//! queueing). An app falls short when an idle CPU is one that a waiting thread
//! of it may not use under its placement. Unmanaged placement never falls short
//! (Linux may use every CPU). A policy gets one interval to react; a shortfall
//! that lasts into a second consecutive interval is a violation, recorded as
//! [`TraceEvent::IdleWhileWaiting`] at every observation while it lasts.
//!
//! Limits: a CPU's use is attributed from the CPU each thread was last seen on,
//! so a thread that migrated within an interval can make a busy CPU look idle;
//! work of processes coloc does not manage is not seen, so on a shared machine
//! a CPU busy with foreign work can look idle. Both only matter when a waiting
//! thread is also kept off that CPU, which is the plan's doing either way.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::{AppId, AppView, CpuSet, Observation, Placement, Tid, Topology, TraceEvent};

/// A CPU busy for less than this fraction of an interval counts as idle.
pub const IDLE_BELOW: f64 = 0.1;
/// A thread that waited for a CPU more than this fraction of an interval counts
/// as wanting one.
pub const WAITING_ABOVE: f64 = 0.25;

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
    let dt = last.at.saturating_sub(prev.at).as_nanos() as f64;
    if dt <= 0.0 {
        return Vec::new();
    }
    let delta = |app: AppId, tid: Tid, field: fn(&coloc_model::ThreadSample) -> u64| {
        let sample = |o: &Observation| o.app(app).and_then(|s| s.thread(tid)).map_or(0, field);
        let (now, before) = (sample(last), sample(prev));
        now.saturating_sub(before) as f64
    };
    let mut busy: BTreeMap<u32, f64> = BTreeMap::new();
    for s in &last.apps {
        for t in &s.threads {
            if let Some(cpu) = t.cpu {
                *busy.entry(cpu).or_default() += delta(s.app, t.tid, |x| x.run_ns);
            }
        }
    }
    let idle: CpuSet = topology
        .cpus()
        .iter()
        .filter(|c| busy.get(c).copied().unwrap_or(0.0) < IDLE_BELOW * dt)
        .collect();
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
        let Some(sample) = last.app(a.id) else {
            continue;
        };
        let mut off = CpuSet::new();
        let mut waiting = Vec::new();
        let planned = placement.by_thread();
        for t in &sample.threads {
            if delta(a.id, t.tid, |x| x.wait_ns) <= WAITING_ABOVE * dt {
                continue;
            }
            let Some(allowed) = planned.get(t.tid) else {
                continue;
            };
            let kept_off = idle.difference(allowed);
            if !kept_off.is_empty() {
                off = off.union(&kept_off);
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

/// Shortfalls across intervals: which apps have fallen short since when.
#[derive(Clone, Debug, Default)]
pub struct Conservation {
    since: BTreeMap<AppId, Duration>,
}

impl Conservation {
    /// Takes the shortfalls of the interval `prev`..`last` and returns a
    /// violation for every app that also fell short in the interval before.
    pub fn check(
        &mut self,
        topology: &Topology,
        apps: &[AppView],
        prev: &Observation,
        last: &Observation,
    ) -> Vec<TraceEvent> {
        let now = shortfalls(topology, apps, prev, last);
        self.since.retain(|id, _| now.iter().any(|s| s.app == *id));
        let mut events = Vec::new();
        for s in now {
            let since = *self.since.entry(s.app).or_insert(prev.at);
            if since < prev.at {
                events.push(TraceEvent::IdleWhileWaiting {
                    t: last.at,
                    since,
                    app: s.app,
                    idle: s.idle,
                    waiting: s.waiting,
                });
            }
        }
        events
    }
}

#[cfg(test)]
mod tests;
