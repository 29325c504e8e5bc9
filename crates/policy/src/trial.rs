//! Decisions checked against outcomes: for each set of co-running apps, auto
//! measures the apps' progress under its own arrangement (DoPs and CPU
//! partitions) and left to Linux in alternating windows, and keeps its
//! arrangement only while the evidence says it is not slower than Linux by
//! more than [`BOUND`] (Thread Tranquilizer §3's keep-or-revert, judged by the
//! apps' own progress as AToM judges by an app metric, Tang et al. §5;
//! `docs/policies/auto.md`, "Checked against outcomes").
//!
//! Problem: one comparison of two 0.3 s windows on real programs on a shared
//! machine is noise-dominated (a pair of OpenBLAS programs that ran 1.7x
//! faster on their own CPUs over whole runs measured 0.90x once), so a fixed
//! margin is either too tight (reverts on noise) or too loose (keeps a real
//! loss). Approach:
//! - **Pairs.** A window is [`SETTLE`] skipped intervals (a new DoP takes
//!   effect at each app's next region) then [`WINDOW`] measured ones. Each
//!   window of one arrangement that follows a window of the other makes a
//!   *pair*, and a pair's ratio is the geometric mean of per-app progress
//!   ratios (own / Linux): each app that reported work both ways
//!   ([`Measure::Work`]), else library calls both ways ([`Measure::Calls`]:
//!   OpenBLAS at a DoP of 1 runs serially and reports no work, but asks for
//!   its thread count before every call), with its own ratio; the others, measured in CPU time
//!   ([`Measure::Cpu`]), each with the ratio of their summed CPU rates, since
//!   CPU time moved from one of them to another is no progress for the mix.
//!   Adjacent windows cancel slow drift (program phases, other load).
//! - **Verdict** on the log-ratios of the last [`KEEP_PAIRS`] pairs: own when
//!   the one-sided 95% lower confidence bound (Student's t) is at least
//!   1 − [`BOUND`]; Linux when the upper bound is below it; otherwise the
//!   windows disagree and measuring goes on, alternating, up to [`MAX_PAIRS`]
//!   pairs, after which Linux is kept (own was not shown to be within the
//!   bound: doing nothing is the safe default).
//! - **Re-checks.** Once settled, the other arrangement is measured for one
//!   window whenever that keeps the time spent in it since settling within
//!   [`SHARE`] of that time; the new pair joins the estimate, so a wrong early
//!   verdict is corrected and a changed program phase is noticed.

use std::collections::BTreeMap;
use std::time::Duration;

pub use coloc_model::reason::Estimate;
use coloc_model::reason::{Arrangement, Judge, TrialState, Verdict};
use coloc_model::{AppId, View};

use crate::progress::{progress, Measure, Progress};

/// Observation intervals skipped after each switch: a new DoP takes effect at
/// each app's next region.
pub const SETTLE: u32 = 1;
/// Observation intervals measured per window.
pub const WINDOW: u32 = 3;
/// Auto's arrangement is kept only while the evidence says it is not slower
/// than Linux by more than this (own / Linux at least 1 − BOUND).
pub const BOUND: f64 = 0.02;
/// Pairs before any verdict (one pair has no spread).
pub const MIN_PAIRS: usize = 2;
/// Pairs after which an open estimate settles on Linux.
pub const MAX_PAIRS: usize = 4;
/// Pairs the estimate keeps, latest: older phases of the programs drop out.
pub const KEEP_PAIRS: usize = 8;
/// Once settled, the most of the time since settling spent measuring the
/// other arrangement.
pub const SHARE: f64 = 0.1;

/// One-sided 95% Student's t quantile for `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 8] = [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860];
    T.get(df.saturating_sub(1)).copied().unwrap_or(1.645)
}

/// Work and seconds summed over the measured intervals of one window, per app
/// and how it was measured.
type Tally = BTreeMap<(AppId, Measure), (f64, f64)>;

/// What the pairs' log-ratios say ([`Estimate`]): the geometric mean of own /
/// Linux and the one-sided 95% bounds around it.
fn estimate_of(logs: &[f64]) -> Option<Estimate> {
    {
        let n = logs.len();
        if n == 0 {
            return None;
        }
        let mean = logs.iter().sum::<f64>() / n as f64;
        let half = (n >= 2).then(|| {
            let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t95(n - 1) * (var / n as f64).sqrt()
        });
        Some(Estimate {
            pairs: n,
            ratio: mean.exp(),
            low: half.map(|h| (mean - h).exp()),
            high: half.map(|h| (mean + h).exp()),
        })
    }
}

/// What an estimate decides: own (true), Linux (false), or open (module docs).
fn settles(e: &Estimate) -> Option<bool> {
    // Over one pair the bounds are unbounded: no spread yet.
    let (low, high) = e.low.zip(e.high).unwrap_or((0.0, f64::INFINITY));
    if e.pairs < MIN_PAIRS {
        None
    } else if low >= 1.0 - BOUND {
        Some(true)
    } else if high < 1.0 - BOUND || e.pairs >= MAX_PAIRS {
        Some(false)
    } else {
        None
    }
}

/// The trial of one set of running apps.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Trial {
    /// The running apps it is about, sorted.
    pub set: Vec<AppId>,
    /// Observation intervals in one round of the own arrangement: 1, or the
    /// apps' count under gang time sharing, one foreground app per interval
    /// (`auto/gang.rs`). Windows are whole rounds, so each holds every app's
    /// turns equally often.
    round: u32,
    /// The arrangement in force: auto's own (true) or Linux.
    own: bool,
    /// Intervals counted since the arrangement last switched.
    run: u32,
    /// The window being measured.
    window: Tally,
    /// The last completed window, while it is in no pair: its arrangement
    /// and tally.
    unpaired: Option<(bool, Tally)>,
    /// ln(own / Linux) per pair, latest last.
    logs: Vec<f64>,
    /// Own (true) or Linux (false) once settled.
    pub verdict: Option<bool>,
    /// Set when there was nothing for auto's arrangement to act on.
    pub idle: bool,
    /// Intervals since the verdict, and how many of them ran the other
    /// arrangement.
    settled_for: u32,
    other: u32,
    /// When the current arrangement began: intervals that started earlier
    /// mix two arrangements and are not counted.
    since: Duration,
}

impl Trial {
    /// A new set starts under auto's own arrangement: an app launched into its
    /// partition sees it from its start, as libgomp reads the CPUs it may use
    /// once, at start (it throttles its spin-waiting when its team outnumbers
    /// them).
    pub fn new(set: Vec<AppId>, round: u32, now: Duration) -> Self {
        Self {
            set,
            round: round.max(1),
            own: true,
            run: 0,
            window: Tally::new(),
            unpaired: None,
            logs: Vec::new(),
            verdict: None,
            idle: false,
            settled_for: 0,
            other: 0,
            since: now,
        }
    }

    /// The trial of the running `set` (sorted) in `slot`, a new one when the
    /// set or its own arrangement's `round` changed (gang time sharing is
    /// another arrangement than partitions), with the view's last interval
    /// counted when it is `fresh` (not seen before) and the set was there all
    /// along; `applicable` says whether the own arrangement has anything to
    /// act on now. A set left to Linux because nothing could act is tried
    /// again once something can.
    pub fn follow<'a>(
        slot: &'a mut Option<Trial>,
        view: &View<'_>,
        (set, round): (Vec<AppId>, u32),
        fresh: bool,
        applicable: bool,
    ) -> &'a mut Trial {
        if slot
            .as_ref()
            .is_none_or(|t| t.set != set || t.round != round.max(1))
        {
            *slot = Some(Trial::new(set, round, view.now));
        }
        let trial = slot.as_mut().expect("set above");
        if let (true, Some(prev), Some(last)) = (fresh, view.prev, view.last) {
            let work: Vec<(AppId, Progress)> = trial
                .set
                .iter()
                .flat_map(|&id| progress(prev, last, id).into_iter().map(move |p| (id, p)))
                .collect();
            trial.record(prev.at, last.at, &work, applicable);
        }
        if applicable && trial.idle {
            *trial = Trial::new(trial.set.clone(), trial.round, view.now);
        }
        trial
    }

    /// Whether the apps are to run auto's own arrangement now.
    pub fn space(&self) -> bool {
        self.own && !self.idle
    }

    /// Intervals measured per window: [`WINDOW`], rounded up to whole
    /// rounds.
    fn window_len(&self) -> u32 {
        WINDOW.div_ceil(self.round) * self.round
    }

    /// Whether the trial measured the set no faster on its own arrangement
    /// and settled on Linux. A set with nothing to act on (one app, or
    /// threads that fit) says nothing of what a newcomer would do to it.
    pub fn linux(&self) -> bool {
        !self.idle && self.verdict == Some(false)
    }

    /// What the pairs measured so far say.
    pub fn estimate(&self) -> Option<Estimate> {
        estimate_of(&self.logs)
    }

    /// Counts one observation interval from `from` to `at`, with each measured
    /// app's progress; `applicable` says whether auto's arrangement has
    /// anything to act on now (at least two apps whose threads oversubscribe
    /// the CPUs).
    pub fn record(
        &mut self,
        from: Duration,
        at: Duration,
        work: &[(AppId, Progress)],
        applicable: bool,
    ) {
        if !applicable {
            self.idle = true;
            return;
        }
        if from < self.since || self.idle {
            return;
        }
        self.run += 1;
        if let Some(v) = self.verdict {
            self.settled_for += 1;
            self.other += u32::from(v != self.own);
        }
        if self.run <= SETTLE {
            return;
        }
        for &(id, (m, w, s)) in work {
            let e = self.window.entry((id, m)).or_default();
            e.0 += w;
            e.1 += s;
        }
        if self.run < SETTLE + self.window_len() {
            return;
        }
        // A window is complete.
        let done = std::mem::take(&mut self.window);
        let paired = match self.unpaired.take() {
            Some((was_own, prev)) if was_own != self.own => {
                let (own, linux) = if self.own {
                    (&done, &prev)
                } else {
                    (&prev, &done)
                };
                if let Some(r) = self.ratio(own, linux) {
                    self.logs.push(r.ln());
                    if self.logs.len() > KEEP_PAIRS {
                        self.logs.remove(0);
                    }
                }
                true
            }
            _ => {
                self.unpaired = Some((self.own, done));
                false
            }
        };
        if paired {
            let verdict = self.estimate().and_then(|e| settles(&e));
            if verdict != self.verdict {
                self.settled_for = 0;
                self.other = 0;
            }
            self.verdict = verdict;
        }
        let next = match self.verdict {
            // Open: alternate.
            None => !self.own,
            // Back to the verdict after a check.
            Some(v) if v != self.own => v,
            // A check of the other arrangement when it fits in the share.
            Some(v) => {
                let due = f64::from(self.other + SETTLE + self.window_len())
                    <= SHARE * f64::from(self.settled_for);
                if due {
                    !v
                } else {
                    v
                }
            }
        };
        if next == self.own {
            self.run = SETTLE;
        } else {
            self.own = next;
            self.run = 0;
            self.since = at;
        }
    }

    /// A pair's ratio, own / Linux (module docs); None when no app progressed
    /// both ways.
    fn ratio(&self, own: &Tally, linux: &Tally) -> Option<f64> {
        fn rate(t: &Tally, key: &(AppId, Measure)) -> Option<f64> {
            t.get(key)
                .copied()
                .filter(|(w, s)| *w > 0.0 && *s > 0.0)
                .map(|(w, s)| w / s)
        }
        let both = |key| rate(own, &key).zip(rate(linux, &key));
        let mut logs: Vec<f64> = Vec::new();
        let (mut cpu, mut linux_cpu, mut cpu_apps) = (0.0, 0.0, 0usize);
        for id in &self.set {
            if let Some((o, l)) = both((*id, Measure::Work)).or_else(|| both((*id, Measure::Calls)))
            {
                logs.push((o / l).ln());
            } else if let Some((o, l)) = both((*id, Measure::Cpu)) {
                cpu += o;
                linux_cpu += l;
                cpu_apps += 1;
            }
        }
        if cpu_apps > 0 {
            logs.extend(std::iter::repeat_n((cpu / linux_cpu).ln(), cpu_apps));
        }
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    }

    /// Where the trial stands, as data for the plan: the set, the state and
    /// the running estimate, judged by `judge`.
    pub fn verdict(&self, judge: Judge) -> Verdict {
        let measuring = if self.own {
            Arrangement::Own
        } else {
            Arrangement::Linux
        };
        let state = if self.idle {
            TrialState::NothingToActOn
        } else {
            match self.verdict {
                None => TrialState::Open(measuring),
                Some(true) if self.own => TrialState::OwnKept,
                Some(false) if !self.own => TrialState::BackToLinux,
                Some(_) => TrialState::Rechecking(measuring),
            }
        };
        Verdict {
            judge,
            apps: self.set.clone(),
            state,
            estimate: (!self.idle).then(|| self.estimate()).flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(100);

    /// Runs a trial of one app over `ticks` scripted intervals: `rate(k, own)`
    /// is its progress per second in interval `k` under the arrangement in
    /// force. Returns the trial and, per interval, whether it ran auto's own
    /// arrangement.
    fn script(ticks: u32, rate: impl Fn(u32, bool) -> f64) -> (Trial, Vec<bool>) {
        let app = AppId { app: 0, rep: 0 };
        let mut t = Trial::new(vec![app], 1, Duration::ZERO);
        let mut own = Vec::new();
        for k in 0..ticks {
            let r = rate(k, t.space());
            own.push(t.space());
            let secs = TICK.as_secs_f64();
            t.record(
                TICK * k,
                TICK * (k + 1),
                &[(app, (Measure::Work, r * secs, secs))],
                true,
            );
        }
        (t, own)
    }

    /// Deterministic noise: each window's rates off by up to `amp`, in a
    /// pattern that makes consecutive pairs disagree.
    fn noise(k: u32, amp: f64) -> f64 {
        const PATTERN: [f64; 8] = [1.0, -0.5, -1.0, 0.5, 0.8, -0.7, -0.3, 0.2];
        1.0 + amp * PATTERN[(k / (SETTLE + WINDOW)) as usize % PATTERN.len()]
    }

    /// Verdicts over scripted observations: (own rate, Linux rate, noise
    /// amplitude, the verdict after the deciding pairs, pairs used).
    #[test]
    fn verdicts_follow_the_evidence() {
        let pair = 2 * (SETTLE + WINDOW);
        let cases = [
            // Clearly faster on its own CPUs: own, after a third pair when
            // the first two disagree by 10% noise.
            (1.5, 1.0, 0.0, Some(true), MIN_PAIRS),
            (1.5, 1.0, 0.1, Some(true), 3),
            // Equal rates, no noise: own is within the bound.
            (1.0, 1.0, 0.0, Some(true), MIN_PAIRS),
            // Clearly slower: Linux.
            (0.8, 1.0, 0.0, Some(false), MIN_PAIRS),
            (0.8, 1.0, 0.02, Some(false), MIN_PAIRS),
            // Equal rates under 10% noise: the windows disagree, measuring goes
            // on, and Linux is kept (own not shown within the bound).
            (1.0, 1.0, 0.1, Some(false), MAX_PAIRS),
            // 3% slower without noise: beyond the bound, Linux.
            (0.97, 1.0, 0.0, Some(false), MIN_PAIRS),
        ];
        for (own, linux, amp, want, pairs) in cases {
            let ticks = pairs as u32 * pair;
            let rate = |k, o| if o { own } else { linux } * noise(k, amp);
            let (t, _) = script(ticks - 1, rate);
            assert_eq!(
                t.verdict,
                None,
                "{own} {linux} {amp}: {}",
                t.verdict(Judge::Auto)
            );
            let (t, _) = script(ticks, rate);
            assert_eq!(
                t.verdict,
                want,
                "{own} {linux} {amp}: {}",
                t.verdict(Judge::Auto)
            );
            assert_eq!(t.estimate().map(|e| e.pairs), Some(pairs));
        }
    }

    /// OpenBLAS at a DoP of 1 on its own CPU runs serially: no region ends,
    /// so no work is reported, and it has half the CPU time its spinning team
    /// of 2 has under Linux; its calls (`omp_get_max_threads()` before each)
    /// go on, three times as fast as under Linux here. Calls judge it, and own
    /// is kept; an app without calls is judged by CPU time, and Linux kept.
    #[test]
    fn calls_judge_an_app_that_reports_no_work_at_a_dop_of_1() {
        let app = AppId { app: 0, rep: 0 };
        for (with_calls, want) in [(true, Some(true)), (false, Some(false))] {
            let mut t = Trial::new(vec![app], 1, Duration::ZERO);
            let secs = TICK.as_secs_f64();
            for k in 0..MIN_PAIRS as u32 * 2 * (SETTLE + WINDOW) {
                let (work, calls, cpu) = if t.space() {
                    (0.0, 30.0, 1.0)
                } else {
                    (10.0, 10.0, 2.0)
                };
                let mut seen = vec![
                    (app, (Measure::Work, work * secs, secs)),
                    (app, (Measure::Cpu, cpu * secs, secs)),
                ];
                if with_calls {
                    seen.push((app, (Measure::Calls, calls * secs, secs)));
                }
                t.record(TICK * k, TICK * (k + 1), &seen, true);
            }
            assert_eq!(
                t.verdict,
                want,
                "calls: {with_calls}: {}",
                t.verdict(Judge::Auto)
            );
        }
    }

    /// Once settled, the other arrangement is re-measured within SHARE of the
    /// time, and a verdict the programs' new phase contradicts is corrected:
    /// 1.3x faster on its own CPUs for 6 s, then 0.7x.
    #[test]
    fn re_checks_are_bounded_and_correct_a_wrong_verdict() {
        let decided = MIN_PAIRS as u32 * 2 * (SETTLE + WINDOW);
        let turn = 60;
        let rate = |k: u32, own: bool| match (own, k < turn) {
            (false, _) => 1.0,
            (true, true) => 1.3,
            (true, false) => 0.7,
        };
        let (t, own) = script(turn, rate);
        assert_eq!(t.verdict, Some(true), "{}", t.verdict(Judge::Auto));
        let linux_after = own[decided as usize..].iter().filter(|o| !**o).count();
        let span = (turn - decided) as f64;
        assert!(linux_after >= 1, "re-checked");
        assert!(
            linux_after as f64 <= SHARE * span,
            "{linux_after} of {span}"
        );
        let (t, own) = script(turn + 80, rate);
        assert_eq!(t.verdict, Some(false), "{}", t.verdict(Judge::Auto));
        assert!(!own.last().unwrap(), "back to Linux");
        assert_eq!(
            t.verdict(Judge::Auto).state,
            TrialState::BackToLinux,
            "{}",
            t.verdict(Judge::Auto)
        );
    }
}
