//! This machine's topology is restricted to the CPUs this process may use.

use coloc_linux::topology::{allowed_cpus, host_topology, read_host};
use coloc_model::cpuset::CpuSet;
use nix::sched::{sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

fn online() -> CpuSet {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    CpuSet::parse_list(&text).unwrap()
}

#[test]
fn host_topology_covers_the_allowed_online_cpus() {
    let allowed = allowed_cpus().unwrap();
    assert!(!allowed.is_empty());
    assert!(
        allowed.is_subset(&online()),
        "{allowed} not within online {}",
        online()
    );
    let t = host_topology().unwrap();
    assert_eq!(t.cpus(), &allowed.intersection(&online()));
    assert_eq!(read_host(None).unwrap().cpus(), &online());
}

#[test]
fn allowed_cpus_follow_this_threads_affinity() {
    // sched_setaffinity(0) changes only the calling thread, which is this test's own.
    let first = allowed_cpus().unwrap().first().unwrap();
    let mut one = NixCpuSet::new();
    one.set(first as usize).unwrap();
    sched_setaffinity(Pid::from_raw(0), &one).unwrap();
    assert_eq!(allowed_cpus().unwrap(), CpuSet::single(first));
    let t = host_topology().unwrap();
    assert_eq!(t.cpus(), &CpuSet::single(first));
    assert_eq!(t.cores().len(), 1);
}
