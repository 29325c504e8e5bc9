//! The CPUs this process may run on.

use coloc_model::cpuset::{Cpu, CpuSet, MAX_CPU};
use nix::sched::{sched_getaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

use super::SysfsError;

/// This process's CPU affinity (`sched_getaffinity(0)`), which already reflects
/// the cgroup cpuset and any `taskset` it was started under: coloc must only place
/// threads where it may run them itself.
///
/// glibc's `cpu_set_t` holds 1024 CPUs; on a kernel with more the call fails, and
/// the error says so.
pub fn allowed_cpus() -> Result<CpuSet, SysfsError> {
    let mask = sched_getaffinity(Pid::from_raw(0)).map_err(SysfsError::Affinity)?;
    let limit = NixCpuSet::count().min(MAX_CPU as usize + 1);
    Ok((0..limit)
        .filter(|&i| mask.is_set(i).unwrap_or(false))
        .map(|i| i as Cpu)
        .collect())
}
