//! Records from trace events, one event at a time (docs/knowledge.md, What is
//! learned).
//!
//! Between two events nothing starts, ends or is re-placed, so the learner
//! integrates over the gaps: for every running instance it adds the gap to
//! its seconds shared (when another ran too) and weighted (`2 / n` of it with
//! `n` running), to the time of the arrangement it was in and of the team
//! size it ran with. An instance's record is complete when it exits: every
//! instance that overlapped it has started by then. This is the span
//! computation of the co-run rates (each life cut at every start and exit)
//! done online, so the node service needs no history and the harness feeds
//! a finished trace through the same code.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::trials::{PairLog, SetPair};
use super::{Arrangement, OmpTotals, Partner, ProgramKey, Record, Source};
use crate::cpuset::CpuSet;
use crate::ids::AppId;
use crate::metrics::regions::Span;
use crate::plan::Placement;
use crate::trace::{ExitStatus, TraceEvent};

/// The share of the time an arrangement or a team size must hold for a
/// record to name it: 90%, so that the first decision after a start (within
/// one epoch) and a last reshuffle do not make a run "mixed", while a run
/// that spent a fifth of its time under another arrangement does.
pub const HELD: f64 = 0.9;

/// How often the node service writes a snapshot of each running instance's
/// record: a long-lived app is learned while it runs, and a daemon killed
/// with `kill -9` loses at most this much of it.
pub const SNAPSHOT_EVERY: Duration = Duration::from_secs(60);

/// One running instance, as integrated so far.
#[derive(Clone, Debug)]
struct Live {
    pid: u32,
    start: Duration,
    threads_requested: u32,
    /// Every instance that ran at some time during its life.
    partners: BTreeSet<AppId>,
    shared: f64,
    weighted: f64,
    /// Seconds in each arrangement (alone ones while alone, the others while
    /// shared).
    arrangements: BTreeMap<Arrangement, f64>,
    /// Seconds at each team size.
    teams: BTreeMap<u32, f64>,
    omp: Option<OmpTotals>,
    /// Its regions as the observations saw them.
    span: Span,
    last_snapshot: Duration,
}

/// Makes [`Record`]s from trace events ([`Learner::feed`]).
#[derive(Clone, Debug)]
pub struct Learner {
    source: Source,
    started_unix: f64,
    /// The trace's times are simulated, not wall time.
    simulated: bool,
    /// The CPUs of the machine, from the trace header.
    cpus: CpuSet,
    /// The run's epoch, from the trace header.
    epoch: Duration,
    /// Each app's program and name, by app index; apps without one are
    /// co-runners of others but get no record.
    programs: BTreeMap<u32, (ProgramKey, String)>,
    running: BTreeMap<AppId, Live>,
    placements: BTreeMap<AppId, Placement>,
    dops: BTreeMap<AppId, u32>,
    now: Duration,
    snapshot_every: Option<Duration>,
    /// The pairs `auto`'s trials completed ([`Learner::take_pairs`]).
    pairs: PairLog,
}

impl Learner {
    /// A learner of records from `source`; give it each app's program
    /// ([`Learner::identify`]) before that app starts.
    pub fn new(source: Source) -> Self {
        Self {
            source,
            started_unix: 0.0,
            simulated: false,
            cpus: CpuSet::new(),
            epoch: Duration::ZERO,
            programs: BTreeMap::new(),
            running: BTreeMap::new(),
            placements: BTreeMap::new(),
            dops: BTreeMap::new(),
            now: Duration::ZERO,
            snapshot_every: None,
            pairs: PairLog::default(),
        }
    }

    /// Also makes a snapshot of each instance running for `every` or more,
    /// every `every`, at observations (the node service).
    pub fn with_snapshots(mut self, every: Duration) -> Self {
        self.snapshot_every = Some(every);
        self
    }

    /// App `app` of the run is program `program`, called `name`.
    pub fn identify(&mut self, app: u32, program: ProgramKey, name: &str) {
        self.programs.insert(app, (program, name.to_string()));
    }

    /// The pairs of windows `auto`'s trials completed on sets of identified
    /// programs since last asked (docs/knowledge.md, Trials of a set of
    /// programs).
    pub fn take_pairs(&mut self) -> Vec<SetPair> {
        self.pairs.take()
    }

    /// Whether app `app` has a program.
    pub fn knows(&self, app: u32) -> bool {
        self.programs.contains_key(&app)
    }

    /// Takes one event; returns the records it completes: the record of an
    /// instance that exited normally (or whose status nobody could know: an
    /// attached process), and snapshots due at an observation.
    pub fn feed(&mut self, event: &TraceEvent) -> Vec<Record> {
        if let Some(t) = event.time() {
            self.advance(t);
        }
        match event {
            TraceEvent::Header(h) => {
                self.started_unix = h.started_unix;
                self.simulated = h.machine.starts_with("sim:");
                self.cpus = h.topology.cpus().clone();
                self.epoch = h.epoch;
                Vec::new()
            }
            TraceEvent::Start {
                t,
                app,
                pid,
                threads_requested,
                ..
            } => {
                self.start(*t, *app, *pid, *threads_requested);
                Vec::new()
            }
            TraceEvent::Plan { t, plan, .. } => {
                let run = (self.started_unix, self.simulated);
                self.pairs.see(*t, &plan.verdicts, &self.programs, run);
                for p in &plan.apps {
                    self.placements.insert(p.app, p.placement.clone());
                    if let Some(d) = p.dop {
                        self.dops.insert(p.app, d);
                    }
                }
                Vec::new()
            }
            TraceEvent::Obs(o) => {
                for s in &o.apps {
                    let Some(live) = self.running.get_mut(&s.app) else {
                        continue;
                    };
                    let seen = s.omp.as_ref().map(|m| (m.in_parallel, m.regions_completed));
                    live.span.see(o.at, seen);
                    if let Some(omp) = &s.omp {
                        live.omp = Some(OmpTotals {
                            regions: omp.regions_completed,
                            iterations: omp.iterations_completed,
                            calls: omp.max_threads_asked,
                            parallel_secs: omp.parallel_ns as f64 / 1e9,
                            observed_secs: o.at.saturating_sub(live.start).as_secs_f64(),
                            longest_region_secs: Some(live.span.longest.as_secs_f64()),
                            epoch_secs: Some(self.epoch.as_secs_f64()),
                        });
                    }
                }
                self.snapshots()
            }
            TraceEvent::Exit {
                app, status, usage, ..
            } => {
                self.placements.remove(app);
                self.dops.remove(app);
                let Some(live) = self.running.remove(app) else {
                    return Vec::new();
                };
                let learned = status.success() || *status == ExitStatus::Unknown;
                let cpu = usage.map(|u| u.cpu_ns as f64 / 1e9);
                self.record(*app, &live, true, cpu)
                    .filter(|_| learned)
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    fn start(&mut self, t: Duration, app: AppId, pid: u32, threads_requested: u32) {
        let partners: BTreeSet<AppId> = self.running.keys().copied().collect();
        for live in self.running.values_mut() {
            live.partners.insert(app);
        }
        self.running.insert(
            app,
            Live {
                pid,
                start: t,
                threads_requested,
                partners,
                shared: 0.0,
                weighted: 0.0,
                arrangements: BTreeMap::new(),
                teams: BTreeMap::new(),
                omp: None,
                span: Span::default(),
                last_snapshot: t,
            },
        );
    }

    /// Integrates every running instance up to `t`.
    fn advance(&mut self, t: Duration) {
        let dt = t.saturating_sub(self.now).as_secs_f64();
        self.now = self.now.max(t);
        if dt <= 0.0 {
            return;
        }
        let n = self.running.len();
        let arrangements: Vec<(AppId, Arrangement)> = self
            .running
            .keys()
            .map(|&app| (app, self.arrangement_now(app)))
            .collect();
        for (app, arrangement) in arrangements {
            let team = self.dops.get(&app).copied();
            let live = self.running.get_mut(&app).expect("listed from running");
            if n > 1 {
                live.shared += dt;
                live.weighted += dt * 2.0 / n as f64;
            }
            *live.arrangements.entry(arrangement).or_default() += dt;
            *live
                .teams
                .entry(team.unwrap_or(live.threads_requested))
                .or_default() += dt;
        }
    }

    /// The CPUs `app`'s placement lets it use now (every CPU when unmanaged).
    fn cpus_of(&self, app: AppId) -> CpuSet {
        match self.placements.get(&app) {
            None | Some(Placement::Unmanaged) => self.cpus.clone(),
            Some(p) => p.cpus(),
        }
    }

    fn arrangement_now(&self, app: AppId) -> Arrangement {
        let mine = self.cpus_of(app);
        let everything = self.cpus.is_subset(&mine);
        if self.running.len() <= 1 {
            return if everything {
                Arrangement::Alone
            } else {
                Arrangement::Confined
            };
        }
        if everything {
            return Arrangement::Linux;
        }
        let shared = self
            .running
            .keys()
            .filter(|&&other| other != app)
            .any(|&other| !mine.is_disjoint(&self.cpus_of(other)));
        if shared {
            Arrangement::Pinned
        } else {
            Arrangement::Partitioned
        }
    }

    fn snapshots(&mut self) -> Vec<Record> {
        let Some(every) = self.snapshot_every else {
            return Vec::new();
        };
        let now = self.now;
        let due: Vec<AppId> = self
            .running
            .iter()
            .filter(|(_, l)| now.saturating_sub(l.last_snapshot) >= every)
            .map(|(a, _)| *a)
            .collect();
        let mut out = Vec::new();
        for app in due {
            let live = self.running.get_mut(&app).expect("listed from running");
            live.last_snapshot = now;
            let live = live.clone();
            out.extend(self.record(app, &live, false, None));
        }
        out
    }

    /// The record of `live` (app `app`) as integrated up to now.
    fn record(&self, app: AppId, live: &Live, ended: bool, cpu: Option<f64>) -> Option<Record> {
        let (program, name) = self.programs.get(&app.app)?.clone();
        let wall = self.now.saturating_sub(live.start).as_secs_f64();
        let alone = live.shared <= 0.0;
        let arrangement = held(
            live.arrangements
                .iter()
                .filter(|(a, _)| alone == matches!(a, Arrangement::Alone | Arrangement::Confined)),
        )
        .unwrap_or(Arrangement::Mixed);
        let partner = match live.partners.iter().collect::<Vec<_>>()[..] {
            [] => Partner::None,
            [one] => match self.programs.get(&one.app) {
                Some((program, name)) => Partner::Program {
                    program: program.clone(),
                    name: name.clone(),
                },
                None => Partner::Others { instances: 1 },
            },
            ref many => Partner::Others {
                instances: many.len() as u32,
            },
        };
        Some(Record {
            program,
            name,
            instance: format!("{:.3}/{app}/{}", self.started_unix, live.pid),
            threads: held(live.teams.iter()),
            arrangement,
            partner,
            source: self.source,
            at_unix: if self.simulated {
                self.started_unix as i64
            } else {
                (self.started_unix + self.now.as_secs_f64()) as i64
            },
            ended,
            wall_secs: wall,
            cpu_secs: cpu,
            shared_secs: live.shared,
            weighted_secs: live.weighted,
            omp: live.omp,
        })
    }
}

/// The value that holds for [`HELD`] of the total time, if one does.
fn held<'a, K: Copy + 'a>(times: impl Iterator<Item = (&'a K, &'a f64)> + Clone) -> Option<K> {
    let total: f64 = times.clone().map(|(_, t)| t).sum();
    times
        .filter(|(_, t)| total > 0.0 && **t >= HELD * total)
        .map(|(k, _)| *k)
        .next()
}
