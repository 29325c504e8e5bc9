//! What AToM judges a mapping by (Tang et al. §3.1: the app's own metric, not
//! IPC), with the fallbacks of docs/signals.md when the app prints none.

use std::fmt;

use coloc_model::{AppId, AppView, Observation};

/// The signal, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The workload's `metric` read live; `higher` from its `higher_is_better`.
    Metric { higher: bool },
    /// OpenMP progress through the shim (iterations, else regions, per second).
    Progress,
    /// Instructions retired per second (hardware or simulated counters).
    Instructions,
    /// CPU time of all the app's threads per second (CPU-seconds per second).
    CpuTime,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Metric { higher: true } => "metric (higher is better)",
            Signal::Metric { higher: false } => "metric (lower is better)",
            Signal::Progress => "openmp progress",
            Signal::Instructions => "instructions retired",
            Signal::CpuTime => "cpu time",
        })
    }
}

impl Signal {
    /// The signal as the plan's reasons say it.
    pub fn kind(self) -> coloc_model::reason::AtomSignal {
        use coloc_model::reason::AtomSignal;
        match self {
            Signal::Metric { higher } => AtomSignal::Metric { higher },
            Signal::Progress => AtomSignal::Progress,
            Signal::Instructions => AtomSignal::Instructions,
            Signal::CpuTime => AtomSignal::CpuTime,
        }
    }

    /// The best signal `app` offers, judged from its spec and the latest
    /// observation.
    pub fn for_app(app: &AppView, last: Option<&Observation>) -> Self {
        if let Some(m) = &app.spec.metric {
            return Signal::Metric {
                higher: m.higher_is_better,
            };
        }
        let sample = last.and_then(|o| o.app(app.id));
        if sample.is_some_and(|s| s.omp.is_some()) {
            Signal::Progress
        } else if sample.is_some_and(|s| {
            s.threads
                .iter()
                .any(|t| t.counters.is_some_and(|c| c.instructions.is_some()))
        }) {
            Signal::Instructions
        } else {
            Signal::CpuTime
        }
    }

    /// One sample between two observations, higher always better (a
    /// lower-is-better metric is negated); None when nothing new was measured.
    pub fn sample(
        &self,
        app: AppId,
        prev: Option<&Observation>,
        last: Option<&Observation>,
    ) -> Option<f64> {
        let last_obs = last?;
        let now = last_obs.app(app)?;
        if let Signal::Metric { higher } = self {
            let m = now.metric?;
            let before = prev
                .and_then(|p| p.app(app))
                .and_then(|s| s.metric)
                .map_or(0, |m| m.lines);
            return (m.lines > before).then_some(if *higher { m.value } else { -m.value });
        }
        let prev_obs = prev?;
        let before = prev_obs.app(app)?;
        let dt = last_obs.at.checked_sub(prev_obs.at)?.as_secs_f64();
        if dt <= 0.0 {
            return None;
        }
        let delta = match self {
            Signal::Progress => {
                let (a, b) = (now.omp.as_ref()?, before.omp.as_ref()?);
                if a.iterations_completed > 0 {
                    a.iterations_completed
                        .saturating_sub(b.iterations_completed) as f64
                } else {
                    a.regions_completed.saturating_sub(b.regions_completed) as f64
                }
            }
            Signal::Instructions => {
                let total = |s: &coloc_model::AppSample| -> u64 {
                    s.threads
                        .iter()
                        .filter_map(|t| t.counters?.instructions)
                        .sum()
                };
                total(now).saturating_sub(total(before)) as f64
            }
            Signal::CpuTime => {
                let total = |s: &coloc_model::AppSample| -> u64 {
                    s.threads.iter().map(|t| t.run_ns).sum()
                };
                // CPU-seconds per second.
                total(now).saturating_sub(total(before)) as f64 * 1e-9
            }
            Signal::Metric { .. } => unreachable!("handled above"),
        };
        Some(delta / dt)
    }
}
