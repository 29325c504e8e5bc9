//! How long an app's OpenMP regions last, from whole runs of it
//! (`docs/policies/auto.md`, Reversible first).
//!
//! A DoP reaches a program when its next region starts, so a cut lasts as
//! long as the region it starts; policies cut a team only where every region
//! of the program is known to be short next to the epoch. The regions still
//! to come of a run are not known from the run so far (a program may run
//! short regions first and its main computation as one long region), so the
//! knowledge comes from earlier runs of the same program, whole: from its
//! start to a successful exit.
//!
//! What observations tell: the DoP channel says at each observation whether
//! the app is inside a region and how many regions ended. A region seen
//! inside at consecutive observations spanning `S` lasted less than `S` plus
//! two epochs (it may have begun just after the observation before and ended
//! just before the one after); a region seen at most once, less than two
//! epochs; every region, however short, is bounded so. A [`RegionRecord`]
//! keeps, over an app's whole runs, the longest such span and the epoch of
//! the run it came from, so [`RegionRecord::bound`] is an upper bound on
//! every region of every run recorded.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ids::AppId;
use crate::nanos;
use crate::trace::{Trace, TraceEvent};

/// What whole runs of one program said about its regions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionRecord {
    /// Whole runs recorded (start to successful exit, reporting through the
    /// DoP channel).
    pub runs: u32,
    /// The longest span over which one region was seen at consecutive
    /// observations (zero when no region was seen at two).
    #[serde(with = "nanos")]
    pub longest: Duration,
    /// The epoch of the run that saw `longest` (the longest epoch, when no
    /// region was seen twice).
    #[serde(with = "nanos")]
    pub epoch: Duration,
}

impl RegionRecord {
    /// An upper bound on every region of the runs recorded: the longest
    /// span plus two epochs (module docs).
    pub fn bound(&self) -> Duration {
        self.longest + 2 * self.epoch
    }

    /// Adds another record of the same program: the longer bound stays.
    fn merge(&mut self, other: &RegionRecord) {
        if other.bound() > self.bound() {
            self.longest = other.longest;
            self.epoch = other.epoch;
        }
        self.runs += other.runs;
    }
}

/// Region records by app name (the workload's `name`, as solo times are kept).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RegionRecords {
    apps: BTreeMap<String, RegionRecord>,
}

impl FromIterator<(String, RegionRecord)> for RegionRecords {
    /// Records by name; a name given twice keeps both runs' (merged).
    fn from_iter<I: IntoIterator<Item = (String, RegionRecord)>>(iter: I) -> Self {
        let mut out = RegionRecords::default();
        for (name, r) in iter {
            out.apps.entry(name).or_default().merge(&r);
        }
        out
    }
}

impl RegionRecords {
    /// The record of the app named `name`, if a whole run of it was recorded.
    pub fn get(&self, name: &str) -> Option<&RegionRecord> {
        self.apps.get(name).filter(|r| r.runs > 0)
    }

    pub fn is_empty(&self) -> bool {
        self.apps.is_empty()
    }

    /// Whole runs recorded, over every app.
    pub fn runs(&self) -> u32 {
        self.apps.values().map(|r| r.runs).sum()
    }

    /// Adds one whole run of the app named `name`.
    pub fn add(&mut self, name: &str, record: RegionRecord) {
        self.apps
            .entry(name.to_string())
            .or_default()
            .merge(&record);
    }

    /// Adds `other`'s records to these.
    pub fn extend(&mut self, other: &RegionRecords) {
        for (name, r) in &other.apps {
            self.apps.entry(name.clone()).or_default().merge(r);
        }
    }

    /// The whole runs in a trace: every instance that exited successfully
    /// and reported through the DoP channel, by its app's name.
    pub fn from_trace(trace: &Trace) -> RegionRecords {
        let epoch = trace.header.epoch;
        let mut spans: BTreeMap<AppId, Span> = BTreeMap::new();
        let mut out = RegionRecords::default();
        for e in &trace.events {
            match e {
                TraceEvent::Obs(o) => {
                    for s in &o.apps {
                        let span = spans.entry(s.app).or_default();
                        span.see(
                            o.at,
                            s.omp.as_ref().map(|m| (m.in_parallel, m.regions_completed)),
                        );
                    }
                }
                TraceEvent::Exit { app, status, .. } if status.success() => {
                    let Some(span) = spans.remove(app).filter(|s| s.reported) else {
                        continue;
                    };
                    let Some(spec) = trace.header.workload.apps.get(app.app as usize) else {
                        continue;
                    };
                    out.apps
                        .entry(spec.name.clone())
                        .or_default()
                        .merge(&RegionRecord {
                            runs: 1,
                            longest: span.longest,
                            epoch,
                        });
                }
                _ => {}
            }
        }
        out
    }
}

/// One instance's regions as the observations saw them (module docs): what
/// a whole run leaves as its [`RegionRecord`]; the knowledge store's learner
/// keeps one per instance (`coloc_model::knowledge`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Some observation had the DoP channel's report.
    pub reported: bool,
    /// The region seen at the last observation (regions ended before it)
    /// and when it was first seen.
    current: Option<(u64, Duration)>,
    /// The longest span over which one region was seen at consecutive
    /// observations.
    pub longest: Duration,
}

impl Span {
    /// Takes one observation: inside a region or not, and regions ended.
    pub fn see(&mut self, at: Duration, omp: Option<(bool, u64)>) {
        let Some((inside, ended)) = omp else {
            self.current = None;
            return;
        };
        self.reported = true;
        self.current = match (inside, self.current) {
            (false, _) => None,
            (true, Some((region, since))) if region == ended => {
                self.longest = self.longest.max(at.saturating_sub(since));
                Some((region, since))
            }
            (true, _) => Some((ended, at)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::testtrace::{trace, Ev};
    use crate::observation::{AppSample, Observation, OmpSample};

    /// An observation at `secs` of app 0 inside region `ended + 1` (or
    /// outside any) with `ended` regions ended.
    fn obs(secs: f64, inside: bool, ended: u64) -> TraceEvent {
        TraceEvent::Obs(Box::new(Observation {
            at: Duration::from_secs_f64(secs),
            apps: vec![AppSample {
                omp: Some(OmpSample {
                    in_parallel: inside,
                    regions_completed: ended,
                    ..OmpSample::default()
                }),
                ..AppSample::default()
            }],
            ..Observation::default()
        }))
    }

    /// App `a` started at 0 with these observations, then exited with
    /// `exit_code` at 9 s.
    fn one_run(obs: Vec<TraceEvent>, exit_code: i32) -> Trace {
        let mut t = trace(
            "auto",
            &["a"],
            &[(0.0, Ev::Start(0, 0)), (9.0, Ev::Exit(0, 0, exit_code))],
        );
        let exit = t.events.pop().expect("the exit");
        t.events.extend(obs);
        t.events.push(exit);
        t
    }

    /// Short regions then one long one (the case a DoP cut strands): the
    /// long one was seen inside from 0.3 to 0.6 s, so every region lasted
    /// less than 0.3 s plus two 100 ms epochs.
    #[test]
    fn the_longest_region_bounds_every_region_of_the_run() {
        let t = one_run(
            vec![
                obs(0.1, true, 0),
                obs(0.2, true, 2),
                obs(0.3, true, 3),
                obs(0.4, true, 3),
                obs(0.5, true, 3),
                obs(0.6, true, 3),
                obs(0.7, false, 4),
            ],
            0,
        );
        let r = RegionRecords::from_trace(&t);
        let a = r.get("a").expect("a whole run");
        assert_eq!(a.runs, 1);
        assert_eq!(a.longest, Duration::from_millis(300));
        assert_eq!(a.bound(), Duration::from_millis(500));
    }

    /// Regions that each end before the next observation: none seen twice,
    /// every one shorter than two epochs.
    #[test]
    fn regions_never_seen_twice_are_bounded_by_two_epochs() {
        let t = one_run(
            (1..=5).map(|k| obs(0.1 * k as f64, true, 3 * k)).collect(),
            0,
        );
        let a = *RegionRecords::from_trace(&t).get("a").unwrap();
        assert_eq!(a.longest, Duration::ZERO);
        assert_eq!(a.bound(), Duration::from_millis(200));
    }

    /// A run that failed, or one without the DoP channel, is no record.
    #[test]
    fn only_whole_runs_that_reported_are_recorded() {
        let failed = one_run(vec![obs(0.1, true, 0), obs(0.2, true, 0)], 1);
        assert!(RegionRecords::from_trace(&failed).get("a").is_none());
        let silent = one_run(
            vec![TraceEvent::Obs(Box::new(Observation {
                at: Duration::from_millis(100),
                apps: vec![AppSample::default()],
                ..Observation::default()
            }))],
            0,
        );
        assert!(RegionRecords::from_trace(&silent).get("a").is_none());
    }

    /// Records of the same program add up; the longer bound stays.
    #[test]
    fn records_merge_by_name_keeping_the_longer_bound() {
        let short = RegionRecords::from_trace(&one_run(vec![obs(0.1, true, 0)], 0));
        let long = RegionRecords::from_trace(&one_run(
            vec![obs(0.1, true, 0), obs(0.2, true, 0), obs(0.3, true, 0)],
            0,
        ));
        let mut all = short.clone();
        all.extend(&long);
        all.extend(&short);
        let a = all.get("a").unwrap();
        assert_eq!((a.runs, a.longest), (3, Duration::from_millis(200)));
        let text = serde_json::to_string(&all).unwrap();
        assert_eq!(serde_json::from_str::<RegionRecords>(&text).unwrap(), all);
    }
}
