//! What the harness's tests run on: the simulator's `kvm-2cpu` (seed 1) and
//! a workload of two models on it.

use coloc_model::{AppSpec, Workload};

use crate::Target;

/// The simulator's `kvm-2cpu`, seed 1.
pub fn kvm() -> Target {
    Target::Sim {
        platform: coloc_sim::platform("kvm-2cpu").unwrap(),
        seed: 1,
    }
}

/// `w`: a content analyzer and a stitcher, two threads each.
pub fn two_apps() -> Workload {
    Workload {
        name: "w".into(),
        epoch: None,
        apps: vec![
            AppSpec::model("a", "content-analyzer", 2),
            AppSpec::model("b", "stitcher", 2),
        ],
    }
}
