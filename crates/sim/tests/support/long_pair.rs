//! The long pair of auto's trial tests (docs/policies/auto.md, Hysteresis;
//! docs/knowledge.md, Trials of a set of programs): a program whose work is
//! one long region beside a team of barriers, one set for about 16 s on the
//! simulator's `kvm-2cpu`, long enough for its trial to reach a verdict and
//! re-check it. Read by `crates/sim/tests/trial_settles.rs` and
//! `crates/harness/tests/trial_knowledge.rs` (`#[path]`), so both run the
//! same pair.

use coloc_sim::model::{model, AppModel, Phase};

/// `long`: SP's character written as one long parallel region, and
/// `barriers-long`: many short regions ending in barriers.
pub fn models() -> Vec<AppModel> {
    vec![
        model("sp-one-region")
            .unwrap()
            .variant("long", vec![Phase::serial(0.2), Phase::parallel(30.0)]),
        model("kernel-barrier")
            .unwrap()
            .variant("barriers-long", vec![Phase::parallel(80.0)]),
    ]
}

/// The pair as a workload, its apps named `a` (the long region) and `b`
/// (the barriers).
pub fn named(a: &str, b: &str) -> String {
    format!(
        r#"
name = "long-pair"
epoch = "100ms"

[[app]]
name = "{a}"
model = "long"
threads = 2

[[app]]
name = "{b}"
model = "barriers-long"
threads = 2
malleable = true
"#
    )
}
