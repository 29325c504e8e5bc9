//! How far an app got between two observations (docs/architecture.md,
//! Policies): work its OpenMP runtime reported through the DoP channel, and the
//! CPU time its threads had. `auto`'s trial compares arrangements by it
//! (`auto/trial.rs`) and Thread Tranquilizer judges a memory trial by it where
//! there are no counters (`tranquilizer/window.rs`).

use coloc_model::{AppId, AppSample, Observation};

/// What an app's progress is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Measure {
    /// Worksharing iterations when its runtime reports them, else regions
    /// (the DoP channel's report).
    Work,
    /// Library calls: `omp_get_max_threads()` calls outside any region, which
    /// a library that sizes each call's team itself makes before every call
    /// (OpenBLAS). Its calls go on at a DoP of 1, where it runs serially and
    /// starts no region, so they compare a DoP of 1 with a whole team where
    /// regions cannot; a program that asks once or never has none to compare.
    Calls,
    /// CPU time of an OpenMP app over an interval it spent wholly outside
    /// parallel regions (outside one at both observations, none ended
    /// between): the progress of its serial phase, which moves no work
    /// counter. Its other threads sleep there, so the CPU time is its serial
    /// thread's.
    Serial,
    /// An interval in which an OpenMP app entered or left a parallel region
    /// (inside one at one observation and not at the other, at most one
    /// region ended between): part serial, part parallel, so its work
    /// measures neither phase's speed. Amount 0: a marker.
    Boundary,
    /// CPU time its threads had: the only progress seen of an app without the
    /// DoP channel, or of one that reported neither work nor calls both ways.
    /// It counts a thread that busy-waits as progressing, so a
    /// spinning team looks as fast under Linux as on its own CPUs; and CPU
    /// time moved between such apps is no gain for the mix, so the trial
    /// judges them as a group (`auto/trial.rs`).
    Cpu,
}

/// Progress of one app over one observation interval: how it was measured,
/// the amount and the interval's length in seconds.
pub(crate) type Progress = (Measure, f64, f64);

/// What an app did between two observations, in each [`Measure`] it has:
/// work when its runtime reports (with a [`Measure::Serial`] or
/// [`Measure::Boundary`] entry when the interval was not wholly of a
/// parallel phase), calls once it has asked for its thread count, and CPU
/// time always. Empty when either observation misses the app.
pub(crate) fn progress(prev: &Observation, last: &Observation, app: AppId) -> Vec<Progress> {
    let (Some(before), Some(after)) = (prev.app(app), last.app(app)) else {
        return Vec::new();
    };
    let secs = last.at.saturating_sub(prev.at).as_secs_f64();
    if secs <= 0.0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (&before.omp, &after.omp) {
        let work = if b.iterations_completed > 0 {
            b.iterations_completed
                .saturating_sub(a.iterations_completed)
        } else {
            b.regions_completed.saturating_sub(a.regions_completed)
        };
        out.push((Measure::Work, work as f64, secs));
        let ended = b.regions_completed.saturating_sub(a.regions_completed);
        if !a.in_parallel && !b.in_parallel && ended == 0 {
            out.push((Measure::Serial, cpu_secs(before, after), secs));
        } else if a.in_parallel != b.in_parallel && ended <= 1 {
            out.push((Measure::Boundary, 0.0, secs));
        }
        if b.max_threads_asked > 0 {
            let calls = b.max_threads_asked.saturating_sub(a.max_threads_asked);
            out.push((Measure::Calls, calls as f64, secs));
        }
    }
    out.push((Measure::Cpu, cpu_secs(before, after), secs));
    out
}

/// CPU time an app's threads had between two samples of it, seconds.
fn cpu_secs(a: &AppSample, b: &AppSample) -> f64 {
    let cpu = |s: &AppSample| s.threads.iter().map(|t| t.run_ns).sum::<u64>();
    cpu(b).saturating_sub(cpu(a)) as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use coloc_model::{OmpSample, ThreadSample};

    use super::*;

    const APP: AppId = AppId { app: 0, rep: 0 };

    /// An observation at `ms` of one OpenMP app: inside a region or not,
    /// regions ended, iterations done, its thread's run time in ms.
    fn seen(ms: u64, inside: bool, regions: u64, iterations: u64, run_ms: u64) -> Observation {
        Observation {
            at: Duration::from_millis(ms),
            apps: vec![AppSample {
                app: APP,
                threads: vec![ThreadSample {
                    run_ns: run_ms * 1_000_000,
                    ..ThreadSample::default()
                }],
                omp: Some(OmpSample {
                    in_parallel: inside,
                    team_size: 2,
                    regions_completed: regions,
                    iterations_completed: iterations,
                    parallel_ns: 0,
                    max_threads_asked: 0,
                    dop_seen: None,
                }),
                ..AppSample::default()
            }],
            ..Observation::default()
        }
    }

    /// Which phase an interval is of, by the runtime's flags at its two
    /// ends and the regions ended between (docs/policies/auto.md, Phases):
    /// (inside before, regions before, inside after, regions after, work
    /// after, the phase marker, if any).
    #[test]
    fn intervals_are_told_apart_by_phase() {
        let cases = [
            // Outside at both ends, no region ended: serial, its CPU time.
            (false, 3, false, 3, 0, Some((Measure::Serial, 0.08))),
            // Inside at both ends: parallel.
            (true, 3, true, 3, 50, None),
            // Entered a region: a boundary.
            (false, 3, true, 3, 20, Some((Measure::Boundary, 0.0))),
            // Left the region it was in: a boundary.
            (true, 3, false, 4, 20, Some((Measure::Boundary, 0.0))),
            // Many short regions, 5 ended between: parallel, whatever the
            // flags.
            (false, 3, true, 8, 90, None),
            (false, 3, false, 8, 90, None),
        ];
        for (inside, regions, inside_after, regions_after, work, marker) in cases {
            let prev = seen(0, inside, regions, 0, 0);
            let last = seen(100, inside_after, regions_after, work, 80);
            let got = progress(&prev, &last, APP);
            let phase = got
                .iter()
                .find(|(m, _, _)| matches!(m, Measure::Serial | Measure::Boundary))
                .map(|(m, w, _)| (*m, (*w * 1000.0).round() / 1000.0));
            assert_eq!(phase, marker, "{inside} {regions} {inside_after}");
            // Work is always there, for the policies that read it alone.
            assert!(got.iter().any(|(m, _, _)| *m == Measure::Work));
        }
    }
}
