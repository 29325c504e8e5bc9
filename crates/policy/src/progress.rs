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
/// work when its runtime reports, calls once it has asked for its thread
/// count, and CPU time always. Empty when either
/// observation misses the app.
pub(crate) fn progress(prev: &Observation, last: &Observation, app: AppId) -> Vec<Progress> {
    let (Some(a), Some(b)) = (prev.app(app), last.app(app)) else {
        return Vec::new();
    };
    let secs = last.at.saturating_sub(prev.at).as_secs_f64();
    if secs <= 0.0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (&a.omp, &b.omp) {
        let work = if b.iterations_completed > 0 {
            b.iterations_completed
                .saturating_sub(a.iterations_completed)
        } else {
            b.regions_completed.saturating_sub(a.regions_completed)
        };
        out.push((Measure::Work, work as f64, secs));
        if b.max_threads_asked > 0 {
            let calls = b.max_threads_asked.saturating_sub(a.max_threads_asked);
            out.push((Measure::Calls, calls as f64, secs));
        }
    }
    let cpu = |s: &AppSample| s.threads.iter().map(|t| t.run_ns).sum::<u64>();
    out.push((
        Measure::Cpu,
        cpu(b).saturating_sub(cpu(a)) as f64 / 1e9,
        secs,
    ));
    out
}
