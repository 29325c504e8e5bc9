//! Gang time sharing in the simulator (`docs/policies/auto.md`, "Gang time
//! sharing"): two `kernel-barrier` teams of 2 threads (4 times its work) that are not
//! malleable, on the 2-CPU machine, under native (Linux interleaves the four
//! threads: every barrier waits for a descheduled member), equal (one CPU
//! each: each team time-shares its own CPU) and auto, which sees their
//! threads sleep at barriers but gives each a CPU of its own (two teams on
//! two CPUs: partitions were measured faster on the real machine), and
//! `gang`, which gives each team the whole machine in turn, the other at
//! nice 19: native 13.74 s, equal 7.12 s, gang 7.49 s, auto 7.12 s.
//! Deterministic: one seed of the simulator, and the same seed twice gives
//! the same makespan.

use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::reason::{NoGang, Reason};
use coloc_model::workload::parse_workload;
use coloc_model::{Plan, TraceEvent};
use coloc_policy::{build, PolicyContext};
use coloc_sim::model::{model, Phase};
use coloc_sim::{platform, SimMachine};

const WORKLOAD: &str = r#"
name = "two-barriers"
epoch = "100ms"

[[app]]
name = "bar-a"
model = "long-barrier"
threads = 2

[[app]]
name = "bar-b"
model = "long-barrier"
threads = 2
"#;

/// Makespan of the workload under `policy` (seed 1), and its
/// plans.
fn makespan(policy: &str) -> (f64, Vec<Plan>) {
    let w = parse_workload("two-barriers.toml", WORKLOAD).unwrap();
    // kernel-barrier with 4 times its work: long enough for auto's trial to
    // settle (2 pairs of windows) and then mostly run its verdict.
    let mut long = model("kernel-barrier").unwrap();
    long.name = "long-barrier".into();
    long.phases = vec![Phase::parallel(4.0 * 13.6)];
    let mut m = SimMachine::new(platform("kvm-2cpu").unwrap(), 1).with_models(vec![long]);
    let mut p = build(policy, &PolicyContext::default()).unwrap();
    let opts = RunOptions::simulated(w.epoch.unwrap(), 1);
    let mut trace = Vec::new();
    let summary = run(&mut m, p.as_mut(), &w, &opts, &mut trace).unwrap();
    assert_eq!((summary.instances, summary.failed), (2, 0), "{policy}");
    let last: Duration = trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit { t, .. } => Some(*t),
            _ => None,
        })
        .max()
        .unwrap();
    let notes = trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Plan { plan, .. } => Some(plan.clone()),
            _ => None,
        })
        .collect();
    (last.as_secs_f64(), notes)
}

#[test]
fn gang_time_sharing_beats_native_but_not_equal_on_barrier_teams() {
    let [(native, _), (equal, _), (gang, gang_plans), (auto, plans)] =
        ["native", "equal", "gang", "auto"].map(makespan);
    eprintln!("makespan s: native {native:.3}, equal {equal:.3}, gang {gang:.3}, auto {auto:.3}");
    assert_eq!(makespan("gang").0, gang, "deterministic");
    assert_eq!(makespan("auto").0, auto, "deterministic");
    let background = |p: &Plan| {
        p.apps
            .iter()
            .flat_map(|a| &a.reasons)
            .any(|r| matches!(r, Reason::Gang(g) if g.nice == 19))
    };
    let turns = gang_plans.iter().filter(|p| background(p)).count();
    assert!(turns > gang_plans.len() / 2, "{gang_plans:#?}");
    assert!(
        gang < 0.6 * native,
        "gang {gang:.3} s, native {native:.3} s"
    );
    // Gang loses to equal (7.49 s against 7.12 s): a team on a CPU of its
    // own waits passively at its barriers (libgomp started with more threads
    // than CPUs), which the model charges no switch, while the foreground
    // team still loses some CPU to the background's threads and a little
    // time at its barriers; on the real machine gang lost to equal too
    // (docs/policies/auto.md), so auto gives two such teams on two CPUs a
    // CPU each, and ties equal.
    assert!(equal < gang, "gang {gang:.3} s, equal {equal:.3} s");
    assert!(auto <= 1.02 * equal, "auto {auto:.3} s, equal {equal:.3} s");
    assert!(
        plans
            .iter()
            .flat_map(|p| &p.apps)
            .any(|a| a.reasons.contains(&Reason::NoGang(NoGang::CpuOfItsOwn))),
        "{plans:#?}"
    );
}
