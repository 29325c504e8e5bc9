//! coloc's model: plain data and pure functions, no I/O (DESIGN.md, Components).
//!
//! Topology, workload descriptions, the View a policy sees and the Plan it returns,
//! raw observations, the trace, and the metrics computed from it. Everything here is
//! shared by the Linux backend, the simulator, the policies and the CLI.

pub mod cpuset;
pub mod topology;

pub use cpuset::{Cpu, CpuSet};
pub use topology::Topology;
