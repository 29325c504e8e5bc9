//! No progress: an app's team burns CPU time inside one parallel region
//! while none of its progress counters moves — threads spinning at a
//! barrier, or waiting in a loop on one another (`conservation.rs`).
//!
//! An app's *progress counters* are what its OpenMP runtime reports through
//! the DoP channel (regions, worksharing iterations, `omp_get_max_threads()`
//! calls outside regions, progress inside regions: `AppSample::omp_steps`)
//! and the lines of its own metric it printed (docs/signals.md). Over an interval, an OpenMP app made *no progress* when
//! it was inside a parallel region at both observations with no region ended
//! between them, none of its counters moved, and its threads had more CPU
//! time than one thread can have, by more than [`super::IDLE_BELOW`] of the
//! interval: one thread computing alone inside a region (a `single` or
//! `master` section) while the rest sleep moves no counter and is not waste;
//! the CPU time beyond it is burnt by waiters.
//!
//! A counter that moves only when a region ends says nothing about the
//! inside of a long region (a region with no barrier, worksharing construct
//! or task inside reports nothing until it ends), so the check judges only
//! apps whose counters have been seen to move inside one region before, in
//! this run: that is the evidence that silence inside a region means no
//! progress, and not no report.

use std::collections::BTreeSet;
use std::time::Duration;

use coloc_model::{AppId, AppSample, AppView};

use super::{Interval, IDLE_BELOW};

/// An app that burnt CPU without progress over one interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoProgressFinding {
    pub app: AppId,
    /// CPU time its threads had over the interval.
    pub cpu: Duration,
}

/// The progress counters of a sample, None without the DoP channel's report.
fn counters(s: &AppSample) -> Option<[u64; 5]> {
    let omp = s.omp.as_ref()?;
    Some([
        omp.regions_completed,
        omp.iterations_completed,
        omp.max_threads_asked,
        s.omp_steps.unwrap_or(0),
        s.metric.map_or(0, |m| m.lines),
    ])
}

/// The apps that made no progress over `iv`; `counts_inside` keeps, across
/// intervals, the apps whose counters were seen to move inside one region.
pub(super) fn check(
    apps: &[AppView],
    iv: &Interval<'_>,
    counts_inside: &mut BTreeSet<AppId>,
) -> Vec<NoProgressFinding> {
    counts_inside.retain(|id| apps.iter().any(|a| a.id == *id));
    let mut out = Vec::new();
    for (id, e) in iv.openmp(apps) {
        let one_region =
            e.inside() && e.omp_before.regions_completed == e.omp_now.regions_completed;
        if !one_region {
            continue;
        }
        if counters(e.before) != counters(e.now) {
            counts_inside.insert(id);
            continue;
        }
        let cpu = iv.cpu_ns(e.now);
        if counts_inside.contains(&id) && cpu > (1.0 + IDLE_BELOW) * iv.dt {
            out.push(NoProgressFinding {
                app: id,
                cpu: Duration::from_nanos(cpu as u64),
            });
        }
    }
    out
}
