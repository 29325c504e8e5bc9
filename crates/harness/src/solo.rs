//! Solo runs (`coloc solo`, and the solo times `bench` and `bench mixes`
//! measure): each app of a workload alone on the machine, under `native`, to
//! give Hmean speedup its denominator (Tang et al. and NuPoCo report speedups
//! over solo runs). Every run may be stored as a record of its program in the
//! knowledge store (docs/knowledge.md), where `compare`, `bench` and `auto`
//! find it. At thread counts `1,2,…` each app runs alone at each instead, for
//! the reference points of a mix (`coloc_model::metrics::reference`).
//!
//! A measurement procedure (docs/trace-format.md, Measurement procedures;
//! [`coloc_model::metrics::solo_runs`]): the output directory holds
//! `solo.json` and one trace per run, the times are computed from those traces
//! on disk, and [`traces`] reads them again for `coloc solo --from DIR`.

use std::path::Path;

use coloc_manager::DEFAULT_EPOCH;
use coloc_model::knowledge::Source;
use coloc_model::metrics::{
    solo_curves, solo_runs, solo_times, RunMetrics, SoloCurves, SoloManifest, SoloRun, SoloTimes,
    SOLO_MANIFEST,
};
use coloc_model::{Trace, Workload};

use crate::context::policy_context;
use crate::knowledge::Knowledge;
use crate::procedure::{read_traces, write_json};
use crate::runs::Runs;
use crate::HarnessError;

/// Where and how solo runs go ([`Runs`]; with `learn`, each run is stored as
/// its program's record, docs/knowledge.md).
pub type Solo<'a> = Runs<'a>;

impl Runs<'_> {
    /// Every app of `workload` alone at its own thread count, `repeat` times:
    /// the wall times Hmean speedup divides by; traces under `out`.
    pub fn measure(
        &self,
        workload: &Workload,
        repeat: u32,
        out: &Path,
    ) -> Result<SoloTimes, HarnessError> {
        let (runs, traces) = self.procedure(workload, &[], repeat, out)?;
        Ok(solo_times(&runs, &traces))
    }

    /// Every app of `workload` alone at each of `threads`, `repeat` times.
    pub fn measure_curves(
        &self,
        workload: &Workload,
        threads: &[u32],
        repeat: u32,
        out: &Path,
    ) -> Result<SoloCurves, HarnessError> {
        let (runs, traces) = self.procedure(workload, threads, repeat, out)?;
        Ok(solo_curves(&runs, &traces))
    }

    /// Makes the solo runs of every app of `workload` (at each of `threads`,
    /// or at its own count when empty), `repeat` times each, writes
    /// `out/solo.json`, and returns the runs and their traces read back from
    /// `out`.
    fn procedure(
        &self,
        workload: &Workload,
        threads: &[u32],
        repeat: u32,
        out: &Path,
    ) -> Result<(Vec<SoloRun>, Vec<Trace>), HarnessError> {
        let apps: Vec<&str> = workload.apps.iter().map(|a| a.name.as_str()).collect();
        let manifest = SoloManifest {
            runs: solo_runs(&apps, threads),
        };
        let knowledge = if self.learn {
            Knowledge::open_or_warn(self.target, workload)
        } else {
            None
        };
        for run in &manifest.runs {
            self.alone(workload, knowledge.as_ref(), run, repeat, out)?;
        }
        write_json(out, SOLO_MANIFEST, &manifest)?;
        let traces = traces(out, &manifest.runs)?;
        Ok((manifest.runs, traces))
    }

    /// Makes `run`: its app of `workload` alone under `native`, `repeat` times
    /// back to back, with the run's thread count when it has one; its trace in
    /// `out/DIR`.
    fn alone(
        &self,
        workload: &Workload,
        knowledge: Option<&Knowledge>,
        run: &SoloRun,
        repeat: u32,
        out: &Path,
    ) -> Result<(), HarnessError> {
        let index = workload
            .apps
            .iter()
            .position(|a| a.name == run.app)
            .ok_or_else(|| HarnessError::NoApp {
                run: run.dir.clone(),
                app: run.app.clone(),
            })?;
        let app = &workload.apps[index];
        let mut alone = app.clone();
        alone.arrive_at = std::time::Duration::ZERO;
        alone.repeat = repeat;
        if let Some(k) = run.threads {
            alone.threads = k;
        }
        let single = Workload {
            name: format!("{}-solo-{}", workload.name, run.dir),
            epoch: workload.epoch,
            apps: vec![alone],
        };
        let ctx = policy_context(self.target, &single, &["native"])?;
        let mut watch = self
            .watch
            .run(&format!("solo {}", run.dir), u64::from(repeat));
        let (summary, events) = self.target.run(
            &single,
            "native",
            &ctx,
            &out.join(&run.dir),
            workload.epoch.unwrap_or(DEFAULT_EPOCH),
            0,
            Some(self.stop.clone()),
            &mut *watch,
        )?;
        if summary.interrupted {
            return Err(HarnessError::Interrupted);
        }
        let trace = Trace::from_events(events).map_err(HarnessError::Events)?;
        if let Some(k) = knowledge {
            if let Err(error) = k.learn_app(index, &trace, Source::Solo) {
                crate::said::warning(&crate::said::solo_not_stored(&error));
            }
        }
        let walls = RunMetrics::from_trace(&trace, None).wall_times_secs();
        watch.finish(match walls.len() {
            0 => "no successful run".into(),
            n => format!("{:.2} s", walls.iter().sum::<f64>() / n as f64),
        });
        Ok(())
    }
}

/// The trace of each of `runs` under `dir`.
pub fn traces(dir: &Path, runs: &[SoloRun]) -> Result<Vec<Trace>, HarnessError> {
    read_traces(dir, runs.iter().map(|r| r.dir.as_str()))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;
    use crate::testing::{kvm, two_apps};
    use crate::watch::seen::Seen;

    /// Solo runs on the simulator, through the library alone: each app of
    /// the workload runs alone at each thread count asked,
    /// watched run by run; the procedure's manifest and traces are on disk
    /// and give the same times again.
    #[test]
    fn solo_runs_on_the_simulator_are_watched_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let target = kvm();
        let workload = two_apps();
        let seen = Seen::default();
        let solo = Solo {
            target: &target,
            stop: &Arc::new(AtomicBool::new(false)),
            watch: &seen,
            learn: false,
        };
        let curves = solo
            .measure_curves(&workload, &[1, 2], 1, dir.path())
            .unwrap();
        let runs = seen.runs();
        let labels: Vec<(&str, u64, u32)> = runs
            .iter()
            .map(|r| (r.label.as_str(), r.instances, r.exits))
            .collect();
        assert_eq!(
            labels,
            vec![
                ("solo a-1", 1, 1),
                ("solo a-2", 1, 1),
                ("solo b-1", 1, 1),
                ("solo b-2", 1, 1)
            ]
        );
        assert!(runs.iter().all(|r| r.line.ends_with(" s")), "{runs:?}");
        let manifest: SoloManifest =
            crate::procedure::read_json(dir.path(), SOLO_MANIFEST).unwrap();
        let again = solo_curves(&manifest.runs, &traces(dir.path(), &manifest.runs).unwrap());
        assert_eq!(again, curves);
        assert!(!curves.is_empty());
    }
}
