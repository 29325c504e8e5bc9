//! `coloc profile`'s runs (docs/trace-format.md, Measurement procedures):
//! ReSense's characterization (§2.2, Table III) of each app alone at each
//! shared level, baseline and contention configurations alternating, and the
//! runs that give Tang et al.'s sharing characteristics (docs/policies/
//! tang-atom.md, Characteristics), all made by [`Runner`]; each app's profile
//! is then computed from the traces on disk ([`profile_from_dir`]) and the
//! procedure's manifest written beside them, so that `coloc profile --from
//! DIR` computes the same profiles again.
//!
//! What the caller chooses: the plan of levels
//! (`coloc_model::profile::characterization_plan`), which sharing runs an
//! app gets (the simulator's counter run, or this machine's stream-probe
//! co-runs), the signal, and whether each run's cycles are counted around
//! it (this machine's traces lack them: [`coloc_linux::usage`]).

use std::collections::BTreeMap;

use coloc_linux::usage::CycleMeter;
use coloc_model::profile::procedure::{
    level_runs, ManifestApp, ManifestLevel, PlannedRun, ProcedureManifest, MANIFEST,
};
use coloc_model::profile::{
    AppIdentity, AppProfile, LevelPlan, PlatformFingerprint, ProcedureError, Signal,
};
use coloc_model::AppSpec;

use crate::procedure::{profile_from_dir, write_json};
use crate::runner::Runner;
use crate::watch::Watch;
use crate::HarnessError;

/// Characterization runs on this machine or in the simulator.
#[derive(Debug)]
pub struct Characterization<'a> {
    pub runner: Runner<'a>,
    /// Count each run's cycles around it (this machine's traces lack them).
    pub meter_cycles: bool,
    /// Runs of each configuration.
    pub repeat: u32,
    pub watch: &'a dyn Watch,
}

/// What the procedure measures, beside its runs.
pub struct Measure<'a> {
    pub platform: &'a PlatformFingerprint,
    pub signal: Signal,
    /// ReSense's levels and their configurations (or why not).
    pub plan: &'a [LevelPlan],
    /// The sharing runs of the app called so, or why it gets none.
    pub sharing: &'a dyn Fn(&str) -> Result<Vec<PlannedRun>, ProcedureError>,
}

impl std::fmt::Debug for Measure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Measure")
            .field("platform", &self.platform)
            .field("signal", &self.signal)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl Characterization<'_> {
    /// Characterizes each of `apps` (with its identity, as the store keys
    /// its profile), writes the procedure's manifest, and returns it with
    /// the apps' profiles, in order.
    pub fn profiles(
        &self,
        apps: &[(&AppSpec, AppIdentity)],
        measure: &Measure<'_>,
    ) -> Result<(ProcedureManifest, Vec<AppProfile>), HarnessError> {
        let mut manifest = ProcedureManifest {
            platform: measure.platform.clone(),
            signal: measure.signal,
            apps: Vec::new(),
        };
        let mut profiles = Vec::new();
        for (app, identity) in apps {
            let levels = self.levels(app, measure.plan)?;
            let sharing_runs = (measure.sharing)(&app.name);
            if let Ok(planned) = &sharing_runs {
                let mut watch = self
                    .watch
                    .run(&format!("sharing {}", app.name), planned.len() as u64);
                self.runner.sharing_runs(app, planned, &mut *watch)?;
                watch.finish("done".into());
            }
            let entry = ManifestApp {
                name: app.name.clone(),
                identity: identity.clone(),
                levels,
                sharing_not_measured: sharing_runs.as_ref().err().map(ToString::to_string),
                sharing_runs: sharing_runs.unwrap_or_default(),
            };
            profiles.push(profile_from_dir(
                &self.runner.out,
                measure.platform,
                measure.signal,
                &entry,
            )?);
            manifest.apps.push(entry);
        }
        write_json(&self.runner.out, MANIFEST, &manifest)?;
        Ok((manifest, profiles))
    }

    /// `app`'s ReSense levels as planned and run (a level that cannot be
    /// characterized runs nothing), with each run's cycles where they are
    /// counted around it.
    fn levels(
        &self,
        app: &AppSpec,
        plan: &[LevelPlan],
    ) -> Result<Vec<ManifestLevel>, HarnessError> {
        let mut levels: Vec<ManifestLevel> = plan
            .iter()
            .map(|l| match &l.setup {
                Err(reason) => ManifestLevel {
                    level: l.level.clone(),
                    threads: 0,
                    runs: Vec::new(),
                    not_characterizable: Some(reason.clone()),
                    metered_cycles: BTreeMap::new(),
                },
                Ok(c) => ManifestLevel {
                    level: l.level.clone(),
                    threads: c.threads as u32,
                    runs: level_runs(&app.name, &l.label(), c, self.repeat),
                    not_characterizable: None,
                    metered_cycles: BTreeMap::new(),
                },
            })
            .collect();
        let total = levels.iter().map(|l| l.runs.len()).sum::<usize>();
        let mut watch = self
            .watch
            .run(&format!("profile {}", app.name), total as u64);
        for level in &mut levels {
            for run in &level.runs {
                let meter = match self.meter_cycles {
                    true => Some(CycleMeter::start().map_err(|source| HarnessError::Cycles {
                        what: "counting cycles",
                        source,
                    })?),
                    false => None,
                };
                self.runner
                    .run(&app.name, run, std::slice::from_ref(app), &mut *watch)?;
                if let Some(meter) = meter {
                    let counted = meter.stop().map_err(|source| HarnessError::Cycles {
                        what: "reading the cycles counter",
                        source,
                    })?;
                    level.metered_cycles.insert(run.dir.clone(), counted as f64);
                }
            }
        }
        watch.finish("done".into());
        Ok(levels)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use coloc_manager::DEFAULT_EPOCH;
    use coloc_model::profile::procedure::ProcedureManifest;
    use coloc_model::profile::{characterization_plan, counter_run, LevelResult};
    use coloc_model::Workload;

    use super::*;
    use crate::procedure::read_json;
    use crate::watch::seen::Seen;
    use crate::Target;

    /// One model characterized on Clovertown (two cores share each L2)
    /// through the library alone: its levels' runs and its counter run are
    /// watched, every characterizable level is scored, and the manifest on
    /// disk gives the same profile again.
    #[test]
    fn a_model_is_characterized_on_the_simulator_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::Sim {
            platform: coloc_sim::platform("clovertown").unwrap(),
            seed: 1,
        };
        let app = coloc_model::AppSpec::model("mg", "mg", 2);
        let workload = Workload {
            name: "w".into(),
            epoch: None,
            apps: vec![app.clone()],
        };
        let seen = Seen::default();
        let runs = Characterization {
            runner: Runner {
                target: &target,
                workload: &workload,
                out: dir.path().into(),
                epoch: DEFAULT_EPOCH,
                stop: Arc::new(AtomicBool::new(false)),
            },
            meter_cycles: false,
            repeat: 1,
            watch: &seen,
        };
        let plan = characterization_plan(target.topology());
        let platform = PlatformFingerprint::of(target.topology());
        let sharing = |a: &str| Ok(vec![counter_run(a, target.topology())]);
        let identity = AppIdentity::model("mg", "mg");
        let (manifest, profiles) = runs
            .profiles(
                &[(&app, identity.clone())],
                &Measure {
                    platform: &platform,
                    signal: Signal::Cycles,
                    plan: &plan,
                    sharing: &sharing,
                },
            )
            .unwrap();
        let scorable = plan.iter().filter(|l| l.setup.is_ok()).count();
        assert!(scorable >= 1, "{plan:?}");
        let watched: Vec<(String, u64)> = seen
            .runs()
            .into_iter()
            .map(|r| (r.label, r.instances))
            .collect();
        assert_eq!(
            watched,
            [
                ("profile mg".to_string(), 2 * scorable as u64),
                ("sharing mg".to_string(), 1)
            ]
        );
        assert_eq!(profiles.len(), 1);
        assert_eq!(profiles[0].identity, identity);
        let scored = profiles[0]
            .levels
            .iter()
            .filter(|l| matches!(l.result, LevelResult::Scored(_)))
            .count();
        assert_eq!(scored, scorable, "{:?}", profiles[0].levels);
        let again: ProcedureManifest = read_json(dir.path(), MANIFEST).unwrap();
        assert_eq!(again, manifest);
        let recomputed =
            profile_from_dir(dir.path(), &platform, Signal::Cycles, &again.apps[0]).unwrap();
        assert_eq!(recomputed, profiles[0]);
    }
}
