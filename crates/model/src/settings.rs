//! Memory and scheduling settings: what a workload file may ask for an app and what
//! a plan applies to it. Kept apart from plans so the workload description does
//! not depend on the decision types.

use serde::{Deserialize, Serialize};

/// NUMA memory policy (set_mempolicy / mbind modes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemPolicy {
    /// Leave as it was.
    #[default]
    Default,
    /// Allocate on the node of the CPU that touches first (Linux's default).
    Local,
    /// Round-robin pages over the nodes of the app's CPUs (Thread Tranquilizer's
    /// RR/random placement, §3).
    Interleave,
}

/// Scheduling settings, applied per thread with `sched_setattr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedSettings {
    /// Nice value, -20..=19.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i8>,
    /// Requested time slice in microseconds (EEVDF's `sched_runtime`), the Linux
    /// counterpart of Solaris FX quanta in Thread Tranquilizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_us: Option<u32>,
}
