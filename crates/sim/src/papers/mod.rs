//! The papers' experiments in the simulator (docs/simulator.md, Reproducing
//! the papers): each paper's headline table, computed by whole runs through
//! the unchanged Manager on [`SimMachine`], with the paper's own figure
//! beside ours. `coloc bench paper NAME` prints them at full scale; the
//! regression tests (`crates/sim/tests/papers.rs`) hold each at a reduced
//! scale. Every run is a pure function of its inputs and seed.
//!
//! - [`tang`]: Tang et al. Table 4 (Algorithm 1 against the best of three
//!   mappings) and Figures 23–24 (AToM against every static mapping);
//! - [`tranquilizer`]: Thread Tranquilizer Tables I and V (run-to-run
//!   variation of programs alone, and its cut) and Figure 9 (four programs
//!   together);
//! - [`resense`]: ReSense §3.6 (ten static mixes per platform, resense
//!   against the oracle).
//!
//! NuPoCo's Table 2 runs as `coloc compare --sim` does, so it lives with the
//! CLI (`coloc bench paper nupoco`).

pub mod resense;
pub mod tang;
pub mod tranquilizer;

use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use coloc_manager::{run, Recorder, RunOptions};
use coloc_model::{AppId, TraceEvent, Workload};
use coloc_policy::Policy;

use crate::model::AppModel;
use crate::platform::Platform;
use crate::SimMachine;

/// Why an experiment could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PaperError {
    #[error("{what}: the run failed: {reason}")]
    Run { what: String, reason: String },
    #[error("{what}: app `{app}` did not exit")]
    NoExit { what: String, app: String },
    #[error("{0}")]
    Setup(String),
}

/// Start and exit of every app instance of a run.
#[derive(Default)]
struct Times {
    start: BTreeMap<AppId, Duration>,
    exit: BTreeMap<AppId, Duration>,
    failure: Option<String>,
}

impl Recorder for Times {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        match event {
            TraceEvent::Start { t, app, .. } => {
                self.start.insert(*app, *t);
            }
            TraceEvent::Exit { t, app, status, .. } => {
                if !status.success() && self.failure.is_none() {
                    self.failure = Some(format!("app {app} ended with {status:?}"));
                }
                self.exit.insert(*app, *t);
            }
            _ => {}
        }
        Ok(())
    }
}

/// One app's run: from its start to its exit, and its exit time (s since the
/// run began).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AppTime {
    /// Execution time, start to exit, s.
    pub run_s: f64,
    /// Exit time since the run began (every app of the papers' static
    /// workloads arrives at 0, so this is its response time), s.
    pub exit_s: f64,
}

/// Runs `workload` under `policy` on `platform` (extra models registered),
/// `seed` for the balancer; every instance's times, per app in workload
/// order, instances in the order they started.
pub fn run_instances(
    platform: &Platform,
    models: &[AppModel],
    workload: &Workload,
    policy: &mut dyn Policy,
    seed: u64,
) -> Result<Vec<Vec<AppTime>>, PaperError> {
    let mut machine = SimMachine::new(platform.clone(), seed).with_models(models.to_vec());
    let epoch = workload.epoch.unwrap_or(coloc_manager::DEFAULT_EPOCH);
    let mut times = Times::default();
    let name = format!(
        "{} under {} on {}",
        workload.name,
        policy.name(),
        platform.name
    );
    let what = || name.clone();
    run(
        &mut machine,
        policy,
        workload,
        &RunOptions::simulated(epoch, seed),
        &mut times,
    )
    .map_err(|e| PaperError::Run {
        what: what(),
        reason: e.to_string(),
    })?;
    if let Some(reason) = times.failure {
        return Err(PaperError::Run {
            what: what(),
            reason,
        });
    }
    workload
        .apps
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let ids = (0..a.repeat.max(1)).map(|rep| AppId { app: i as u32, rep });
            ids.map(|id| match (times.start.get(&id), times.exit.get(&id)) {
                (Some(s), Some(e)) => Ok(AppTime {
                    run_s: (*e - *s).as_secs_f64(),
                    exit_s: e.as_secs_f64(),
                }),
                _ => Err(PaperError::NoExit {
                    what: what(),
                    app: a.name.clone(),
                }),
            })
            .collect()
        })
        .collect()
}

/// [`run_instances`], each app's first instance.
pub fn run_times(
    platform: &Platform,
    models: &[AppModel],
    workload: &Workload,
    policy: &mut dyn Policy,
    seed: u64,
) -> Result<Vec<AppTime>, PaperError> {
    Ok(run_instances(platform, models, workload, policy, seed)?
        .into_iter()
        .map(|v| v[0])
        .collect())
}

/// `model` from the library scaled to `ginstr` 10^9 instructions in all.
pub fn scaled_to(name: &str, ginstr: f64) -> Result<AppModel, PaperError> {
    let m = crate::model::model(name)
        .ok_or_else(|| PaperError::Setup(format!("no library model `{name}`")))?;
    let f = ginstr / m.total_ginstr();
    Ok(m.scaled(f))
}

/// Every library model `w` names, its work times `scale` (1: the library's
/// own).
pub fn scaled_models(w: &Workload, scale: f64) -> Result<Vec<AppModel>, PaperError> {
    w.apps
        .iter()
        .filter_map(|a| a.model.as_deref())
        .map(|name| {
            crate::model::model(name)
                .map(|m| m.scaled(scale))
                .ok_or_else(|| PaperError::Setup(format!("no library model `{name}`")))
        })
        .collect()
}

/// Mean of `values` (0 when empty).
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}
