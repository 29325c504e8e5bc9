//! What two consecutive observations say about an app's parallel section: where
//! its busy threads ran, how many memory requests they issued, how fast it
//! progressed. Rates come from the difference of cumulative counters (docs/architecture.md, Conventions:
//! raw samples, then pure models).

use std::time::Duration;

use coloc_model::{AppId, View};

use super::CoreMap;

/// One interval inside one parallel section, with a constant team.
#[derive(Clone, Debug, PartialEq)]
pub struct SectionSample {
    pub from: Duration,
    pub to: Duration,
    /// OpenMP team size in both observations.
    pub team_size: u32,
    /// Busy cores in each memory node (distinct cores on which a thread of the
    /// app ran during the interval).
    pub layout: Vec<u32>,
    /// LLC misses per second of CPU time of the busy threads, when both
    /// observations read hardware counters. A blocked core still counts as
    /// running, so this is MRR · CPU Util in the model's terms (§5.1 reads LLC
    /// misses per cycle, the same up to the clock rate).
    pub request_rate: Option<f64>,
    /// Progress per second and what it counts (the first of [`Unit`]'s
    /// that advanced); None when none did.
    pub progress: Option<f64>,
    /// What `progress` counts.
    pub unit: Option<Unit>,
}

/// What a section's progress rate counts, in the order they are tried: the
/// first that advanced over the interval. Rates in different units are never
/// compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Worksharing iterations the runtime reported.
    Iterations,
    /// Parallel regions completed.
    Regions,
    /// Progress inside regions (`AppSample::omp_steps`: barriers passed,
    /// constructs ended, chunks taken, tasks completed): what a program
    /// whose work is one long region shows while it runs, where it has no
    /// region boundaries or loop ends to count (docs/signals.md, Progress
    /// inside a region).
    Steps,
}

/// The sample of `app` between `view.prev` and `view.last`, if both saw it in
/// the same parallel section (in a region, with the same team size).
pub(crate) fn section_sample(map: &CoreMap, view: &View<'_>, app: AppId) -> Option<SectionSample> {
    let (prev, last) = (view.prev?, view.last?);
    let (a, b) = (prev.app(app)?, last.app(app)?);
    let (oa, ob) = (a.omp.as_ref()?, b.omp.as_ref()?);
    if !(oa.in_parallel && ob.in_parallel) || oa.team_size != ob.team_size || last.at <= prev.at {
        return None;
    }
    let secs = (last.at - prev.at).as_secs_f64();
    let mut busy = vec![false; map.len()];
    let (mut run_ns, mut misses, mut counted) = (0u64, 0u64, true);
    for t in &b.threads {
        let Some(before) = a.thread(t.tid) else {
            continue;
        };
        let ran = t.run_ns.saturating_sub(before.run_ns);
        if ran == 0 {
            continue;
        }
        if let Some(core) = t.cpu.and_then(|c| map.core_of(c)) {
            busy[core] = true;
        }
        run_ns += ran;
        match (
            t.counters.and_then(|c| c.llc_misses),
            before.counters.and_then(|c| c.llc_misses),
        ) {
            (Some(x), Some(y)) => misses += x.saturating_sub(y),
            _ => counted = false,
        }
    }
    let cores: Vec<usize> = (0..map.len()).filter(|&c| busy[c]).collect();
    if cores.is_empty() {
        return None;
    }
    let hw = prev.signals.hw_counters && last.signals.hw_counters && counted;
    let iterations = ob
        .iterations_completed
        .saturating_sub(oa.iterations_completed);
    let regions = ob.regions_completed.saturating_sub(oa.regions_completed);
    let steps = b
        .omp_steps
        .zip(a.omp_steps)
        .map_or(0, |(y, x)| y.saturating_sub(x));
    let (unit, done) = [
        (Unit::Iterations, iterations),
        (Unit::Regions, regions),
        (Unit::Steps, steps),
    ]
    .into_iter()
    .find(|(_, n)| *n > 0)
    .unzip();
    Some(SectionSample {
        from: prev.at,
        to: last.at,
        team_size: ob.team_size,
        layout: map.per_node(&cores),
        request_rate: hw.then(|| misses as f64 / (run_ns as f64 * 1e-9)),
        progress: done.map(|n| n as f64 / secs),
        unit,
    })
}
