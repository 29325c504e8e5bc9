//! Evaluating one configuration: the workload run by the Manager on a
//! SimMachine under [`OraclePolicy`], scored by the papers' metrics.

use std::io;
use std::time::Duration;

use coloc_manager::{run, Recorder, RunOptions};
use coloc_model::{TraceEvent, Workload};

use super::{Config, Metric, OracleError, OraclePolicy};
use crate::model::AppModel;
use crate::platform::Platform;
use crate::SimMachine;

/// Policy epoch of evaluation runs. The replayed plan changes only when
/// threads appear, and pinned threads are never moved by the balancer, so
/// epochs would only cost time: an hour means none happen in practice. A run
/// with the workload's own epoch gives the same exit times (tested).
const EVAL_EPOCH: Duration = Duration::from_secs(3600);

/// What one configuration achieved.
#[derive(Clone, Debug, PartialEq)]
pub struct Scores {
    /// Exit time of each app (workload order), seconds after the start.
    pub exit_s: Vec<f64>,
    /// Time from the start to the last exit (NuPoCo §7.3's total turnaround time).
    pub makespan: f64,
    /// Mean response time, arrival to exit (ReSense §3; every app arrives at 0).
    pub art: f64,
    /// Σ 1 / execution time, 1/s (ReSense §3's throughput).
    pub throughput: f64,
    /// Harmonic mean of the speedups solo / co-located (NuPoCo §7.3), when solo
    /// times are known.
    pub hmean: Option<f64>,
}

impl Scores {
    pub fn new(exit_s: Vec<f64>, solo_s: Option<&[f64]>) -> Self {
        let n = exit_s.len() as f64;
        Self {
            makespan: exit_s.iter().copied().fold(0.0, f64::max),
            art: exit_s.iter().sum::<f64>() / n,
            throughput: exit_s.iter().map(|t| 1.0 / t).sum(),
            hmean: solo_s.map(|solo| n / exit_s.iter().zip(solo).map(|(t, s)| t / s).sum::<f64>()),
            exit_s,
        }
    }

    /// The value of `metric`, if it was computed.
    pub fn get(&self, metric: Metric) -> Option<f64> {
        match metric {
            Metric::Makespan => Some(self.makespan),
            Metric::Art => Some(self.art),
            Metric::Throughput => Some(self.throughput),
            Metric::Hmean => self.hmean,
        }
    }
}

/// Collects exit times, and the first failure.
struct Exits {
    at: Vec<Option<f64>>,
    failure: Option<String>,
}

impl Recorder for Exits {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        if let TraceEvent::Exit { t, app, status, .. } = event {
            if status.success() {
                self.at[app.app as usize] = Some(t.as_secs_f64());
            } else if self.failure.is_none() {
                self.failure = Some(format!("app {app} ended with {status:?}"));
            }
        }
        Ok(())
    }
}

/// Runs the workload under `config` and scores it.
pub(crate) fn evaluate(
    platform: &Platform,
    workload: &Workload,
    config: &Config,
    seed: u64,
    solo_s: Option<&[f64]>,
    models: &[AppModel],
) -> Result<Scores, OracleError> {
    let mut machine = SimMachine::new(platform.clone(), seed).with_models(models.to_vec());
    let mut policy = OraclePolicy::new(config.clone());
    let opts = RunOptions::simulated(EVAL_EPOCH, seed);
    let mut exits = Exits {
        at: vec![None; workload.apps.len()],
        failure: None,
    };
    run(&mut machine, &mut policy, workload, &opts, &mut exits)
        .map_err(|e| OracleError::Run(e.to_string()))?;
    if let Some(f) = exits.failure {
        return Err(OracleError::Run(f));
    }
    let exit_s = exits
        .at
        .into_iter()
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| OracleError::Run("an app did not exit".into()))?;
    Ok(Scores::new(exit_s, solo_s))
}
