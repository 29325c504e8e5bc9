//! coloc's model: plain data and pure functions, no I/O (docs/architecture.md, Components).
//!
//! Topology, workload descriptions, the View a policy sees and the Plan it returns,
//! raw observations, the trace, and the metrics computed from it. Everything here is
//! shared by the Linux backend, the simulator, the policies and the CLI.

pub mod arrangement;
pub mod barrier;
pub mod calibration;
pub mod cpuset;
pub mod explain;
pub mod ids;
pub mod knowledge;
pub mod metrics;
pub(crate) mod nanos;
pub mod observation;
pub mod plan;
pub mod procedure;
pub mod profile;
pub mod queueing;
pub mod reason;
pub mod settings;
pub mod stats;
pub mod topology;
pub mod trace;
pub mod user_file;
pub mod view;
pub mod workload;

#[cfg(any(test, feature = "testutils"))]
pub mod testutils;

pub use cpuset::{Cpu, CpuSet};
pub use ids::{AppId, Tid};
pub use observation::{
    AppSample, InstanceUsage, LlcTotals, MetricSample, Observation, OmpSample, ThreadSample,
};
pub use plan::{AppPlan, Placement, Plan};
pub use reason::{Objective, PlanReason, Reason, Verdict};
pub use settings::{MemPolicy, SchedSettings};
pub use topology::Topology;
pub use trace::{Shortage, Trace, TraceEvent};
pub use view::{AppState, AppView, Trigger, View};
pub use workload::{AppClass, AppSpec, StaticMapping, Workload};
