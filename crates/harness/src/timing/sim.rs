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
//! Beside each figure: the CPU time it took (wall time inflates on a loaded
//! machine, CPU time much less); the CLI prints it beside the figure of a
//! baseline commit ([`Baseline`]: the CLI's stored `sim-baseline.toml`
//! unless `--baseline` names another).

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

/// One engine run.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineSpeed {
    pub policy: &'static str,
    /// Intervals simulated (events).
    pub steps: u64,
    /// Contention fixed points computed (the other intervals reused a
    /// remembered solution), and their rounds.
    pub solves: u64,
    pub rounds: u64,
    pub simulated: Duration,
    pub wall: Duration,
    /// CPU time of the run.
    pub cpu: Duration,
}

impl EngineSpeed {
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.wall.as_secs_f64()
    }

    /// Events per second of CPU time.
    pub fn steps_per_cpu_s(&self) -> f64 {
        self.steps as f64 / self.cpu.as_secs_f64()
    }
}

/// The oracle run.
#[derive(Clone, Debug, PartialEq)]
pub struct OracleSpeed {
    pub evaluated: usize,
    pub threads: usize,
    pub wall: Duration,
    /// CPU time of the search, on all its threads.
    pub cpu: Duration,
}

impl OracleSpeed {
    pub fn configs_per_s(&self) -> f64 {
        self.evaluated as f64 / self.wall.as_secs_f64()
    }

    /// Configurations per second of CPU time (summed over the workers).
    pub fn configs_per_cpu_s(&self) -> f64 {
        self.evaluated as f64 / self.cpu.as_secs_f64()
    }
}

/// Everything [`sim_speed_for`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSpeed {
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

/// Runs both benchmarks, the engine under each of `policies` (names of
/// `coloc_policy::POLICIES`; the context is empty, as for a run without a
/// profile store). `progress` is told what starts next, before each run (a
/// run can take tens of seconds).
pub fn sim_speed_for(
    policies: &[&str],
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
            engine_run(&dynamic, info)
        })
        .collect::<Result<Vec<_>, HarnessError>>()?;
    let w = parse_workload("bench-oracle-4x8.toml", STATIC)?;
    let p = built_in("opteron48")?;
    let opts = OracleOptions {
        max_configs: ORACLE_CONFIGS,
        ..OracleOptions::default()
    };
    progress(SimStep::Oracle);
    let (t0, c0) = (Instant::now(), cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID));
    let report = oracle::search(&p, &w, &opts)?;
    Ok(SimSpeed {
        engine,
        oracle: OracleSpeed {
            evaluated: report.evaluated,
            threads: opts.threads,
            wall: t0.elapsed(),
            cpu: cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID).saturating_sub(c0),
        },
    })
}

fn engine_run(w: &Workload, info: &PolicyInfo) -> Result<EngineSpeed, HarnessError> {
    let policy = info.name;
    let p = built_in("nupoco-amd64")?;
    let mut machine = SimMachine::new(p, 1);
    let mut pol = info.make(&PolicyContext::default());
    let opts = RunOptions::simulated(DEFAULT_EPOCH, 1);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let (t0, c0) = (Instant::now(), cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID));
    run(&mut machine, pol.as_mut(), w, &opts, &mut trace).map_err(|source| {
        HarnessError::BenchRun {
            policy: policy.into(),
            source,
        }
    })?;
    let wall = t0.elapsed();
    let cpu = cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID).saturating_sub(c0);
    let simulated = match trace.last() {
        Some(TraceEvent::End { t, .. }) => *t,
        _ => {
            return Err(HarnessError::NoEnd {
                policy: policy.into(),
            })
        }
    };
    Ok(EngineSpeed {
        policy,
        steps: machine.engine().steps(),
        solves: machine.engine().solves(),
        rounds: machine.engine().rounds(),
        simulated,
        wall,
        cpu,
    })
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
        let speed = sim_speed_for(&["equal"], &|s| {
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
        let unknown = sim_speed_for(&["no-such"], &|_| {}).unwrap_err();
        assert!(unknown.to_string().contains("no-such"), "{unknown}");
    }
}
