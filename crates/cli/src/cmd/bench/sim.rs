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
//!
//! Beside each figure: the CPU time it took (wall time inflates on a loaded
//! machine, CPU time much less), and the figure of a baseline commit
//! ([`Baseline`], `sim-baseline.toml` unless `--baseline` names another).

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::time::{clock_gettime, ClockId};
use serde::Deserialize;

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

/// The stored baseline: the figures of the commit before the simulator was
/// made faster.
const BASELINE: &str = include_str!("sim-baseline.toml");

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
    /// The stored baseline (`sim-baseline.toml`).
    pub fn stored() -> Self {
        Self::parse("sim-baseline.toml", BASELINE).expect("the stored baseline parses")
    }

    /// A baseline file's contents; the error names the file and the field.
    pub fn parse(name: &str, text: &str) -> Result<Self> {
        toml::from_str(text).with_context(|| format!("{name}: not a bench sim baseline"))
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

/// Everything [`sim_speed_for`] measured, and the baseline it is printed
/// beside.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSpeed {
    pub engine: Vec<EngineSpeed>,
    pub oracle: OracleSpeed,
    pub baseline: Baseline,
}

/// Runs both benchmarks, the engine under each of `policies` (names of
/// `coloc_policy::POLICIES`; the context is empty, as for a run without a
/// profile store). `progress` is told what starts next, before each run (a
/// run can take tens of seconds).
pub fn sim_speed_for(
    policies: &[&str],
    baseline: Baseline,
    progress: &dyn Fn(&str),
) -> Result<SimSpeed> {
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
        baseline,
    })
}

fn engine_run(w: &Workload, info: &PolicyInfo) -> Result<EngineSpeed> {
    let policy = info.name;
    let p = platform("nupoco-amd64").context("no nupoco-amd64 platform")?;
    let mut machine = SimMachine::new(p, 1);
    let mut pol = info.make(&PolicyContext::default());
    let opts = RunOptions::simulated(DEFAULT_EPOCH, 1);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let (t0, c0) = (Instant::now(), cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID));
    run(&mut machine, pol.as_mut(), w, &opts, &mut trace)
        .with_context(|| format!("bench: {policy}"))?;
    let wall = t0.elapsed();
    let cpu = cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID).saturating_sub(c0);
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
        cpu,
    })
}

impl fmt::Display for SimSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = &self.baseline;
        let beside = |now: f64, then: Option<f64>| match then {
            Some(b) if b > 0.0 => format!("{b:>12.0} {:>7.1}x", now / b),
            _ => format!("{:>12} {:>8}", "-", "-"),
        };
        writeln!(
            f,
            "engine: 8-app dynamic workload on nupoco-amd64 (64 cores), 100 ms epochs"
        )?;
        writeln!(
            f,
            "{:<16} {:>8} {:>7} {:>8} {:>10} {:>9} {:>9} {:>10} {:>10} {:>12} {:>8}",
            "policy",
            "events",
            "solves",
            "rounds",
            "simulated",
            "wall",
            "cpu",
            "events/s",
            "per cpu s",
            base.commit.as_str(),
            "ratio"
        )?;
        for e in &self.engine {
            writeln!(
                f,
                "{:<16} {:>8} {:>7} {:>8} {:>9.1}s {:>8.3}s {:>8.3}s {:>10.0} {:>10.0} {}",
                e.policy,
                e.steps,
                e.solves,
                e.rounds,
                e.simulated.as_secs_f64(),
                e.wall.as_secs_f64(),
                e.cpu.as_secs_f64(),
                e.steps_per_s(),
                e.steps_per_cpu_s(),
                beside(e.steps_per_s(), base.events_per_s.get(e.policy).copied())
            )?;
        }
        let o = &self.oracle;
        writeln!(
            f,
            "oracle: 4 apps x 8 threads on opteron48 (48 cores), bounded search: {} configurations in {:.2} s on {} threads ({:.2} s CPU) = {:.2} configurations/s ({:.2} per CPU second); {}: {:.2}/s, {:.1}x",
            o.evaluated,
            o.wall.as_secs_f64(),
            o.threads,
            o.cpu.as_secs_f64(),
            o.configs_per_s(),
            o.configs_per_cpu_s(),
            base.commit,
            base.oracle_configs_per_s,
            o.configs_per_s() / base.oracle_configs_per_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored baseline parses and holds every default policy; a field
    /// that is not a baseline's is an error naming it.
    #[test]
    fn the_stored_baseline_covers_the_default_policies() {
        let b = Baseline::stored();
        for p in ["native", "equal", "resense", "nupoco"] {
            assert!(b.events_per_s.contains_key(p), "{p}");
        }
        let bad = format!("speed = 1\n{BASELINE}");
        let e = format!("{:#}", Baseline::parse("b.toml", &bad).unwrap_err());
        assert!(e.contains("b.toml") && e.contains("speed"), "{e}");
    }

    /// Each figure is printed beside the baseline's with their ratio; a
    /// policy the baseline lacks gets dashes.
    #[test]
    fn figures_are_printed_beside_the_baseline() {
        let secs = Duration::from_secs;
        let run = |policy, steps| EngineSpeed {
            policy,
            steps,
            solves: 1,
            rounds: 1,
            simulated: secs(10),
            wall: secs(2),
            cpu: secs(1),
        };
        let speed = SimSpeed {
            engine: vec![run("equal", 5000), run("tang", 10)],
            oracle: OracleSpeed {
                evaluated: 64,
                threads: 2,
                wall: secs(2),
                cpu: secs(4),
            },
            baseline: Baseline {
                commit: "abc1234".into(),
                events_per_s: [("equal".to_string(), 1250.0)].into(),
                oracle_configs_per_s: 16.0,
            },
        };
        let out = speed.to_string();
        let equal = out.lines().find(|l| l.starts_with("equal")).unwrap();
        assert!(
            equal.contains(" 2500 ") && equal.contains(" 5000 "),
            "{equal}"
        );
        assert!(equal.ends_with(" 1250     2.0x"), "{equal}");
        let tang = out.lines().find(|l| l.starts_with("tang")).unwrap();
        assert!(tang.trim_end().ends_with("-        -"), "{tang}");
        assert!(
            out.contains("32.00 configurations/s (16.00 per CPU second); abc1234: 16.00/s, 2.0x"),
            "{out}"
        );
    }
}
