//! The few scheduling syscalls coloc makes on other tasks, each a thin wrapper
//! that returns the kernel's errno as a typed [`Errno`] (firecracker's
//! `SyscallReturnCode`, via nix): callers tell "the thread is gone" (`ESRCH`)
//! from "the kernel refuses" (`EINVAL`, `EPERM`) by value, not by message.

use coloc_model::cpuset::{Cpu, CpuSet};
use nix::errno::Errno;
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

/// A kernel CPU mask for `set`. CPUs beyond glibc's `cpu_set_t` (1024) cannot be
/// named through it, which the kernel would refuse the same way (`EINVAL`).
pub(crate) fn cpu_mask(set: &CpuSet) -> Result<NixCpuSet, Errno> {
    let mut mask = NixCpuSet::new();
    for cpu in set.iter() {
        mask.set(cpu as usize).map_err(|_| Errno::EINVAL)?;
    }
    Ok(mask)
}

/// The CPUs `tid` may run on.
pub(crate) fn affinity(tid: u32) -> Result<CpuSet, Errno> {
    let mask = sched_getaffinity(Pid::from_raw(tid as i32))?;
    Ok((0..NixCpuSet::count())
        .filter(|&i| mask.is_set(i).unwrap_or(false))
        .map(|i| i as Cpu)
        .collect())
}

/// Whether `tid` may run on exactly `cpus`: one syscall and a compare of the
/// kernel masks, without building a set of the 1024 possible CPUs (the check
/// runs for every placed thread at every apply).
pub(crate) fn affinity_is(tid: u32, cpus: &CpuSet) -> Result<bool, Errno> {
    let mask = sched_getaffinity(Pid::from_raw(tid as i32))?;
    Ok(cpu_mask(cpus).is_ok_and(|want| want == mask))
}

/// Lets `tid` run on `cpus` only.
pub(crate) fn set_affinity(tid: u32, cpus: &CpuSet) -> Result<(), Errno> {
    sched_setaffinity(Pid::from_raw(tid as i32), &cpu_mask(cpus)?)
}

/// Sets the nice value of one thread (`setpriority(PRIO_PROCESS, tid)` acts on
/// the thread, not the whole process, on Linux).
pub(crate) fn set_nice(tid: u32, nice: i32) -> Result<(), Errno> {
    // SAFETY: setpriority takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    Errno::result(rc).map(drop)
}

/// `struct sched_attr` of `sched_setattr(2)` (size `SCHED_ATTR_SIZE_VER1`, with
/// the utilization clamps); the libc crate does not define it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchedAttr {
    pub size: u32,
    pub sched_policy: u32,
    pub sched_flags: u64,
    pub sched_nice: i32,
    pub sched_priority: u32,
    /// For SCHED_OTHER / SCHED_BATCH under EEVDF (Linux 6.12+): the requested
    /// slice in ns; the kernel clamps it to 0.1..100 ms and reports the slice
    /// in force when read back.
    pub sched_runtime: u64,
    pub sched_deadline: u64,
    pub sched_period: u64,
    pub sched_util_min: u32,
    pub sched_util_max: u32,
}

const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;

impl SchedAttr {
    /// Whether the policy is one of the fair classes, the only ones a slice
    /// request means anything to.
    pub(crate) fn is_fair(&self) -> bool {
        matches!(
            self.sched_policy as i32,
            libc::SCHED_OTHER | libc::SCHED_BATCH
        )
    }
}

/// The scheduling attributes of `tid`.
pub(crate) fn sched_getattr(tid: u32) -> Result<SchedAttr, Errno> {
    let mut attr = SchedAttr::default();
    // SAFETY: the kernel writes at most `SCHED_ATTR_SIZE` bytes into `attr`,
    // which is exactly that large and lives until the call returns.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as libc::pid_t,
            &mut attr as *mut SchedAttr,
            SCHED_ATTR_SIZE,
            0u32,
        )
    };
    Errno::result(rc).map(|_| attr)
}

/// Sets the scheduling attributes of `tid` (`tid` 0 is the calling thread).
/// Only raw syscalls: safe between fork and exec.
pub(crate) fn sched_setattr(tid: u32, attr: &SchedAttr) -> Result<(), Errno> {
    let attr = SchedAttr {
        size: SCHED_ATTR_SIZE,
        ..*attr
    };
    // SAFETY: the kernel reads `attr.size` bytes from a valid, initialized
    // struct that outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid as libc::pid_t,
            &attr as *const SchedAttr,
            0u32,
        )
    };
    Errno::result(rc).map(drop)
}

/// Sets the calling thread's NUMA memory policy (`set_mempolicy(2)`): `mode` is
/// `MPOL_LOCAL` (no nodes) or `MPOL_INTERLEAVE` over `nodes`, a bitmask in
/// `c_ulong` words. Only a raw syscall: safe between fork and exec.
pub(crate) fn set_mempolicy(mode: i32, nodes: &[libc::c_ulong]) -> Result<(), Errno> {
    let (ptr, maxnode) = if nodes.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (
            nodes.as_ptr(),
            nodes.len() * libc::c_ulong::BITS as usize + 1,
        )
    };
    // SAFETY: the kernel reads `maxnode - 1` bits from `ptr`, which points at
    // `nodes`, borrowed for the duration of the call (or is NULL with 0).
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    Errno::result(rc).map(drop)
}

/// `move_pages(2)` on process `pid`: with `nodes`, moves each page of `pages`
/// (page-aligned addresses) to its node; without, only asks where each is.
/// `status` receives, per page, its node or a negative errno (`-ENOENT`: not
/// resident). Returns how many pages the kernel could not move.
pub(crate) fn move_pages(
    pid: u32,
    pages: &[u64],
    nodes: Option<&[i32]>,
    status: &mut [i32],
) -> Result<usize, Errno> {
    assert_eq!(pages.len(), status.len(), "one status per page");
    if let Some(n) = nodes {
        assert_eq!(n.len(), pages.len(), "one node per page");
    }
    let node_ptr = nodes.map_or(std::ptr::null(), <[i32]>::as_ptr);
    // SAFETY: the kernel reads `pages.len()` addresses from `pages` and as many
    // node numbers from `node_ptr` (or none when it is NULL), and writes as many
    // ints into `status`; all three slices have that length (checked above) and
    // outlive the call. The addresses are only looked up in the target's page
    // tables, never dereferenced here.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::pid_t,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            node_ptr,
            status.as_mut_ptr(),
            MPOL_MF_MOVE,
        )
    };
    Errno::result(rc).map(|n| n as usize)
}

/// Move only pages mapped by the target process alone (`<linux/mempolicy.h>`).
const MPOL_MF_MOVE: libc::c_int = 1 << 1;

/// `MPOL_LOCAL` and `MPOL_INTERLEAVE` from `<linux/mempolicy.h>`.
pub(crate) const MPOL_INTERLEAVE: i32 = 3;
pub(crate) const MPOL_LOCAL: i32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sched_attr_has_the_kernel_layout() {
        // SCHED_ATTR_SIZE_VER1 in include/uapi/linux/sched/types.h.
        assert_eq!(SCHED_ATTR_SIZE, 56);
    }

    #[test]
    fn own_thread_round_trips() {
        let tid = nix::unistd::gettid().as_raw() as u32;
        let cpus = affinity(tid).unwrap();
        assert!(!cpus.is_empty());
        set_affinity(tid, &cpus).unwrap();
        assert!(affinity_is(tid, &cpus).unwrap());
        assert!(!affinity_is(tid, &CpuSet::default()).unwrap());
        let attr = sched_getattr(tid).unwrap();
        assert!(attr.is_fair(), "{attr:?}");
        sched_setattr(tid, &attr).unwrap();
    }

    #[test]
    fn a_cpu_beyond_the_mask_is_einval() {
        assert_eq!(
            cpu_mask(&CpuSet::single(coloc_model::cpuset::MAX_CPU)),
            Err(Errno::EINVAL)
        );
    }
}
