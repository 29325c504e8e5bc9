//! How fast the simulator is (docs/architecture.md, Conventions: performance
//! numbers come from a command that prints them, never from timed tests):
//! `coloc bench sim` prints what [`sim_speed_for`] measures.
//!
//! - **Engine**: an 8-app dynamic workload (arrivals spread over 30 s, two
//!   apps repeated) on the 64-core NuPoCo AMD platform, run by the Manager
//!   under `native` (unpinned threads: the balancer model runs every 10 ms)
//!   and `equal` (pinned: only phase ends, arrivals and epochs are events) by
//!   default, or any policies ([`sim_speed_for`]).
//!   Speed is solved intervals (events) per second of wall time, and
//!   simulated seconds per wall second.
//! - **Oracle**: a bounded search of 4 apps × 8 threads on the 48-core
//!   Opteron, in configurations evaluated per second.
//!
//! Each figure is measured over repetitions of its run until they add up
//! to a given wall time ([`DEFAULT_MEASURE`]), as a median with its least
//! and greatest value ([`Spread`]), per second of wall time and of CPU time
//! (wall time inflates on a loaded machine, CPU time much less); the CLI
//! prints it beside the figure of a baseline commit ([`Baseline`]: the
//! CLI's stored `sim-baseline.toml` unless `--baseline` names another).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use nix::time::{clock_gettime, ClockId};
use serde::Deserialize;

use coloc_manager::{run, RunOptions, DEFAULT_EPOCH};
use coloc_model::workload::parse_workload;
use coloc_model::{TraceEvent, Workload};
use coloc_policy::{PolicyContext, PolicyInfo};

use coloc_sim::oracle::{self, OracleOptions};
use coloc_sim::platform::{platform, Platform};
use coloc_sim::SimMachine;

use crate::HarnessError;

/// The engine benchmark's workload: NuPoCo- and ReSense-like apps, 8
/// threads each, arriving over 30 s.
const DYNAMIC: &str = include_str!("sim-dynamic-8.toml");

/// The oracle benchmark's workload: 4 apps × 8 threads, all at 0 s.
const STATIC: &str = include_str!("sim-oracle-4x8.toml");

/// Configurations the oracle benchmark evaluates.
pub const ORACLE_CONFIGS: usize = 64;

/// Another commit's figures, printed beside this run's.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The commit they were measured at.
    pub commit: String,
    /// Events per second of wall time, per policy.
    pub events_per_s: BTreeMap<String, f64>,
    pub oracle_configs_per_s: f64,
}

impl Baseline {
    /// A baseline file's contents; the error names the file and the field.
    pub fn parse(name: &str, text: &str) -> Result<Self, HarnessError> {
        toml::from_str(text).map_err(|source| HarnessError::SimBaseline {
            name: name.into(),
            source: Box::new(source),
        })
    }
}

/// CPU time of the calling thread, or of the whole process (the oracle's
/// workers included).
fn cpu_time(clock: ClockId) -> Duration {
    clock_gettime(clock).map_or(Duration::ZERO, Duration::from)
}

/// How long each figure is measured for unless the caller says otherwise
/// (`coloc bench sim --seconds`; docs/simulator.md, Speed).
pub const DEFAULT_MEASURE: Duration = Duration::from_secs(1);

/// One repetition of a measured run: its wall and CPU time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timed {
    pub wall: Duration,
    pub cpu: Duration,
}

/// The middle and the ends of one figure over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `values`' median (of the middle two when their number is even),
    /// least and greatest; None when there are none.
    pub fn of(values: &[f64]) -> Option<Self> {
        let median = coloc_model::stats::Summary::of(values)?.median;
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        Some(Self { median, min, max })
    }
}

/// `count` per second of wall time and per second of CPU time, in each of
/// `runs`.
fn rates(count: f64, runs: &[Timed]) -> (Spread, Spread) {
    let per = |time: fn(&Timed) -> Duration| {
        let v: Vec<f64> = runs.iter().map(|r| count / time(r).as_secs_f64()).collect();
        Spread::of(&v).unwrap_or(Spread {
            median: f64::NAN,
            min: f64::NAN,
            max: f64::NAN,
        })
    };
    (per(|r| r.wall), per(|r| r.cpu))
}

/// One engine workload under one policy, run again and again: every
/// repetition simulates the same events ([`sim_speed_for`] checks).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineSpeed {
    pub policy: &'static str,
    /// Intervals simulated (events) per run.
    pub steps: u64,
    /// Contention fixed points computed per run (the other intervals
    /// reused a remembered solution), and their rounds.
    pub solves: u64,
    pub rounds: u64,
    pub simulated: Duration,
    /// Each repetition's times (CPU: the running thread's), in order.
    pub runs: Vec<Timed>,
}

impl EngineSpeed {
    /// Events per second of wall time, and per second of CPU time.
    pub fn steps_per_s(&self) -> (Spread, Spread) {
        rates(self.steps as f64, &self.runs)
    }
}

/// The oracle's bounded search, run again and again.
#[derive(Clone, Debug, PartialEq)]
pub struct OracleSpeed {
    /// Configurations evaluated per search.
    pub evaluated: usize,
    pub threads: usize,
    /// Each search's times (CPU: the process's, its workers included).
    pub runs: Vec<Timed>,
}

impl OracleSpeed {
    /// Configurations per second of wall time, and per second of CPU time
    /// (summed over the workers).
    pub fn configs_per_s(&self) -> (Spread, Spread) {
        rates(self.evaluated as f64, &self.runs)
    }
}

/// Everything [`sim_speed_for`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSpeed {
    /// How long each figure was measured for, at least.
    pub measure: Duration,
    pub engine: Vec<EngineSpeed>,
    pub oracle: OracleSpeed,
}

/// What [`sim_speed_for`] starts next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimStep<'a> {
    /// The engine run under this policy, on nupoco-amd64.
    Engine(&'a str),
    /// The oracle's search of [`ORACLE_CONFIGS`] configurations on opteron48.
    Oracle,
}

/// A built-in platform by name.
fn built_in(name: &'static str) -> Result<Platform, HarnessError> {
    platform(name).ok_or(HarnessError::BuiltInPlatform { name })
}

/// `once` (which times itself) again until the repetitions' wall time adds
/// up to `measure` (at least once). A run of 30–165 ms measured once varied
/// by ±30% with the order of two binaries' runs even on a quiet machine;
/// the median of a second's repetitions varies much less (docs/simulator.md,
/// Speed).
fn repeat<T>(
    measure: Duration,
    mut once: impl FnMut() -> Result<(T, Timed), HarnessError>,
) -> Result<(Vec<T>, Vec<Timed>), HarnessError> {
    let (mut outs, mut runs) = (Vec::new(), Vec::new());
    let mut spent = Duration::ZERO;
    loop {
        let (out, timed) = once()?;
        outs.push(out);
        runs.push(timed);
        spent += timed.wall;
        if spent >= measure {
            return Ok((outs, runs));
        }
    }
}

/// What every repetition of the run `what` simulated, which must be the
/// same each time (the simulator is deterministic); else the first
/// difference, as an error. `outs` holds one repetition at least.
fn same_each_time<T: Copy + PartialEq + std::fmt::Debug>(
    what: &str,
    outs: &[T],
) -> Result<T, HarnessError> {
    let first = outs[0];
    match outs.iter().find(|o| **o != first) {
        None => Ok(first),
        Some(other) => Err(HarnessError::BenchNotRepeated {
            what: what.into(),
            first: format!("{first:?}"),
            then: format!("{other:?}"),
        }),
    }
}

/// `f`'s result and its wall time and CPU time on `clock`.
fn timed<T>(clock: ClockId, f: impl FnOnce() -> T) -> (T, Timed) {
    let (t0, c0) = (Instant::now(), cpu_time(clock));
    let out = f();
    let wall = t0.elapsed();
    let cpu = cpu_time(clock).saturating_sub(c0);
    (out, Timed { wall, cpu })
}

/// Runs both benchmarks, the engine under each of `policies` (names of
/// `coloc_policy::POLICIES`; the context is empty, as for a run without a
/// profile store), each figure repeated for `measure` of wall time
/// ([`DEFAULT_MEASURE`] by default). `progress` is told what starts next,
/// before each figure.
pub fn sim_speed_for(
    policies: &[&str],
    measure: Duration,
    progress: &dyn Fn(SimStep<'_>),
) -> Result<SimSpeed, HarnessError> {
    let dynamic = parse_workload("bench-dynamic-8.toml", DYNAMIC)?;
    let engine = policies
        .iter()
        .map(|name| {
            let info = coloc_policy::POLICIES
                .iter()
                .find(|p| p.name == *name)
                .ok_or_else(|| coloc_policy::UnknownPolicy(name.to_string()))?;
            progress(SimStep::Engine(name));
            let (outs, runs) = repeat(measure, || engine_run(&dynamic, info))?;
            let first = same_each_time(info.name, &outs)?;
            Ok(EngineSpeed {
                policy: info.name,
                steps: first.steps,
                solves: first.solves,
                rounds: first.rounds,
                simulated: first.simulated,
                runs,
            })
        })
        .collect::<Result<Vec<_>, HarnessError>>()?;
    let w = parse_workload("bench-oracle-4x8.toml", STATIC)?;
    let p = built_in("opteron48")?;
    let opts = OracleOptions {
        max_configs: ORACLE_CONFIGS,
        ..OracleOptions::default()
    };
    progress(SimStep::Oracle);
    let (evaluated, runs) = repeat(measure, || {
        let (report, t) = timed(ClockId::CLOCK_PROCESS_CPUTIME_ID, || {
            oracle::search(&p, &w, &opts)
        });
        Ok((report?.evaluated, t))
    })?;
    let evaluated = same_each_time("oracle", &evaluated)?;
    Ok(SimSpeed {
        measure,
        engine,
        oracle: OracleSpeed {
            evaluated,
            threads: opts.threads,
            runs,
        },
    })
}

/// What one engine run simulated.
#[derive(Clone, Copy, Debug, PartialEq)]
struct EngineCounts {
    steps: u64,
    solves: u64,
    rounds: u64,
    simulated: Duration,
}

/// One engine run: what it simulated, and the time of the Manager's run
/// alone (on this thread's CPU clock).
fn engine_run(w: &Workload, info: &PolicyInfo) -> Result<(EngineCounts, Timed), HarnessError> {
    let policy = info.name;
    let p = built_in("nupoco-amd64")?;
    let mut machine = SimMachine::new(p, 1);
    let mut pol = info.make(&PolicyContext::default());
    let opts = RunOptions::simulated(DEFAULT_EPOCH, 1);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let (ran, time) = timed(ClockId::CLOCK_THREAD_CPUTIME_ID, || {
        run(&mut machine, pol.as_mut(), w, &opts, &mut trace)
    });
    ran.map_err(|source| HarnessError::BenchRun {
        policy: policy.into(),
        source,
    })?;
    let simulated = match trace.last() {
        Some(TraceEvent::End { t, .. }) => *t,
        _ => {
            return Err(HarnessError::NoEnd {
                policy: policy.into(),
            })
        }
    };
    let counts = EngineCounts {
        steps: machine.engine().steps(),
        solves: machine.engine().solves(),
        rounds: machine.engine().rounds(),
        simulated,
    };
    Ok((counts, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A baseline file parses; a field that is not a baseline's is an
    /// error naming the file and the field.
    #[test]
    fn a_baseline_names_its_file_and_a_bad_field() {
        let text =
            "commit = \"abc1234\"\noracle_configs_per_s = 16.0\n[events_per_s]\nequal = 1250.0\n";
        let b = Baseline::parse("b.toml", text).unwrap();
        assert_eq!(b.events_per_s["equal"], 1250.0);
        let bad = format!("speed = 1\n{text}");
        let e = crate::error::chain(&Baseline::parse("b.toml", &bad).unwrap_err());
        assert!(e.contains("b.toml") && e.contains("speed"), "{e}");
    }

    /// The engine under one pinned policy and the oracle's bounded search,
    /// through the library: the engine's counts are those of a whole run
    /// (it reached the workload's end, every interval solved or reused) and
    /// the oracle evaluated at most its bound; no speed is asserted.
    #[test]
    fn the_engine_and_the_oracle_are_measured() {
        let steps = std::sync::Mutex::new(Vec::new());
        let speed = sim_speed_for(&["equal"], Duration::ZERO, &|s| {
            steps.lock().unwrap().push(format!("{s:?}"))
        })
        .unwrap();
        assert_eq!(steps.into_inner().unwrap(), ["Engine(\"equal\")", "Oracle"]);
        let [e] = &speed.engine[..] else {
            panic!("{:?}", speed.engine)
        };
        assert_eq!(e.policy, "equal");
        assert!(e.steps > 0 && e.solves <= e.steps, "{e:?}");
        assert!(e.simulated > Duration::ZERO, "{e:?}");
        assert!(
            (1..=ORACLE_CONFIGS).contains(&speed.oracle.evaluated),
            "{:?}",
            speed.oracle
        );
        assert_eq!((e.runs.len(), speed.oracle.runs.len()), (1, 1));
        let unknown = sim_speed_for(&["no-such"], Duration::ZERO, &|_| {}).unwrap_err();
        assert!(unknown.to_string().contains("no-such"), "{unknown}");
    }

    /// Repetitions go on until their wall time adds up to the time asked
    /// for, at least once; each repetition's own time is kept.
    #[test]
    fn a_figure_repeats_until_its_time_is_spent() {
        let ms = Duration::from_millis;
        let mut n = 0;
        let (outs, runs) = repeat(ms(10), || {
            n += 1;
            Ok((
                n,
                Timed {
                    wall: ms(3),
                    cpu: ms(2),
                },
            ))
        })
        .unwrap();
        // 3 + 3 + 3 < 10 ≤ 3 + 3 + 3 + 3.
        assert_eq!(outs, [1, 2, 3, 4]);
        assert_eq!(runs.len(), 4);
        let (once, _) = repeat(Duration::ZERO, || {
            Ok((
                (),
                Timed {
                    wall: ms(3),
                    cpu: ms(2),
                },
            ))
        })
        .unwrap();
        assert_eq!(once.len(), 1);
    }

    /// Rates per wall and CPU second: the median (of the middle two for an
    /// even count) and the ends, over the repetitions.
    #[test]
    fn rates_are_a_median_and_its_ends() {
        let ms = Duration::from_millis;
        let runs = [(100, 50), (200, 100), (50, 25), (400, 100)].map(|(w, c)| Timed {
            wall: ms(w),
            cpu: ms(c),
        });
        // 1,000 events: 10,000, 5,000, 20,000 and 2,500 per wall second.
        let (wall, cpu) = rates(1000.0, &runs);
        assert_eq!((wall.median, wall.min, wall.max), (7500.0, 2500.0, 20000.0));
        // 20,000, 10,000, 40,000 and 10,000 per CPU second.
        assert_eq!((cpu.median, cpu.min, cpu.max), (15000.0, 10000.0, 40000.0));
    }
}
