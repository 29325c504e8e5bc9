//! What policies read, computed from the records of the apps of a run
//! (docs/knowledge.md, What a policy reads): solo times per team size, solo
//! times at each app's own thread count, and rates beside others.
//!
//! The rates are those of `coloc_model::metrics::corun`: a record that
//! shared `shared` of its `wall` seconds with others did, in its `weighted`
//! shared seconds, the solo work its app's fastest solo time `T` leaves once
//! the seconds it ran alone are taken off, so its rate beside others is
//! `(T - (wall - shared)) / weighted`, a share of its speed alone on the
//! whole machine. A record whose life overlapped exactly one other
//! instance's is also its rate beside that program.

use std::collections::BTreeMap;

use super::check::{self, Checks};
pub use super::provenance::Provenance;
use super::trials::{SetPair, TrialPriors};
use super::{Arrangement, OmpTotals, Partner, ProgramKey, Record};
use crate::metrics::corun::{BesideRun, CoRun, SharedRun};
use crate::metrics::{CoRuns, RegionRecord, RegionRecords, SoloCurves, SoloTimes};
use crate::reason::records::RecordKind;

pub use super::rate::{rate, MIN_SHARED_SECS};

/// How long the apps' regions lasted in whole earlier runs (records of
/// instances that ended, with the spans their observations saw), by app
/// name: what the DoP policies' reversible-first rule reads
/// (`coloc_model::metrics::regions`, docs/policies/auto.md).
pub fn region_records(apps: &[KnownApp]) -> RegionRecords {
    let mut out = RegionRecords::default();
    for a in apps {
        for r in a.records.iter().filter(|r| r.ended) {
            let Some(o) = &r.omp else { continue };
            if let (Some(longest), Some(epoch)) = (o.longest_region_secs, o.epoch_secs) {
                out.add(
                    &a.name,
                    RegionRecord {
                        runs: 1,
                        longest: std::time::Duration::from_secs_f64(longest),
                        epoch: std::time::Duration::from_secs_f64(epoch),
                    },
                );
            }
        }
    }
    out
}

/// What policies read of the programs of a run's apps, by app name: solo
/// times per team size, rates beside others and how long their regions
/// last, from the groups of records that predicted well
/// ([`check`]), and which those were. The harness derives it
/// once for a workload, the node service each time the apps present change
/// ([`learned`]); both hand it to the policy the same way
/// (`Policy::learned`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Learned {
    pub solo: SoloCurves,
    pub coruns: CoRuns,
    pub regions: RegionRecords,
    pub provenance: Provenance,
    /// The stored pairs of earlier trials of the sets the apps can form
    /// (`auto`'s trial, [`trials`](super::trials)); the edges add them
    /// ([`Learned::with_trials`]).
    pub trials: TrialPriors,
}

impl Learned {
    /// With the stored pairs `stored` (oldest first) of the sets `apps`
    /// can form.
    pub fn with_trials(mut self, apps: &[KnownApp], stored: Vec<SetPair>) -> Self {
        let programs: Vec<(String, ProgramKey)> = apps
            .iter()
            .map(|a| (a.name.clone(), a.program.clone()))
            .collect();
        self.trials = TrialPriors::new(&programs, stored);
        self
    }
}

/// What policies read of `apps` on a machine of `cpus` CPUs: each app's
/// records checked, and each kind derived from the groups kept.
pub fn learned(apps: &[KnownApp], cpus: u32) -> Learned {
    let checked: Vec<Checks> = apps
        .iter()
        .map(|a| check::checks(&a.records, cpus))
        .collect();
    let keep = |kind: RecordKind| -> Vec<KnownApp> {
        apps.iter()
            .zip(&checked)
            .map(|(a, c)| KnownApp {
                records: a
                    .records
                    .iter()
                    .filter(|r| c.uses(kind, r))
                    .cloned()
                    .collect(),
                ..a.clone()
            })
            .collect()
    };
    let solo = solo_curves(&keep(RecordKind::SoloTime));
    let coruns = coruns(&keep(RecordKind::Rate), &solo, cpus);
    Learned {
        regions: region_records(&keep(RecordKind::Regions)),
        solo,
        coruns,
        provenance: Provenance::of(apps.iter().map(|a| a.name.clone()).zip(checked)),
        trials: TrialPriors::default(),
    }
}

/// One app of a run and what is known of its program.
#[derive(Clone, Debug, PartialEq)]
pub struct KnownApp {
    /// Its name in the run: what the policy looks it up by.
    pub name: String,
    pub program: ProgramKey,
    /// The threads it starts with on this machine (its solo time at its own
    /// thread count, for speedups).
    pub threads: u32,
    /// The program's records, oldest first.
    pub records: Vec<Record>,
}

/// Solo times per team size, from the records of instances that ran alone on
/// the whole machine (with their CPU time where recorded).
pub fn solo_curves(apps: &[KnownApp]) -> SoloCurves {
    let mut curves = SoloCurves::default();
    for a in apps {
        for r in a.records.iter().filter(|r| r.is_solo_time()) {
            let k = r.threads.expect("a solo time has a team size");
            curves.add(&a.name, k, r.wall_secs);
            if let Some(cpu) = r.cpu_secs {
                curves.add_cpu(&a.name, k, cpu);
            }
        }
    }
    curves
}

/// Solo times at each app's own thread count (the denominators of speedup).
pub fn solo_times(apps: &[KnownApp]) -> SoloTimes {
    let mut times = SoloTimes::default();
    for a in apps {
        for r in a.records.iter().filter(|r| r.is_solo_time()) {
            if r.threads == Some(a.threads) {
                times.add(&a.name, r.wall_secs);
            }
        }
    }
    times
}

/// Every app's rates beside others, and beside each other app of `apps`
/// whose program was its only co-runner, with each app's fastest solo time
/// on `cpus` CPUs or fewer threads from `solo`; oldest first.
pub fn coruns(apps: &[KnownApp], solo: &SoloCurves, cpus: u32) -> CoRuns {
    let mut runs: Vec<(i64, CoRun)> = Vec::new();
    for a in apps {
        let Some(fastest) = solo.fastest(&a.name, cpus) else {
            continue;
        };
        for r in &a.records {
            let Some(rate) = rate(r, fastest) else {
                continue;
            };
            runs.push((
                r.at_unix,
                CoRun::Shared(SharedRun {
                    app: a.name.clone(),
                    rate,
                }),
            ));
            if let Partner::Program { program, .. } = &r.partner {
                for b in apps.iter().filter(|b| b.program == *program) {
                    runs.push((
                        r.at_unix,
                        CoRun::Beside(BesideRun {
                            app: a.name.clone(),
                            partner: b.name.clone(),
                            rate,
                        }),
                    ));
                }
            }
        }
    }
    runs.sort_by_key(|(at, _)| *at);
    CoRuns::of(runs.into_iter().map(|(_, r)| r).collect())
}

/// What one program's records say, grouped for people (`coloc knowledge
/// show`): means over the records of each kind, with how many.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overview {
    /// Records, ended ones and snapshots of instances still running.
    pub records: usize,
    pub snapshots: usize,
    /// Solo times per team size: mean seconds and runs.
    pub solo: Vec<(u32, f64, usize)>,
    /// Region structure and progress, per arrangement.
    pub openmp: Vec<OpenMpRow>,
    /// Rates beside others, per partner and arrangement, with the program's
    /// fastest solo time.
    pub beside: Vec<BesideRow>,
}

/// The region structure and progress of a program's records under one
/// arrangement, means over `records`.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenMpRow {
    pub arrangement: Arrangement,
    pub records: usize,
    pub regions: f64,
    pub mean_region_secs: Option<f64>,
    pub serial_fraction: Option<f64>,
    /// Progress per second and its unit, where every record had the unit.
    pub progress: Option<(f64, &'static str)>,
}

/// A program's mean rate beside one partner (or others) under one
/// arrangement.
#[derive(Clone, Debug, PartialEq)]
pub struct BesideRow {
    /// The partner's name, or None for several or unknown others.
    pub partner: Option<String>,
    pub arrangement: Arrangement,
    pub rate: f64,
    pub records: usize,
}

fn mean(values: &[f64]) -> Option<f64> {
    crate::stats::Summary::of(values).map(|s| s.mean)
}

/// The [`Overview`] of `records` (one program's), rates with its fastest
/// solo time on `cpus` CPUs.
pub fn overview(records: &[Record], cpus: u32) -> Overview {
    let mut solo: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.is_solo_time()) {
        solo.entry(r.threads.expect("solo times have a team size"))
            .or_default()
            .push(r.wall_secs);
    }
    let fastest = solo
        .iter()
        .filter(|(k, _)| **k <= cpus.max(1))
        .filter_map(|(_, v)| mean(v))
        .reduce(f64::min);
    let mut openmp: BTreeMap<Arrangement, Vec<OmpTotals>> = BTreeMap::new();
    for r in records {
        if let Some(o) = r.omp {
            openmp.entry(r.arrangement).or_default().push(o);
        }
    }
    let mut beside: BTreeMap<(Option<String>, Arrangement), Vec<f64>> = BTreeMap::new();
    for r in records {
        let Some(rate) = fastest.and_then(|t| rate(r, t)) else {
            continue;
        };
        let partner = match &r.partner {
            Partner::Program { name, .. } => Some(name.clone()),
            _ => None,
        };
        beside
            .entry((partner, r.arrangement))
            .or_default()
            .push(rate);
    }
    Overview {
        records: records.len(),
        snapshots: records.iter().filter(|r| !r.ended).count(),
        solo: solo
            .iter()
            .filter_map(|(k, v)| Some((*k, mean(v)?, v.len())))
            .collect(),
        openmp: openmp
            .into_iter()
            .map(|(arrangement, o)| openmp_row(arrangement, &o))
            .collect(),
        beside: beside
            .into_iter()
            .filter_map(|((partner, arrangement), rates)| {
                Some(BesideRow {
                    partner,
                    arrangement,
                    rate: mean(&rates)?,
                    records: rates.len(),
                })
            })
            .collect(),
    }
}

fn openmp_row(arrangement: Arrangement, o: &[OmpTotals]) -> OpenMpRow {
    let of = |f: fn(&OmpTotals) -> Option<f64>| mean(&o.iter().filter_map(f).collect::<Vec<_>>());
    let progress: Vec<(f64, &str)> = o.iter().filter_map(|x| x.progress_per_sec()).collect();
    let unit = progress.first().map(|p| p.1);
    let same_unit = progress.len() == o.len() && progress.iter().all(|p| Some(p.1) == unit);
    OpenMpRow {
        arrangement,
        records: o.len(),
        regions: of(|x| Some(x.regions as f64)).unwrap_or(0.0),
        mean_region_secs: of(OmpTotals::mean_region_secs),
        serial_fraction: of(OmpTotals::serial_fraction),
        progress: same_unit
            .then(|| {
                let rates: Vec<f64> = progress.iter().map(|p| p.0).collect();
                Some((mean(&rates)?, unit?))
            })
            .flatten(),
    }
}
