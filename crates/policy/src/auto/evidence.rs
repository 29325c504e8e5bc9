//! What the observations say about one app: whether its DoP lever acts (the
//! OpenMP runtime reports region ends often enough for a new DoP to take
//! effect soon), how fast it progresses, and how much CPU it has had.

use std::time::Duration;

use coloc_model::{AppId, AppSample, Observation};

/// Regions an app must have completed before its DoP lever counts as acting.
pub const MIN_REGIONS: u64 = 3;
/// A lever acts only while a region ended this recently: an app inside one
/// long region keeps its team whatever DoP is asked.
pub const LEVER_WINDOW: Duration = Duration::from_millis(500);

/// One app's evidence, updated at each new observation.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Evidence {
    /// The app reports through the DoP channel (its OpenMP runtime can be
    /// steered).
    pub steerable: bool,
    pub regions: u64,
    /// When `regions` was last seen to grow.
    pub region_ended_at: Option<Duration>,
    /// CPU time all its threads have had, ns (attained service).
    pub cpu_ns: u64,
}

impl Evidence {
    /// Takes the app's sample of an observation made at `at`.
    pub fn update(&mut self, sample: &AppSample, at: Duration) {
        self.cpu_ns = sample.threads.iter().map(|t| t.run_ns).sum();
        let Some(omp) = &sample.omp else { return };
        self.steerable = omp.dop_seen.is_some();
        if omp.regions_completed > self.regions {
            self.regions = omp.regions_completed;
            self.region_ended_at = Some(at);
        }
    }

    /// Whether a DoP asked now would reach the app soon.
    pub fn lever_acts(&self, now: Duration) -> bool {
        self.steerable
            && self.regions >= MIN_REGIONS
            && self
                .region_ended_at
                .is_some_and(|t| now.saturating_sub(t) <= LEVER_WINDOW)
    }

    /// Why the lever does or does not act, for the trace.
    pub fn lever_reason(&self, now: Duration) -> String {
        if !self.steerable {
            return "no DoP channel".into();
        }
        match self.region_ended_at {
            None => format!("no region ended yet ({MIN_REGIONS} needed)"),
            Some(t) if self.regions < MIN_REGIONS => format!(
                "{} region(s) ended, {MIN_REGIONS} needed, last at {:.2} s",
                self.regions,
                t.as_secs_f64()
            ),
            Some(t) if !self.lever_acts(now) => format!(
                "in one region for {:.2} s",
                now.saturating_sub(t).as_secs_f64()
            ),
            Some(_) => format!("{} regions ended", self.regions),
        }
    }
}

/// Work an app did between two observations: worksharing iterations when its
/// runtime reports them, else regions; with the interval's length in seconds.
/// None when either observation misses the app or its OpenMP report.
pub(crate) fn progress(prev: &Observation, last: &Observation, app: AppId) -> Option<(f64, f64)> {
    let a = prev.app(app)?.omp.as_ref()?;
    let b = last.app(app)?.omp.as_ref()?;
    let secs = last.at.checked_sub(prev.at)?.as_secs_f64();
    if secs <= 0.0 {
        return None;
    }
    let work = if b.iterations_completed > 0 {
        b.iterations_completed
            .saturating_sub(a.iterations_completed)
    } else {
        b.regions_completed.saturating_sub(a.regions_completed)
    };
    Some((work as f64, secs))
}
