//! The run trace: JSON lines, one event a line (docs/architecture.md, The loop).
//!
//! It keeps raw observations, not rates, so `coloc report` recomputes every metric
//! from a trace without re-running (facebookincubator/below's replay model).

use std::io::{self, BufRead, Read, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::ids::{AppId, Tid};
use crate::nanos;
use crate::observation::{is_zero64, InstanceUsage, Observation};
use crate::plan::Plan;
use crate::topology::Topology;
use crate::view::Trigger;
use crate::workload::Workload;

/// Version of the trace format written; readers refuse versions they do not
/// know. Version 2 carries each plan's reasons and verdicts as data
/// (`coloc_model::reason`) where version 1 had an English `note`.
pub const TRACE_VERSION: u32 = 2;

/// The versions this coloc reads: version 1's plans keep their note to be
/// shown ([`crate::Plan::legacy_note`]) and have no reasons.
pub const READS_VERSIONS: [u32; 2] = [1, TRACE_VERSION];

/// How an app's run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
    /// coloc could not start it (the message says why).
    FailedToStart(String),
    /// It ended, but coloc cannot know how: a process the node service adopted
    /// is not coloc's child, and nobody reported its status (docs/service.md).
    Unknown,
}

impl ExitStatus {
    pub fn success(&self) -> bool {
        *self == ExitStatus::Code(0)
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitStatus::Code(0) => write!(f, "exited normally"),
            ExitStatus::Code(c) => write!(f, "exited with code {c}"),
            ExitStatus::Signal(s) => write!(f, "killed by signal {s}"),
            ExitStatus::FailedToStart(why) => write!(f, "failed to start: {why}"),
            ExitStatus::Unknown => write!(f, "ended (status unknown)"),
        }
    }
}

/// What happened when a plan was applied to one app.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyOutcome {
    pub app: AppId,
    /// Threads whose settings were changed.
    pub threads_set: u32,
    /// Threads that exited between observation and actuation (expected, not errors).
    pub threads_vanished: u32,
    /// Threads found on other CPUs than coloc last put them on: the app changed
    /// its own affinity since (see the Linux backend's rule for what follows).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub affinity_drift: u32,
    /// Settings the backend could not apply, each with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// Already-allocated pages moved for the plan's memory policy (a running
    /// app's interleave, or its revert), where the backend moves pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<PageMoves>,
}

/// One apply's walk over an app's pages (docs/safety.md, Memory of a running app).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMoves {
    /// `interleave` (pages moved round-robin over `nodes`) or `restore` (pages
    /// moved back where they were before coloc moved them).
    pub action: String,
    /// The nodes pages were spread over (empty for `restore`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<u32>,
    /// Resident pages looked at.
    pub examined: u64,
    /// Pages the kernel moved.
    pub moved: u64,
    /// Pages it could not move (shared with another process, locked, ...).
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub failed: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Resource use of coloc itself over the run (from /proc/self on Linux).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SelfUsage {
    #[serde(with = "nanos")]
    pub cpu: Duration,
    #[serde(with = "nanos")]
    pub wall: Duration,
}

impl SelfUsage {
    /// CPU time per wall time, in percent of one core.
    pub fn percent_of_core(&self) -> f64 {
        if self.wall.is_zero() {
            0.0
        } else {
            100.0 * self.cpu.as_secs_f64() / self.wall.as_secs_f64()
        }
    }
}

/// What an app ran below what it could use, in an `underused` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Shortage {
    /// Inside a parallel region, its OpenMP team had `team` threads where it
    /// asked for `wanted` (its thread count, at most the machine's CPUs):
    /// a DoP below what is free.
    Team { team: u32, wanted: u32 },
    /// Its placement allowed its `busy` threads (those that ran for more than
    /// a tenth of the interval) only the CPUs `allowed`, fewer than they are:
    /// a partition below what is free.
    Cpus { allowed: CpuSet, busy: u32 },
}

impl std::fmt::Display for Shortage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shortage::Team { team, wanted } => {
                write!(f, "a team of {team} where it asked for {wanted}")
            }
            Shortage::Cpus { allowed, busy } => {
                write!(f, "{busy} busy thread(s) allowed only CPUs {allowed}")
            }
        }
    }
}

/// Static facts about the run, the first line of every trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub version: u32,
    pub coloc_version: String,
    pub policy: String,
    /// `linux` or `sim:<platform>`.
    pub machine: String,
    pub workload: Workload,
    pub topology: Topology,
    #[serde(with = "nanos")]
    pub epoch: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Wall-clock start, seconds since the Unix epoch (information only).
    pub started_unix: f64,
}

/// One line of the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum TraceEvent {
    Header(Box<Header>),
    Arrive {
        #[serde(with = "nanos")]
        t: Duration,
        app: AppId,
        /// The name of an app that came to the node service rather than
        /// from the header's workload (`coloc exec --name`, a Slurm task's
        /// `job<ID>.<step>`, docs/slurm.md); absent for the workload's apps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Start {
        #[serde(with = "nanos")]
        t: Duration,
        app: AppId,
        pid: u32,
        threads_requested: u32,
        argv: Vec<String>,
        /// What its program holds and which levers act on it
        /// (docs/signals.md, Runtimes and levers); absent where the program
        /// was not checked (simulated apps).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        levers: Option<crate::reason::levers::Levers>,
    },
    Threads {
        #[serde(with = "nanos")]
        t: Duration,
        app: AppId,
        tids: Vec<Tid>,
    },
    Plan {
        #[serde(with = "nanos")]
        t: Duration,
        trigger: Trigger,
        plan: Plan,
        /// Time the policy took to decide (wall time on Linux).
        #[serde(with = "nanos")]
        decide: Duration,
    },
    Applied {
        #[serde(with = "nanos")]
        t: Duration,
        outcomes: Vec<ApplyOutcome>,
    },
    Obs(Box<Observation>),
    /// Work conservation broken: for more than an epoch (since `since`), CPUs
    /// stayed idle while threads of `app` waited for a CPU and its placement
    /// kept them off those CPUs (`docs/trace-format.md`). Recorded at each
    /// observation while it lasts; the Manager checks it for every policy.
    IdleWhileWaiting {
        #[serde(with = "nanos")]
        t: Duration,
        #[serde(with = "nanos")]
        since: Duration,
        app: AppId,
        /// CPUs that were idle and that some waiting thread of `app` may not use.
        idle: CpuSet,
        /// The app's threads that waited for a CPU over the last interval.
        waiting: Vec<Tid>,
    },
    /// CPUs stayed idle for more than an epoch (since `since`) while `app`
    /// ran a smaller OpenMP team than it asked for, or its placement gave its
    /// busy threads fewer CPUs than they are (`docs/trace-format.md`).
    /// Recorded at each observation while it lasts.
    Underused {
        #[serde(with = "nanos")]
        t: Duration,
        #[serde(with = "nanos")]
        since: Duration,
        app: AppId,
        /// CPUs idle over the last interval that the app could have used:
        /// every idle CPU for a small team, those outside its placement for a
        /// small placement.
        idle: CpuSet,
        /// What it ran below.
        short: Shortage,
    },
    /// CPU time burnt without progress: for more than an epoch (since
    /// `since`) the app's team stayed inside one parallel region, its threads
    /// used more CPU than one thread can, and none of its progress counters
    /// moved, although they move inside its regions (`docs/trace-format.md`).
    /// Recorded at each observation while it lasts.
    NoProgress {
        #[serde(with = "nanos")]
        t: Duration,
        #[serde(with = "nanos")]
        since: Duration,
        app: AppId,
        /// CPU time its threads had over the last interval.
        #[serde(with = "nanos")]
        cpu: Duration,
    },
    /// CPU time burnt spinning: for more than an epoch (since `since`) the
    /// app's team, inside a region with its members queueing for their CPUs,
    /// used more CPU time than its progress took at the rate it made earlier
    /// with a CPU per busy member, by more than 10% of the interval
    /// (`docs/trace-format.md`). Recorded at each observation while it lasts.
    Spinning {
        #[serde(with = "nanos")]
        t: Duration,
        #[serde(with = "nanos")]
        since: Duration,
        app: AppId,
        /// CPU time its threads had over the last interval.
        #[serde(with = "nanos")]
        cpu: Duration,
        /// The CPU time its progress over the last interval took at its
        /// earlier rate: the rest was burnt.
        #[serde(with = "nanos")]
        useful: Duration,
    },
    Exit {
        #[serde(with = "nanos")]
        t: Duration,
        app: AppId,
        status: ExitStatus,
        /// The app's own metric, read from its output when the workload defines one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metric: Option<f64>,
        /// What it consumed over its whole life, where the backend knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<InstanceUsage>,
    },
    End {
        #[serde(with = "nanos")]
        t: Duration,
        usage: SelfUsage,
    },
}

impl TraceEvent {
    /// When it happened (None for the header, which is the run's start).
    pub fn time(&self) -> Option<Duration> {
        match self {
            TraceEvent::Arrive { t, .. }
            | TraceEvent::Start { t, .. }
            | TraceEvent::Threads { t, .. }
            | TraceEvent::Plan { t, .. }
            | TraceEvent::Applied { t, .. }
            | TraceEvent::IdleWhileWaiting { t, .. }
            | TraceEvent::Underused { t, .. }
            | TraceEvent::NoProgress { t, .. }
            | TraceEvent::Spinning { t, .. }
            | TraceEvent::Exit { t, .. }
            | TraceEvent::End { t, .. } => Some(*t),
            TraceEvent::Obs(o) => Some(o.at),
            TraceEvent::Header(_) => None,
        }
    }
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("reading line {line}: {source}")]
    Io { line: usize, source: io::Error },
    #[error("line {line}: {source}")]
    Json {
        line: usize,
        source: serde_json::Error,
    },
    #[error(
        "line {line} is longer than {MAX_TRACE_LINE} bytes (docs/safety.md, Files users name)"
    )]
    LineTooLong { line: usize },
    #[error("the trace does not start with a header")]
    NoHeader,
    #[error(
        "trace format version {0} is not supported (this coloc reads versions 1 to {TRACE_VERSION})"
    )]
    Version(u32),
    #[error("event {event} after the header names app {app}, and the workload has {apps} app(s)")]
    AppIndex { event: usize, app: u32, apps: usize },
}

/// Longest line a trace may have: an observation of thousands of threads is
/// a few MiB; a longer line (a file that is no trace, `/dev/zero`) is
/// refused before it is held whole.
pub const MAX_TRACE_LINE: usize = 64 << 20;

/// Writes events as JSON lines.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(out: W) -> Self {
        Self { out }
    }

    pub fn write(&mut self, event: &TraceEvent) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, event)?;
        self.out.write_all(b"\n")
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A whole trace read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub header: Header,
    pub events: Vec<TraceEvent>,
}

impl Trace {
    /// Reads JSON lines; the first must be the header.
    pub fn read(mut input: impl BufRead) -> Result<Trace, TraceError> {
        let mut events = Vec::new();
        let mut bytes = Vec::new();
        for line in 1.. {
            bytes.clear();
            let n = (&mut input)
                .take(MAX_TRACE_LINE as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .map_err(|source| TraceError::Io { line, source })?;
            if n == 0 {
                break;
            }
            if bytes.len() > MAX_TRACE_LINE {
                return Err(TraceError::LineTooLong { line });
            }
            if bytes.trim_ascii().is_empty() {
                continue;
            }
            events.push(
                serde_json::from_slice(&bytes)
                    .map_err(|source| TraceError::Json { line, source })?,
            );
        }
        Self::from_events(events)
    }

    /// A trace from events in recording order; the first must be the header.
    pub fn from_events(events: Vec<TraceEvent>) -> Result<Trace, TraceError> {
        let mut iter = events.into_iter();
        let header = match iter.next() {
            Some(TraceEvent::Header(h)) if READS_VERSIONS.contains(&h.version) => *h,
            Some(TraceEvent::Header(h)) => return Err(TraceError::Version(h.version)),
            _ => return Err(TraceError::NoHeader),
        };
        Ok(Trace {
            header,
            events: iter.collect(),
        })
    }

    /// Checks that every app the events name is one of the header's workload
    /// apps. Metrics are built per app index, so a trace from elsewhere (corrupt
    /// or hostile) naming app 4,000,000,000 would otherwise make billions of
    /// empty entries; readers of untrusted traces call this before computing.
    pub fn check_app_indices(&self) -> Result<(), TraceError> {
        let apps = self.header.workload.apps.len();
        for (i, event) in self.events.iter().enumerate() {
            let mut named: Vec<AppId> = Vec::new();
            match event {
                TraceEvent::Arrive { app, .. }
                | TraceEvent::Start { app, .. }
                | TraceEvent::Threads { app, .. }
                | TraceEvent::IdleWhileWaiting { app, .. }
                | TraceEvent::Underused { app, .. }
                | TraceEvent::NoProgress { app, .. }
                | TraceEvent::Spinning { app, .. }
                | TraceEvent::Exit { app, .. } => named.push(*app),
                TraceEvent::Plan { plan, .. } => named.extend(plan.apps.iter().map(|p| p.app)),
                TraceEvent::Applied { outcomes, .. } => {
                    named.extend(outcomes.iter().map(|o| o.app))
                }
                TraceEvent::Obs(obs) => named.extend(obs.apps.iter().map(|a| a.app)),
                TraceEvent::Header(_) | TraceEvent::End { .. } => {}
            }
            if let Some(bad) = named.iter().find(|id| id.app as usize >= apps) {
                return Err(TraceError::AppIndex {
                    event: i + 1,
                    app: bad.app,
                    apps,
                });
            }
        }
        Ok(())
    }

    pub fn observations(&self) -> impl Iterator<Item = &Observation> {
        self.events.iter().filter_map(|e| match e {
            TraceEvent::Obs(o) => Some(o.as_ref()),
            _ => None,
        })
    }
}
