//! Tang et al.'s memory-sharing characteristics of an app (ISCA 2011 §5):
//! what Algorithm 1 (the `tang` policy, docs/policies/tang-atom.md) decides from.
//!
//! Problem: whether a latency-sensitive app should share a last-level cache or a
//! memory bus with its own threads or with a co-runner depends on three
//! properties measured when it runs alone — how much its threads share data,
//! how much memory bandwidth it draws, and how much of the shared cache it
//! occupies (§5, Figures 21–22).
//!
//! Approach: one record per app and platform, stored in the app's profile
//! beside ReSense's scores, with the measurements it came from and the signal
//! that gave them (docs/signals.md: every profile says what it was measured
//! with):
//! - *data sharing*: the fraction of LLC requests that hit lines in a shared
//!   state (§5 "Data sharing", Figure 22);
//! - *bandwidth*: bytes per second between the LLC and memory, per thread (§5
//!   "Memory Bandwidth Usage", Figure 21: bus transactions × 64 B);
//! - *LLC footprint*: the LLC miss rate with the shared requests discounted,
//!   Equation 1: `miss_rate × (1 − shared_requests / all_requests)`.
//!
//! Where a figure could not be measured on a machine (no counters, no second
//! core to compare with) it is `None` with the reason in `missing`, never a
//! guessed number; Algorithm 1 says how it reads a missing figure.

use serde::{Deserialize, Serialize};

use super::ProcedureError;
use super::SharedCacheRuns;
use crate::cpuset::Cpu;
use crate::procedure::{finished, PinnedApp, PlannedRun};
use crate::topology::symmetry::SymTree;
use crate::topology::Topology;
use crate::trace::Trace;

/// What the characteristics were measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SharingSignal {
    /// LLC references, misses and shared-state hits from hardware counters
    /// (the paper's events).
    HwCounters,
    /// The simulator's counters of a solo run (references, misses and the
    /// requests that go to data the app's threads share).
    SimCounters,
    /// The substitute on a machine without counters: the bandwidth one thread
    /// of the app takes from the `stream` kernel in co-runs
    /// (docs/policies/tang-atom.md, Characteristics; `substitute.rs`), and
    /// data sharing from the runs `data_sharing_runs` names
    /// (`shared_cache.rs`).
    #[serde(alias = "substitutes")]
    StreamCoRuns,
}

impl std::fmt::Display for SharingSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SharingSignal::HwCounters => "hardware counters",
            SharingSignal::SimCounters => "simulated counters",
            SharingSignal::StreamCoRuns => "substitute: co-runs with the stream kernel",
        })
    }
}

/// An app's memory-sharing characteristics on one platform (Tang et al. §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharingCharacteristics {
    pub signal: SharingSignal,
    /// Threads of the solo run(s) the figures come from.
    pub threads: u32,
    /// Shared-state LLC requests / all LLC requests, in [0, 1].
    pub data_sharing: Option<f64>,
    /// Memory traffic per thread, GB/s.
    pub bandwidth_gbs: Option<f64>,
    /// LLC misses per millisecond per thread.
    pub llc_miss_rate: Option<f64>,
    /// Equation 1: `llc_miss_rate × (1 − data_sharing)`, misses per ms per thread.
    pub llc_footprint: Option<f64>,
    /// Why a figure is missing, one line each (empty when all were measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Where `data_sharing` comes from the substitute on a machine without
    /// LLC counters: the runs of the app's threads sharing a cache against
    /// apart. `data_sharing` is then the share of CPU time sharing the cache
    /// saves, not a share of LLC requests, and Algorithm 1 has a threshold
    /// for it (`shared_cache.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_sharing_runs: Option<SharedCacheRuns>,
}

/// Why raw measurements cannot give characteristics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SharingError {
    #[error("`{field}` must be a finite number >= 0, found {value}")]
    Negative { field: &'static str, value: f64 },
    #[error("`shared_requests` ({shared}) exceeds `llc_requests` ({all})")]
    SharedExceedsAll { shared: f64, all: f64 },
    #[error(
        "`elapsed_ms` and `threads` must be positive, found {elapsed_ms} ms and {threads} threads"
    )]
    Empty { elapsed_ms: f64, threads: u32 },
}

/// Equation 1 (Tang et al. §5.1.1): the LLC miss rate discounted by the share
/// of requests that hit shared lines, the paper's proxy for an app's footprint
/// in the shared cache.
pub fn llc_footprint(miss_rate: f64, shared_requests: f64, all_requests: f64) -> f64 {
    if all_requests <= 0.0 {
        return miss_rate;
    }
    miss_rate * (1.0 - (shared_requests / all_requests).clamp(0.0, 1.0))
}

/// Cumulative counters of a solo run, all threads together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CounterTotals {
    pub threads: u32,
    pub elapsed_ms: f64,
    pub llc_requests: f64,
    pub llc_misses: f64,
    /// Requests that hit lines in a shared state.
    pub shared_requests: f64,
    /// Bytes per miss moved between memory and the LLC (the line size).
    pub line_bytes: f64,
}

impl SharingCharacteristics {
    /// The characteristics from a solo run's counters: per-thread rates over
    /// the run's elapsed time.
    pub fn from_counters(signal: SharingSignal, c: CounterTotals) -> Result<Self, SharingError> {
        for (field, value) in [
            ("llc_requests", c.llc_requests),
            ("llc_misses", c.llc_misses),
            ("shared_requests", c.shared_requests),
            ("line_bytes", c.line_bytes),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(SharingError::Negative { field, value });
            }
        }
        if c.shared_requests > c.llc_requests {
            return Err(SharingError::SharedExceedsAll {
                shared: c.shared_requests,
                all: c.llc_requests,
            });
        }
        if !(c.elapsed_ms.is_finite() && c.elapsed_ms > 0.0) || c.threads == 0 {
            return Err(SharingError::Empty {
                elapsed_ms: c.elapsed_ms,
                threads: c.threads,
            });
        }
        let per_thread_ms = c.elapsed_ms * f64::from(c.threads);
        let miss_rate = c.llc_misses / per_thread_ms;
        let sharing = if c.llc_requests > 0.0 {
            c.shared_requests / c.llc_requests
        } else {
            0.0
        };
        Ok(Self {
            signal,
            threads: c.threads,
            data_sharing: Some(sharing),
            // misses/ms × bytes = bytes/ms; / 1e6 = GB/s.
            bandwidth_gbs: Some(miss_rate * c.line_bytes / 1e6),
            llc_miss_rate: Some(miss_rate),
            llc_footprint: Some(llc_footprint(miss_rate, c.shared_requests, c.llc_requests)),
            missing: Vec::new(),
            data_sharing_runs: None,
        })
    }
}

/// Role of the solo run whose counters give the characteristics.
pub const COUNTERS: &str = "counters";

/// The CPUs of the solo run that measures the characteristics from counters:
/// as many threads as the outermost shared level has cores per instance,
/// pinned in scatter order (one per LLC before any two share one), so the
/// figures are the app's own demand (docs/policies/tang-atom.md).
pub fn counter_run_cpus(t: &Topology) -> Vec<Cpu> {
    let all = t.cpus().len().max(1);
    let n = t
        .shared_resources()
        .last()
        .map(|r| r.cores_per_instance)
        .unwrap_or(all)
        .clamp(1, all);
    let tree = SymTree::new(t);
    tree.scatter_order()
        .into_iter()
        .map(|leaf| tree.leaves[leaf])
        .take(n)
        .collect()
}

/// The one planned run of `app` whose counters give its characteristics.
pub fn counter_run(app: &str, t: &Topology) -> PlannedRun {
    PlannedRun {
        dir: format!("sharing-{COUNTERS}"),
        role: COUNTERS.into(),
        apps: vec![PinnedApp {
            name: app.into(),
            cpus: counter_run_cpus(t),
            args: Vec::new(),
        }],
    }
}

/// The characteristics from the LLC counts of `app`'s `exit` in a counter
/// run's trace, over its time from `start` to `exit`; the signal is the
/// simulator's counters in a simulated trace, hardware counters otherwise.
pub fn from_counter_trace(
    trace: &Trace,
    app: &str,
    threads: u32,
) -> Result<SharingCharacteristics, ProcedureError> {
    let run = finished(trace, app)?;
    let llc = run
        .usage
        .and_then(|u| u.llc)
        .ok_or(ProcedureError::NoLlcCounts)?;
    let signal = if trace.header.machine.starts_with("sim:") {
        SharingSignal::SimCounters
    } else {
        SharingSignal::HwCounters
    };
    Ok(SharingCharacteristics::from_counters(
        signal,
        CounterTotals {
            threads,
            elapsed_ms: run.elapsed.as_nanos() as f64 * 1e-6,
            llc_requests: llc.references as f64,
            llc_misses: llc.misses as f64,
            shared_requests: llc.shared_references as f64,
            line_bytes: LINE_BYTES,
        },
    )?)
}

/// Bytes a miss moves between memory and the LLC: one cache line.
pub const LINE_BYTES: f64 = 64.0;

#[cfg(test)]
mod tests {
    use super::*;

    /// Equation 1 by hand: 2000 misses/ms with 30 of 100 requests shared is
    /// 2000 × 0.7 = 1400; no requests leaves the miss rate.
    #[test]
    fn equation_1() {
        assert!((llc_footprint(2000.0, 30.0, 100.0) - 1400.0).abs() < 1e-9);
        assert_eq!(llc_footprint(5.0, 0.0, 0.0), 5.0);
    }

    /// 4 threads for 1000 ms: 8e6 misses = 2000 misses/ms per thread, × 64 B
    /// = 128 000 B/ms = 0.128 GB/s; 4e7 of 1e8 requests shared = 0.4 and a
    /// footprint of 2000 × 0.6 = 1200.
    #[test]
    fn rates_are_per_thread() {
        let c = SharingCharacteristics::from_counters(
            SharingSignal::SimCounters,
            CounterTotals {
                threads: 4,
                elapsed_ms: 1000.0,
                llc_requests: 1e8,
                llc_misses: 8e6,
                shared_requests: 4e7,
                line_bytes: 64.0,
            },
        )
        .unwrap();
        assert_eq!(c.data_sharing, Some(0.4));
        assert!((c.llc_miss_rate.unwrap() - 2000.0).abs() < 1e-9);
        assert!((c.bandwidth_gbs.unwrap() - 0.128).abs() < 1e-12);
        assert!((c.llc_footprint.unwrap() - 1200.0).abs() < 1e-9);
    }

    #[test]
    fn bad_counters_name_the_field() {
        let ok = CounterTotals {
            threads: 1,
            elapsed_ms: 1.0,
            llc_requests: 10.0,
            llc_misses: 1.0,
            shared_requests: 1.0,
            line_bytes: 64.0,
        };
        let cases = [
            (
                CounterTotals {
                    llc_misses: -1.0,
                    ..ok
                },
                "llc_misses",
            ),
            (
                CounterTotals {
                    shared_requests: 11.0,
                    ..ok
                },
                "shared_requests",
            ),
            (CounterTotals { threads: 0, ..ok }, "threads"),
        ];
        for (c, field) in cases {
            let e = SharingCharacteristics::from_counters(SharingSignal::HwCounters, c)
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{e}");
        }
    }
}
