//! What each objective asks of the scheduler (`docs/policies/auto.md`,
//! "Objective"): the order of shortest time left first under `art` with solo
//! times, and the nice value each running app gets, with why.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::metrics::SoloCurves;
use coloc_model::reason::Sched;
use coloc_model::{AppClass, AppId, AppView, Objective, SchedSettings};

use super::admission;
use super::evidence::Evidence;

/// Nice value of batch apps while a latency-class app runs (`latency`).
pub const LATENCY_NICE: i8 = 10;
/// Nice step between apps ranked by attained CPU time (`art`): the app that has
/// had the least CPU runs at nice 0, the next at this, and so on up to 19.
pub const ART_NICE_STEP: i8 = 3;
/// Nice value of every app but the one with the least time left, under `art`
/// with stored solo times (shortest remaining time first): the lowest
/// priority, so that the shortest app has the CPUs it can use and the others
/// only what it leaves.
pub const SRPT_NICE: i8 = 19;

/// Under `art`, the apps' estimated times left, shortest first, when every
/// app of `members` (running or arriving) has stored solo times and their
/// `demand` threads oversubscribe the `cpus`: each app's solo time at the
/// threads it runs (`team`) less the time since it started
/// (`auto/admission.rs`). Shortest remaining processing time first minimizes
/// the mean response time when lengths are known; the apps' lengths are what
/// their solo times say. None otherwise (least attained service then,
/// [`ART_NICE_STEP`]).
pub(super) fn shortest_first(
    objective: Objective,
    solo: &SoloCurves,
    now: Duration,
    members: &[&AppView],
    team: impl Fn(&AppView) -> u32,
    cpus: u32,
) -> Option<Vec<(f64, AppId)>> {
    let demand: u32 = members.iter().map(|a| team(a)).sum();
    if objective != Objective::Art || members.len() < 2 || demand <= cpus {
        return None;
    }
    let mut order = members
        .iter()
        .map(|a| admission::time_left(solo, a, team(a), now).map(|t| (t, a.id)))
        .collect::<Option<Vec<_>>>()?;
    order.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    Some(order)
}

/// Scheduling settings the objective asks for, per running app, and why;
/// `srpt` is the order of [`shortest_first`], when there is one; `evidence`
/// gives the CPU time each app has had.
pub(super) fn nice_values(
    objective: Objective,
    running: &[&AppView],
    srpt: Option<&[(f64, AppId)]>,
    evidence: &BTreeMap<AppId, Evidence>,
) -> BTreeMap<AppId, (SchedSettings, Sched)> {
    let nice = |n: i8| SchedSettings {
        nice: Some(n),
        ..SchedSettings::default()
    };
    match (objective, srpt) {
        (Objective::Makespan, _) => BTreeMap::new(),
        (Objective::Latency, _) => {
            let latency = running.iter().any(|a| a.spec.class == AppClass::Latency);
            running
                .iter()
                .map(|a| {
                    let n = if latency && a.spec.class == AppClass::Batch {
                        LATENCY_NICE
                    } else {
                        0
                    };
                    let why = Sched::Latency {
                        latency_running: latency,
                        nice: n,
                    };
                    (a.id, (nice(n), why))
                })
                .collect()
        }
        (Objective::Art, Some(order)) => {
            let first = order
                .iter()
                .map(|(_, id)| *id)
                .find(|id| running.iter().any(|a| a.id == *id));
            running
                .iter()
                .map(|a| {
                    let is_first = Some(a.id) == first;
                    let n = if is_first { 0 } else { SRPT_NICE };
                    let why = Sched::ShortestLeft {
                        first: is_first,
                        nice: n,
                    };
                    (a.id, (nice(n), why))
                })
                .collect()
        }
        (Objective::Art, None) => {
            let mut by_service: Vec<(u64, AppId)> = running
                .iter()
                .map(|a| (evidence.get(&a.id).map_or(0, |e| e.cpu_ns), a.id))
                .collect();
            by_service.sort();
            by_service
                .into_iter()
                .enumerate()
                .map(|(rank, (cpu_ns, id))| {
                    let n = (rank as i64 * i64::from(ART_NICE_STEP)).min(19) as i8;
                    let why = Sched::LeastAttained {
                        rank: rank as u32,
                        cpu_secs: cpu_ns as f64 * 1e-9,
                        nice: n,
                    };
                    (id, (nice(n), why))
                })
                .collect()
        }
    }
}
