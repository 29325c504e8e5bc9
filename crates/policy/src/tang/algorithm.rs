//! Algorithm 1 of Tang et al. (ISCA 2011 §5.1): share or distribute at the LLC
//! and bus levels from the latency app's and its co-runner's characteristics.
//!
//! Problem: the algorithm reads "high" for data sharing and LLC footprint and
//! compares bus usage and footprints between the latency app P and its
//! co-runner C; measurements can be missing (an unprofiled app, a machine
//! without counters).
//!
//! Approach: each line of the algorithm is one branch of [`decide`], which
//! returns the choice with the line that made it. "High" is a threshold of
//! [`Thresholds`] (data sharing has one per scale: a share of LLC requests
//! from counters, a share of CPU time saved from the substitute); a comparison or a test with a missing figure is false, so
//! an app with no characteristics takes the algorithm's last branch (distribute
//! at both levels, line 20), the mapping of apps that gain nothing from sharing.

use super::levels::{Choice, Sharing};

/// What Algorithm 1 reads of one app (Tang et al. §5; `None` = not measured).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Traits {
    /// Shared-state LLC requests / all LLC requests; or, where
    /// `sharing_is_time_saved`, the substitute's share of CPU time saved by
    /// the threads sharing a cache (`coloc_model::profile::shared_cache`).
    pub data_sharing: Option<f64>,
    /// `data_sharing` is the substitute's figure, read against
    /// [`Thresholds::time_saved`].
    pub sharing_is_time_saved: bool,
    /// Memory-bus usage (GB/s per thread).
    pub bus_usage: Option<f64>,
    /// Equation 1 (misses per ms per thread).
    pub llc_footprint: Option<f64>,
}

/// Where "high" starts (docs/policies/tang-atom.md, Thresholds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Data sharing is high from this fraction of LLC requests in a shared
    /// state: most of them (Figure 22 puts bigtable above, webSearch and
    /// contentAnalyzer below).
    pub data_sharing: f64,
    /// The substitute's data sharing is high from this share of the app's CPU
    /// time saved by its threads sharing a cache (docs/policies/tang-atom.md,
    /// Thresholds).
    pub time_saved: f64,
    /// The LLC footprint is high from this many misses per ms per thread
    /// (128 MB/s of fills at 64 B lines; Figure 22's split between
    /// contentAnalyzer and webSearch).
    pub llc_footprint: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            data_sharing: 0.5,
            time_saved: 0.05,
            llc_footprint: 2000.0,
        }
    }
}

/// The line of Algorithm 1 whose `map` decided.
pub type Line = u8;

/// Algorithm 1 for latency app `p` against co-runner `c`.
pub fn decide(p: &Traits, c: &Traits, t: &Thresholds) -> (Choice, Line) {
    let high = |v: Option<f64>, at: f64| v.is_some_and(|v| v >= at);
    let less = |a: Option<f64>, b: Option<f64>| matches!((a, b), (Some(a), Some(b)) if a < b);
    let choice = |llc, bus| Choice { llc, bus };
    use Sharing::{Distribute as D, Share as S};
    let sharing_at = match p.sharing_is_time_saved {
        true => t.time_saved,
        false => t.data_sharing,
    };
    if high(p.data_sharing, sharing_at) {
        // Lines 1–7: share the LLC; share the bus with the co-runner's threads
        // only when P draws less of it.
        if less(p.bus_usage, c.bus_usage) {
            (choice(S, S), 4)
        } else {
            (choice(S, D), 6)
        }
    } else if less(p.bus_usage, c.bus_usage) {
        // Lines 9–15: P shares the bus with itself; spread over caches when
        // its own footprint is high.
        if high(p.llc_footprint, t.llc_footprint) {
            (choice(D, S), 12)
        } else {
            (choice(S, S), 14)
        }
    } else if less(p.llc_footprint, c.llc_footprint) {
        // Lines 17–18: P is the lighter cache user: its threads share one.
        (choice(S, D), 18)
    } else {
        // Line 20.
        (choice(D, D), 20)
    }
}
