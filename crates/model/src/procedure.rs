//! The one shape of a measurement procedure (docs/trace-format.md,
//! Measurement procedures): a list of planned runs, each an ordinary run of
//! the Manager under the `static` policy with every app's thread i pinned to
//! its `cpus[i]`, writing an ordinary trace. What the procedure yields (a
//! profile, a calibration) is a pure function of those traces, so it can be
//! recomputed from a stored directory without running anything again, as
//! `coloc report` recomputes a report.
//!
//! The procedures: ReSense's characterization and Tang et al.'s sharing
//! characteristics (the profile's `procedure` module), and the memory
//! calibration (the calibration's `procedure` module).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::calibration::CalibrationError;
use crate::cpuset::Cpu;
use crate::observation::InstanceUsage;
use crate::profile::{NotCharacterizable, ScoreError, SharingError};
use crate::topology::ResourceKind;
use crate::trace::{ExitStatus, Trace, TraceEvent};

/// One app of a planned run: thread i pinned to `cpus[i]`, its DoP fixed at
/// `cpus.len()`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedApp {
    /// The app's name: the measured app's, or a kernel's the procedure adds
    /// (the stream probe, the calibration's stream).
    pub name: String,
    pub cpus: Vec<Cpu>,
    /// Arguments appended to the app's command for this run only (the
    /// calibration's `--mem-node`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// One run of a procedure, in the order it is made (the order alternates the
/// configurations compared, so a slow drift of the machine hits them alike).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// Its directory, relative to the procedure's directory for it.
    pub dir: String,
    /// What the run is to the procedure (`baseline`, `probe-alone`, `stream`…).
    pub role: String,
    /// Every app of the run, started together at time 0, once.
    pub apps: Vec<PinnedApp>,
}

/// What a trace says of an app that ran to a successful exit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Finished {
    /// From its `start` to its `exit`.
    pub elapsed: Duration,
    /// Its own metric at exit, where the workload defines one.
    pub metric: Option<f64>,
    /// Its whole-life usage, where the backend counts it.
    pub usage: Option<InstanceUsage>,
}

/// Why a procedure's traces give no figure, or a procedure cannot be planned
/// on a machine: what the profile and the calibration store or print in its
/// place (the texts are those `coloc profiles show` has always shown).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProcedureError {
    /// The run in directory `dir` (relative to the procedure's) gave none.
    #[error("run {dir}: {error}")]
    InRun {
        dir: String,
        error: Box<ProcedureError>,
    },
    #[error("no app \"{app}\" in the trace")]
    NoApp { app: String },
    #[error("no start and exit in the trace")]
    NotFinished,
    /// The measured app ended badly.
    #[error("{0}")]
    Failed(ExitStatus),
    /// Another app of the run (the measured one, beside the stream probe)
    /// ended badly.
    #[error("app \"{app}\" {status}")]
    AppFailed { app: String, status: ExitStatus },
    /// The exit event carries no `usage` or no `cycles`.
    #[error("its exit holds no {what} (this backend does not count it)")]
    NotCounted { what: &'static str },
    #[error("its cycles were not counted")]
    CyclesNotMetered,
    #[error("its exit holds no LLC counts (this backend does not count them)")]
    NoLlcCounts,
    /// `who` (the stream kernel, the probe) printed no `coloc-metric` line.
    #[error("{who} printed no metric")]
    NoMetric { who: &'static str },
    #[error("unknown role \"{role}\"")]
    UnknownRole { role: String },
    #[error(transparent)]
    Score(#[from] ScoreError),
    #[error(transparent)]
    Sharing(#[from] SharingError),
    #[error("fitting service rates to the stream runs: {0}")]
    Calibration(CalibrationError),
    /// Tang et al.'s data sharing runs, on a machine with `cores`.
    #[error("data sharing needs two cores to compare, this machine has {cores}")]
    SharingCores { cores: usize },
    /// The co-runs with the stream probe, on a machine with `cores`.
    #[error("co-runs with the stream probe need two cores, this machine has {cores}")]
    ProbeCores { cores: usize },
    #[error("app \"{probe}\": the name is the stream probe's; rename the app")]
    ProbeName { probe: &'static str },
    #[error("the probe did not exit")]
    ProbeNotExited,
    #[error(
        "app \"{app}\" ended before the probe: give it more work so the probe runs \
         beside it throughout"
    )]
    EndedBeforeProbe { app: String },
    #[error("the probe was never observed, so its share of the CPU is unknown")]
    ProbeNotObserved,
    #[error("the probe never ran on a CPU in its observations")]
    ProbeNeverRan,
    /// The bandwidths of the runs of `role` are missing or not finite and
    /// non-negative.
    #[error("{role}: expected at least one finite bandwidth >= 0, found {found:?}")]
    Bandwidths { role: &'static str, found: Vec<f64> },
    #[error("the counter run has no app")]
    CounterRunEmpty,
    #[error("no runs of the app's threads sharing a cache against apart were made")]
    NoSharedCacheRuns,
    /// The level whose runs would have given data sharing could not be
    /// characterized.
    #[error(
        "no runs of the app's threads sharing a cache against apart: {}: {reason}",
        level.label()
    )]
    SharedCacheLevel {
        level: ResourceKind,
        reason: NotCharacterizable,
    },
    #[error("no stream run")]
    NoStreamRun,
    #[error("no cache run")]
    NoCacheRun,
    /// No working set of the cache ladder ran `speedup` times as fast as the
    /// largest (`largest_mib`, at `largest_gbs`).
    #[error(
        "no working set ran {speedup} times as fast as the largest ({largest_mib} MiB, \
         {largest_gbs:.2} GB/s)"
    )]
    NoCacheSpeedup {
        speedup: f64,
        largest_mib: u64,
        largest_gbs: f64,
    },
}

impl ProcedureError {
    /// This error as the run in `dir` gave it.
    pub fn in_run(self, dir: &str) -> Self {
        ProcedureError::InRun {
            dir: dir.to_string(),
            error: Box::new(self),
        }
    }
}

/// The first instance of the app called `app` in `trace`, from its `start`
/// to its `exit`; or why the trace gives none (no such app, it never started
/// or exited, it failed).
pub fn finished(trace: &Trace, app: &str) -> Result<Finished, ProcedureError> {
    let index = trace
        .header
        .workload
        .apps
        .iter()
        .position(|a| a.name == app)
        .ok_or_else(|| ProcedureError::NoApp { app: app.into() })? as u32;
    let start = trace.events.iter().find_map(|e| match e {
        TraceEvent::Start { t, app, .. } if app.app == index => Some(*t),
        _ => None,
    });
    let exit = trace.events.iter().find_map(|e| match e {
        TraceEvent::Exit {
            t,
            app,
            status,
            metric,
            usage,
        } if app.app == index => Some((*t, status, *metric, *usage)),
        _ => None,
    });
    let (start, (end, status, metric, usage)) = match (start, exit) {
        (Some(s), Some(e)) => (s, e),
        _ => return Err(ProcedureError::NotFinished),
    };
    if !status.success() {
        return Err(ProcedureError::Failed(status.clone()));
    }
    Ok(Finished {
        elapsed: end.saturating_sub(start),
        metric,
        usage,
    })
}
