//! How fast the simulator is (docs/architecture.md, Conventions: performance
//! numbers come from a command that prints them, never from timed tests):
//! `coloc bench sim` prints [`sim_speed_for`].
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

use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use coloc_manager::{run, RunOptions, DEFAULT_EPOCH};
use coloc_model::workload::parse_workload;
use coloc_model::{TraceEvent, Workload};
use coloc_policy::{PolicyContext, PolicyInfo};

use coloc_sim::oracle::{self, OracleOptions};
use coloc_sim::platform::platform;
use coloc_sim::SimMachine;

/// The engine benchmark's workload: NuPoCo- and ReSense-like apps, 8
/// threads each, arriving over 30 s.
const DYNAMIC: &str = include_str!("sim-dynamic-8.toml");

/// The oracle benchmark's workload: 4 apps × 8 threads, all at 0 s.
const STATIC: &str = include_str!("sim-oracle-4x8.toml");

/// Configurations the oracle benchmark evaluates.
const ORACLE_CONFIGS: usize = 64;

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
}

impl EngineSpeed {
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.wall.as_secs_f64()
    }

    pub fn speedup(&self) -> f64 {
        self.simulated.as_secs_f64() / self.wall.as_secs_f64()
    }
}

/// The oracle run.
#[derive(Clone, Debug, PartialEq)]
pub struct OracleSpeed {
    pub evaluated: usize,
    pub threads: usize,
    pub wall: Duration,
}

impl OracleSpeed {
    pub fn configs_per_s(&self) -> f64 {
        self.evaluated as f64 / self.wall.as_secs_f64()
    }
}

/// Everything [`sim_speed_for`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSpeed {
    pub engine: Vec<EngineSpeed>,
    pub oracle: OracleSpeed,
}

/// Runs both benchmarks, the engine under each of `policies` (names of
/// `coloc_policy::POLICIES`; the context is empty, as for a run without a
/// profile store). `progress` is told what starts next, before each run (a
/// run can take tens of seconds).
pub fn sim_speed_for(policies: &[&str], progress: &dyn Fn(&str)) -> Result<SimSpeed> {
    let dynamic = parse_workload("bench-dynamic-8.toml", DYNAMIC)?;
    let engine = policies
        .iter()
        .map(|name| {
            let info = coloc_policy::POLICIES
                .iter()
                .find(|p| p.name == *name)
                .ok_or_else(|| coloc_policy::UnknownPolicy(name.to_string()))?;
            progress(&format!("engine: {name} on nupoco-amd64"));
            engine_run(&dynamic, info)
        })
        .collect::<Result<Vec<_>>>()?;
    let w = parse_workload("bench-oracle-4x8.toml", STATIC)?;
    let p = platform("opteron48").context("no opteron48 platform")?;
    let opts = OracleOptions {
        max_configs: ORACLE_CONFIGS,
        ..OracleOptions::default()
    };
    progress(&format!(
        "oracle: {ORACLE_CONFIGS} configurations on opteron48"
    ));
    let t0 = Instant::now();
    let report = oracle::search(&p, &w, &opts)?;
    Ok(SimSpeed {
        engine,
        oracle: OracleSpeed {
            evaluated: report.evaluated,
            threads: opts.threads,
            wall: t0.elapsed(),
        },
    })
}

fn engine_run(w: &Workload, info: &PolicyInfo) -> Result<EngineSpeed> {
    let policy = info.name;
    let p = platform("nupoco-amd64").context("no nupoco-amd64 platform")?;
    let mut machine = SimMachine::new(p, 1);
    let mut pol = info.make(&PolicyContext::default());
    let opts = RunOptions::simulated(DEFAULT_EPOCH, 1);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let t0 = Instant::now();
    run(&mut machine, pol.as_mut(), w, &opts, &mut trace)
        .with_context(|| format!("bench: {policy}"))?;
    let wall = t0.elapsed();
    let simulated = match trace.last() {
        Some(TraceEvent::End { t, .. }) => *t,
        _ => bail!("bench: {policy}: the trace has no end"),
    };
    Ok(EngineSpeed {
        policy,
        steps: machine.engine().steps(),
        solves: machine.engine().solves(),
        rounds: machine.engine().rounds(),
        simulated,
        wall,
    })
}

impl fmt::Display for SimSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "engine: 8-app dynamic workload on nupoco-amd64 (64 cores), 100 ms epochs"
        )?;
        writeln!(
            f,
            "{:<16} {:>10} {:>8} {:>8} {:>12} {:>10} {:>14} {:>12}",
            "policy", "events", "solves", "rounds", "simulated", "wall", "events/s", "sim/wall"
        )?;
        for e in &self.engine {
            writeln!(
                f,
                "{:<16} {:>10} {:>8} {:>8} {:>11.1}s {:>9.3}s {:>14.0} {:>11.1}x",
                e.policy,
                e.steps,
                e.solves,
                e.rounds,
                e.simulated.as_secs_f64(),
                e.wall.as_secs_f64(),
                e.steps_per_s(),
                e.speedup()
            )?;
        }
        writeln!(
            f,
            "oracle: 4 apps x 8 threads on opteron48 (48 cores), bounded search: {} configurations in {:.2} s on {} threads = {:.2} configurations/s",
            self.oracle.evaluated,
            self.oracle.wall.as_secs_f64(),
            self.oracle.threads,
            self.oracle.configs_per_s()
        )
    }
}
