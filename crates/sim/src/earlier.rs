//! What earlier runs of a workload's apps would have left behind, made in the
//! simulator: each app alone under `native`, through the Manager, as `coloc
//! solo` runs it on a real machine. Policies read such records from the runs
//! a user made before (`coloc_model::metrics::regions`; docs/policies/auto.md,
//! Reversible first); tests and benchmarks that compare a policy as it runs
//! once records exist make them here.

use coloc_manager::{run, RunOptions, DEFAULT_EPOCH};
use coloc_model::metrics::RegionRecords;
use coloc_model::{Trace, Workload};
use coloc_policy::baseline::Native;

use crate::machine::SimMachine;
use crate::model::AppModel;
use crate::platform::Platform;

/// The region records of one run of each app of `workload` alone on
/// `platform`, at its own thread count and the workload's epoch (`models`
/// are the models the workload names beyond the library's).
pub fn solo_region_records(
    platform: &Platform,
    models: &[AppModel],
    workload: &Workload,
    seed: u64,
) -> RegionRecords {
    let epoch = workload.epoch.unwrap_or(DEFAULT_EPOCH);
    let mut records = RegionRecords::default();
    for app in &workload.apps {
        let mut alone = app.clone();
        alone.arrive_at = std::time::Duration::ZERO;
        alone.repeat = 1;
        let single = Workload {
            name: format!("{}-solo-{}", workload.name, app.name),
            epoch: Some(epoch),
            apps: vec![alone],
        };
        let mut m = SimMachine::new(platform.clone(), seed).with_models(models.iter().cloned());
        let mut events = Vec::new();
        let opts = RunOptions::simulated(epoch, seed);
        if run(&mut m, &mut Native, &single, &opts, &mut events).is_err() {
            continue;
        }
        if let Ok(trace) = Trace::from_events(events) {
            records.extend(&RegionRecords::from_trace(&trace));
        }
    }
    records
}
