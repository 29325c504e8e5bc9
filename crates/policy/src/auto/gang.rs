//! Gang time sharing: whole teams of non-malleable apps that synchronize
//! often take turns at the whole machine (`docs/policies/auto.md`, "Gang
//! time sharing").
//!
//! Problem: a barrier-synchronized team whose thread count cannot change
//! progresses only while all its threads run. Left to Linux beside another
//! such team, its threads are interleaved with the other's, and every barrier
//! waits for a member that is descheduled (issue's "co-scheduling a whole
//! team at once"; Ousterhout's coscheduling). Exclusive partitions (equal's
//! remedy) stop the interleaving across apps but pack each team onto fewer
//! CPUs than threads, so its own members still time-share at every barrier.
//!
//! Approach, without stopping any process: every gang app's threads are
//! spread over all CPUs (thread k on the k-th CPU in topology order), and at
//! each observation interval one app in turn is the *foreground* (nice 0)
//! while the others run in the *background* at [`BACKGROUND_NICE`]. A
//! nice-19 thread has a CFS weight of 15 against 1024, so the foreground team
//! has every CPU at once, and the background teams soak up the cycles it
//! leaves (its serial phases, its sleeps): work conserving, unlike
//! stop/continue gang scheduling. Nice is already journaled and restored
//! (`docs/safety.md`), so no new setting is needed (SCHED_IDLE would make
//! the background weaker still, weight 3 against 15: not worth a new
//! setting in the model, the journal and both machines).
//!
//! When (in auto): the objective is `makespan` (`art` and `latency` use
//! nice values for their own ends), at least two apps run, their threads
//! oversubscribe the CPUs, the apps outnumber the CPUs, and every running
//! app is a candidate (`candidate`): its DoP lever does not act (not
//! malleable, or no region ends), its team has 2..=CPUs threads (a bigger
//! team cannot run at once anyway), and its threads sleep often, at least
//! [`SYNC_SLEEPS`] voluntary switches per second of CPU time over some
//! interval: a waiter at a barrier whose teammate is descheduled spins, then
//! sleeps; a compute-bound pthreads program rarely does. With a CPU for
//! every app, partitions: on this project's 2-CPU machine two barrier teams
//! ran 2% slower gang time-shared than partitioned and two OpenBLAS teams
//! 20% slower. The trial (`auto/trial.rs`) keeps either only where it is
//! measured no slower than Linux.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::reason::{self, NoGang, PlanReason};
use coloc_model::{
    AppId, AppPlan, AppSample, AppView, CpuSet, Placement, Plan, SchedSettings, Tid, View,
};

use super::evidence::Evidence;
use crate::baseline::topology_order;
use crate::Policy;

/// Nice value of the background teams.
pub const BACKGROUND_NICE: i8 = 19;

/// Voluntary switches per second of CPU time from which an app counts as
/// synchronizing often: a sleep every 10 ms of CPU. `kernel:barrier` (a
/// region of about 0.3 ms per barrier) sleeps thousands of times per
/// CPU-second when it time-shares its CPUs.
pub const SYNC_SLEEPS: f64 = 100.0;

/// Whether `a` may be gang scheduled on `cpus` CPUs, given whether auto
/// steers its DoP, its team and its evidence; else why not, for the plan.
pub(super) fn candidate(
    steered: bool,
    team: u32,
    cpus: u32,
    evidence: Option<&Evidence>,
) -> Result<(), NoGang> {
    let sleeps = evidence.map_or(0.0, |e| e.sleeps);
    if steered {
        Err(NoGang::LeverActs)
    } else if team < 2 || team > cpus {
        Err(NoGang::Team { team, cpus })
    } else if sleeps < SYNC_SLEEPS {
        Err(NoGang::Sleeps {
            sleeps,
            needed: SYNC_SLEEPS,
        })
    } else {
        Ok(())
    }
}

/// The gang arrangement of one app: its threads spread over `order`, the
/// k-th on `order[(offset + k) mod n]`, busy threads first, oldest first
/// among them (`offset`: the threads of the apps before it, so that teams
/// smaller than the machine start where the previous one ended and no CPU
/// is left out; a
/// thread is busy when its CPU time in `sample` is at least a quarter of its
/// busiest sibling's: a helper thread that mostly sleeps takes no team
/// member's CPU, and team members keep their CPUs from one turn to the
/// next); threads born later may run anywhere. Its nice value: 0 in the
/// foreground, [`BACKGROUND_NICE`] otherwise.
pub(super) fn arrange(
    a: &AppView,
    sample: Option<&AppSample>,
    (order, offset): (&[u32], usize),
    foreground: bool,
) -> (Placement, SchedSettings) {
    let cpu = |tid| sample.and_then(|s| s.thread(tid)).map_or(0, |t| t.run_ns);
    let most = a.threads.iter().map(|&tid| cpu(tid)).max().unwrap_or(0);
    let mut busy_first: Vec<Tid> = a.threads.clone();
    busy_first.sort_by_key(|&tid| cpu(tid) * 4 < most);
    let threads = busy_first
        .into_iter()
        .enumerate()
        .map(|(k, tid)| (tid, CpuSet::single(order[(offset + k) % order.len()])))
        .collect();
    let placement = Placement::PerThread {
        threads,
        rest: order.iter().copied().collect(),
    };
    let nice = if foreground { 0 } else { BACKGROUND_NICE };
    let sched = SchedSettings {
        nice: Some(nice),
        ..SchedSettings::default()
    };
    (placement, sched)
}

/// Where each of the `running` apps (in order) starts spreading its
/// threads: after the threads of the apps before it.
pub(super) fn offsets(running: &[&AppView]) -> BTreeMap<AppId, usize> {
    let mut at = 0;
    running
        .iter()
        .map(|a| {
            let start = at;
            at += a.threads.len();
            (a.id, start)
        })
        .collect()
}

/// The `gang` policy: gang time sharing of every running app whenever their
/// threads oversubscribe the CPUs, whatever they are (no evidence, no
/// trial), else Linux. Apps start unplaced, so an OpenMP runtime sees every
/// CPU and spins at its barriers, as a team that has the machine to itself
/// should. It is what `auto` does only where apps outnumber the CPUs, as a
/// policy of its own to measure the mechanism against `equal` and `native`
/// (`docs/policies/auto.md`, "Gang time sharing").
#[derive(Debug, Default)]
pub struct Gang {
    /// Observations taken in: the foreground app is the running app of this
    /// index, modulo their count.
    turn: u64,
    /// Time of the last observation taken in.
    seen: Option<Duration>,
}

impl Policy for Gang {
    fn name(&self) -> &'static str {
        "gang"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        if let Some(last) = view.last.filter(|o| self.seen != Some(o.at)) {
            self.seen = Some(last.at);
            self.turn += 1;
        }
        let order = topology_order(view);
        let mut running: Vec<&AppView> = view.running().collect();
        running.sort_by_key(|a| (a.started_at, a.id));
        let threads: usize = running
            .iter()
            .map(|a| a.threads.len().max(a.threads_requested as usize).max(1))
            .sum();
        let on = running.len() > 1 && threads > order.len() && !order.is_empty();
        let foreground = running
            .get((self.turn % running.len().max(1) as u64) as usize)
            .map(|a| a.id);
        let offsets = offsets(&running);
        let apps = view
            .apps
            .iter()
            .map(|a| {
                let mut p = AppPlan::native(a.id);
                if let Some(&offset) = offsets.get(&a.id).filter(|_| on) {
                    let fore = foreground == Some(a.id);
                    let sample = view.last.and_then(|o| o.app(a.id));
                    (p.placement, p.sched) = arrange(a, sample, (&order, offset), fore);
                    p.reasons.push(
                        reason::Gang {
                            foreground: fore,
                            nice: p.sched.nice.unwrap_or(0),
                            threads: a.threads.len() as u32,
                            cpus: p.placement.cpus(),
                            demand: threads as u32,
                            on: order.len() as u32,
                            sleeps: None,
                        }
                        .into(),
                    );
                }
                p
            })
            .collect();
        let mut plan = Plan::of(apps);
        if !on {
            plan.reasons.push(PlanReason::ThreadsFit);
        }
        plan
    }
}
