//! Waste the Manager sees, checked from observations for every policy
//! (`docs/architecture.md`, Decisions checked against outcomes).
//!
//! Problem: a plan can waste CPUs in ways plain Linux never does, and a
//! manager that does so is worse than doing nothing, so it must at least
//! know. Three ways, each its own check:
//! - *idle while waiting* (`waiting.rs`): a CPU idles while an app's threads
//!   queue for the CPUs its placement gave them (an app pinned below its team
//!   size after its co-runner left);
//! - *underused* (`underuse.rs`): a CPU idles while an app runs fewer threads
//!   or on fewer CPUs than it could use — a DoP or a partition below what is
//!   free — although none of its threads queues: a team held to one thread by
//!   its DoP has no thread to queue, and one packed onto fewer CPUs than its
//!   threads may sleep at its barriers instead of queueing;
//! - *no progress* (`no_progress.rs`): an app's team burns CPU time inside
//!   one parallel region while none of its progress counters moves (threads
//!   spinning at a barrier);
//! - *spinning* (`spinning.rs`): a team whose members queue for their CPUs
//!   makes less progress per CPU-second than it made earlier with a CPU for
//!   each, by more than [`IDLE_BELOW`] of the interval in CPU time (waiters
//!   spinning at barriers for a descheduled teammate: a team packed on fewer
//!   CPUs than its threads, or time-sharing them with other apps).
//!
//! Approach: each check reads one observation interval (the last two
//! observations) and names the apps it finds. A policy gets one interval to
//! react: a finding that holds for a second consecutive interval is a
//! violation, recorded as a trace event at every observation while it lasts.
//! The Manager logs a violation once when it starts and once when it ends
//! (with how long it lasted), and counts observations, episodes and time per
//! kind for the run's summary ([`WasteSeen`]).
//!
//! Shared measures: over an interval a CPU is *idle* when the managed threads
//! last seen on it ran for less than [`IDLE_BELOW`] of the interval; a thread
//! is *busy* when it ran for more than that.
//!
//! Limits: a CPU's use is attributed from the CPU each thread was last seen on,
//! so a thread that migrated within an interval can make a busy CPU look idle;
//! work of processes coloc does not manage is not seen, so on a shared machine
//! a CPU busy with foreign work can look idle.

mod no_progress;
mod spinning;
mod underuse;
mod waiting;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use coloc_model::TraceEvent;
use coloc_model::{AppId, AppSample, AppView, CpuSet, Observation, OmpSample, ThreadSample};
use coloc_model::{Tid, Topology};

pub use self::no_progress::NoProgressFinding;
pub use self::spinning::SpinningFinding;
pub use self::underuse::{underuses, Underuse};
pub use self::waiting::{shortfalls, Shortfall};

/// A CPU busy for less than this fraction of an interval counts as idle, and
/// a thread that ran for more than it counts as busy.
pub const IDLE_BELOW: f64 = 0.1;
/// A thread that waited for a CPU more than this fraction of an interval counts
/// as wanting one.
pub const WAITING_ABOVE: f64 = 0.25;

/// One observation interval, as the checks read it.
#[derive(Clone, Copy, Debug)]
pub struct Interval<'a> {
    pub prev: &'a Observation,
    pub last: &'a Observation,
    /// Its length, ns.
    pub dt: f64,
}

impl<'a> Interval<'a> {
    /// The interval from `prev` to `last`; None when it has no length.
    pub fn new(prev: &'a Observation, last: &'a Observation) -> Option<Self> {
        let dt = last.at.saturating_sub(prev.at).as_nanos() as f64;
        (dt > 0.0).then_some(Self { prev, last, dt })
    }

    /// How much `field` of thread `tid` of `app` grew over the interval, ns
    /// (from 0 for a thread born in it; 0 for one gone by its end): `grew`
    /// with both samples looked up.
    pub fn delta(&self, app: AppId, tid: Tid, field: fn(&ThreadSample) -> u64) -> f64 {
        self.last
            .app(app)
            .and_then(|s| s.thread(tid))
            .map_or(0.0, |now| grew(self.prev.app(app), now, field))
    }

    /// The running apps that are OpenMP programs reporting through the DoP
    /// channel at both ends of the interval, with those samples.
    pub(crate) fn openmp<'v>(
        &self,
        apps: &'v [AppView],
    ) -> impl Iterator<Item = (AppId, OmpEnds<'a>)> + use<'a, 'v> {
        let (prev, last) = (self.prev, self.last);
        apps.iter().filter(|a| a.is_running()).filter_map(move |a| {
            let (before, now) = (prev.app(a.id)?, last.app(a.id)?);
            let ends = OmpEnds {
                before,
                now,
                omp_before: before.omp.as_ref()?,
                omp_now: now.omp.as_ref()?,
            };
            Some((a.id, ends))
        })
    }

    /// CPU time over the interval of the threads of `sample`, an app's
    /// sample in `last`, ns.
    pub fn cpu_ns(&self, sample: &AppSample) -> f64 {
        let before = self.prev.app(sample.app);
        sample
            .threads
            .iter()
            .map(|t| grew(before, t, |x| x.run_ns))
            .sum()
    }

    /// The threads of `sample`, an app's sample in `last`, that ran for more
    /// than [`IDLE_BELOW`] of the interval.
    pub fn busy(&self, sample: &AppSample) -> Vec<Tid> {
        let before = self.prev.app(sample.app);
        sample
            .threads
            .iter()
            .filter(|t| grew(before, t, |x| x.run_ns) > IDLE_BELOW * self.dt)
            .map(|t| t.tid)
            .collect()
    }

    /// CPUs that the managed threads last seen on them used for less than
    /// [`IDLE_BELOW`] of the interval.
    ///
    /// Each CPU's time is summed in the order of the observation's apps and
    /// threads, as a per-CPU map would sum it, into a table indexed by CPU
    /// (the check runs at every observation of every run; docs/simulator.md,
    /// Speed).
    pub fn idle_cpus(&self, topology: &Topology) -> CpuSet {
        let cpus = topology.cpus();
        let slots = cpus.iter().next_back().map_or(0, |c| c as usize + 1);
        let mut busy = vec![0.0f64; slots];
        for s in &self.last.apps {
            let before = self.prev.app(s.app);
            for t in &s.threads {
                let Some(slot) = t.cpu.and_then(|c| busy.get_mut(c as usize)) else {
                    continue;
                };
                let was = before.and_then(|b| b.thread(t.tid)).map_or(0, |x| x.run_ns);
                *slot += t.run_ns.saturating_sub(was) as f64;
            }
        }
        cpus.iter()
            .filter(|&c| busy[c as usize] < IDLE_BELOW * self.dt)
            .collect()
    }
}

/// How much `field` of thread `now` grew since `before`, its app's sample at
/// the start of the interval, ns (from 0 for a thread born in it): for a
/// caller that holds the thread's sample and its app's earlier one, found
/// once per app instead of twice per thread (the checks run at every
/// observation; docs/simulator.md, Speed).
pub(crate) fn grew(
    before: Option<&AppSample>,
    now: &ThreadSample,
    field: fn(&ThreadSample) -> u64,
) -> f64 {
    let was = before.and_then(|b| b.thread(now.tid)).map_or(0, field);
    field(now).saturating_sub(was) as f64
}

/// An OpenMP app at both ends of an interval ([`Interval::openmp`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OmpEnds<'a> {
    pub before: &'a AppSample,
    pub now: &'a AppSample,
    pub omp_before: &'a OmpSample,
    pub omp_now: &'a OmpSample,
}

impl OmpEnds<'_> {
    /// Inside a parallel region at both observations.
    pub(crate) fn inside(&self) -> bool {
        self.omp_before.in_parallel && self.omp_now.in_parallel
    }
}

/// The kinds of waste the Manager checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Waste {
    /// CPUs idle while an app's waiting threads are kept off them.
    IdleWhileWaiting,
    /// CPUs idle while an app runs a smaller team or on fewer CPUs than it
    /// could use.
    Underused,
    /// CPU time burnt inside one region with no progress.
    NoProgress,
    /// CPU time burnt beyond what a team's progress took at its own earlier
    /// rate, while its members queued for their CPUs.
    Spinning,
}

impl std::fmt::Display for Waste {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Waste::IdleWhileWaiting => "CPUs idle while an app's threads waited for a CPU",
            Waste::Underused => "CPUs idle while an app ran below what it could use",
            Waste::NoProgress => "CPU time burnt inside one region with no progress",
            Waste::Spinning => "CPU time burnt beyond what an app's progress took at its own rate",
        })
    }
}

/// A violation that ended: it held from `since` to `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Episode {
    pub app: AppId,
    pub waste: Waste,
    pub since: Duration,
    pub until: Duration,
}

/// What one check of an interval found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    /// Violations, one event per app and kind.
    pub events: Vec<TraceEvent>,
    /// Violations that began with this observation (their first event).
    pub started: Vec<(AppId, Waste)>,
    /// Violations that held up to the previous observation and no longer do.
    pub ended: Vec<Episode>,
}

/// How much of one kind of waste a run saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WasteTally {
    /// Observations that recorded it (one per app).
    pub observations: usize,
    /// Violations, each counted once however long it lasted.
    pub episodes: usize,
    /// Their summed length, from the start of the first interval in which
    /// each held to the end of the last.
    pub time: Duration,
}

/// Every kind of waste a run saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WasteSeen {
    pub idle_while_waiting: WasteTally,
    pub underused: WasteTally,
    pub no_progress: WasteTally,
    pub spinning: WasteTally,
}

impl WasteSeen {
    pub fn of(&self, waste: Waste) -> &WasteTally {
        match waste {
            Waste::IdleWhileWaiting => &self.idle_while_waiting,
            Waste::Underused => &self.underused,
            Waste::NoProgress => &self.no_progress,
            Waste::Spinning => &self.spinning,
        }
    }

    fn of_mut(&mut self, waste: Waste) -> &mut WasteTally {
        match waste {
            Waste::IdleWhileWaiting => &mut self.idle_while_waiting,
            Waste::Underused => &mut self.underused,
            Waste::NoProgress => &mut self.no_progress,
            Waste::Spinning => &mut self.spinning,
        }
    }

    /// Counts one check's findings.
    pub fn add(&mut self, findings: &Findings) {
        for e in &findings.events {
            if let Some((_, w)) = waste_of(e) {
                self.of_mut(w).observations += 1;
            }
        }
        for &(_, w) in &findings.started {
            self.of_mut(w).episodes += 1;
        }
        for e in &findings.ended {
            self.of_mut(e.waste).time += e.until.saturating_sub(e.since);
        }
    }

    /// Whether the run saw none.
    pub fn is_empty(&self) -> bool {
        *self == WasteSeen::default()
    }
}

/// The app and kind of waste a trace event records, if it records one.
pub fn waste_of(event: &TraceEvent) -> Option<(AppId, Waste)> {
    match event {
        TraceEvent::IdleWhileWaiting { app, .. } => Some((*app, Waste::IdleWhileWaiting)),
        TraceEvent::Underused { app, .. } => Some((*app, Waste::Underused)),
        TraceEvent::NoProgress { app, .. } => Some((*app, Waste::NoProgress)),
        TraceEvent::Spinning { app, .. } => Some((*app, Waste::Spinning)),
        _ => None,
    }
}

/// One interval's finding for one app, before it is known to last.
enum Finding {
    Waiting(Shortfall),
    Underused(Underuse),
    NoProgress(NoProgressFinding),
    Spinning(SpinningFinding),
}

impl Finding {
    fn key(&self) -> (AppId, Waste) {
        match self {
            Finding::Waiting(s) => (s.app, Waste::IdleWhileWaiting),
            Finding::Underused(u) => (u.app, Waste::Underused),
            Finding::NoProgress(n) => (n.app, Waste::NoProgress),
            Finding::Spinning(s) => (s.app, Waste::Spinning),
        }
    }

    fn event(self, t: Duration, since: Duration) -> TraceEvent {
        match self {
            Finding::Waiting(s) => TraceEvent::IdleWhileWaiting {
                t,
                since,
                app: s.app,
                idle: s.idle,
                waiting: s.waiting,
            },
            Finding::Underused(u) => TraceEvent::Underused {
                t,
                since,
                app: u.app,
                idle: u.idle,
                short: u.short,
            },
            Finding::NoProgress(n) => TraceEvent::NoProgress {
                t,
                since,
                app: n.app,
                cpu: n.cpu,
            },
            Finding::Spinning(s) => TraceEvent::Spinning {
                t,
                since,
                app: s.app,
                cpu: s.cpu,
                useful: s.useful,
            },
        }
    }
}

/// Findings across intervals: which apps have wasted CPUs, how, since when.
#[derive(Clone, Debug, Default)]
pub struct Conservation {
    /// Per app and kind, the start of the first interval of the current run
    /// of consecutive intervals in which it held.
    since: BTreeMap<(AppId, Waste), Duration>,
    /// Those already recorded as violations, and the end of the last interval
    /// in which each held.
    violated: BTreeMap<(AppId, Waste), Duration>,
    /// Apps whose progress counters have moved inside one region
    /// (`no_progress.rs`).
    counts_inside: BTreeSet<AppId>,
    /// Each app's progress per CPU-second with a CPU per busy member, per
    /// team size (`spinning.rs`).
    references: spinning::References,
}

impl Conservation {
    /// Checks the interval `prev`..`last` against the plans in force
    /// (`AppView::current`) and returns a violation for every app and kind
    /// that also held in the interval before.
    pub fn check(
        &mut self,
        topology: &Topology,
        apps: &[AppView],
        prev: &Observation,
        last: &Observation,
    ) -> Findings {
        let Some(iv) = Interval::new(prev, last) else {
            return Findings::default();
        };
        let idle = iv.idle_cpus(topology);
        let waiting = waiting::shortfalls_in(apps, &iv, &idle);
        let waiting_apps: BTreeSet<AppId> = waiting.iter().map(|s| s.app).collect();
        let underused = underuse::underuses_in(topology, apps, &iv, &idle, &waiting_apps);
        let stalled = no_progress::check(apps, &iv, &mut self.counts_inside);
        let stalled_apps: Vec<AppId> = stalled.iter().map(|n| n.app).collect();
        let spun = spinning::check(apps, &iv, &mut self.references, &stalled_apps);
        let now: Vec<Finding> = waiting
            .into_iter()
            .map(Finding::Waiting)
            .chain(underused.into_iter().map(Finding::Underused))
            .chain(stalled.into_iter().map(Finding::NoProgress))
            .chain(spun.into_iter().map(Finding::Spinning))
            .collect();
        let keys: BTreeSet<(AppId, Waste)> = now.iter().map(Finding::key).collect();
        let mut out = Findings::default();
        let ended: Vec<(AppId, Waste)> = self
            .violated
            .keys()
            .filter(|k| !keys.contains(k))
            .copied()
            .collect();
        for k in ended {
            let until = self.violated.remove(&k).unwrap_or(prev.at);
            out.ended.push(Episode {
                app: k.0,
                waste: k.1,
                since: self.since.get(&k).copied().unwrap_or(until),
                until,
            });
        }
        self.since.retain(|k, _| keys.contains(k));
        for f in now {
            let key = f.key();
            let since = *self.since.entry(key).or_insert(prev.at);
            if since < prev.at {
                if self.violated.insert(key, last.at).is_none() {
                    out.started.push(key);
                }
                out.events.push(f.event(last.at, since));
            }
        }
        out
    }

    /// Ends every violation still open at the end of the run, each at the
    /// end of the last interval in which it held.
    pub fn close(&mut self) -> Vec<Episode> {
        let open = std::mem::take(&mut self.violated);
        open.into_iter()
            .map(|(k, until)| Episode {
                app: k.0,
                waste: k.1,
                since: self.since.get(&k).copied().unwrap_or(until),
                until,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
