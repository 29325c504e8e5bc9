//! One profile sample (Thread Tranquilizer §3): an app's rates between two
//! observations `interval` apart, from cumulative counters (docs/signals.md).
//!
//! Problem: Figure 7 compares profiles — the mean and standard deviation of 10
//! samples of the LLC miss rate and the involuntary context-switch (ICX) rate —
//! taken before and after a change. The counters are cumulative and threads
//! come and go, so a rate must be a difference per thread.
//!
//! Approach: per thread present in the later observation, its counter minus its
//! value in the earlier one (a new thread counts from zero: the kernel's counters
//! start with the thread). ICX is per second of wall time, summed over the app's
//! threads, as `mpstat` reports it; the miss rate is LLC misses per thousand
//! instructions, only when every thread's counters were read in both
//! observations; progress (the shim's iterations, else regions, per second) is
//! the substitute judge where there are no counters.

use coloc_model::stats::Summary;
use coloc_model::{AppId, Observation};

use crate::progress::{progress, Measure};

/// An app's rates over one sampling interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    /// Involuntary context switches of all its threads per second.
    pub icx_per_s: f64,
    /// LLC misses per 1000 instructions; None without hardware counters.
    pub mpki: Option<f64>,
    /// Iterations (else parallel regions) completed per second, from the DoP
    /// channel; None when the app has no channel.
    pub progress_per_s: Option<f64>,
    /// Its resident memory at the end of the interval, bytes.
    pub rss_bytes: u64,
}

/// `app`'s rates from `prev` to `last`; None when either observation misses
/// it or time did not advance.
pub fn rates(prev: &Observation, last: &Observation, app: AppId) -> Option<Rates> {
    let (a, b) = (prev.app(app)?, last.app(app)?);
    let secs = last.at.checked_sub(prev.at)?.as_secs_f64();
    if secs <= 0.0 {
        return None;
    }
    let hw = prev.signals.hw_counters && last.signals.hw_counters;
    let (mut icx, mut misses, mut instructions, mut counted) = (0u64, 0u64, 0u64, hw);
    for t in &b.threads {
        let before = a.thread(t.tid);
        icx += t
            .involuntary_switches
            .saturating_sub(before.map_or(0, |s| s.involuntary_switches));
        let now = t.counters.and_then(|c| c.llc_misses.zip(c.instructions));
        let then = match before {
            Some(s) => s.counters.and_then(|c| c.llc_misses.zip(c.instructions)),
            None => Some((0, 0)),
        };
        match now.zip(then) {
            Some(((m1, i1), (m0, i0))) => {
                misses += m1.saturating_sub(m0);
                instructions += i1.saturating_sub(i0);
            }
            None => counted = false,
        }
    }
    Some(Rates {
        icx_per_s: icx as f64 / secs,
        mpki: (counted && instructions > 0).then(|| misses as f64 * 1000.0 / instructions as f64),
        // An interval in which no region ended is a rate of 0, not a gap.
        progress_per_s: progress(prev, last, app)
            .into_iter()
            .find(|(m, _, _)| *m == Measure::Work)
            .map(|(_, work, s)| work / s),
        rss_bytes: b.rss_bytes,
    })
}

/// A signal Figure 7 profiles, and which way is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// LLC misses per 1000 instructions (hardware counters): lower is better.
    LlcMisses,
    /// Involuntary context switches per second: lower is better.
    Icx,
    /// Progress per second (the shim): higher is better. The substitute for
    /// the miss rate where the machine has no counters.
    Progress,
}

impl Signal {
    /// How the trace names it.
    pub fn label(self) -> &'static str {
        match self {
            Signal::LlcMisses => "LLC misses/kinstr",
            Signal::Icx => "ICX/s",
            Signal::Progress => "progress/s",
        }
    }

    fn of(self, r: &Rates) -> Option<f64> {
        match self {
            Signal::LlcMisses => r.mpki,
            Signal::Icx => Some(r.icx_per_s),
            Signal::Progress => r.progress_per_s,
        }
    }
}

/// A profile of one signal: mean and sample standard deviation of the samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    pub mean: f64,
    pub sd: f64,
}

impl Profile {
    /// The profile of `signal` over `samples`; None when a sample lacks it or
    /// there are fewer than two.
    pub fn of(samples: &[Rates], signal: Signal) -> Option<Profile> {
        let values: Option<Vec<f64>> = samples.iter().map(|r| signal.of(r)).collect();
        let s = Summary::of(&values?)?;
        Some(Profile {
            mean: s.mean,
            sd: s.sd?,
        })
    }
}
