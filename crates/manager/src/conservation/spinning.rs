//! Spinning: an app's team burns CPU time at its barriers while a teammate
//! it waits for is off its CPU, so its progress per CPU-second falls below
//! what the same team made earlier with a CPU for each busy member
//! (`conservation.rs`; the case of a team packed on one CPU that
//! burnt 26.8 CPU-s for 15.4 s of work).
//!
//! libgomp's waiter spins before it sleeps (`coloc_model::barrier`,
//! docs/simulator.md, Teams): when a teammate shares its CPU, each barrier
//! can cost a spin, CPU time that advances nothing. Counters still move (the
//! team does pass its barriers), so `no_progress` does not see it, and no
//! CPU idles, so neither `idle_while_waiting` nor `underused` does.
//!
//! An app's *progress* is its regions completed plus its team's progress
//! inside regions (`AppSample::omp_steps`, docs/signals.md): both count the
//! same whatever the team's size. Its *rate* over an interval is progress
//! per CPU-second of its threads. Over one interval an OpenMP app is judged
//! when it was inside a parallel region at both observations with a team of
//! two or more and two or more busy threads (each ran for more than
//! [`IDLE_BELOW`] of it):
//! - when no busy thread waited for a CPU (more than [`WAITING_ABOVE`] of
//!   the interval runnable off a CPU) and progress moved, its rate becomes
//!   the app's *reference* for that team size: each member had a CPU, so no
//!   waiter spun for a descheduled teammate;
//! - when a busy thread waited and a reference for that team size exists,
//!   the CPU time its progress would have taken at the reference rate is
//!   *useful*; the rest is *burnt*. It is spinning when the burnt CPU time
//!   exceeds [`IDLE_BELOW`] of the interval: the same bound under which a
//!   thread's CPU time counts for nothing in the other checks, here the CPU
//!   time burnt has to be more than an idle CPU's to count.
//!
//! No constant is fitted: the reference is the app's own, and both bounds
//! are the checks' shared measures (docs/trace-format.md, `spinning`).
//!
//! Limits: the reference is the last such interval's rate, so a program
//! whose regions differ in progress per CPU-second (a region of many short
//! loops after one of few long ones) is judged against another region's
//! rate; an app that never ran a region with a CPU per busy member has no
//! reference and is not judged; a team that waits passively (sleeps at once)
//! keeps its rate and is not flagged, which is right: it burns nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::{AppId, AppSample, AppView};

use super::{Interval, IDLE_BELOW, WAITING_ABOVE};

/// An app whose team burnt CPU time beyond what its progress needed over one
/// interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpinningFinding {
    pub app: AppId,
    /// CPU time its threads had over the interval.
    pub cpu: Duration,
    /// The CPU time its progress over the interval took at its reference
    /// rate.
    pub useful: Duration,
}

/// The app's progress so far: regions completed plus progress inside
/// regions; None without the DoP channel's report.
fn progress(s: &AppSample) -> Option<u64> {
    let omp = s.omp.as_ref()?;
    Some(omp.regions_completed + s.omp_steps.unwrap_or(0))
}

/// Per app and team size, progress per CPU-second over the last interval in
/// which each busy member had a CPU.
pub(super) type References = BTreeMap<(AppId, u32), f64>;

/// The apps whose teams spun over `iv`, skipping those in `skip` (already
/// found making no progress at all); `references` keeps, across intervals,
/// each app's rate with a CPU per busy member.
pub(super) fn check(
    apps: &[AppView],
    iv: &Interval<'_>,
    references: &mut References,
    skip: &[AppId],
) -> Vec<SpinningFinding> {
    references.retain(|(id, _), _| apps.iter().any(|a| a.id == *id));
    let mut out = Vec::new();
    for (id, e) in iv.openmp(apps) {
        let busy = iv.busy(e.now);
        if !(e.inside() && e.omp_now.team_size >= 2 && busy.len() >= 2) {
            continue;
        }
        let (Some(p0), Some(p1)) = (progress(e.before), progress(e.now)) else {
            continue;
        };
        let made = p1.saturating_sub(p0) as f64;
        let cpu = iv.cpu_ns(e.now);
        let key = (id, e.omp_now.team_size);
        let queued = busy
            .iter()
            .any(|&t| iv.delta(id, t, |x| x.wait_ns) > WAITING_ABOVE * iv.dt);
        if !queued {
            if made > 0.0 {
                references.insert(key, made / cpu);
            }
            continue;
        }
        let Some(&rate) = references.get(&key) else {
            continue;
        };
        let useful = (made / rate).min(cpu);
        if cpu - useful > IDLE_BELOW * iv.dt && !skip.contains(&id) {
            out.push(SpinningFinding {
                app: id,
                cpu: Duration::from_nanos(cpu as u64),
                useful: Duration::from_nanos(useful.round() as u64),
            });
        }
    }
    out
}
