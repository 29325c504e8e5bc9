//! The oracle (docs/simulator.md, The oracle): the best
//! possible static decision for a static workload, found by simulating it.
//!
//! Problem: every policy is judged against the best it could have done. For a
//! static workload (every app arrives at 0, runs once) "best" is a choice of
//! where each thread runs and, for malleable OpenMP apps, how many threads
//! each gets — ReSense §3.4 compares its mapping with the experimentally
//! determined optimal one the same way. Raw CPU lists are far too many
//! (4 apps × 8 threads on 48 cores: ~10^29), and most of them are the same
//! situation seen through a topology symmetry.
//!
//! Approach:
//! - The search space is **sharing configurations**: which apps
//!   share which caches, nodes and sockets, with how many threads, up to the
//!   topology's automorphisms (Tang et al. Table 2) — times the malleable apps'
//!   DoP splits (powers of two up to the requested threads, and the request
//!   itself). It is counted before anything runs.
//! - Each configuration is simulated on [`SimMachine`](crate::SimMachine)
//!   through the Manager with [`OraclePolicy`] replaying it (deterministic
//!   seed), and scored: makespan, average response time, throughput, and
//!   Hmean speedup when solo times are given.
//! - **Exhaustive** when the space holds at most `max_configs`
//!   configurations. Otherwise **bounded**: structured seeds (each app packed,
//!   each app scattered), seeded random sampling, then local improvement
//!   (thread swaps, moves, DoP steps) around each metric's best. A bounded
//!   result is a bound on the optimum, and the report says so.
//! - Evaluation runs in parallel (rayon, one worker per CPU by default), in
//!   fixed batches whose results are taken in order, so the result does not
//!   depend on the number of threads.

mod eval;
mod policy;
mod search;
pub(crate) use coloc_model::topology::symmetry as space;

use std::fmt;

use coloc_model::{Cpu, CpuSet};

use crate::model::AppModel;
pub use eval::Scores;
pub use policy::OraclePolicy;
pub use search::search;

/// What the oracle optimizes, one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Time to the last exit (NuPoCo §7.3's total turnaround time); lower is better.
    Makespan,
    /// Average response time (ReSense §3); lower is better.
    Art,
    /// Σ 1 / execution time (ReSense §3); higher is better.
    Throughput,
    /// Harmonic mean of speedups over solo runs (NuPoCo §7.3); higher is better.
    Hmean,
}

impl Metric {
    pub const ALL: [Metric; 4] = [
        Metric::Makespan,
        Metric::Art,
        Metric::Throughput,
        Metric::Hmean,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Makespan => "makespan",
            Metric::Art => "ART",
            Metric::Throughput => "throughput",
            Metric::Hmean => "Hmean speedup",
        }
    }

    pub fn lower_is_better(self) -> bool {
        matches!(self, Metric::Makespan | Metric::Art)
    }

    /// Whether `a` is strictly better than `b`.
    pub fn better(self, a: f64, b: f64) -> bool {
        if self.lower_is_better() {
            a < b
        } else {
            a > b
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Metric::Makespan | Metric::Art => "s",
            Metric::Throughput => "1/s",
            Metric::Hmean => "",
        }
    }
}

/// One point of the search space: where every thread runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Per app (workload order): the CPU of each thread, thread i on `cpus[i]`
    /// (a CPU appears twice when two threads share it). Its length is the
    /// app's thread count.
    pub cpus: Vec<Vec<Cpu>>,
    /// Per app: the DoP to set (malleable apps only).
    pub dop: Vec<Option<u32>>,
    /// The sharing configuration, apps as letters (`a` = first app): `[a2 b4]`
    /// is a group of CPUs (a cache) with 2 threads of a and 4 of b, `{...}` a
    /// group of groups (a node, a socket).
    pub sharing: String,
}

/// The best configuration found for one metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Best {
    pub metric: Metric,
    pub value: f64,
    pub config: Config,
    /// Every metric of that configuration.
    pub scores: Scores,
}

/// Reported after each evaluated batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub evaluated: usize,
    /// Evaluations planned (the space's size when exhaustive).
    pub planned: usize,
    pub bounded: bool,
    pub best_makespan: Option<f64>,
}

/// How to search.
pub struct OracleOptions<'a> {
    /// Most configurations to evaluate; a larger space is searched bounded.
    pub max_configs: usize,
    /// Seed of every simulation (the balancer's randomness) and of sampling.
    pub seed: u64,
    /// Evaluations run in parallel.
    pub threads: usize,
    /// Solo run time of each app (workload order), seconds, for Hmean speedup.
    pub solo_s: Option<Vec<f64>>,
    /// Called after each batch of evaluations.
    pub progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
    /// Models beside the library's (replacing any of the same name), as
    /// [`SimMachine::with_models`](crate::SimMachine::with_models) takes them:
    /// shorter runs of library models for tests and reduced-scale benches.
    pub models: &'a [AppModel],
}

impl Default for OracleOptions<'_> {
    /// 2000 configurations, seed 1, one evaluation per available CPU (or
    /// `RAYON_NUM_THREADS`), no solo times, no progress reports.
    fn default() -> Self {
        Self {
            max_configs: 2000,
            seed: 1,
            threads: default_threads(),
            solo_s: None,
            progress: None,
            models: &[],
        }
    }
}

/// Worker threads by default: `RAYON_NUM_THREADS` when set to a positive
/// number (rayon's own setting), else one per available CPU.
fn default_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

impl fmt::Debug for OracleOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OracleOptions")
            .field("max_configs", &self.max_configs)
            .field("seed", &self.seed)
            .field("threads", &self.threads)
            .field("solo_s", &self.solo_s)
            .field("progress", &self.progress.is_some())
            .field("models", &self.models.len())
            .finish()
    }
}

/// Why the oracle cannot search.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OracleError {
    #[error("oracle: the workload has no apps")]
    Empty,
    #[error("oracle: app `{app}` {reason}; the oracle searches static workloads (every app arrives at 0 s and runs once)")]
    NotStatic { app: String, reason: String },
    #[error("oracle: app `{app}`: {reason}")]
    Model { app: String, reason: String },
    #[error(
        "oracle: {0} solo times given for {1} apps (one per app, in workload order, each > 0)"
    )]
    Solo(usize, usize),
    #[error("oracle: app `{app}` has {threads} threads, more than the oracle handles ({max})")]
    TooManyThreads { app: String, threads: u32, max: u16 },
    #[error("oracle: simulating a configuration failed: {0}")]
    Run(String),
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub struct OracleReport {
    pub platform: String,
    /// App names in workload order (`a`, `b`, ... in sharing descriptions).
    pub apps: Vec<String>,
    /// DoP splits searched (1 without malleable apps).
    pub dop_splits: usize,
    /// Threads one CPU may hold in the configurations searched (1 unless the
    /// apps have more threads than the platform has CPUs).
    pub per_cpu: u16,
    /// Sharing configurations in the space; None when too large to count.
    pub configurations: Option<f64>,
    /// Raw placements (per-CPU thread counts of each app) in the space.
    pub raw_placements: Option<f64>,
    pub evaluated: usize,
    /// Raw placements the evaluated configurations stand for.
    pub raw_covered: f64,
    /// Whether the search was bounded: then each best is an upper bound on the
    /// optimum (lower bound for higher-is-better metrics), not the optimum.
    pub bounded: bool,
    pub seed: u64,
    /// The best configuration for each metric computed.
    pub best: Vec<Best>,
}

impl OracleReport {
    pub fn best_for(&self, metric: Metric) -> Option<&Best> {
        self.best.iter().find(|b| b.metric == metric)
    }

    /// A policy replaying the best configuration for `metric`.
    pub fn policy(&self, metric: Metric) -> Option<OraclePolicy> {
        self.best_for(metric)
            .map(|b| OraclePolicy::new(b.config.clone()))
    }
}

/// A count in a short form: exact below 10^6, else with an exponent.
fn count(x: f64) -> String {
    if x < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.2e}")
    }
}

impl fmt::Display for OracleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let legend: Vec<String> = self
            .apps
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{} = {n}", space::app_letter(i)))
            .collect();
        writeln!(
            f,
            "oracle on {}: {} apps ({})",
            self.platform,
            self.apps.len(),
            legend.join(", ")
        )?;
        writeln!(
            f,
            "space: {} sharing configurations for {} raw placements ({} DoP split{}, at most {} thread{} per CPU)",
            self.configurations.map_or_else(|| "uncounted".into(), count),
            self.raw_placements.map_or_else(|| "uncounted".into(), count),
            self.dop_splits,
            if self.dop_splits == 1 { "" } else { "s" },
            self.per_cpu,
            if self.per_cpu == 1 { "" } else { "s" },
        )?;
        if self.bounded {
            writeln!(
                f,
                "search: BOUNDED, {} configurations evaluated ({} raw placements) by seeded sampling and local improvement (seed {}): each value below is a bound, the optimum is at least as good",
                self.evaluated,
                count(self.raw_covered),
                self.seed
            )?;
        } else {
            writeln!(
                f,
                "search: exhaustive, all {} configurations evaluated ({} raw placements): each value below is the optimum",
                self.evaluated,
                count(self.raw_covered)
            )?;
        }
        writeln!(f, "{:<14} {:>12}  configuration", "metric", "best")?;
        for b in &self.best {
            writeln!(
                f,
                "{:<14} {:>12}  {}",
                b.metric.name(),
                format!("{:.3} {}", b.value, b.metric.unit()).trim_end(),
                b.config.sharing
            )?;
            let cpus: Vec<String> = b
                .config
                .cpus
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let set: CpuSet = c.iter().copied().collect();
                    format!("{}: {}", space::app_letter(i), set.to_list())
                })
                .collect();
            writeln!(f, "{:<14} {:>12}  cpus {}", "", "", cpus.join("  "))?;
        }
        Ok(())
    }
}
