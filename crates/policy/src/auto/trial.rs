//! Decisions checked against outcomes: for each set of co-running apps, auto
//! first measures the apps' progress under its own arrangement (DoPs and CPU
//! partitions), then left to Linux, and keeps its arrangement only if it did
//! not measurably slow them down (Thread Tranquilizer §3's keep-or-revert,
//! judged by the apps' own progress as AToM judges by an app metric, Tang et
//! al. §5).
//!
//! The verdict is the geometric mean of per-app ratios (progress rate under
//! auto's arrangement / under Linux): each app that reported work both ways
//! ([`Measure::Work`]) counts with its own ratio; the others, measured in CPU
//! time ([`Measure::Cpu`]), count each with the ratio of their summed CPU
//! rates, since CPU time moved from one of them to another is no progress for
//! the mix.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::AppId;

use super::evidence::{Measure, Progress};

/// Observation intervals measured under each arrangement.
pub const MEASURE: u32 = 3;
/// Intervals skipped after each switch: a new DoP takes effect at each app's
/// next region.
pub const SETTLE: u32 = 1;
/// Space sharing is kept unless the apps' progress under it, relative to
/// Linux alone (geometric mean over the apps measured both ways), falls below
/// 1 − TOLERANCE.
pub const TOLERANCE: f64 = 0.02;

/// Where a trial stands.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Stage {
    /// Auto's own arrangement (DoPs and CPU partitions), first: an app
    /// launched into its partition sees it from its start, as libgomp reads
    /// the CPUs it may use once, at start (it throttles its spin-waiting when
    /// its team outnumbers them); measuring after the settling intervals.
    Space { intervals: u32 },
    /// Left to Linux, measuring after the settling intervals.
    Native { intervals: u32 },
    /// Decided: space sharing or not, and why.
    Settled { space: bool, reason: String },
}

/// Work and seconds summed over the intervals of one arrangement, per app and
/// how it was measured.
type Tally = BTreeMap<(AppId, Measure), (f64, f64)>;

/// The trial of one set of running apps.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Trial {
    /// The running apps it is about, sorted.
    pub set: Vec<AppId>,
    pub stage: Stage,
    /// When the current stage began: intervals that started earlier mix two
    /// arrangements and are not counted.
    since: Duration,
    native: Tally,
    space: Tally,
}

impl Trial {
    pub fn new(set: Vec<AppId>, now: Duration) -> Self {
        Self {
            set,
            stage: Stage::Space { intervals: 0 },
            since: now,
            native: Tally::new(),
            space: Tally::new(),
        }
    }

    /// Whether the apps are to be space shared now.
    pub fn space(&self) -> bool {
        matches!(
            self.stage,
            Stage::Space { .. } | Stage::Settled { space: true, .. }
        )
    }

    /// Counts one observation interval starting at `from`, with each measured
    /// app's progress; `applicable` says whether auto's arrangement has
    /// anything to act on now (at least two apps whose threads oversubscribe
    /// the CPUs). Returns true when the stage changed.
    pub fn record(
        &mut self,
        from: Duration,
        at: Duration,
        work: &[(AppId, Progress)],
        applicable: bool,
    ) -> bool {
        if from < self.since {
            return false;
        }
        let add = |tally: &mut Tally| {
            for &(id, (m, w, s)) in work {
                let e = tally.entry((id, m)).or_default();
                e.0 += w;
                e.1 += s;
            }
        };
        match &mut self.stage {
            Stage::Space { .. } if !applicable => {
                self.stage = Stage::Settled {
                    space: false,
                    reason: "nothing for its own arrangement to act on".into(),
                };
            }
            Stage::Space { intervals } => {
                *intervals += 1;
                if *intervals <= SETTLE {
                    return false;
                }
                add(&mut self.space);
                if *intervals < SETTLE + MEASURE {
                    return false;
                }
                self.stage = Stage::Native { intervals: 0 };
            }
            Stage::Native { intervals } => {
                *intervals += 1;
                if *intervals <= SETTLE {
                    return false;
                }
                add(&mut self.native);
                if *intervals < SETTLE + MEASURE {
                    return false;
                }
                self.stage = self.judge();
            }
            Stage::Settled { .. } => return false,
        }
        self.since = at;
        true
    }

    /// Auto's arrangement against Linux alone (module docs).
    fn judge(&self) -> Stage {
        fn rate(t: &Tally, key: &(AppId, Measure)) -> Option<(f64, f64)> {
            t.get(key).copied().filter(|(w, s)| *w > 0.0 && *s > 0.0)
        }
        let both = |key| rate(&self.space, &key).zip(rate(&self.native, &key));
        let mut ratios: Vec<f64> = Vec::new();
        let (mut cpu, mut linux_cpu, mut cpu_apps) = (0.0, 0.0, 0usize);
        for id in &self.set {
            if let Some(((w, s), (nw, ns))) = both((*id, Measure::Work)) {
                ratios.push((w / s) / (nw / ns));
            } else if let Some(((w, s), (nw, ns))) = both((*id, Measure::Cpu)) {
                cpu += w / s;
                linux_cpu += nw / ns;
                cpu_apps += 1;
            }
        }
        if cpu_apps > 0 {
            ratios.extend(std::iter::repeat_n(cpu / linux_cpu, cpu_apps));
        }
        if ratios.is_empty() {
            return Stage::Settled {
                space: false,
                reason: "no app progressed both ways: left to Linux".into(),
            };
        }
        let gm = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        if gm >= 1.0 - TOLERANCE {
            Stage::Settled {
                space: true,
                reason: format!("own arrangement ran at {gm:.2}x Linux's progress: kept"),
            }
        } else {
            Stage::Settled {
                space: false,
                reason: format!("own arrangement ran at {gm:.2}x Linux's progress: back to Linux"),
            }
        }
    }

    /// The stage, for the trace.
    pub fn describe(&self) -> String {
        match &self.stage {
            Stage::Native { intervals } => format!(
                "measuring Linux alone ({}/{MEASURE})",
                intervals.saturating_sub(SETTLE)
            ),
            Stage::Space { intervals } => format!(
                "trying its own arrangement ({}/{MEASURE})",
                intervals.saturating_sub(SETTLE)
            ),
            Stage::Settled { reason, .. } => reason.clone(),
        }
    }
}
