//! The Linux backend (docs/architecture.md, Components): topology from sysfs, process
//! and thread tracking from /proc, actuators (affinity, scheduling, memory policy)
//! with a journal so that nothing coloc changes outlives it unrecorded.

pub mod cgroup;
pub mod credentials;
pub mod machine;
pub mod program;
pub mod topology;
pub mod usage;
