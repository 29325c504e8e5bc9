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

use crate::cpuset::Cpu;
use crate::observation::InstanceUsage;
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

/// Why a trace gives no finished run of an app ([`finished`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FinishedError {
    #[error("no app \"{app}\" in the trace")]
    NoApp { app: String },
    #[error("no start and exit in the trace")]
    NotFinished,
    /// The app ended badly.
    #[error("{0}")]
    Failed(ExitStatus),
}

/// The first instance of the app called `app` in `trace`, from its `start`
/// to its `exit`; or why the trace gives none (no such app, it never started
/// or exited, it failed).
pub fn finished(trace: &Trace, app: &str) -> Result<Finished, FinishedError> {
    let index = trace
        .header
        .workload
        .apps
        .iter()
        .position(|a| a.name == app)
        .ok_or_else(|| FinishedError::NoApp { app: app.into() })? as u32;
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
        _ => return Err(FinishedError::NotFinished),
    };
    if !status.success() {
        return Err(FinishedError::Failed(status.clone()));
    }
    Ok(Finished {
        elapsed: end.saturating_sub(start),
        metric,
        usage,
    })
}
