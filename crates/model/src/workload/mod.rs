//! Workload descriptions (docs/workload-format.md): what to run, when, how often.
//!
//! Parsing and validation here touch nothing but the text (ripgrep's two-stage
//! configuration: this is the "low" stage). Resolving commands against the machine
//! — finding executables, built-in kernels — happens in the CLI.

pub mod caps;
mod error;
mod fields;
mod parse;
pub mod suite;
mod write;

use std::collections::BTreeMap;
use std::time::Duration;

pub use error::{Position, WorkloadError};
pub use parse::{
    check_epoch, parse_program, parse_workload, to_app_name, valid_app_name, EpochOutOfRange,
    MAX_EPOCH, MAX_THREADS, MIN_EPOCH,
};
use serde::{Deserialize, Serialize};
pub use write::to_toml;

use crate::cpuset::CpuSet;
use crate::settings::{MemPolicy, SchedSettings};

/// A whole workload file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Workload name (the file stem when the file does not give one).
    pub name: String,
    /// Policy epoch, if the file overrides the default (100 ms).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_millis")]
    pub epoch: Option<Duration>,
    pub apps: Vec<AppSpec>,
}

/// Whether an app is throughput-oriented or latency-sensitive (Tang et al. §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppClass {
    #[default]
    Batch,
    Latency,
}

/// How to read an app's own performance metric from its output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// Regex with one capture group holding a number; the last match counts.
    pub regex: String,
    /// Read this file after the app exits instead of its standard output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// True for throughput-like metrics, false for latency-like ones.
    #[serde(default = "default_true")]
    pub higher_is_better: bool,
    /// Unit shown in tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

fn default_true() -> bool {
    true
}

/// A user-given mapping for the `static` policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StaticMapping {
    /// All of the app's threads may run on these CPUs.
    Shared(CpuSet),
    /// Thread i (in creation order) is pinned to entry i mod len.
    PerThread(Vec<CpuSet>),
}

/// One application of a workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppSpec {
    pub name: String,
    /// argv of a real program; `kernel:NAME` as `argv[0]` names a built-in kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Name of a simulated app model (simulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Threads the app starts with (`OMP_NUM_THREADS` for OpenMP apps). 0 = one per
    /// CPU coloc may use, like an OpenMP program left to its default.
    pub threads: u32,
    /// Arrival time after the start of the run.
    #[serde(with = "millis")]
    pub arrive_at: Duration,
    /// Back-to-back runs (ReSense's ts(BM, k)); each starts when the last one exits.
    pub repeat: u32,
    pub class: AppClass,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<MetricSpec>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// OpenMP app whose thread count coloc may change at parallel regions (opt-in).
    #[serde(default)]
    pub malleable: bool,
    /// Threaded runtimes that size their pools once at start (OpenBLAS, MKL,
    /// Go, the JVM, rayon) get the team the policy chose at launch through
    /// their variables ([`caps`]; opt-in).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cap_threads: bool,
    /// Mapping for the `static` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<StaticMapping>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<SchedSettings>,
}

impl AppSpec {
    /// A real program running `argv`, with a workload file's defaults for
    /// everything it does not say (arrives at 0, runs once, batch class, no
    /// metric, environment, mapping or settings). Callers that build workloads
    /// in code (the simulator's generators, benchmarks, tests) change the rest
    /// with struct update syntax.
    pub fn program(name: impl Into<String>, argv: Vec<String>, threads: u32) -> Self {
        Self::with_defaults(name.into(), Some(argv), None, threads)
    }

    /// A simulated app running the model `model`, with the same defaults as
    /// [`AppSpec::program`].
    pub fn model(name: impl Into<String>, model: impl Into<String>, threads: u32) -> Self {
        Self::with_defaults(name.into(), None, Some(model.into()), threads)
    }

    fn with_defaults(
        name: String,
        command: Option<Vec<String>>,
        model: Option<String>,
        threads: u32,
    ) -> Self {
        Self {
            name,
            command,
            model,
            threads,
            arrive_at: Duration::ZERO,
            repeat: 1,
            class: AppClass::default(),
            metric: None,
            env: BTreeMap::new(),
            malleable: false,
            cap_threads: false,
            cpus: None,
            memory: None,
            sched: None,
        }
    }

    /// Threads to start with on a machine with `cpus` usable CPUs.
    pub fn threads_on(&self, cpus: usize) -> u32 {
        if self.threads == 0 {
            cpus.max(1) as u32
        } else {
            self.threads
        }
    }
}

/// Durations in traces and JSON as integer milliseconds.
pub(crate) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

pub(crate) mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
