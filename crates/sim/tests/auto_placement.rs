//! auto's placement and memory policy in the simulator
//! (`docs/policies/auto.md`, Placement and memory): on mixes whose threads
//! oversubscribe the machine, so that auto gives each app a partition,
//! - partitions placed by the apps' ReSense profiles (characterized on the
//!   platform, as `coloc profile --sim` does) finish no later than the
//!   contiguous partitions auto makes without profiles: streamcluster beside
//!   MG on Harpertown (MG spreads over both front-side buses), MG beside
//!   swaptions on the 4-node Opteron 8431 (MG spreads over the four memory
//!   controllers);
//! - interleaving the memory of a memory-bound app whose partition spans
//!   nodes (Thread Tranquilizer's rule) finishes no later than the same
//!   arrangement with memory as it was.
//!
//! The models' work is cut to a tenth so each mix runs a few simulated
//! seconds. Deterministic: one seed of the simulator.

use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::explain;
use coloc_model::profile::AppProfile;
use coloc_model::reason::{Memory, PlanReason, Reason};
use coloc_model::workload::parse_workload;
use coloc_model::{AppId, CpuSet, MemPolicy, Plan, TraceEvent, View};
use coloc_policy::{build, Policy, PolicyContext};
use coloc_sim::characterize::{characterize, CharacterizeOptions};
use coloc_sim::model::{model, AppModel};
use coloc_sim::{platform, SimMachine};

/// A library model with a tenth of its work, named as the app that runs it.
fn short(name: &str) -> AppModel {
    let mut m = model(name).unwrap();
    for phase in &mut m.phases {
        phase.ginstr *= 0.1;
    }
    m
}

/// Two malleable apps started together: `(model, threads)` each.
fn pair(a: (&str, u32), b: (&str, u32)) -> String {
    [a, b]
        .iter()
        .map(|(m, t)| {
            format!("[[app]]\nname = \"{m}\"\nmodel = \"{m}\"\nthreads = {t}\nmalleable = true\n")
        })
        .fold(
            "name = \"pair\"\nepoch = \"100ms\"\n".to_string(),
            |w, a| w + &a,
        )
}

/// auto with its memory policy taken out of every plan: the arrangement it
/// would make if it left memory as it is.
#[derive(Debug)]
struct MemoryAsItIs(Box<dyn Policy>);

impl Policy for MemoryAsItIs {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let mut plan = self.0.decide(view);
        for p in &mut plan.apps {
            p.memory = MemPolicy::Default;
        }
        plan
    }
}

/// Makespan of `workload` on `platform` under auto with `profiles` (seed 1),
/// with its memory policy or without, and the plans.
fn makespan(
    platform_name: &str,
    workload: &str,
    profiles: &[AppProfile],
    memory: bool,
) -> (f64, Vec<Plan>) {
    let w = parse_workload("pair.toml", workload).unwrap();
    let models: Vec<AppModel> = w.apps.iter().map(|a| short(&a.name)).collect();
    let mut machine = SimMachine::new(platform(platform_name).unwrap(), 1).with_models(models);
    let ctx = PolicyContext {
        profiles: profiles.to_vec(),
        ..PolicyContext::default()
    };
    let mut policy = build("auto", &ctx).unwrap();
    if !memory {
        policy = Box::new(MemoryAsItIs(policy));
    }
    let opts = RunOptions::simulated(w.epoch.unwrap(), 1);
    let mut trace = Vec::new();
    let summary = run(&mut machine, policy.as_mut(), &w, &opts, &mut trace).unwrap();
    assert_eq!((summary.instances, summary.failed), (2, 0));
    let last = trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit { t, .. } => Some(*t),
            _ => None,
        })
        .max()
        .unwrap_or(Duration::ZERO);
    let plans = trace
        .into_iter()
        .filter_map(|e| match e {
            TraceEvent::Plan { plan, .. } => Some(plan),
            _ => None,
        })
        .collect();
    (last.as_secs_f64(), plans)
}

/// The apps' profiles on the platform, as `coloc profile --sim` measures them.
fn profiles(platform_name: &str, models: &[&str]) -> Vec<AppProfile> {
    let p = platform(platform_name).unwrap();
    models
        .iter()
        .map(|m| characterize(&p, &short(m), CharacterizeOptions::default()))
        .collect()
}

/// auto with the apps' profiles against auto without on `workload`, asserted
/// no later; returns the CPUs of app `app` in each plan placed by profiles.
fn placed_no_later(platform_name: &str, workload: &str, app: u32) -> Vec<CpuSet> {
    let w = parse_workload("pair.toml", workload).unwrap();
    let names: Vec<&str> = w.apps.iter().map(|a| a.name.as_str()).collect();
    let stored = profiles(platform_name, &names);
    let (contiguous, _) = makespan(platform_name, workload, &[], true);
    let (placed, plans) = makespan(platform_name, workload, &stored, true);
    eprintln!(
        "{platform_name} {}: contiguous {contiguous:.3} s, placed {placed:.3} s",
        names.join("+")
    );
    assert!(
        placed <= contiguous,
        "placed {placed:.3} s, contiguous {contiguous:.3} s"
    );
    let cpus: Vec<CpuSet> = plans
        .iter()
        .filter(|p| p.reasons.contains(&PlanReason::PlacedByProfiles))
        .filter_map(|p| p.for_app(AppId { app, rep: 0 }))
        .map(|p| p.placement.cpus())
        .collect();
    assert!(!cpus.is_empty(), "auto placed by profiles");
    cpus
}

/// Harpertown (2 front-side buses, 2 L2s of 2 cores each per bus):
/// streamcluster (+ at L2 and FSB) and MG (−24 at the FSB, the most sensitive,
/// so placed first), 8 threads each on 8 CPUs. Contiguous partitions put MG
/// on one bus; its scores spread it over both, one L2 of each bus, and the
/// pair finishes earlier.
#[test]
fn resense_placement_beats_contiguous_partitions_on_harpertown() {
    let mg = placed_no_later("harpertown", &pair(("streamcluster", 8), ("mg", 8)), 1);
    let buses = [
        CpuSet::parse_list("0-3").unwrap(),
        CpuSet::parse_list("4-7").unwrap(),
    ];
    for cpus in &mg {
        assert!(buses.iter().all(|b| !b.is_disjoint(cpus)), "MG on {cpus}");
    }
}

/// The Opteron 8431 (4 nodes of 6 cores, one L3 and memory controller each):
/// MG with 32 threads beside swaptions with 16 on 24 CPUs, partitions of 16
/// and 8. Contiguous, MG's 16 CPUs cover nodes 0–1 and a third of node 2;
/// its negative L3/controller score spreads them over all four controllers.
#[test]
fn resense_placement_beats_contiguous_partitions_on_numa() {
    let nodes: Vec<CpuSet> = ["0-5", "6-11", "12-17", "18-23"]
        .iter()
        .map(|n| CpuSet::parse_list(n).unwrap())
        .collect();
    let mg = placed_no_later("opteron-8431", &pair(("mg", 32), ("swaptions", 16)), 0);
    for cpus in &mg {
        assert!(nodes.iter().all(|n| !n.is_disjoint(cpus)), "MG on {cpus}");
    }
}

/// The same mix without profiles: MG's contiguous partition spans three nodes,
/// MG is memory-intensive by its miss rate, and its memory is interleaved over
/// them; with memory left as it was (first touch on its first node) the pair
/// finishes later.
#[test]
fn interleaving_a_memory_bound_partition_over_nodes_helps() {
    let w = pair(("mg", 32), ("swaptions", 16));
    let (interleaved, plans) = makespan("opteron-8431", &w, &[], true);
    let (as_is, _) = makespan("opteron-8431", &w, &[], false);
    eprintln!("opteron-8431 mg+swaptions: memory policy {interleaved:.3} s, as it is {as_is:.3} s");
    let mg = AppId { app: 0, rep: 0 };
    let interleaving: Vec<&Plan> = plans
        .iter()
        .filter(|p| {
            p.for_app(mg)
                .is_some_and(|a| a.memory == MemPolicy::Interleave)
        })
        .collect();
    assert!(!interleaving.is_empty(), "MG interleaved");
    for p in interleaving {
        assert!(
            p.for_app(mg)
                .is_some_and(|a| a.reasons.iter().any(|r| matches!(
                    r,
                    Reason::Memory(Memory::Interleave { nodes: 3, class }) if class.memory
                ))),
            "{}",
            explain::plan_line(p)
        );
    }
    assert!(
        interleaved <= as_is,
        "interleaved {interleaved:.3} s, as it is {as_is:.3} s"
    );
}
