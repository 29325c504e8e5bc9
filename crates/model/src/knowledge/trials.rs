//! What `auto`'s trials of a set of programs left in the store, and what the
//! next trial of the same set starts from (docs/knowledge.md, Trials of a
//! set of programs).
//!
//! Problem: a trial measures its set's own arrangement against Linux in
//! pairs of windows (`crates/policy/src/trial.rs`), and its verdict lasted
//! only while its set ran: the next time the same programs ran together
//! (later in a session, after a restart of the node service, in the next
//! `coloc run`) it measured again from nothing, spending half of every trial
//! in the losing arrangement.
//!
//! Approach: every pair a trial completes is a [`SetPair`], filed under the
//! set's programs (their [`ProgramKey`]s, sorted, so that names do not
//! matter) and the own arrangement's round (partitions or gang turns), with
//! the trial it belongs to, the verdict in force after it and the date. The
//! next trial of the same set starts from [`prior`]: the stored pairs, minus
//! those a later trial found contradicted (the check against outcomes: a
//! trial that started settled on stored pairs and whose own pairs turned
//! that verdict marks its pairs `dropped_prior`, and every pair of the
//! trials before it is left out), and the set's earlier verdicts, one per
//! trial, for the cost of trying's chance that Linux wins. The [`Learner`]
//! makes the pairs from the plans' verdicts (`Verdict::pair`), so the
//! harness and the node service store them the same way, and
//! [`TrialPriors`] hands a policy those of the sets its apps can form.
//!
//! [`Learner`]: super::Learner

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ProgramKey;
use crate::ids::AppId;
use crate::reason::{Judge, TrialState, Verdict};

/// Stored pairs kept per set of programs and round: the latest. The
/// estimate reads at most the trial's last 8 pairs (`KEEP_PAIRS`), and the
/// cost of trying counts one verdict per earlier trial: 32 hold the 8 and
/// the verdicts of at least the last 8 trials that measured up to 4 pairs
/// each (the most an open trial measures), the same bound as
/// [`KEPT`](super::KEPT) records per program.
pub const KEPT_PAIRS: usize = 32;

/// One pair of a trial's windows on a set of programs: ln(own / Linux).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetPair {
    /// The set's programs, sorted (one per running app: a program run twice
    /// is there twice).
    pub programs: Vec<ProgramKey>,
    /// The apps' names in that run, in the programs' order (for people;
    /// never matched on).
    pub names: Vec<String>,
    /// Observation intervals in one round of the own arrangement: 1 for
    /// partitions, the apps' count under gang time sharing.
    pub round: u32,
    pub log_ratio: f64,
    /// The verdict in force after it: own (true), Linux (false), or none
    /// yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<bool>,
    /// Its trial started settled on stored pairs and its own pairs turned
    /// that verdict: the stored pairs before it are contradicted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dropped_prior: bool,
    /// Which trial (unique on the machine: the run's start and the trial's
    /// first decision) and which of its pairs.
    pub trial: String,
    pub seq: u32,
    /// When it was measured, seconds since the Unix epoch (a simulated run's
    /// pairs are dated at the run's start, as its records are).
    pub at_unix: i64,
}

impl SetPair {
    /// The store's key of its set: the programs' keys as JSON.
    pub fn set_key(&self) -> String {
        set_key(&self.programs)
    }
}

/// The store's key of a set of programs (sorted).
pub fn set_key(programs: &[ProgramKey]) -> String {
    let keys: Vec<String> = programs.iter().map(ProgramKey::key).collect();
    serde_json::to_string(&keys).unwrap_or_default()
}

/// What a trial of a set starts from: the stored pairs that still count,
/// oldest first, and the set's earlier verdicts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prior {
    pub logs: Vec<f64>,
    /// The earlier trials the pairs come from, and the newest pair's date.
    pub trials: u32,
    pub newest_unix: i64,
    /// Earlier trials of the set that reached a verdict, and of them how
    /// many settled on Linux (every stored trial's, contradicted or not).
    pub verdicts: u32,
    pub linux: u32,
}

/// What the stored pairs of one set and round (oldest first) give its next
/// trial; None without pairs. The pairs of the trials before the last one
/// that contradicted its stored verdict are left out.
pub fn prior(pairs: &[SetPair]) -> Option<Prior> {
    // The trials in the order of their first pair.
    let mut trials: Vec<&str> = Vec::new();
    for p in pairs {
        if !trials.contains(&p.trial.as_str()) {
            trials.push(&p.trial);
        }
    }
    let from = trials
        .iter()
        .rposition(|t| pairs.iter().any(|p| p.trial == *t && p.dropped_prior))
        .unwrap_or(0);
    let kept = &trials[from..];
    let logs: Vec<f64> = pairs
        .iter()
        .filter(|p| kept.contains(&p.trial.as_str()))
        .map(|p| p.log_ratio)
        .collect();
    if logs.is_empty() {
        return None;
    }
    let last_verdicts: Vec<bool> = trials
        .iter()
        .filter_map(|t| pairs.iter().rev().find(|p| p.trial == *t)?.verdict)
        .collect();
    Some(Prior {
        logs,
        trials: kept.len() as u32,
        newest_unix: pairs.iter().map(|p| p.at_unix).max().unwrap_or(0),
        verdicts: last_verdicts.len() as u32,
        linux: last_verdicts.iter().filter(|v| !**v).count() as u32,
    })
}

/// What is stored of one set of programs' trials under one round, as
/// `coloc knowledge show` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct SetSummary {
    /// The names its programs ran under last, in the programs' order.
    pub names: Vec<String>,
    pub round: u32,
    /// Pairs stored.
    pub pairs: usize,
    /// What its next trial starts from.
    pub prior: Prior,
}

/// The stored pairs `pairs` (oldest first) per set and round, with what
/// each set's next trial starts from, by set.
pub fn summaries(pairs: &[SetPair]) -> Vec<SetSummary> {
    let mut by_set: BTreeMap<(Vec<ProgramKey>, u32), Vec<SetPair>> = BTreeMap::new();
    for p in pairs {
        by_set
            .entry((p.programs.clone(), p.round))
            .or_default()
            .push(p.clone());
    }
    by_set
        .into_iter()
        .filter_map(|((_, round), pairs)| {
            Some(SetSummary {
                names: pairs.last()?.names.clone(),
                round,
                pairs: pairs.len(),
                prior: prior(&pairs)?,
            })
        })
        .collect()
}

/// The stored pairs of the sets a run's apps can form, and each app's
/// program: what `auto`'s trial looks a new set up in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrialPriors {
    /// Each app's program, by its name in the run.
    programs: BTreeMap<String, ProgramKey>,
    /// The stored pairs by set (sorted programs) and round, oldest first.
    pairs: BTreeMap<(Vec<ProgramKey>, u32), Vec<SetPair>>,
}

impl TrialPriors {
    /// The pairs of `stored` (oldest first) whose set the apps `programs`
    /// (name, program) can form: each of its programs is some app's, as
    /// often as it is in the set.
    pub fn new(programs: &[(String, ProgramKey)], stored: Vec<SetPair>) -> Self {
        let mut present: BTreeMap<&ProgramKey, usize> = BTreeMap::new();
        for (_, p) in programs {
            *present.entry(p).or_default() += 1;
        }
        let formable = |set: &[ProgramKey]| {
            let mut need: BTreeMap<&ProgramKey, usize> = BTreeMap::new();
            for p in set {
                *need.entry(p).or_default() += 1;
            }
            need.iter()
                .all(|(p, n)| present.get(p).is_some_and(|have| have >= n))
        };
        let mut pairs: BTreeMap<(Vec<ProgramKey>, u32), Vec<SetPair>> = BTreeMap::new();
        for p in stored.into_iter().filter(|p| formable(&p.programs)) {
            pairs
                .entry((p.programs.clone(), p.round))
                .or_default()
                .push(p);
        }
        Self {
            programs: programs.iter().cloned().collect(),
            pairs,
        }
    }

    /// What the next trial of the apps `names` (one per running app) with
    /// the own arrangement's `round` starts from; None when an app's program
    /// is not known or the set has no stored pairs.
    pub fn prior(&self, names: &[&str], round: u32) -> Option<Prior> {
        let mut set: Vec<ProgramKey> = names
            .iter()
            .map(|n| self.programs.get(*n).cloned())
            .collect::<Option<_>>()?;
        set.sort();
        prior(self.pairs.get(&(set, round))?)
    }

    /// Whether any pair is stored for these apps.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// Makes [`SetPair`]s from the plans' verdicts, for the [`Learner`](super::Learner):
/// `auto`'s verdicts only (the `+guard` layer's own arrangement is its base
/// policy's, another comparison).
#[derive(Clone, Debug, Default)]
pub(crate) struct PairLog {
    /// The trial being followed: its apps, round and name, and its pairs so
    /// far.
    current: Option<(Vec<AppId>, u32, String, u32)>,
    out: Vec<SetPair>,
}

impl PairLog {
    /// Takes the verdicts of a plan made at `t` of a run started at
    /// `started_unix` (`simulated`: its times are not wall time), the apps'
    /// programs and names by app index.
    pub fn see(
        &mut self,
        t: Duration,
        verdicts: &[Verdict],
        programs: &BTreeMap<u32, (ProgramKey, String)>,
        (started_unix, simulated): (f64, bool),
    ) {
        let Some(v) = verdicts.iter().find(|v| v.judge == Judge::Auto) else {
            return;
        };
        let same = matches!(&self.current, Some((apps, round, ..)) if *apps == v.apps && *round == v.round);
        if !same {
            let trial = format!("{started_unix:.3}/trial/{}", t.as_nanos());
            self.current = Some((v.apps.clone(), v.round, trial, 0));
        }
        let Some(log_ratio) = v.pair else { return };
        let Some(known) = v
            .apps
            .iter()
            .map(|a| programs.get(&a.app).cloned())
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        let mut known = known;
        known.sort();
        let (programs, names) = known.into_iter().unzip();
        let (_, _, trial, seq) = self.current.as_mut().expect("set above");
        *seq += 1;
        let settled = match v.state {
            TrialState::OwnKept | TrialState::BackToLinux | TrialState::Rechecking(_) => {
                Some(!v.settled_on_linux())
            }
            _ => None,
        };
        self.out.push(SetPair {
            programs,
            names,
            round: v.round,
            log_ratio,
            verdict: settled,
            dropped_prior: v.stored.is_some_and(|s| s.dropped),
            trial: trial.clone(),
            seq: *seq,
            at_unix: if simulated {
                started_unix as i64
            } else {
                (started_unix + t.as_secs_f64()) as i64
            },
        });
    }

    /// The pairs made since last taken.
    pub fn take(&mut self) -> Vec<SetPair> {
        std::mem::take(&mut self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::{Arrangement, Estimate, StoredTrial};

    fn key(name: &str) -> ProgramKey {
        ProgramKey::model(name)
    }

    /// A stored pair of the set {a, b} in trial `trial`, ratio `ratio`.
    fn pair(trial: &str, ratio: f64, verdict: Option<bool>, dropped_prior: bool) -> SetPair {
        SetPair {
            programs: vec![key("a"), key("b")],
            names: vec!["a".into(), "b".into()],
            round: 1,
            log_ratio: ratio.ln(),
            verdict,
            dropped_prior,
            trial: trial.into(),
            seq: 1,
            at_unix: 1_800_000_000,
        }
    }

    /// The prior is every stored pair from the last trial that contradicted
    /// its stored verdict on; the verdicts are every trial's last.
    #[test]
    fn a_contradicted_trials_predecessors_are_left_out() {
        let ratios = |p: &Prior| -> Vec<f64> {
            p.logs
                .iter()
                .map(|l| (l.exp() * 100.0).round() / 100.0)
                .collect()
        };
        // Two trials that agree: all four pairs, two verdicts on Linux.
        let agree = [
            pair("t1", 0.7, None, false),
            pair("t1", 0.72, Some(false), false),
            pair("t2", 0.71, Some(false), false),
            pair("t2", 0.69, Some(false), false),
        ];
        let p = prior(&agree).expect("pairs");
        assert_eq!(ratios(&p), vec![0.7, 0.72, 0.71, 0.69]);
        assert_eq!((p.trials, p.verdicts, p.linux), (2, 2, 2));
        // The third trial turned the stored verdict: only its pairs.
        let mut turned = agree.to_vec();
        turned.push(pair("t3", 1.4, Some(false), false));
        turned.push(pair("t3", 1.5, Some(true), true));
        let p = prior(&turned).expect("pairs");
        assert_eq!(ratios(&p), vec![1.4, 1.5]);
        assert_eq!((p.trials, p.verdicts, p.linux), (1, 3, 2));
        assert_eq!(prior(&[]), None);
    }

    /// Two workload names of the same programs share the set's pairs, in
    /// either order; a set one of whose programs is not among the apps, or
    /// is there fewer times than in the set, is not handed over.
    #[test]
    fn two_names_of_the_same_programs_share_their_pairs() {
        let stored = vec![
            pair("t1", 0.7, None, false),
            pair("t1", 0.72, Some(false), false),
        ];
        let apps = |names: [(&str, &str); 2]| -> Vec<(String, ProgramKey)> {
            names.iter().map(|(n, p)| (n.to_string(), key(p))).collect()
        };
        let one = TrialPriors::new(&apps([("a", "a"), ("b", "b")]), stored.clone());
        let two = TrialPriors::new(&apps([("zip", "b"), ("blas", "a")]), stored.clone());
        let want = prior(&stored);
        assert!(want.is_some());
        assert_eq!(one.prior(&["a", "b"], 1), want);
        assert_eq!(two.prior(&["blas", "zip"], 1), want);
        assert_eq!(two.prior(&["zip", "blas"], 1), want);
        // Another round (gang turns) is another arrangement.
        assert_eq!(one.prior(&["a", "b"], 2), None);
        // An app of another program, or b twice instead of a and b.
        let other = TrialPriors::new(&apps([("a", "c"), ("b", "b")]), stored.clone());
        assert!(other.is_empty());
        let twice = TrialPriors::new(&apps([("b1", "b"), ("b2", "b")]), stored);
        assert!(twice.is_empty());
    }

    /// The learner's log makes a pair of each verdict that completed one,
    /// of `auto`'s trials only, with the verdict in force, one trial per
    /// run of decisions on one set; apps without a program make none.
    #[test]
    fn pairs_come_from_the_plans_verdicts() {
        let programs: BTreeMap<u32, (ProgramKey, String)> = [
            (0, (key("b"), "zip".into())),
            (1, (key("a"), "blas".into())),
        ]
        .into();
        let app = |i| AppId { app: i, rep: 0 };
        let verdict = |apps: &[u32], state, pair, judge| Verdict {
            judge,
            apps: apps.iter().map(|&i| app(i)).collect(),
            state,
            estimate: Some(Estimate {
                pairs: 1,
                ratio: 1.0,
                low: None,
                high: None,
            }),
            cost: None,
            round: 1,
            pair,
            stored: None,
        };
        let mut log = PairLog::default();
        let run = (1_800_000_000.0, true);
        let t = Duration::from_millis;
        let open = TrialState::Open(Arrangement::Own);
        log.see(
            t(100),
            &[verdict(&[0, 1], open, None, Judge::Auto)],
            &programs,
            run,
        );
        log.see(
            t(900),
            &[verdict(&[0, 1], open, Some(0.1), Judge::Auto)],
            &programs,
            run,
        );
        log.see(
            t(900),
            &[verdict(&[0, 1], open, Some(0.5), Judge::Guard)],
            &programs,
            run,
        );
        let mut dropped = verdict(&[0, 1], TrialState::OwnKept, Some(0.2), Judge::Auto);
        dropped.stored = Some(StoredTrial {
            pairs: 2,
            trials: 1,
            newest_unix: 0,
            verdict: Some(Arrangement::Linux),
            dropped: true,
        });
        log.see(t(1700), &[dropped], &programs, run);
        // A new set, with an app of no program: no pair.
        log.see(
            t(1800),
            &[verdict(&[0, 2], open, Some(0.3), Judge::Auto)],
            &programs,
            run,
        );
        let pairs = log.take();
        assert_eq!(pairs.len(), 2, "{pairs:?}");
        assert_eq!(pairs[0].programs, vec![key("a"), key("b")]);
        assert_eq!(pairs[0].names, vec!["blas".to_string(), "zip".into()]);
        assert_eq!(pairs[0].trial, pairs[1].trial);
        assert_eq!((pairs[0].seq, pairs[1].seq), (1, 2));
        assert_eq!((pairs[0].verdict, pairs[1].verdict), (None, Some(true)));
        assert_eq!(
            (pairs[0].dropped_prior, pairs[1].dropped_prior),
            (false, true)
        );
        assert_eq!(pairs[1].log_ratio, 0.2);
        assert_eq!(pairs[0].at_unix, 1_800_000_000);
        assert!(log.take().is_empty());
    }
}
