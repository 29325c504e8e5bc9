//! The backend interface (DESIGN.md, The loop): the Manager drives a `Machine`
//! without knowing whether it is the real Linux machine or the simulator.

use std::time::Duration;

use coloc_model::trace::{ApplyOutcome, ExitStatus, SelfUsage};
use coloc_model::{AppId, AppPlan, AppSpec, Observation, Plan, Tid, Topology};

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
    },
    /// The set of threads (over all the instance's processes) changed.
    ThreadsChanged { app: AppId, tids: Vec<Tid> },
}

/// A backend failure that ends the run (per-thread failures are outcomes, not errors).
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error("starting {app} ({name}): {reason}")]
    Launch {
        app: AppId,
        name: String,
        reason: String,
    },
    #[error("{0}")]
    Other(String),
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
