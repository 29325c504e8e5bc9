//! The machine's topology from sysfs (docs/architecture.md, Topology): packages, dies, NUMA
//! nodes with their memory, data and unified caches with the CPUs sharing them,
//! cores and PUs, restricted to the CPUs this process may use.
//!
//! Every reader takes a root directory, so tests run the same code over recorded
//! trees in `tests/fixtures/sysfs/` (see the generator and recording scripts there).
//! The readers only describe what the kernel lists; nesting is left to
//! [`TopologyBuilder`](coloc_model::topology::TopologyBuilder), by CPU-set
//! inclusion, so no vendor-specific code is needed.

mod affinity;
mod cores;
mod error;
mod files;
mod parse;
mod sysfs;

use std::path::Path;

pub use affinity::allowed_cpus;
use coloc_model::cpuset::CpuSet;
use coloc_model::topology::Topology;
pub use error::SysfsError;
pub use sysfs::read_sysfs;

/// This machine's topology, read from `/`, restricted to `allowed` when given.
pub fn read_host(allowed: Option<&CpuSet>) -> Result<Topology, SysfsError> {
    read_sysfs(Path::new("/"), allowed)
}

/// This machine's topology as coloc may use it: only the CPUs in this process's
/// affinity mask (a container's cpuset, a `taskset`).
pub fn host_topology() -> Result<Topology, SysfsError> {
    read_host(Some(&allowed_cpus()?))
}
