//! Auto's own arrangement in numbers (`docs/policies/auto.md`, "Own
//! arrangement"): how the running apps used the CPUs, which CPUs idle, the
//! partitions, and the idle CPUs of partitions lent to apps whose threads
//! wait.

use std::collections::BTreeMap;

use coloc_model::{AppId, AppView, CpuSet, View};

use super::evidence::usage;
use crate::cores::reversible::paced_cpus;

/// A partition counts as leaving a CPU idle when its app used at most this
/// much less than a whole CPU of it over the last interval (the Manager's
/// work-conservation check counts a CPU busy less than 10% as idle,
/// `docs/architecture.md`).
pub(super) const IDLE_SLACK: f64 = 0.1;

/// How each running app used the CPUs over the view's last interval: CPUs'
/// worth of run time, and whether some thread of it waited for a CPU
/// (`evidence::usage`). Empty before two observations.
pub(super) fn used(view: &View<'_>, running: &[&AppView]) -> BTreeMap<AppId, (f64, bool)> {
    match (view.prev, view.last) {
        (Some(prev), Some(last)) => running
            .iter()
            .filter_map(|a| usage(prev, last, a.id).map(|u| (a.id, u)))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// CPUs of `cpus` left idle over the last interval with no running app's
/// threads waiting, counted only from an observation of every one of the
/// `running` apps (before the first one, nothing is known to idle).
pub(super) fn idle(used: &BTreeMap<AppId, (f64, bool)>, running: usize, cpus: u32) -> u32 {
    if running > 0 && used.len() == running && used.values().all(|(_, waiting)| !waiting) {
        let rate: f64 = used.values().map(|(rate, _)| rate).sum();
        (f64::from(cpus) - rate + IDLE_SLACK).floor().max(0.0) as u32
    } else {
        0
    }
}

/// Work conservation inside the own arrangement: the CPUs of a partition
/// (`slices`) its app left idle over the last interval (`used`), which are
/// lent to the apps whose threads waited for a CPU, until it uses them again.
/// The last CPUs of each partition are lent first.
pub(super) fn lent(
    running: &[&AppView],
    used: &BTreeMap<AppId, (f64, bool)>,
    slices: &BTreeMap<AppId, CpuSet>,
) -> CpuSet {
    running
        .iter()
        .filter_map(|a| {
            let (rate, _) = used.get(&a.id)?;
            let slice = slices.get(&a.id)?;
            let spare = (slice.len() as f64 - rate + IDLE_SLACK).floor().max(0.0) as usize;
            Some(slice.iter().rev().take(spare).collect::<Vec<_>>())
        })
        .flatten()
        .collect()
}

/// What the idle CPUs of other partitions do for one app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loan {
    /// None lent, or its threads did not wait.
    NoNeed,
    /// It borrows them.
    Borrows,
    /// Its threads waited, but the loan would not raise its pace: a
    /// bulk-synchronous team of `team` gets as much done on its partition's
    /// `own` CPUs as on `with` ([`loan_pays`]).
    Refused { team: u32, own: u32, with: u32 },
}

/// Whether `with` CPUs instead of `own` raise the pace of an app whose
/// threads wait (docs/policies/auto.md, Own arrangement): an OpenMP team
/// inside a region, `team` threads more than its `own` CPUs, is
/// bulk-synchronous (a region ends at a barrier, and its static schedule
/// gives each member an equal share), so it gets `n / ⌈n/c⌉` CPUs' worth
/// done on `c` (reversible first's pace model, [`paced_cpus`]) and a loan
/// pays only where that grows. Any other app gets one more thread run per
/// CPU lent while it has a thread waiting, and the loan pays: a team that
/// fits its CPUs waits behind another app's threads, not its own; a
/// pthreads program's synchronization the policy does not see (`team`
/// None), and an OpenMP program in a serial phase has one thread.
pub(super) fn loan_pays(team: Option<u32>, own: u32, with: u32) -> bool {
    match team {
        Some(n) if n > own => paced_cpus(n, with) > paced_cpus(n, own),
        _ => true,
    }
}

/// The CPUs app `id` runs on in the own arrangement: its partition `slice`,
/// and the `lent` CPUs when its threads waited and the loan raises its pace
/// ([`loan_pays`]; `team`: its team's threads when it is an OpenMP team
/// inside a region). A steered app keeps the DoP of its partition: its
/// waiting thread may move, its team stays.
pub(super) fn with_lent(
    id: AppId,
    slice: &CpuSet,
    used: &BTreeMap<AppId, (f64, bool)>,
    lent: &CpuSet,
    team: Option<u32>,
) -> (CpuSet, Loan) {
    let waits =
        used.get(&id).is_some_and(|(_, waiting)| *waiting) && !lent.difference(slice).is_empty();
    if !waits {
        return (slice.clone(), Loan::NoNeed);
    }
    let with = slice.union(lent);
    let (own, more) = (slice.len() as u32, with.len() as u32);
    if loan_pays(team, own, more) {
        (with, Loan::Borrows)
    } else {
        let team = team.unwrap_or_default();
        (
            slice.clone(),
            Loan::Refused {
                team,
                own,
                with: more,
            },
        )
    }
}

/// Cuts `cpus` (in topology order) into one contiguous slice per weight,
/// sized in proportion to the weights, each at least one CPU: every slice gets
/// one CPU, the rest go by largest remainder of `rest · weight / total` (ties
/// to the earlier app). With more weights than CPUs, each CPU is one slice and
/// each app, in order, shares the slice whose apps have the least weight so
/// far.
pub(crate) fn partitions(cpus: &[u32], weights: &[u32]) -> Vec<CpuSet> {
    let n = weights.len();
    if n == 0 || cpus.is_empty() {
        return vec![CpuSet::new(); n];
    }
    if n > cpus.len() {
        let mut load = vec![0u64; cpus.len()];
        return weights
            .iter()
            .map(|&w| {
                let k = (0..cpus.len()).min_by_key(|&k| (load[k], k)).expect("cpus");
                load[k] += u64::from(w.max(1));
                CpuSet::single(cpus[k])
            })
            .collect();
    }
    let rest = (cpus.len() - n) as u64;
    let total: u64 = weights.iter().map(|&w| u64::from(w.max(1))).sum();
    let mut size: Vec<u64> = weights
        .iter()
        .map(|&w| 1 + rest * u64::from(w.max(1)) / total)
        .collect();
    let mut left = cpus.len() as u64 - size.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(rest * u64::from(weights[i].max(1)) % total),
            i,
        )
    });
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        size[i] += 1;
        left -= 1;
    }
    let mut start = 0usize;
    size.iter()
        .map(|&len| {
            let slice = cpus[start..start + len as usize].iter().copied().collect();
            start += len as usize;
            slice
        })
        .collect()
}
