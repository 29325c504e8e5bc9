//! Builders shared by tests across crates and by the simulator's tests
//! (the `testutils` feature; scx's `make_test_topo`).

use std::sync::Arc;
use std::time::Duration;

use crate::ids::{AppId, Tid};
use crate::topology::Topology;
use crate::view::{AppState, AppView};
use crate::workload::AppSpec;

/// The fixture machines every policy is tested on: a 2-socket Intel Xeon with SMT
/// (2 × 8 cores × 2 PUs, one L3 per socket), an 8-node AMD Opteron (4 packages ×
/// 2 nodes × 6 cores, one L3 per node) and this development machine (a 2-vCPU KVM
/// guest with one L3).
pub fn fixture_topologies() -> Vec<Topology> {
    [
        (
            "intel-2s-smt",
            "package:2 numa:1 l3(20M):1 l2(256K):8 core:1 pu:2",
        ),
        ("amd-8node", "package:4 numa:2 l3(5M):1 l2(512K):6 core:1"),
        ("kvm-2cpu", "package:1 l3(32M):1 l2(512K):2 core:1"),
    ]
    .iter()
    .map(|(n, d)| Topology::synthetic(n, d).expect("fixture descriptions are valid"))
    .collect()
}

/// A minimal real-program app spec.
pub fn app_spec(name: &str, threads: u32) -> AppSpec {
    AppSpec::program(name, vec!["true".into()], threads)
}

/// A running app `index` with the given thread ids, arrived at `index` seconds.
pub fn running_app(index: u32, tids: &[Tid]) -> AppView {
    AppView {
        id: AppId { app: index, rep: 0 },
        spec: Arc::new(app_spec(&format!("app{index}"), tids.len() as u32)),
        state: AppState::Running,
        arrived_at: Duration::from_secs(u64::from(index)),
        started_at: Some(Duration::from_secs(u64::from(index))),
        threads_requested: tids.len() as u32,
        threads: tids.to_vec(),
        current: None,
    }
}

/// A pending app `index` that asked for `threads` threads.
pub fn pending_app(index: u32, threads: u32) -> AppView {
    AppView {
        state: AppState::Pending,
        started_at: None,
        threads: Vec::new(),
        threads_requested: threads,
        ..running_app(index, &[])
    }
}
