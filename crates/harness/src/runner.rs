//! Making a measurement procedure's planned runs
//! ([`coloc_model::profile::procedure`]): every run goes through the same
//! Manager and Machine as `coloc run`, under the `static` policy, and writes an
//! ordinary trace; every figure is then computed from the trace files on disk
//! by [`crate::procedure`], the code `coloc profile --from DIR` uses,
//! so a recomputation gives exactly what the run printed (docs/trace-format.md,
//! Measurement procedures).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use coloc_manager::Recorder;
use coloc_model::profile::procedure::PlannedRun;
use coloc_model::profile::substitute::PROBE;
use coloc_model::workload::MetricSpec;
use coloc_model::{AppSpec, Workload};
use coloc_policy::PolicyContext;

use crate::procedure::pinned_workload;
use crate::{HarnessError, Target};

/// The stream probe's argv: three 64 MiB arrays (beyond any LLC), ten sweeps,
/// well under a second on one core of a current machine.
const PROBE_ARGV: [&str; 5] = ["kernel:stream", "--mb", "64", "--iters", "10"];

/// Planned runs on one machine, traces under `out/APP/RUN`.
#[derive(Debug)]
pub struct Runner<'a> {
    pub target: &'a Target,
    pub workload: &'a Workload,
    pub out: PathBuf,
    pub epoch: Duration,
    pub stop: Arc<AtomicBool>,
}

impl Runner<'_> {
    /// The directory of `run` for the app called `app`.
    pub fn dir(&self, app: &str, run: &PlannedRun) -> PathBuf {
        self.out.join(app).join(&run.dir)
    }

    /// Makes `run` with the apps of `specs` it names; errors only when coloc
    /// itself fails (an app that fails is in the trace, for the procedure's
    /// pure function to judge).
    pub fn run(
        &self,
        app: &str,
        run: &PlannedRun,
        specs: &[AppSpec],
        progress: &mut dyn Recorder,
    ) -> Result<(), HarnessError> {
        let pinned = pinned_workload(self.workload, run, specs)?;
        let (summary, _) = self.target.run(
            &pinned,
            "static",
            &PolicyContext::default(),
            &self.dir(app, run),
            self.epoch,
            0,
            Some(self.stop.clone()),
            progress,
        )?;
        if summary.interrupted {
            return Err(HarnessError::Interrupted);
        }
        Ok(())
    }

    /// Makes the sharing runs `runs` of `app` (with the stream probe where
    /// they name it).
    pub fn sharing_runs(
        &self,
        app: &AppSpec,
        runs: &[PlannedRun],
        progress: &mut dyn Recorder,
    ) -> Result<(), HarnessError> {
        let mut specs = vec![app.clone()];
        if runs.iter().flat_map(|r| &r.apps).any(|a| a.name == PROBE) {
            specs.push(stream_probe(self.target)?);
        }
        for run in runs {
            self.run(&app.name, run, &specs, progress)?;
        }
        Ok(())
    }
}

/// The stream probe as an app of this machine.
fn stream_probe(target: &Target) -> Result<AppSpec, HarnessError> {
    stream_kernel(target, PROBE, PROBE_ARGV.map(String::from).to_vec())
}

/// The `stream` kernel run as `argv` (`kernel:stream …`), one thread, as the
/// app called `name` of this machine, its bandwidth read from its
/// `coloc-metric` line.
pub fn stream_kernel(
    target: &Target,
    name: &str,
    argv: Vec<String>,
) -> Result<AppSpec, HarnessError> {
    let mut app = AppSpec::program(name, argv, 1);
    app.metric = Some(MetricSpec {
        regex: r"coloc-metric: ([0-9.eE+-]+)".into(),
        file: None,
        higher_is_better: true,
        unit: Some("GB/s".into()),
    });
    let resolved = target.resolve(Workload {
        name: name.into(),
        epoch: None,
        apps: vec![app],
    })?;
    Ok(resolved
        .apps
        .into_iter()
        .next()
        .expect("one app in, one out"))
}
