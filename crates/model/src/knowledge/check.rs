//! Each kind of record checked against what happened next
//! (docs/knowledge.md, Checked against what happened next).
//!
//! Problem: a record says how a program ran under one arrangement; a
//! policy that reads it predicts how the program will run again (its solo
//! time, its rate beside a partner, how long its regions last). A program
//! whose input changed, or whose rate beside others depends on what the
//! others do, leaves records that predict badly, and a decision resting on
//! them is wrong however many there are.
//!
//! Approach: records are dated, so every record is checked against the
//! prediction the records of its group made before it — what a decision
//! reading the store just before that run was given. A group is one kind of
//! record of one program under one arrangement beside one partner (and, for
//! solo times, at one team size). A solo time or a rate is predicted by the
//! mean `m` of the group's `n ≥ 2` earlier values, whose spread `s` is the
//! measurement noise of the group: a new value of the same program measured
//! the same way falls within Student's two-sided [`CONFIDENCE`] prediction
//! interval `m ± t(n - 1) · s · √(1 + 1/n)` with that probability. How long
//! regions last is predicted by the bound of the earlier runs
//! (`RegionRecord::bound`: the longest span plus two epochs), and a run that
//! saw a longer span missed it. A value that missed is not noise and does
//! not join the values that predict; [`MISSES`] misses in a row are a
//! change: the group is dropped (under noise alone that happens with
//! probability `(1 - CONFIDENCE)^MISSES` = 0.25% for solo times and rates,
//! never for regions), and the values that missed become what predicts
//! next, so the program is relearned: once a new value falls within their
//! bounds, the group is used again, from them on. Nothing is fitted: the
//! bounds come from the group's own noise.

use std::collections::{BTreeMap, BTreeSet};

use super::{rate, Partner, Record};
use crate::reason::records::{Checked, RecordGroup, RecordKind, RecordsDropped, RecordsUsed};

/// The prediction intervals' probability.
pub const CONFIDENCE: f64 = 0.95;

/// Misses in a row that drop a group.
pub const MISSES: usize = 2;

/// A group's records, as compared: kind, arrangement, the partner's key and
/// the team size (solo times).
type Key = (RecordKind, super::Arrangement, String, Option<u32>);

/// What the checks of one program's records found, per group.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checks {
    groups: BTreeMap<Key, Group>,
}

/// One group's values in date order: those that predict (`base`, with their
/// records' instances), the misses since (`streak`), every check made, and
/// every record taken.
#[derive(Clone, Debug, PartialEq)]
struct Group {
    group: RecordGroup,
    taken: BTreeSet<String>,
    base: Vec<(String, Value)>,
    streak: Vec<(String, Value)>,
    checks: Vec<Checked>,
    newest_unix: i64,
}

/// A measured value: a solo time or a rate (`.1` unused), or a region span
/// and the epoch of its run.
type Value = (f64, f64);

/// `n` earlier values predict the next: their mean, and the half-width of
/// the [`CONFIDENCE`] prediction interval (module docs). None below two.
pub fn interval(earlier: &[f64]) -> Option<(f64, f64)> {
    let s = crate::stats::Summary::of(earlier)?;
    let n = s.n as f64;
    let t = crate::stats::t_quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, n - 1.0)?;
    Some((s.mean, t * s.sd? * (1.0 + 1.0 / n).sqrt()))
}

impl Group {
    /// What `base` predicts for the next value of `kind`, and its bounds
    /// (predicted, low, high); None when too few values predict.
    fn predict(&self, kind: RecordKind) -> Option<(f64, f64, f64)> {
        match kind {
            RecordKind::Regions => {
                let bound = self
                    .base
                    .iter()
                    .map(|(_, (longest, epoch))| longest + 2.0 * epoch)
                    .reduce(f64::max)?;
                Some((bound, 0.0, bound))
            }
            RecordKind::SoloTime | RecordKind::Rate => {
                let values: Vec<f64> = self.base.iter().map(|(_, v)| v.0).collect();
                let (m, half) = interval(&values)?;
                Some((m, m - half, m + half))
            }
        }
    }

    /// Takes the next value, measured by record `r`: checked when the base
    /// predicts; kept in the base when within, else in the streak of misses,
    /// which becomes the base once it is [`MISSES`] long.
    fn take(&mut self, r: &Record, value: Value) {
        self.newest_unix = self.newest_unix.max(r.at_unix);
        self.taken.insert(r.instance.clone());
        let Some((predicted, low, high)) = self.predict(self.group.kind) else {
            self.base.push((r.instance.clone(), value));
            return;
        };
        let checked = Checked {
            predicted,
            measured: value.0,
            low,
            high,
            at_unix: r.at_unix,
        };
        self.checks.push(checked);
        if checked.within() {
            self.base.push((r.instance.clone(), value));
            self.streak.clear();
        } else {
            self.streak.push((r.instance.clone(), value));
            if self.streak.len() >= MISSES {
                self.base = std::mem::take(&mut self.streak);
            }
        }
    }

    fn dropped(&self) -> bool {
        self.checks.len() >= MISSES && self.checks.iter().rev().take(MISSES).all(|c| !c.within())
    }
}

impl Checks {
    fn take(&mut self, kind: RecordKind, r: &Record, value: Value) {
        let partner = match &r.partner {
            Partner::Program { name, .. } => Some(name.clone()),
            _ => None,
        };
        let threads = (kind == RecordKind::SoloTime)
            .then_some(r.threads)
            .flatten();
        self.groups
            .entry((kind, r.arrangement, r.partner.key(), threads))
            .or_insert_with(|| Group {
                group: RecordGroup {
                    kind,
                    arrangement: r.arrangement,
                    partner,
                    threads,
                },
                taken: BTreeSet::new(),
                base: Vec::new(),
                streak: Vec::new(),
                checks: Vec::new(),
                newest_unix: r.at_unix,
            })
            .take(r, value);
    }

    fn group_of(&self, kind: RecordKind, r: &Record) -> Option<&Group> {
        let threads = (kind == RecordKind::SoloTime)
            .then_some(r.threads)
            .flatten();
        self.groups
            .get(&(kind, r.arrangement, r.partner.key(), threads))
    }

    /// Whether record `r` is used for `kind`: its group is not dropped and
    /// its value predicts (it did not miss, and no change came after it).
    /// A record no group of `kind` took (a snapshot; a record with no value
    /// of that kind) is left to the derivation.
    pub fn uses(&self, kind: RecordKind, r: &Record) -> bool {
        match self.group_of(kind, r) {
            None => true,
            Some(g) if g.dropped() => false,
            Some(g) => {
                g.base.iter().any(|(i, _)| *i == r.instance) || !g.taken.contains(&r.instance)
            }
        }
    }

    /// Whether the group of `kind` record `r` belongs to is dropped.
    pub fn drops(&self, kind: RecordKind, r: &Record) -> bool {
        self.group_of(kind, r).is_some_and(Group::dropped)
    }

    /// Whether some group of `kind` is used.
    pub fn has(&self, kind: RecordKind) -> bool {
        self.groups
            .values()
            .any(|g| g.group.kind == kind && !g.dropped())
    }

    /// The groups used, of the kinds in `kinds`: how many of their records
    /// predict, and the newest date.
    pub fn used(&self, kinds: &BTreeSet<RecordKind>) -> Vec<RecordsUsed> {
        self.groups
            .values()
            .filter(|g| kinds.contains(&g.group.kind) && !g.dropped())
            .map(|g| RecordsUsed {
                group: g.group.clone(),
                records: g.base.len() as u32,
                newest_unix: g.newest_unix,
            })
            .collect()
    }

    /// The groups dropped, with their checks.
    pub fn dropped(&self) -> Vec<RecordsDropped> {
        self.groups
            .values()
            .filter(|g| g.dropped())
            .map(|g| RecordsDropped {
                group: g.group.clone(),
                checks: g.checks.len() as u32,
                missed: g.checks.iter().filter(|c| !c.within()).count() as u32,
                last: *g.checks.last().expect("a dropped group was checked"),
            })
            .collect()
    }

    /// Every check of the group of `kind` record `r` belongs to, oldest
    /// first.
    pub fn of(&self, kind: RecordKind, r: &Record) -> &[Checked] {
        self.group_of(kind, r).map_or(&[], |g| &g.checks)
    }
}

/// Checks `records` (one program's, oldest first; snapshots are skipped),
/// each against the group's values before it. Rates are computed with the
/// fastest solo time the solo times used give, on `cpus` CPUs or fewer
/// threads (none used: no rate is checked).
pub fn checks(records: &[Record], cpus: u32) -> Checks {
    let mut out = Checks::default();
    let ended: Vec<&Record> = records.iter().filter(|r| r.ended).collect();
    for r in ended.iter().filter(|r| r.is_solo_time()) {
        out.take(RecordKind::SoloTime, r, (r.wall_secs, 0.0));
    }
    let fastest = out
        .groups
        .values()
        .filter(|g| g.group.kind == RecordKind::SoloTime && !g.dropped())
        .filter(|g| g.group.threads.is_some_and(|k| k <= cpus.max(1)))
        .filter_map(|g| {
            let v: Vec<f64> = g.base.iter().map(|(_, v)| v.0).collect();
            crate::stats::Summary::of(&v).map(|s| s.mean)
        })
        .reduce(f64::min);
    for r in &ended {
        if let Some(rate) = fastest.and_then(|t| rate::rate(r, t)) {
            out.take(RecordKind::Rate, r, (rate, 0.0));
        }
    }
    for r in &ended {
        let Some(o) = &r.omp else { continue };
        if let (Some(longest), Some(epoch)) = (o.longest_region_secs, o.epoch_secs) {
            out.take(RecordKind::Regions, r, (longest, epoch));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::{Arrangement, ProgramKey, Source};

    fn program(name: &str) -> ProgramKey {
        ProgramKey::model(name)
    }

    /// The `n`th record of `x`: `wall` seconds, all of them shared (with
    /// `partner`, a program, when given) unless it ran alone.
    fn record(n: i64, arrangement: Arrangement, partner: Option<&str>, wall: f64) -> Record {
        let alone = arrangement == Arrangement::Alone;
        Record {
            program: program("x"),
            name: "x".into(),
            instance: format!("run/{n}"),
            threads: Some(2),
            arrangement,
            partner: match partner {
                Some(p) => Partner::Program {
                    program: program(p),
                    name: p.into(),
                },
                None if alone => Partner::None,
                None => Partner::Others { instances: 2 },
            },
            source: Source::Run,
            at_unix: 1_700_000_000 + n,
            ended: true,
            wall_secs: wall,
            cpu_secs: None,
            shared_secs: if alone { 0.0 } else { wall },
            weighted_secs: if alone { 0.0 } else { wall },
            omp: None,
        }
    }

    fn solo(walls: &[f64]) -> Vec<Record> {
        walls
            .iter()
            .enumerate()
            .map(|(i, w)| record(i as i64, Arrangement::Alone, None, *w))
            .collect()
    }

    /// Three earlier solo times 9, 10 and 11 s: mean 10, sample sd 1; with
    /// t(0.975, 2) = 4.303 and √(1 + 1/3) = 1.155 the next falls within
    /// 10 ± 4.968 under noise alone.
    #[test]
    fn the_prediction_interval_by_hand() {
        let (m, half) = interval(&[9.0, 10.0, 11.0]).unwrap();
        assert_eq!(m, 10.0);
        assert!(
            (half - 4.303 * 1.0 * (4.0f64 / 3.0).sqrt()).abs() < 1e-3,
            "{half}"
        );
        assert_eq!(interval(&[10.0]), None, "one value has no spread");
        // No spread (a simulated program alone): only the same value is
        // within.
        assert_eq!(interval(&[4.0, 4.0]), Some((4.0, 0.0)));
    }

    /// Solo times per table row: the walls in date order, then how many
    /// checks were made, how many missed, and whether the group is dropped.
    #[test]
    fn solo_times_checked_in_date_order() {
        let rows: &[(&[f64], usize, usize, bool)] = &[
            // Two earlier values are the least that predict.
            (&[10.0, 10.2], 0, 0, false),
            // 9.9 is within 10.1 ± t(1)·0.141·1.22 = ±2.2.
            (&[10.0, 10.2, 9.9], 1, 0, false),
            // The program changed: 15 and 15.2 are both far outside.
            (&[10.0, 10.2, 9.9, 10.1, 15.0, 15.2], 4, 2, true),
            // One miss, then a value within: noise, kept.
            (&[10.0, 10.2, 9.9, 10.1, 15.0, 10.0], 4, 1, false),
            // Relearned: the misses predict next, and 15.1 is within
            // 15.1 ± 2.2 of them.
            (&[10.0, 10.2, 9.9, 10.1, 15.0, 15.2, 15.1], 5, 2, false),
            // A simulated program: identical runs, never a miss.
            (&[4.0, 4.0, 4.0, 4.0], 2, 0, false),
        ];
        for (walls, checks_made, missed, dropped) in rows {
            let records = solo(walls);
            let c = checks(&records, 2);
            let got = c.of(RecordKind::SoloTime, &records[0]);
            assert_eq!(got.len(), *checks_made, "{walls:?}");
            assert_eq!(
                got.iter().filter(|k| !k.within()).count(),
                *missed,
                "{walls:?}: {got:?}"
            );
            assert_eq!(
                c.drops(RecordKind::SoloTime, &records[0]),
                *dropped,
                "{walls:?}"
            );
            assert_eq!(c.dropped().len(), usize::from(*dropped), "{walls:?}");
        }
        // What is used of those: what predicts, never a miss nor what a
        // change superseded.
        let used = |walls: &[f64]| -> Vec<f64> {
            let records = solo(walls);
            let c = checks(&records, 2);
            records
                .iter()
                .filter(|r| c.uses(RecordKind::SoloTime, r))
                .map(|r| r.wall_secs)
                .collect()
        };
        assert_eq!(
            used(&[10.0, 10.2, 9.9, 10.1, 15.0, 10.0]),
            [10.0, 10.2, 9.9, 10.1, 10.0]
        );
        assert!(used(&[10.0, 10.2, 9.9, 10.1, 15.0, 15.2]).is_empty());
        assert_eq!(
            used(&[10.0, 10.2, 9.9, 10.1, 15.0, 15.2, 15.1]),
            [15.0, 15.2, 15.1]
        );
    }

    /// Rates beside one partner, with a fastest solo time of 10 s: a record
    /// whose whole life of `w` s was shared has the rate 10 / w. Beside `y`
    /// it ran at 0.5 (20 s) three times, then at 0.25 (40 s) twice: that
    /// group is dropped; beside others, the same rates stay kept.
    #[test]
    fn rates_are_checked_per_partner_and_arrangement() {
        let mut records = solo(&[10.0, 10.0]);
        let p = Arrangement::Partitioned;
        for (n, w) in [(10, 20.0), (11, 20.5), (12, 19.5), (13, 40.0), (14, 41.0)] {
            records.push(record(n, p, Some("y"), w));
        }
        for (n, w) in [(20, 20.0), (21, 20.5), (22, 19.5)] {
            records.push(record(n, p, None, w));
        }
        records.sort_by_key(|r| r.at_unix);
        let c = checks(&records, 2);
        let beside_y = records.iter().find(|r| r.at_unix == 1_700_000_010).unwrap();
        let beside_others = records.iter().find(|r| r.at_unix == 1_700_000_020).unwrap();
        assert!(c.drops(RecordKind::Rate, beside_y));
        assert!(!c.drops(RecordKind::Rate, beside_others));
        let last = c.of(RecordKind::Rate, beside_y).last().unwrap();
        assert_eq!(last.measured, 10.0 / 41.0);
        assert!(!last.within(), "{last:?}");
        let dropped = c.dropped();
        assert_eq!(dropped.len(), 1);
        assert_eq!(
            dropped[0].group,
            RecordGroup {
                kind: RecordKind::Rate,
                arrangement: p,
                partner: Some("y".into()),
                threads: None,
            }
        );
        assert_eq!((dropped[0].checks, dropped[0].missed), (3, 2));
        // Solo times dropped take the rates' denominator with them: no rate
        // is checked.
        let mut changed = solo(&[10.0, 10.0, 10.0, 30.0, 31.0]);
        changed.push(record(40, p, Some("y"), 20.0));
        let c = checks(&changed, 2);
        assert!(c.drops(RecordKind::SoloTime, &changed[0]));
        assert!(!c.has(RecordKind::Rate));
    }

    /// Region spans: each run is checked against the bound of the runs
    /// before it that predict (their longest span plus two epochs). Spans
    /// of 0.05 s at 0.1 s epochs bound regions at 0.25 s; a run that saw
    /// 0.3 s missed; if the next saw 0.1 s, the miss was one run's, and
    /// if it saw 0.6 s the program's regions grew: dropped.
    #[test]
    fn region_spans_are_checked_against_the_earlier_bound() {
        let with_span = |n: i64, longest: f64| {
            let mut r = record(n, Arrangement::Alone, None, 5.0);
            r.omp = Some(crate::knowledge::OmpTotals {
                regions: 100,
                longest_region_secs: Some(longest),
                epoch_secs: Some(0.1),
                ..Default::default()
            });
            r
        };
        let rows: &[(&[f64], &[bool], bool)] = &[
            (&[0.05, 0.05], &[true], false),
            (&[0.05, 0.2], &[true], false),
            (&[0.05, 0.3, 0.1], &[false, true], false),
            (&[0.05, 0.3, 0.6], &[false, false], true),
        ];
        for (spans, within, dropped) in rows {
            let records: Vec<Record> = spans
                .iter()
                .enumerate()
                .map(|(i, s)| with_span(i as i64, *s))
                .collect();
            let c = checks(&records, 2);
            let got: Vec<bool> = c
                .of(RecordKind::Regions, &records[0])
                .iter()
                .map(Checked::within)
                .collect();
            assert_eq!(got, *within, "{spans:?}");
            assert_eq!(
                c.drops(RecordKind::Regions, &records[0]),
                *dropped,
                "{spans:?}"
            );
        }
    }
}
