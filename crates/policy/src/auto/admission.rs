//! Admission under `makespan` (`docs/policies/auto.md`, "Admission"): whether
//! an arriving app starts now or waits for a CPU of its own; under `art`,
//! shortest first where solo times are stored ([`shortest_first`]).
//!
//! Problem: starting an app on a machine whose CPUs each already have an app
//! cuts a partition in two and slows the apps running there; holding it leaves
//! it to start when a CPU frees, which lengthens the mix when it then ends
//! last, and leaves CPUs idle when the running apps do not use them. Approach,
//! for each pending app, oldest first:
//! - it starts while some CPU has no app of its own or its threads fit
//!   (equal's rule), or while the running set's trial settled on Linux, or
//!   while CPUs went unused over the last interval with no thread waiting
//!   (each app let in fills one idle CPU);
//! - otherwise, with stored solo times of every app involved (`coloc solo
//!   --threads`, as `coloc compare` takes them for its lower bound), it
//!   starts when the mix's makespan, estimated as its lower bound over the
//!   work left (`coloc_model::metrics::reference`: the longest app's time
//!   left, or all work left spread over the CPUs, an app's work its least
//!   CPU time alone where recorded), is no longer started now
//!   than held until the first app exits and started then. Ties start it:
//!   the makespan is the same and its response time shorter;
//! - else it waits until an app exits.
//!
//! Before those rules, where earlier runs measured the arrival
//! running beside the one app started, or each of the two beside other apps
//! ([`pair`]), the measured rates decide: it waits while the two would end
//! later sharing the machine than one after the other, and starts otherwise.
//!
//! Solo times are an estimate: an app's time left is its solo time at its
//! thread count less the time since it started, so an app slowed by its
//! co-runners has more left than estimated, and times measured on a loaded
//! machine are off by that load.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::metrics::corun::RatesFrom;
use coloc_model::metrics::{CoRuns, SoloCurves};
use coloc_model::reason::{AdmissionRule, CoRunFrom};
use coloc_model::{AppId, AppView, View};

use super::Objective;

/// How many CPUs the machine has and how they were used, for admission.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cpus {
    /// CPUs in use by the policy.
    pub count: u32,
    /// Threads the running apps run.
    pub demand: u32,
    /// CPUs unused over the last interval while no running app's threads
    /// waited (0 without an observation of every running app).
    pub idle: u32,
}

/// What admission knows from earlier runs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stored<'a> {
    /// Solo times per thread count.
    pub solo: &'a SoloCurves,
    /// Rates apps ran at beside others in earlier runs.
    pub coruns: &'a CoRuns,
}

/// What admission decided for the pending apps.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Admission {
    /// The apps that wait.
    pub held: Vec<AppId>,
    /// Why, for every pending app: the rule that held or started it.
    pub why: BTreeMap<AppId, AdmissionRule>,
}

/// An app's time left and CPU work left, in seconds, if it runs as it ran
/// alone: its solo time at its thread count (or the nearest count measured
/// below it) less the time since it started, and that share of its least
/// CPU work ([`need`]).
fn left(solo: &SoloCurves, a: &AppView, threads: u32, now: Duration) -> Option<(f64, f64)> {
    let curve = solo.curve(&a.spec.name)?;
    let t = curve
        .range(..=threads)
        .next_back()
        .or_else(|| curve.iter().next())
        .map(|(_, t)| *t)
        .filter(|t| *t > 0.0)?;
    let (_, work) = need(solo, a)?;
    let ran = a
        .started_at
        .map_or(0.0, |s| now.saturating_sub(s).as_secs_f64());
    let rem = (t - ran).max(0.0);
    Some((rem, work * rem / t))
}

/// An app's time left alone at `threads` threads ([`left`]'s first term):
/// what `art` orders apps by, in admission and by nice value.
pub(super) fn time_left(
    solo: &SoloCurves,
    a: &AppView,
    threads: u32,
    now: Duration,
) -> Option<f64> {
    left(solo, a, threads, now).map(|(t, _)| t)
}

/// The lower bound of the makespan of apps with these (time, work) left on
/// `cpus` CPUs: the longest time, or all work over the CPUs.
fn bound(left: &[(f64, f64)], cpus: u32) -> f64 {
    let longest = left.iter().map(|x| x.0).fold(0.0, f64::max);
    let work: f64 = left.iter().map(|x| x.1).sum();
    longest.max(work / f64::from(cpus.max(1)))
}

/// An app's least time and least CPU work over the thread counts measured
/// alone: the terms of the makespan's lower bound
/// (`coloc_model::metrics::reference`), the work its least solo CPU time
/// where recorded ([`SoloCurves::least_work`]).
fn need(solo: &SoloCurves, a: &AppView) -> Option<(f64, f64)> {
    let name = &a.spec.name;
    Some((
        solo.fastest(name, u32::MAX)?,
        solo.least_work(name, u32::MAX)?,
    ))
}

/// Whether `a` should wait for `b`, the one app started, by the rates the
/// two ran at beside each other in earlier runs (`coloc_model::
/// metrics::corun`): each as a share of its speed alone on the whole machine,
/// from clean pairs of the two where there are any, else each one's rate
/// beside other apps. Shared, they progress at those rates until one ends,
/// and the other then runs alone; held, `b` ends its solo time left and `a`
/// runs its solo time after it. It waits when held ends sooner. With the
/// reason; None without such rates or solo times. `b`'s time left assumes it
/// ran alone at full speed since it started: an estimate.
fn pair(
    stored: Stored<'_>,
    a: &AppView,
    b: &AppView,
    now: Duration,
    cpus: u32,
) -> Option<(bool, AdmissionRule)> {
    let rates = stored.coruns.rates(&b.spec.name, &a.spec.name)?;
    let (rb, ra) = (rates.a, rates.b);
    let fastest = |x: &AppView| stored.solo.fastest(&x.spec.name, cpus);
    let ta = fastest(a)?;
    let ran = b
        .started_at
        .map_or(0.0, |s| now.saturating_sub(s).as_secs_f64());
    let tb = (fastest(b)? - ran).max(0.0);
    let first = (tb / rb).min(ta / ra);
    let shared = first + (tb - rb * first).max(0.0) + (ta - ra * first).max(0.0);
    let held = tb + ta;
    let wait = held < shared;
    let from = match rates.from {
        RatesFrom::Pairs(runs) => CoRunFrom::Pairs { runs: runs as u32 },
        RatesFrom::Shared(runs_b, runs_a) => CoRunFrom::Shared {
            with_runs: runs_b as u32,
            runs: runs_a as u32,
        },
    };
    Some((
        wait,
        AdmissionRule::CoRun {
            with: b.id,
            rate: ra,
            with_rate: rb,
            from,
            now_secs: shared,
            held_secs: held,
        },
    ))
}

/// Whether an arrival needing `(time, work)` alone waits, by solo times
/// (module docs): when the mix's makespan, estimated as its lower bound over
/// the `(time, work)` left of the apps started, is longer started now than
/// held until the first of them exits. With the reason.
fn by_solo_times(
    started: &[(f64, f64)],
    (time, work): (f64, f64),
    cpus: u32,
) -> (bool, AdmissionRule) {
    let first = started.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
    let held = bound(started, cpus).max(first + time);
    let mut with = started.to_vec();
    with.push((time, work));
    let now = bound(&with, cpus);
    (
        now > held,
        AdmissionRule::SoloTimes {
            now_secs: now,
            held_secs: held,
            needs_secs: time,
            needs_cpu_secs: work,
            frees_in_secs: first,
        },
    )
}

/// Decides which pending apps wait (module docs). `fixed` gives the threads
/// an app runs; `linux` says whether the running set's trial settled on Linux.
pub(super) fn admit(
    objective: Objective,
    view: &View<'_>,
    running: &[&AppView],
    stored: Stored<'_>,
    cpus: Cpus,
    linux: bool,
    fixed: impl Fn(&AppView) -> u32,
) -> Admission {
    let solo = stored.solo;
    let mut pending: Vec<&AppView> = view.pending().collect();
    pending.sort_by_key(|a| (a.arrived_at, a.id));
    if objective == Objective::Art {
        return shortest_first(view, running, solo, cpus, fixed, pending);
    }
    // The apps started or let in.
    let mut started: Vec<&AppView> = running.to_vec();
    let (mut demand, mut idle) = (cpus.demand, cpus.idle);
    // Time and CPU work left per app started or let in, while every one of
    // them has solo times.
    let mut lefts: Option<Vec<(f64, f64)>> = running
        .iter()
        .map(|a| left(solo, a, fixed(a), view.now))
        .collect();
    let mut out = Admission::default();
    for a in pending {
        let threads = fixed(a);
        let paired = match started[..] {
            [b] if objective == Objective::Makespan && !linux && idle == 0 => {
                pair(stored, a, b, view.now, cpus.count)
            }
            _ => None,
        };
        let thread_rule_holds = objective == Objective::Makespan
            && !linux
            && started.len() as u32 >= cpus.count
            && demand + threads > cpus.count
            && idle == 0;
        let by_threads = || match (lefts.as_deref(), need(solo, a)) {
            (Some(l), Some(need)) if !l.is_empty() => by_solo_times(l, need, cpus.count),
            _ => (
                true,
                AdmissionRule::EveryCpuTaken {
                    apps: started.len() as u32,
                    cpus: cpus.count,
                },
            ),
        };
        let (wait, why) = paired
            .or_else(|| thread_rule_holds.then(by_threads))
            .unwrap_or_else(|| {
                // The rule that let it in, in the order the thread rule reads.
                let rule = if objective != Objective::Makespan {
                    AdmissionRule::Objective
                } else if linux {
                    AdmissionRule::TrialOnLinux
                } else if idle > 0 {
                    AdmissionRule::IdleCpus { idle }
                } else if (started.len() as u32) < cpus.count {
                    AdmissionRule::FreeCpu {
                        apps: started.len() as u32,
                        cpus: cpus.count,
                    }
                } else {
                    AdmissionRule::ThreadsFit {
                        demand,
                        threads,
                        cpus: cpus.count,
                    }
                };
                (false, rule)
            });
        out.why.insert(a.id, why);
        if wait {
            out.held.push(a.id);
            continue;
        }
        started.push(a);
        idle = idle.saturating_sub(1);
        demand += threads;
        lefts = lefts
            .zip(left(solo, a, threads, view.now))
            .map(|(mut l, s)| {
                l.push(s);
                l
            });
    }
    out
}

/// Admission under `art` (module docs): with stored solo times of the
/// arrival and of every running app, an arrival waits while the running apps'
/// threads fill the CPUs (none idle) and it needs alone at least as long as
/// the running app with the least time left has left: that app would finish
/// first under shortest-remaining-time-first anyway, and starting the arrival
/// now only slows it (on this project's 2-CPU machine, nice 19 did not keep
/// a co-runner from slowing an OpenBLAS team that spins and yields). Waiting
/// apps start shortest first. An arrival shorter than every running app starts
/// at once and runs first by nice value (`Auto::srpt`). Without solo times
/// every app starts on arrival.
fn shortest_first(
    view: &View<'_>,
    running: &[&AppView],
    solo: &SoloCurves,
    cpus: Cpus,
    fixed: impl Fn(&AppView) -> u32,
    mut pending: Vec<&AppView>,
) -> Admission {
    let time = |a: &AppView| time_left(solo, a, fixed(a), view.now);
    let key = |a: &AppView| time(a).unwrap_or(f64::INFINITY);
    pending.sort_by(|x, y| key(x).total_cmp(&key(y)));
    let mut lefts: Option<Vec<(AppId, f64)>> =
        running.iter().map(|a| time(a).map(|t| (a.id, t))).collect();
    let (mut demand, mut idle) = (cpus.demand, cpus.idle);
    let mut out = Admission::default();
    for a in pending {
        let least = lefts
            .as_deref()
            .and_then(|l| l.iter().min_by(|x, y| x.1.total_cmp(&y.1)))
            .copied();
        let full = demand >= cpus.count && idle == 0;
        let (wait, why) = match (least, time(a)) {
            (Some((id, least)), Some(t)) if full => (
                t >= least,
                AdmissionRule::ShortestFirst {
                    needs_secs: t,
                    least: id,
                    left_secs: least,
                },
            ),
            _ if idle > 0 => (false, AdmissionRule::IdleCpus { idle }),
            _ if !full => (
                false,
                AdmissionRule::ThreadsFit {
                    demand,
                    threads: fixed(a),
                    cpus: cpus.count,
                },
            ),
            _ => (false, AdmissionRule::Objective),
        };
        out.why.insert(a.id, why);
        if wait {
            out.held.push(a.id);
            continue;
        }
        idle = idle.saturating_sub(1);
        demand += fixed(a);
        lefts = lefts.zip(time(a)).map(|(mut l, t)| {
            l.push((a.id, t));
            l
        });
    }
    out
}
