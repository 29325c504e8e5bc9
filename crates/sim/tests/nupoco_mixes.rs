//! NuPoCo's three mixes in the simulator (`examples/sim/nupoco-barriers.toml`,
//! `nupoco-memory-compute.toml`, `nupoco-serial-scalable.toml`: BT+SP, FT+EP
//! and kmeans+BT on nupoco-amd64, NuPoCo §7.4's kinds of mix) under native,
//! equal and nupoco, as `coloc compare --sim nupoco-amd64` runs them: the
//! example files as written, nupoco with the platform's own memory
//! calibration and the region records of each app's solo run (which a
//! comparison's later runs have; without them nupoco cuts no team,
//! docs/policies/auto.md, Reversible first). NuPoCo never loses to Native on the paper's machines, and on
//! total turnaround it is ahead of every baseline (§7.4); here nupoco's total
//! turnaround may be at most 2% above native's and equal's on each mix.
//!
//! To keep the run short in a debug build, every phase's work is halved
//! ([`AppModel::scaled`]); the phases themselves (serial setup, parallel
//! regions, serial steps) stay as the library has them. Native is one seed's
//! run: at a quarter of the work, native's FT happened to finish 15% sooner
//! than at half (10.7 s against 25.1 s / 2), so the factor is kept where the
//! comparison reflects the full-size mix.

use std::time::Duration;

use coloc_manager::{run, RunOptions};
use coloc_model::workload::parse_workload;
use coloc_model::TraceEvent;
use coloc_policy::PolicyContext;
use coloc_sim::model::{model, AppModel};
use coloc_sim::{platform, SimMachine};

/// Work of every phase, as a fraction of the library model's.
const SCALE: f64 = 0.5;

/// Total turnaround (sum of the apps' arrival-to-exit times) of the example
/// workload `file` under `policy`, seed 1.
fn total_turnaround(file: &str, policy: &str) -> Duration {
    outcome(file, policy).0
}

/// Of the example workload `file` under `policy`, seed 1: its total
/// turnaround and its makespan (the last exit).
fn outcome(file: &str, policy: &str) -> (Duration, Duration) {
    let path = format!("{}/../../examples/sim/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let w = parse_workload(&path, &text).unwrap();
    let models: Vec<AppModel> = w
        .apps
        .iter()
        .map(|a| model(a.model.as_deref().unwrap()).unwrap().scaled(SCALE))
        .collect();
    let amd = platform("nupoco-amd64").unwrap();
    // The regions each app's solo run recorded, as a comparison's later runs
    // read them (docs/policies/auto.md, Reversible first).
    let ctx = PolicyContext {
        calibration: Some(amd.memory_calibration()),
        regions: coloc_sim::earlier::solo_region_records(&amd, &models, &w, 1),
        ..PolicyContext::default()
    };
    let mut m = SimMachine::new(amd, 1).with_models(models);
    let mut p = coloc_policy::by_name_with(policy, &ctx).unwrap();
    let opts = RunOptions::simulated(w.epoch.unwrap(), 1);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let summary = run(&mut m, p.as_mut(), &w, &opts, &mut trace).unwrap();
    assert_eq!((summary.instances, summary.failed), (w.apps.len(), 0));
    let mut arrived = Vec::new();
    let (mut total, mut last) = (Duration::ZERO, Duration::ZERO);
    for e in &trace {
        match e {
            TraceEvent::Arrive { t, app, .. } => arrived.push((*app, *t)),
            TraceEvent::Exit { t, app, .. } => {
                let (_, at) = arrived.iter().find(|(a, _)| a == app).unwrap();
                total += *t - *at;
                last = last.max(*t);
            }
            _ => {}
        }
    }
    (total, last)
}

/// Fails when nupoco's total turnaround on `file` is more than `slack` (a
/// fraction) above native's or equal's.
fn nupoco_within(file: &str, slack: f64) {
    let [native, equal, nupoco] =
        ["native", "equal", "nupoco"].map(|p| total_turnaround(file, p).as_secs_f64());
    eprintln!(
        "{file} (work x{SCALE}), total turnaround s: native {native:.2}, equal {equal:.2}, \
         nupoco {nupoco:.2}"
    );
    assert!(
        nupoco <= (1.0 + slack) * native.min(equal),
        "{file}: nupoco {nupoco:.2} s against native {native:.2} s, equal {equal:.2} s"
    );
}

/// BT+SP: at or below both before the reversible-first rule; under its
/// first form (a cut only in regions within four intervals) SP was cut less
/// often, 13.59 s against native's 12.83 s (5.9% above, held at 6% then).
/// Weighing the costs (docs/policies/auto.md, Reversible first), nupoco is
/// at 12.77 s, below native and equal (13.06 s) again: held at the
/// module's 2%.
#[test]
fn nupoco_keeps_up_on_barrier_synchronized_bt_sp() {
    nupoco_within("nupoco-barriers.toml", 0.02);
}

#[test]
fn nupoco_keeps_up_on_memory_bound_ft_with_compute_bound_ep() {
    nupoco_within("nupoco-memory-compute.toml", 0.02);
}

#[test]
fn nupoco_keeps_up_on_serial_kmeans_with_scalable_bt() {
    nupoco_within("nupoco-serial-scalable.toml", 0.02);
}

/// NuPoCo Table 2's scenario 4 (BT, FT and SP of 64 threads started
/// together on nupoco-amd64), the paper's best on its AMD machine (0.80 of
/// native's makespan). While reversible first allowed a cut only in
/// regions of up to four 50 ms intervals, these NAS models' regions (0.25–0.7
/// s) kept every team whole in a partition it oversubscribed: at half work
/// nupoco took 16.06 s against native's 13.94 s (1.718× at full work, `coloc
/// bench paper nupoco`, docs/simulator.md). Weighing the costs, teams are
/// cut and nupoco's makespan is below native's (13.12 s).
#[test]
fn nupoco_beats_native_on_table2_scenario_4() {
    let file = "nupoco-table2/s04-bt-ft-sp.toml";
    let (_, native) = outcome(file, "native");
    let (_, nupoco) = outcome(file, "nupoco");
    eprintln!("{file} (work x{SCALE}): makespan native {native:?}, nupoco {nupoco:?}");
    assert!(
        nupoco < native,
        "nupoco {nupoco:?} against native {native:?}"
    );
}
