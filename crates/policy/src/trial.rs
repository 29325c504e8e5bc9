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
//!   ([`Measure::Cpu`]), each with the ratio of the whole set's summed CPU
//!   rates, since CPU time moved from one app to another is no progress for
//!   the mix: from one judged by CPU time it is a gain and a loss that
//!   cancel, and from one judged by its progress that app's loss is already
//!   counted in its own ratio.
//!   Adjacent windows cancel slow drift (program phases, other load).
//! - **Verdict** on the log-ratios of the last [`KEEP_PAIRS`] pairs: own when
//!   the one-sided 95% lower confidence bound (Student's t) is at least
//!   1 − [`BOUND`]; Linux when the upper bound is below it; otherwise the
//!   windows disagree and measuring goes on, alternating, up to [`MAX_PAIRS`]
//!   pairs, after which the point estimate decides: own when the pairs'
//!   geometric mean of own / Linux is at least [`UNDECIDED_OWN`], else
//!   Linux. Either verdict is undone the same way (re-checks, hysteresis),
//!   so neither is the safe one; auto is held to a symmetric bound (within
//!   [`BOUND`] of Linux and of its own partitions), and the side the
//!   estimate lies on is the one with the smaller expected loss.
//! - **Re-checks.** Once settled, the other arrangement is measured for one
//!   window whenever that keeps the time spent in it since settling within
//!   [`SHARE`] of that time; the new pair joins the estimate, so a wrong early
//!   verdict is corrected and a changed program phase is noticed.
//! - **Hysteresis.** A settled verdict turns only on evidence against it as
//!   strong as the evidence that made one: the pairs measured since the
//!   verdict, at least [`MIN_PAIRS`] of them and on their own, put the bound
//!   on the other side of 1 − [`BOUND`] (Linux's upper bound below it to
//!   leave own, own's lower bound at least it to leave Linux). An estimate
//!   between the two bounds changes nothing; it does not reopen the
//!   alternation. A change of co-runners (a new set) starts a new trial.
//! - **The cost of trying.** A trial spends about half its length in the
//!   losing arrangement, and pays only by running the winner for the rest of
//!   the set's life. With `p` the chance that Linux wins, not trying (the own
//!   arrangement throughout) loses `p · g · T` over a set's life `T` (`g` the
//!   loss rate of the worse arrangement), trying loses `g · D / 2` over its
//!   length `D`: a trial pays where `T ≥ D / (2p)`, whatever `g`. `D` is the
//!   least a verdict takes ([`MIN_PAIRS`] pairs, switches' settle intervals
//!   included), `p` Laplace's rule over the stored verdicts on the set's
//!   programs, else over the run's earlier verdicts, and `T`
//!   the mean life of the run's earlier sets with something to act on, or
//!   the set's age when longer (Gott: at the median, a life observed at a
//!   random moment has as much ahead of it as behind; before any such set
//!   ended, the age alone; `lives.rs`, which reversible first reads
//!   too). A set
//!   whose trial does not pay yet runs the own arrangement, unmeasured
//!   ([`TrialState::Waiting`], with the numbers).
//! - **Stored pairs.** A new set's trial starts from the pairs earlier
//!   trials of the same programs measured, stored
//!   (`coloc_model::knowledge::trials`, docs/knowledge.md, Trials of a set
//!   of programs): they join its estimate as earlier pairs, under the rules
//!   above, so pairs that settle a verdict start it settled
//!   (`Trial::with_prior`); pairs measured since that contradict it turn it
//!   (hysteresis), and the stored pairs leave the estimate
//!   (`StoredTrial::dropped`). Data in (`TrialPriors`, handed over by
//!   the policy), data out (the verdict's `pair` and `stored`): the store is
//!   read and written at the edges.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::knowledge::trials::{Prior, TrialPriors};
pub use coloc_model::reason::Estimate;
use coloc_model::reason::{Arrangement, Judge, StoredTrial, TrialCost, TrialState, Verdict};
use coloc_model::{AppId, View};

use crate::lives::Lives;
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
/// Pairs after which an open estimate settles on the side of its point
/// estimate.
pub const MAX_PAIRS: usize = 4;
/// An open estimate after [`MAX_PAIRS`] keeps own when its ratio (own /
/// Linux) is at least this: the middle of the band [1 − BOUND, 1 + BOUND]
/// in which neither arrangement loses by more than the bound.
pub const UNDECIDED_OWN: f64 = 1.0;
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

/// Progress per second of `key` in a window's tally, None when it made
/// none.
fn rate(t: &Tally, key: &(AppId, Measure)) -> Option<f64> {
    t.get(key)
        .copied()
        .filter(|(w, s)| *w > 0.0 && *s > 0.0)
        .map(|(w, s)| w / s)
}

/// One app's own / Linux over its phases (module docs, "Phases"): the ratio
/// of its parallel phases' work rates and of its serial phases' CPU rates,
/// each where both windows measured it, combined as the time of a program
/// that spends the pair's share of serial time in its serial phases would
/// be; None when neither phase was measured both ways.
fn phases_ratio(id: AppId, own: &Tally, linux: &Tally) -> Option<f64> {
    let both = |m| rate(own, &(id, m)).zip(rate(linux, &(id, m)));
    let parallel = both(Measure::Work).map(|(o, l)| o / l);
    let serial = both(Measure::Serial).map(|(o, l)| o / l);
    let secs = |m| {
        [own, linux]
            .iter()
            .filter_map(|t| t.get(&(id, m)))
            .map(|(_, s)| s)
            .sum::<f64>()
    };
    match (parallel, serial) {
        (Some(p), Some(s)) => {
            let share = secs(Measure::Serial) / (secs(Measure::Serial) + secs(Measure::Work));
            Some(1.0 / (share / s + (1.0 - share) / p))
        }
        (p, s) => p.or(s),
    }
}

/// What an estimate decides, given the verdict in force `now`: own (true),
/// Linux (false), or open (module docs). An open trial settles on the first
/// side its bounds reach, and on its point estimate's side after
/// [`MAX_PAIRS`] ([`UNDECIDED_OWN`]); a settled one
/// turns only when the bound on the other side is reached (hysteresis: the
/// estimate wandering between the two bounds is noise, and changes
/// nothing).
fn settles(e: &Estimate, now: Option<bool>) -> Option<bool> {
    if e.pairs < MIN_PAIRS {
        return now;
    }
    // Over one pair the bounds are unbounded: no spread yet.
    let (low, high) = e.low.zip(e.high).unwrap_or((0.0, f64::INFINITY));
    let own = low >= 1.0 - BOUND;
    let linux = high < 1.0 - BOUND;
    match now {
        None if own => Some(true),
        None if linux => Some(false),
        None if e.pairs >= MAX_PAIRS => Some(e.ratio >= UNDECIDED_OWN),
        None => None,
        Some(true) => Some(!linux),
        Some(false) => Some(own),
    }
}

/// What the run's earlier sets of co-running apps say about the next one:
/// how long a set lasts and how often Linux won a trial (the cost of trying,
/// module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Past {
    /// The lives of the sets that ended.
    lives: Lives,
    /// Trials that reached a verdict, and how many of them settled on Linux.
    verdicts: u32,
    linux: u32,
}

impl Past {
    /// Counts the end, at `now`, of the set `trial` was about, where the
    /// own arrangement had something to act on (a lone app, or apps whose
    /// threads fit, is no set a trial would judge) and an observation saw
    /// it.
    fn ended(&mut self, trial: &Trial, now: Duration) {
        // A set never observed is apps started one decision apart, not a
        // set that lasted.
        if trial.idle || !trial.observed {
            return;
        }
        self.lives
            .ended(now.saturating_sub(trial.born).as_secs_f64());
        if let Some(v) = trial.verdict {
            self.verdicts += 1;
            self.linux += u32::from(!v);
        }
    }

    /// The chance that Linux wins the next trial: Laplace's rule of
    /// succession over the earlier verdicts of the set's programs, stored
    /// (`set`: verdicts, of them Linux), else over the run's (one half
    /// before any).
    fn linux_chance(&self, set: Option<(u32, u32)>) -> f64 {
        let (verdicts, linux) = set
            .filter(|(n, _)| *n > 0)
            .unwrap_or((self.verdicts, self.linux));
        f64::from(linux + 1) / f64::from(verdicts + 2)
    }

    /// The cost of trying a set of age `age`, at `interval` per observation,
    /// with windows of `window` intervals, given the stored verdicts of its
    /// programs (`set`): its expected life is the mean life of the run's
    /// earlier sets, or its age when longer (the age alone before any set
    /// ended); a trial needs [`MIN_PAIRS`] pairs before a verdict.
    fn cost(
        &self,
        age: Duration,
        interval: Duration,
        window: u32,
        set: Option<(u32, u32)>,
    ) -> TrialCost {
        let life = self.lives.ahead_or_age(age.as_secs_f64());
        let least = (interval * (MIN_PAIRS as u32 * 2 * (SETTLE + window))).as_secs_f64();
        let chance = self.linux_chance(set);
        TrialCost {
            life_secs: life,
            needs_secs: least / (2.0 * chance),
            linux_chance: chance,
        }
    }
}

/// The trial of the running set, what the run's earlier sets taught, and
/// the stored pairs of earlier trials of the sets the apps can form.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Trials {
    current: Option<Trial>,
    past: Past,
    stored: TrialPriors,
}

impl Trials {
    /// The time the running set has ahead at `now` (`lives.rs`): the same
    /// expected life the cost of trying reads, the set's age alone before
    /// any set ended (what a DoP cut reads, `cores/reversible.rs`).
    pub fn ahead(&self, now: Duration) -> f64 {
        let age = self
            .current
            .as_ref()
            .map_or(0.0, |t| now.saturating_sub(t.born).as_secs_f64());
        self.past.lives.ahead_or_age(age)
    }

    /// The stored pairs of earlier trials of the sets the apps can form
    /// (docs/knowledge.md, Trials of a set of programs).
    pub fn stored(&mut self, stored: TrialPriors) {
        self.stored = stored;
    }

    /// The trial of `set` (sorted; the apps `names`, in its order) with its
    /// own arrangement's `round` at `now`: a new one, open or settled by the
    /// stored pairs of its programs, when the set or round changed (a change
    /// of co-runners reopens a verdict), the set before it counted in the
    /// past.
    fn of(
        &mut self,
        (set, names): (Vec<AppId>, &[&str]),
        round: u32,
        now: Duration,
    ) -> (&mut Trial, &Past) {
        match &mut self.current {
            Some(t) if t.set == set && t.round == round.max(1) => {
                // The node service identifies an app's program off its loop:
                // a set may start before its programs are known. Until its
                // first pair it takes their stored pairs as a new trial
                // would (the windows it began are measured again).
                if t.prior.is_none() && t.logs.is_empty() && !self.stored.is_empty() {
                    if let Some(prior) = self.stored.prior(names, round.max(1)) {
                        let born = t.born;
                        *t = Trial::new(set, round, now).with_prior(Some(prior));
                        t.born = born;
                    }
                }
            }
            _ => {
                if let Some(ended) = self.current.take() {
                    self.past.ended(&ended, now);
                }
                let prior = self.stored.prior(names, round.max(1));
                self.current = Some(Trial::new(set, round, now).with_prior(prior));
            }
        }
        (self.current.as_mut().expect("set above"), &self.past)
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
    /// Pairs measured since the verdict was reached or last changed.
    since_verdict: usize,
    /// The last of them was on the other side of the bound: the next
    /// re-check is due at once.
    against: bool,
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
    /// When the set began to run together.
    born: Duration,
    /// Set while the trial waits, not started: it would not pay for itself
    /// yet (the cost of trying, module docs).
    waiting: Option<TrialCost>,
    /// Whether it started measuring.
    started: bool,
    /// Whether an observation saw the set with something to act on.
    observed: bool,
    /// What the stored pairs of its programs gave it, and their verdicts
    /// (verdicts, of them Linux) for the cost of trying.
    stored: Option<StoredTrial>,
    stored_verdicts: Option<(u32, u32)>,
    /// The stored pairs it started from, kept for a restart of the same set
    /// (nothing to act on, then something).
    prior: Option<Prior>,
    /// ln(own / Linux) of the pair the last observation completed.
    pair: Option<f64>,
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
            since_verdict: 0,
            against: false,
            verdict: None,
            idle: false,
            settled_for: 0,
            other: 0,
            since: now,
            born: now,
            waiting: None,
            started: false,
            observed: false,
            stored: None,
            stored_verdicts: None,
            prior: None,
            pair: None,
        }
    }

    /// The trial starting from the stored pairs of its programs
    /// (docs/knowledge.md, Trials of a set of programs): they join its
    /// estimate as the pairs of an earlier time, the latest [`KEEP_PAIRS`],
    /// and when they settle a verdict as an open trial's pairs would, it
    /// starts settled on it, running that arrangement, with re-checks and
    /// hysteresis as any settled verdict: the pairs measured since, on their
    /// own, turn it, and the stored pairs are then dropped.
    fn with_prior(mut self, prior: Option<Prior>) -> Self {
        let Some(p) = prior else { return self };
        self.prior = Some(p.clone());
        let from = p.logs.len().saturating_sub(KEEP_PAIRS);
        self.logs = p.logs[from..].to_vec();
        self.stored_verdicts = Some((p.verdicts, p.linux));
        let verdict = estimate_of(&self.logs).and_then(|e| settles(&e, None));
        self.stored = Some(StoredTrial {
            pairs: self.logs.len(),
            trials: p.trials,
            newest_unix: p.newest_unix,
            verdict: verdict.map(|v| {
                if v {
                    Arrangement::Own
                } else {
                    Arrangement::Linux
                }
            }),
            dropped: false,
        });
        if let Some(v) = verdict {
            self.verdict = Some(v);
            self.own = v;
            self.started = true;
        }
        self
    }

    /// The trial of the running `set` (sorted) in `slot`, a new one when the
    /// set or its own arrangement's `round` changed (gang time sharing is
    /// another arrangement than partitions), with the view's last interval
    /// counted when it is `fresh` (not seen before) and the set was there all
    /// along; `applicable` says whether the own arrangement has anything to
    /// act on now. A set left to Linux because nothing could act is tried
    /// again once something can.
    pub fn follow<'a>(
        trials: &'a mut Trials,
        view: &View<'_>,
        (set, round): (Vec<AppId>, u32),
        fresh: bool,
        applicable: bool,
    ) -> &'a mut Trial {
        let names: Vec<&str> = set
            .iter()
            .filter_map(|id| view.apps.iter().find(|a| a.id == *id))
            .map(|a| a.spec.name.as_str())
            .collect();
        let (trial, past) = trials.of((set, &names), round, view.now);
        trial.idle |= !applicable;
        trial.pair = None;
        if let (true, Some(prev), Some(last)) = (fresh, view.prev, view.last) {
            let work: Vec<(AppId, Progress)> = trial
                .set
                .iter()
                .flat_map(|&id| progress(prev, last, id).into_iter().map(move |p| (id, p)))
                .collect();
            trial.record(prev.at, last.at, &work, applicable, past);
        }
        if applicable && trial.idle {
            // The same apps, so the same set: it keeps its age.
            let born = trial.born;
            *trial =
                Trial::new(trial.set.clone(), trial.round, view.now).with_prior(trial.prior.take());
            trial.born = born;
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
        past: &Past,
    ) {
        if !applicable {
            self.idle = true;
            return;
        }
        self.observed = true;
        if from < self.since || self.idle {
            return;
        }
        if !self.started {
            // The cost of trying: start only once the set is expected to
            // last long enough for a trial to pay for itself.
            let cost = past.cost(
                at.saturating_sub(self.born),
                at - from,
                self.window_len(),
                self.stored_verdicts,
            );
            if cost.life_secs < cost.needs_secs {
                self.waiting = Some(cost);
                return;
            }
            self.waiting = None;
            self.started = true;
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
            // An interval in a serial phase, or entering or leaving one, is
            // not one of the parallel phase's: its work would read the phase
            // a window lands in as a speed.
            let phased = |p: &(AppId, Progress)| {
                p.0 == id && matches!(p.1 .0, Measure::Serial | Measure::Boundary)
            };
            if m == Measure::Work && work.iter().any(phased) {
                continue;
            }
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
                    self.since_verdict += 1;
                    self.pair = Some(r.ln());
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
            // Open, every pair kept counts; settled, only the pairs measured
            // since: evidence against a verdict is as strong as what made
            // it only when it stands on its own.
            let n = match self.verdict {
                None => self.logs.len(),
                Some(_) => self.since_verdict.min(self.logs.len()),
            };
            let verdict = match estimate_of(&self.logs[self.logs.len() - n..]) {
                Some(e) => settles(&e, self.verdict),
                None => self.verdict,
            };
            if let (Some(s), Some(_), true) =
                (&mut self.stored, self.verdict, verdict != self.verdict)
            {
                if s.verdict.is_some() && !s.dropped {
                    // The stored verdict is contradicted: its pairs go.
                    self.logs.drain(..self.logs.len() - n);
                    s.dropped = true;
                }
            }
            if verdict != self.verdict {
                self.settled_for = 0;
                self.other = 0;
                self.since_verdict = 0;
            }
            self.verdict = verdict;
            // A pair on the other side of the bound is followed up at once.
            self.against = match (verdict, self.since_verdict) {
                (Some(v), 1..) => {
                    let last = self.logs.last().copied().unwrap_or(0.0);
                    (last >= (1.0 - BOUND).ln()) != v
                }
                _ => false,
            };
        }
        let next = match self.verdict {
            // Open: alternate.
            None => !self.own,
            // Back to the verdict after a check.
            Some(v) if v != self.own => v,
            // A check of the other arrangement when it fits in the share,
            // or when the last check disagreed with the verdict.
            Some(v) => {
                let due = self.against
                    || f64::from(self.other + SETTLE + self.window_len())
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
        let both = |key| rate(own, &key).zip(rate(linux, &key));
        let mut logs: Vec<f64> = Vec::new();
        // Every app's CPU rates, summed: the set's, for the apps judged by
        // CPU time (module docs, "Pairs").
        let (mut cpu, mut linux_cpu, mut cpu_apps) = (0.0, 0.0, 0usize);
        for id in &self.set {
            let cpu_both = both((*id, Measure::Cpu));
            if let Some((o, l)) = cpu_both {
                cpu += o;
                linux_cpu += l;
            }
            if let Some(r) = phases_ratio(*id, own, linux)
                .or_else(|| both((*id, Measure::Calls)).map(|(o, l)| o / l))
            {
                logs.push(r.ln());
            } else if cpu_both.is_some() {
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
        } else if self.waiting.is_some() {
            TrialState::Waiting
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
            cost: self.waiting.filter(|_| !self.idle),
            round: self.round,
            pair: self.pair,
            stored: self.stored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(100);

    /// A run whose one earlier set lasted 100 s: a trial pays at once.
    fn long_past() -> Past {
        Past {
            lives: Lives::of(1, 100.0),
            ..Past::default()
        }
    }

    /// Runs a trial of one app over `ticks` scripted intervals: `rate(k, own)`
    /// is its progress per second in interval `k` under the arrangement in
    /// force. Returns the trial and, per interval, whether it ran auto's own
    /// arrangement.
    fn script(ticks: u32, rate: impl Fn(u32, bool) -> f64) -> (Trial, Vec<bool>) {
        let app = AppId { app: 0, rep: 0 };
        let mut t = Trial::new(vec![app], 1, Duration::ZERO);
        let own = run(&mut t, 0..ticks, &long_past(), rate);
        (t, own)
    }

    /// Runs `trial` over the scripted intervals `ticks` (as [`script`]), the
    /// run's earlier sets being `past`; returns, per interval, whether it ran
    /// auto's own arrangement.
    fn run(
        trial: &mut Trial,
        ticks: std::ops::Range<u32>,
        past: &Past,
        rate: impl Fn(u32, bool) -> f64,
    ) -> Vec<bool> {
        let app = trial.set[0];
        let secs = TICK.as_secs_f64();
        ticks
            .map(|k| {
                let own = trial.space();
                let r = rate(k, own);
                let work = [(app, (Measure::Work, r * secs, secs))];
                trial.record(TICK * k, TICK * (k + 1), &work, true, past);
                own
            })
            .collect()
    }

    /// Arrangement switches in a run of intervals.
    fn switches(own: &[bool]) -> usize {
        own.windows(2).filter(|w| w[0] != w[1]).count()
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
            // Rates 3% apart under 10% noise: the windows disagree, measuring
            // goes on, and after MAX_PAIRS the point estimate's side is kept:
            // own when it is the faster, Linux when it is (before, Linux
            // either way).
            (1.03, 1.0, 0.1, Some(true), MAX_PAIRS),
            (0.97, 1.0, 0.1, Some(false), MAX_PAIRS),
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
                t.record(TICK * k, TICK * (k + 1), &seen, true, &long_past());
            }
            assert_eq!(
                t.verdict,
                want,
                "calls: {with_calls}: {}",
                t.verdict(Judge::Auto)
            );
        }
    }

    /// A program with serial phases longer than an interval (the
    /// simulator's search, seed 103): 4 intervals of a parallel phase, 4 of
    /// a serial one, the first interval of each entering it (a boundary),
    /// so that a phase lasts a window and the phases line up with the pairs.
    /// Its parallel phase runs as fast either way (200 work/s); its serial
    /// thread has a CPU of its own in its partition and 0.6 of one under
    /// Linux, so own is faster. Before, a window's work said which phase it
    /// landed in (a serial interval reports none): every own window here
    /// held the serial phase's start, every Linux window a parallel phase,
    /// each pair read 0.5, and the trial went back to Linux. By phase, each
    /// pair reads 1.25 (the serial ratio 1/0.6, weighted by its share of the
    /// time, with the parallel ratio 1) and own is kept.
    #[test]
    fn a_serial_phase_is_not_read_as_a_loss() {
        let app = AppId { app: 0, rep: 0 };
        let mut t = Trial::new(vec![app], 1, Duration::ZERO);
        let secs = TICK.as_secs_f64();
        let ticks = MAX_PAIRS as u32 * 2 * (SETTLE + WINDOW);
        for k in 0..ticks {
            let serial = ((k + 2) / 4) % 2 == 1;
            let boundary = (k + 2) % 4 == 0;
            let own = t.space();
            let (work, cpu) = match (serial, own) {
                (false, _) => (200.0, 2.0),
                (true, true) => (0.0, 1.0),
                (true, false) => (0.0, 0.6),
            };
            let mut seen = vec![
                (app, (Measure::Work, work * secs, secs)),
                (app, (Measure::Cpu, cpu * secs, secs)),
            ];
            if boundary {
                seen.push((app, (Measure::Boundary, 0.0, secs)));
            } else if serial {
                seen.push((app, (Measure::Serial, cpu * secs, secs)));
            }
            t.record(TICK * k, TICK * (k + 1), &seen, true, &long_past());
        }
        let e = t.estimate().expect("pairs");
        assert_eq!(t.verdict, Some(true), "{}", t.verdict(Judge::Auto));
        assert!((e.ratio - 1.25).abs() < 0.01, "{e:?}");
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
        // After the turn, the verdict turns once the re-checks since the
        // verdict, on their own, show Linux faster: every 40 intervals here
        // ((SETTLE + WINDOW) / SHARE), so within a few re-checks.
        let app = t.set[0];
        let mut t = Trial::new(vec![app], 1, Duration::ZERO);
        let mut turned = None;
        for k in 0..turn + 400 {
            run(&mut t, k..k + 1, &long_past(), rate);
            if t.verdict == Some(false) {
                turned = Some(k);
                break;
            }
        }
        let turned = turned.expect("turned to Linux");
        assert!(turned > turn && turned <= turn + 80, "{turned}");
        let own = run(&mut t, turned + 1..turned + 2, &long_past(), rate);
        assert!(!own[0], "back to Linux");
        assert_eq!(
            t.verdict(Judge::Auto).state,
            TrialState::BackToLinux,
            "{}",
            t.verdict(Judge::Auto)
        );
    }

    /// Hysteresis: a settled verdict is not turned by noise. Each case
    /// settles on its first rates (decided pairs), then runs 30 s at rates
    /// that still favour the verdict, or tie, under 10% noise: an estimate
    /// that wanders between the two bounds. The verdict holds, and the
    /// switches are the re-checks (each one out and back) and their
    /// follow-ups. Before hysteresis the wandering estimate
    /// reopened the trial, which alternated every window and then settled
    /// on Linux after MAX_PAIRS whatever the verdict had been.
    #[test]
    fn noise_does_not_flip_a_settled_verdict() {
        let decided = MIN_PAIRS as u32 * 2 * (SETTLE + WINDOW);
        let span = 300;
        // (own rate while deciding, Linux rate while deciding, own / Linux
        // after, verdict)
        let cases = [(1.3, 1.0, 1.0, true), (0.8, 1.0, 0.9, false)];
        for (own, linux, after, want) in cases {
            let rate = |k: u32, o: bool| match (k < decided, o) {
                (true, true) => own,
                (true, false) => linux,
                (false, true) => after * noise(k, 0.1),
                (false, false) => noise(k, 0.1),
            };
            let (t, ran) = script(decided + span, rate);
            assert_eq!(t.verdict, Some(want), "{own}: {}", t.verdict(Judge::Auto));
            let after = &ran[decided as usize..];
            // A re-check is a window of the other arrangement, at most SHARE
            // of the time: two switches per re-check.
            let window = SETTLE + WINDOW;
            let most = 2 * (SHARE * f64::from(span) / f64::from(window)).ceil() as usize;
            assert!(
                switches(after) <= most,
                "{own}: {} switches, at most {most}",
                switches(after)
            );
            let other = after.iter().filter(|o| **o != want).count() as f64;
            assert!(
                other <= SHARE * f64::from(span) + f64::from(window),
                "{own}: {other}"
            );
        }
    }

    /// A change of co-runners reopens a verdict: the new set's trial starts
    /// open, on the own arrangement, and the ended set counts in the past.
    #[test]
    fn a_change_of_co_runners_reopens_the_verdict() {
        let (a, b, c) = (
            AppId { app: 0, rep: 0 },
            AppId { app: 1, rep: 0 },
            AppId { app: 2, rep: 0 },
        );
        let mut trials = Trials::default();
        let decided = MIN_PAIRS as u32 * 2 * (SETTLE + WINDOW);
        // The run's first set: it waits until its age pays for a trial (as
        // long as a verdict takes, at p = 1/2), then decides.
        let ends = 2 * decided;
        let (t, past) = trials.of((vec![a, b], &[]), 1, Duration::ZERO);
        let past = *past;
        run(t, 0..ends, &past, |_, o| if o { 1.5 } else { 1.0 });
        assert_eq!(t.verdict(Judge::Auto).state, TrialState::OwnKept);
        // The same set again: the verdict stands.
        let (t, _) = trials.of((vec![a, b], &[]), 1, TICK * ends);
        assert_eq!(t.verdict, Some(true));
        // A third app arrives: open, measuring the own arrangement first.
        let (t, past) = trials.of((vec![a, b, c], &[]), 1, TICK * (ends + 5));
        assert_eq!(
            t.verdict(Judge::Auto).state,
            TrialState::Open(Arrangement::Own)
        );
        assert_eq!(
            *past,
            Past {
                lives: Lives::of(1, (TICK * (ends + 5)).as_secs_f64()),
                verdicts: 1,
                linux: 0,
            }
        );
    }

    /// The cost of trying: a trial starts only when the set is expected to
    /// last long enough for it to pay for itself. A trial's least length
    /// here is MIN_PAIRS pairs of 4 intervals of 0.1 s: 1.6 s. With Linux's
    /// chance `p`, it pays where the set's expected life is at least
    /// 1.6 / (2p) s. Until then the own arrangement runs and Linux is not
    /// measured.
    #[test]
    fn a_trial_that_cannot_pay_for_itself_is_not_started() {
        let app = AppId { app: 0, rep: 0 };
        // (past: sets ended, their mean life in s, verdicts, of them Linux;
        //  the index of the interval, counted from the set's start, at whose
        //  end the trial starts)
        let cases = [
            // Nothing ended yet: the set's age is its expected life, and at
            // p = 1/2 it pays from an age of 1.6 s, the end of the 16th
            // interval (before, the first set was tried at once).
            (0, 0.0, 0, 0, 15),
            // Sets lasted 5 s: it pays (5 ≥ 1.6 / (2 · 1/2)).
            (2, 5.0, 1, 0, 0),
            // Sets lasted 0.5 s, no verdict yet: p = 1/2, it pays from an age
            // of 1.6 s, the end of the 16th interval.
            (3, 0.5, 0, 0, 15),
            // Two earlier trials kept own: p = 1/4, it needs 3.2 s.
            (3, 0.5, 2, 0, 31),
            // Two earlier trials went to Linux: p = 3/4, 1.07 s: the end of
            // the 11th interval (1.1 s).
            (3, 0.5, 2, 2, 10),
        ];
        for (sets, life, verdicts, linux, starts) in cases {
            let past = Past {
                lives: Lives::of(sets, f64::from(sets) * life),
                verdicts,
                linux,
            };
            let mut t = Trial::new(vec![app], 1, Duration::ZERO);
            let ran = run(&mut t, 0..starts, &past, |_, o| if o { 1.0 } else { 2.0 });
            assert!(ran.iter().all(|o| *o), "{past:?}: own while waiting");
            let state = t.verdict(Judge::Auto).state;
            if starts > 0 {
                assert_eq!(state, TrialState::Waiting, "{past:?}");
                let cost = t
                    .verdict(Judge::Auto)
                    .cost
                    .expect("a waiting trial says why");
                assert!(cost.life_secs < cost.needs_secs, "{past:?}: {cost:?}");
            }
            run(&mut t, starts..starts + 1, &past, |_, _| 1.0);
            assert_eq!(
                t.verdict(Judge::Auto).state,
                TrialState::Open(Arrangement::Own),
                "{past:?}: started after {starts} intervals"
            );
            assert_eq!(t.verdict(Judge::Auto).cost, None);
            // Started, it measures Linux and decides: Linux runs twice as fast.
            let decided = MIN_PAIRS as u32 * 2 * (SETTLE + WINDOW);
            run(&mut t, starts + 1..starts + 1 + decided, &past, |_, o| {
                if o {
                    1.0
                } else {
                    2.0
                }
            });
            assert_eq!(t.verdict, Some(false), "{past:?}");
        }
    }

    /// Stored pairs of the same programs (docs/knowledge.md, Trials of a set
    /// of programs): `logs` ln(own / Linux) of an earlier trial.
    fn stored(ratios: &[f64], verdicts: u32, linux: u32) -> Option<Prior> {
        Some(Prior {
            logs: ratios.iter().map(|r| r.ln()).collect(),
            trials: 1,
            newest_unix: 1_800_000_000,
            verdicts,
            linux,
        })
    }

    /// A set whose stored pairs settle a verdict starts settled on it,
    /// running that arrangement: no open windows, and the losing arrangement
    /// runs only in the re-checks. Over the first 8 s (80 intervals) of a
    /// set on which Linux is 1.4x faster, without stored pairs the trial
    /// runs own for its first window and alternates for MIN_PAIRS pairs
    /// (own in 2 of its 4 windows, then re-checks); with the 2 pairs an
    /// earlier trial measured (0.70, 0.72) it starts on Linux. Undecided
    /// stored pairs count among the trial's pairs and it measures on: one
    /// stored pair and one of its own settle it; 0.99 and 0.90, whose
    /// bounds straddle 0.98 and whose mean leans towards own against the new
    /// pairs, reach MAX_PAIRS with two of its own, as many as without.
    #[test]
    fn stored_pairs_that_settle_a_verdict_start_the_trial_settled() {
        let app = AppId { app: 0, rep: 0 };
        let rate = |_: u32, o: bool| if o { 1.0 } else { 1.4 };
        // (stored pairs, the state after the first interval, intervals
        //  run in the own arrangement of the first 80, pairs of its own
        //  measured when the verdict came)
        let cases: [(&[f64], TrialState, usize, usize); 4] = [
            (&[], TrialState::Open(Arrangement::Own), 12, MIN_PAIRS),
            (&[0.70, 0.72], TrialState::BackToLinux, 4, 0),
            (&[0.70], TrialState::Open(Arrangement::Own), 8, 1),
            (&[0.99, 0.90], TrialState::Open(Arrangement::Own), 12, 2),
        ];
        for (ratios, first, own_runs, own_pairs) in cases {
            let prior = (!ratios.is_empty()).then(|| stored(ratios, 1, 1)).flatten();
            let mut t = Trial::new(vec![app], 1, Duration::ZERO).with_prior(prior);
            let ran = run(&mut t, 0..1, &long_past(), rate);
            assert_eq!(t.verdict(Judge::Auto).state, first, "{ratios:?}");
            let mut decided = (t.verdict.is_some()).then_some(0);
            let mut ran = ran;
            for k in 1..80 {
                ran.extend(run(&mut t, k..k + 1, &long_past(), rate));
                if decided.is_none() && t.verdict.is_some() {
                    decided = Some(t.estimate().unwrap().pairs - ratios.len());
                }
            }
            assert_eq!(t.verdict, Some(false), "{ratios:?}");
            assert_eq!(decided, Some(own_pairs), "{ratios:?}");
            let own = ran.iter().filter(|o| **o).count();
            assert_eq!(own, own_runs, "{ratios:?}: {ran:?}");
            let v = t.verdict(Judge::Auto);
            assert_eq!(
                v.stored.map(|s| s.pairs),
                (!ratios.is_empty()).then_some(ratios.len())
            );
            assert!(!v.stored.is_some_and(|s| s.dropped), "{v}");
        }
    }

    /// A stored verdict the new pairs contradict is dropped: stored pairs
    /// said Linux (0.70, 0.72), but now own runs 1.5x faster. The trial
    /// starts on Linux, re-checks own within SHARE of the time, follows a
    /// re-check on the other side of the bound at once, and the 2 pairs
    /// since, on their own, turn it to own; the stored pairs leave the
    /// estimate, and the verdict says so.
    #[test]
    fn a_stored_verdict_the_new_pairs_contradict_is_dropped() {
        let app = AppId { app: 0, rep: 0 };
        let mut t =
            Trial::new(vec![app], 1, Duration::ZERO).with_prior(stored(&[0.70, 0.72], 1, 1));
        let rate = |_: u32, o: bool| if o { 1.5 } else { 1.0 };
        let mut turned = None;
        for k in 0..200 {
            run(&mut t, k..k + 1, &long_past(), rate);
            if t.verdict == Some(true) {
                turned = Some(k);
                break;
            }
        }
        let turned = turned.expect("turned to own");
        // The first re-check is due once the time settled reaches
        // (SETTLE + WINDOW) / SHARE = 40 intervals; its pair and the
        // follow-up's take 2 windows each.
        assert!(turned <= 40 + 3 * (SETTLE + WINDOW), "{turned}");
        let v = t.verdict(Judge::Auto);
        let s = v.stored.expect("stored pairs named");
        assert_eq!(s.verdict, Some(Arrangement::Linux));
        assert!(s.dropped, "{v}");
        let e = t.estimate().expect("pairs");
        assert_eq!(e.pairs, 2, "only the pairs measured since: {e:?}");
        assert!((e.ratio - 1.5).abs() < 1e-9, "{e:?}");
        assert!(v.to_string().contains("was dropped"), "{v}");
    }

    /// The cost of trying's chance that Linux wins is Laplace's rule over
    /// the set's stored verdicts, the run's only where none is stored: the
    /// run's 2 verdicts kept own (p = 1/4, 3.2 s needed), the set's 2
    /// earlier trials went to Linux (p = 3/4, 1.07 s).
    #[test]
    fn the_chance_that_linux_wins_is_the_sets_own_where_stored() {
        let past = Past {
            lives: Lives::of(3, 1.5),
            verdicts: 2,
            linux: 0,
        };
        let cost = |set| past.cost(Duration::ZERO, TICK, WINDOW, set);
        assert!((cost(None).linux_chance - 0.25).abs() < 1e-9);
        assert!((cost(Some((0, 0))).linux_chance - 0.25).abs() < 1e-9);
        assert!((cost(Some((2, 2))).linux_chance - 0.75).abs() < 1e-9);
        assert!((cost(Some((2, 2))).needs_secs - 1.6 / 1.5).abs() < 1e-9);
        // A trial that starts from stored pairs it cannot settle on, with
        // its set's verdicts, waits by them.
        let app = AppId { app: 0, rep: 0 };
        let mut t = Trial::new(vec![app], 1, Duration::ZERO).with_prior(stored(&[0.95], 2, 2));
        run(&mut t, 0..1, &past, |_, _| 1.0);
        let c = t.verdict(Judge::Auto).cost.expect("waiting");
        assert!((c.linux_chance - 0.75).abs() < 1e-9, "{c:?}");
    }

    /// The node service identifies programs off its loop, so a set may start
    /// before its stored pairs can be looked up: until its first pair the
    /// trial takes them when they come (and keeps its age); after, a trial
    /// of its own is under way and they wait for the set's next trial.
    #[test]
    fn a_set_started_before_its_programs_were_known_takes_their_pairs() {
        use coloc_model::knowledge::trials::SetPair;
        use coloc_model::knowledge::ProgramKey;
        let (a, b) = (AppId { app: 0, rep: 0 }, AppId { app: 1, rep: 0 });
        let keys = [ProgramKey::model("x"), ProgramKey::model("y")];
        let pairs: Vec<SetPair> = [0.70, 0.72]
            .iter()
            .enumerate()
            .map(|(i, r): (usize, &f64)| SetPair {
                programs: keys.to_vec(),
                names: vec!["x".into(), "y".into()],
                round: 1,
                log_ratio: r.ln(),
                verdict: Some(false),
                dropped_prior: false,
                trial: "earlier".into(),
                seq: i as u32 + 1,
                at_unix: 1_800_000_000,
            })
            .collect();
        let priors = TrialPriors::new(
            &[("a".into(), keys[0].clone()), ("b".into(), keys[1].clone())],
            pairs,
        );
        for measured_first in [false, true] {
            // A run whose earlier set lasted long: its trial starts at once.
            let mut trials = Trials {
                past: long_past(),
                ..Trials::default()
            };
            let names: &[&str] = &["a", "b"];
            let (t, past) = trials.of((vec![a, b], names), 1, Duration::ZERO);
            let past = *past;
            let ticks = if measured_first {
                2 * (SETTLE + WINDOW)
            } else {
                2
            };
            run(t, 0..ticks, &past, |_, o| if o { 1.0 } else { 1.2 });
            trials.stored(priors.clone());
            let (t, _) = trials.of((vec![a, b], names), 1, TICK * ticks);
            assert_eq!(t.born, Duration::ZERO, "the same set keeps its age");
            let state = t.verdict(Judge::Auto).state;
            if measured_first {
                assert_eq!(t.stored, None, "{state:?}");
            } else {
                assert_eq!(state, TrialState::BackToLinux);
                assert!(t.stored.is_some_and(|s| s.pairs == 2));
            }
        }
    }
}
