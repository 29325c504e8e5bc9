//! Decisions checked against outcomes: for each set of co-running apps, auto
//! first measures the apps' progress left to Linux, then under space sharing,
//! and keeps space sharing only if it did not measurably slow them down
//! (Thread Tranquilizer §3's keep-or-revert, judged by the apps' own progress
//! as AToM judges by an app metric, Tang et al. §5).

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::AppId;

/// Observation intervals measured under each arrangement.
pub const MEASURE: u32 = 3;
/// Intervals skipped after switching to space sharing: a new DoP takes effect
/// at each app's next region.
pub const SETTLE: u32 = 1;
/// Space sharing is kept unless the apps' progress under it, relative to
/// Linux alone (geometric mean over the apps measured both ways), falls below
/// 1 − TOLERANCE.
pub const TOLERANCE: f64 = 0.02;

/// Where a trial stands.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Stage {
    /// Left to Linux, measuring; `intervals` counted so far.
    Native { intervals: u32 },
    /// Space sharing, measuring after the settling intervals.
    Space { intervals: u32 },
    /// Decided: space sharing or not, and why.
    Settled { space: bool, reason: String },
}

/// Work and seconds summed over the intervals of one arrangement, per app.
type Tally = BTreeMap<AppId, (f64, f64)>;

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
            stage: Stage::Native { intervals: 0 },
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
    /// app's (work, seconds); `applicable` says whether space sharing has
    /// anything to act on now (the machine is oversubscribed and some app's
    /// DoP lever acts). Returns true when the stage changed.
    pub fn record(
        &mut self,
        from: Duration,
        at: Duration,
        work: &[(AppId, (f64, f64))],
        applicable: bool,
    ) -> bool {
        if from < self.since {
            return false;
        }
        let add = |tally: &mut Tally| {
            for (id, (w, s)) in work {
                let e = tally.entry(*id).or_default();
                e.0 += w;
                e.1 += s;
            }
        };
        match &mut self.stage {
            Stage::Native { intervals } => {
                add(&mut self.native);
                *intervals += 1;
                if *intervals < MEASURE {
                    return false;
                }
                self.stage = if applicable {
                    Stage::Space { intervals: 0 }
                } else {
                    Stage::Settled {
                        space: false,
                        reason: "nothing for space sharing to act on".into(),
                    }
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
                self.stage = self.judge();
            }
            Stage::Settled { .. } => return false,
        }
        self.since = at;
        true
    }

    /// Space against Linux alone: the geometric mean of each app's progress
    /// rate ratio, over the apps that progressed under both.
    fn judge(&self) -> Stage {
        let ratios: Vec<f64> = self
            .space
            .iter()
            .filter_map(|(id, &(w, s))| {
                let &(nw, ns) = self.native.get(id)?;
                (w > 0.0 && s > 0.0 && nw > 0.0 && ns > 0.0).then(|| (w / s) / (nw / ns))
            })
            .collect();
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
                reason: format!("space sharing ran at {gm:.2}x Linux's progress: kept"),
            }
        } else {
            Stage::Settled {
                space: false,
                reason: format!("space sharing ran at {gm:.2}x Linux's progress: back to Linux"),
            }
        }
    }

    /// The stage, for the trace.
    pub fn describe(&self) -> String {
        match &self.stage {
            Stage::Native { intervals } => {
                format!("measuring Linux alone ({intervals}/{MEASURE})")
            }
            Stage::Space { intervals } => format!(
                "trying space sharing ({}/{MEASURE})",
                intervals.saturating_sub(SETTLE)
            ),
            Stage::Settled { reason, .. } => reason.clone(),
        }
    }
}
