//! The backend interface (docs/architecture.md, The loop): the Manager drives a `Machine`
//! without knowing whether it is the real Linux machine or the simulator.
//!
//! It sits below the Manager, in a crate of its own, so that the backends
//! (`coloc-linux`, `coloc-sim`) compile against this interface and the model
//! only, never against the Manager or the policies. Errors that cross it are
//! typed: each backend keeps its own error enum and hands it over as the
//! `source` of a [`MachineError`] variant that says what the Manager was
//! asking for, so callers can match on the kind and still print the chain.

use std::time::Duration;

use coloc_model::reason::levers::Levers;
use coloc_model::trace::{ApplyOutcome, ExitStatus, SelfUsage};
use coloc_model::{AppId, AppPlan, AppSpec, InstanceUsage, Observation, Plan, Tid, Topology};

/// Everything a backend needs to start one app instance.
#[derive(Debug, Clone, Copy)]
pub struct LaunchRequest<'a> {
    pub id: AppId,
    pub spec: &'a AppSpec,
    /// Threads to start with (`spec.threads` resolved for this machine).
    pub threads: u32,
    /// The plan that admitted it: its placement, memory policy and scheduling
    /// settings are applied before the app runs its first instruction.
    pub plan: &'a AppPlan,
}

/// A started instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    pub pid: u32,
    /// The argv actually executed (after resolving built-in kernels).
    pub argv: Vec<String>,
    /// Its threads right after start (at least the main thread).
    pub tids: Vec<Tid>,
    /// What its program holds and which levers act on it (docs/signals.md,
    /// Runtimes and levers); None where the program was not checked (the
    /// simulator's models, an app the daemon did not check).
    pub levers: Option<Levers>,
}

/// Something that happened while the Manager waited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineEvent {
    /// The instance's main process exited (its remaining processes are its own).
    Exited {
        app: AppId,
        at: Duration,
        status: ExitStatus,
        /// The text the app metric is read from: its standard output, or the metric
        /// file the workload names.
        output: Option<String>,
        /// What it consumed over its whole life, where the backend knows it
        /// (not for a process coloc did not start).
        usage: Option<InstanceUsage>,
    },
    /// The set of threads (over all the instance's processes) changed.
    ThreadsChanged { app: AppId, tids: Vec<Tid> },
}

/// A backend's own error, carried as the source of a [`MachineError`].
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A backend failure. [`MachineError::Launch`] costs one instance (the run goes
/// on without it); every other variant ends the run, after the Manager has
/// asked the machine to restore what it changed.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// One instance could not start.
    #[error("starting {app} ({name})")]
    Launch {
        app: AppId,
        name: String,
        #[source]
        source: BackendError,
    },
    /// Reading the machine's state failed (`what` says what was read).
    #[error("{what}")]
    Observe {
        what: String,
        #[source]
        source: BackendError,
    },
    /// Some settings could not be restored; `kept` says where the record of
    /// them stays (the journal, for `coloc restore`).
    #[error("could not restore: {}; {kept} is kept for `coloc restore`", failures.join("; "))]
    Restore { failures: Vec<String>, kept: String },
    /// Any other backend failure (`what` says what the backend was doing).
    #[error("{what}")]
    Backend {
        what: String,
        #[source]
        source: BackendError,
    },
}

impl MachineError {
    /// The error and all its sources, joined by `: ` (what a log line shows).
    pub fn chain(&self) -> String {
        join_sources(self)
    }

    /// The cause of a failed launch alone, without the "starting APP" prefix
    /// (what the trace records as the instance's exit status).
    pub fn launch_reason(&self) -> Option<String> {
        match self {
            MachineError::Launch { source, .. } => Some(join_sources(source.as_ref())),
            _ => None,
        }
    }
}

/// `e`'s message followed by each of its sources', joined by `: `.
fn join_sources(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

/// A machine coloc can run a workload on.
pub trait Machine {
    /// `linux` or `sim:<platform>`, recorded in the trace header.
    fn kind(&self) -> String;

    /// The topology restricted to the CPUs coloc may use.
    fn topology(&self) -> &Topology;

    /// Time since the machine was created (wall time on Linux, simulated time in the
    /// simulator).
    fn now(&self) -> Duration;

    /// Starts an instance with its initial plan applied.
    fn launch(&mut self, req: LaunchRequest<'_>) -> Result<Launched, MachineError>;

    /// Lets time pass until `deadline`, returning early with whatever happened
    /// (exits, thread-set changes) as soon as something does.
    fn wait_until(&mut self, deadline: Duration) -> Result<Vec<MachineEvent>, MachineError>;

    /// A raw sample of every running instance.
    fn observe(&mut self) -> Result<Observation, MachineError>;

    /// Applies the plan to the running instances, changing only what differs from
    /// what is in force. Threads that vanished are counted, never errors.
    fn apply(&mut self, plan: &Plan) -> Vec<ApplyOutcome>;

    /// Restores every setting coloc changed and reports coloc's own resource use.
    /// Called once, at the end of the run or on interruption.
    fn finish(&mut self) -> Result<SelfUsage, MachineError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ENOENT on Linux.
    const ENOENT: i32 = 2;

    #[derive(Debug, thiserror::Error)]
    #[error("spawning /bin/nothing")]
    struct Spawn(#[source] std::io::Error);

    /// A failed launch keeps its cause's whole chain, and the chain without the
    /// "starting" prefix is what the trace records.
    #[test]
    fn a_launch_error_keeps_its_cause_chain() {
        let e = MachineError::Launch {
            app: AppId { app: 1, rep: 0 },
            name: "a".into(),
            source: Box::new(Spawn(std::io::Error::from_raw_os_error(ENOENT))),
        };
        assert!(e
            .chain()
            .starts_with("starting 1.0 (a): spawning /bin/nothing: "));
        assert!(e.chain().contains("No such file"), "{}", e.chain());
        assert_eq!(
            e.launch_reason().unwrap(),
            e.chain().trim_start_matches("starting 1.0 (a): ")
        );
        let restore = MachineError::Restore {
            failures: vec!["pid 3: EPERM".into()],
            kept: "/run/coloc/j".into(),
        };
        assert_eq!(restore.launch_reason(), None);
        assert_eq!(
            restore.chain(),
            "could not restore: pid 3: EPERM; /run/coloc/j is kept for `coloc restore`"
        );
    }
}
