//! `coloc profile`'s runs (docs/trace-format.md, Measurement procedures):
//! ReSense's characterization (§2.2, Table III) of each app alone at each
//! shared level, baseline and contention configurations alternating, and the
//! runs that give Tang et al.'s sharing characteristics (docs/policies/
//! tang-atom.md, Characteristics), all made by [`Runner`]; each app's profile
//! is then computed from the traces on disk ([`profile_from_dir`]) and the
//! procedure's manifest written beside them, so that `coloc profile --from
//! DIR` computes the same profiles again.
//!
//! What differs per target is chosen here, before anything runs
//! ([`setup`]): the signal a run is measured by (the simulator's cycles;
//! on this machine cycles where hardware counters exist, else task-clock,
//! or what `--signal` asks), the sharing runs (the simulator's counter run:
//! `coloc_model::profile::counter_run`; this machine's stream-probe co-runs
//! and its data-sharing runs: `coloc_model::profile::substitute`,
//! `coloc_model::profile::shared_cache`), how apps are identified (a
//! model's name; a program's argv and executable hash:
//! [`coloc_linux::program::program_identity`]), and whether each run's
//! cycles are counted around it (this machine's traces lack them:
//! [`coloc_linux::usage`]). The CLI renders the [`Setup`] and calls
//! [`Characterization::profiles`].

use std::collections::BTreeMap;

use coloc_linux::usage::{cycles_available, CycleMeter, NoCycles};
use coloc_model::profile::procedure::{
    level_runs, ManifestApp, ManifestLevel, PlannedRun, ProcedureManifest, MANIFEST,
};
use coloc_model::profile::shared_cache::{shared_cache_plan, SharedCachePlan};
use coloc_model::profile::substitute::{corun_cpus, sharing_runs};
use coloc_model::profile::{
    characterization_plan, counter_run, AppIdentity, AppProfile, LevelPlan, PlatformFingerprint,
    ProcedureError, Signal,
};
use coloc_model::{AppSpec, Cpu, Workload};

use crate::procedure::{profile_from_dir, write_json};
use crate::runner::Runner;
use crate::watch::Watch;
use crate::{HarnessError, Target};

/// Characterization runs on this machine or in the simulator.
#[derive(Debug)]
pub struct Characterization<'a> {
    pub runner: Runner<'a>,
    /// Runs of each configuration.
    pub repeat: u32,
    pub watch: &'a dyn Watch,
}

/// What a run is measured by, as asked (`coloc profile --signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalChoice {
    /// Cycles where hardware counters exist, else task-clock.
    Auto,
    Cycles,
    TaskClock,
    Wall,
}

/// How an app's sharing characteristics (Tang et al. §5) are measured on a
/// target.
#[derive(Debug)]
pub enum Sharing {
    /// The simulator counts what the paper counts: the LLC counts of one
    /// counter run.
    Counters,
    /// This machine has no LLC counters: the stream probe beside the app's
    /// thread (the CPUs of the two, or why there are none), and its data
    /// sharing from the runs [`SharedCachePlan`] gives (or why none do).
    Probe {
        corun: Result<(Cpu, Cpu), ProcedureError>,
        shared_cache: Result<SharedCachePlan, ProcedureError>,
    },
}

/// An app that runs what an earlier one runs (one identity, one profile).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SameAs {
    pub app: String,
    /// The earlier app it is characterized as.
    pub first: String,
}

/// Everything decided before the runs: what is characterized, how, and
/// measured by what.
#[derive(Debug)]
pub struct Setup<'w> {
    /// The apps to characterize with their identities (the store keys their
    /// profiles by it), the first of apps that run the same thing.
    pub apps: Vec<(&'w AppSpec, AppIdentity)>,
    /// The apps left out as running what an earlier one runs.
    pub same: Vec<SameAs>,
    /// ReSense's levels and their configurations (or why not).
    pub plan: Vec<LevelPlan>,
    pub platform: PlatformFingerprint,
    pub signal: Signal,
    /// Why `--signal auto` fell back from cycles, where it did.
    pub no_counters: Option<NoCycles>,
    pub sharing: Sharing,
}

impl Setup<'_> {
    /// Whether some level can be characterized (else nothing runs, and each
    /// app's profile holds every level's reason).
    pub fn runnable(&self) -> bool {
        self.plan.iter().any(|l| l.setup.is_ok())
    }
}

/// The setup of characterizing the apps of `workload` that `names` selects
/// (every app when empty) on `target`, measured by what `signal` asks.
pub fn setup<'w>(
    target: &Target,
    workload: &'w Workload,
    names: &[String],
    signal: SignalChoice,
) -> Result<Setup<'w>, HarnessError> {
    let apps = selected(workload, names)?;
    let (signal, no_counters) = match target {
        Target::Sim { .. } => match signal {
            SignalChoice::Auto | SignalChoice::Cycles => (Signal::Cycles, None),
            choice => return Err(HarnessError::SimSignal { choice }),
        },
        Target::Host(_) => host_signal(signal)?,
    };
    let topology = target.topology();
    let sharing = match target {
        Target::Sim { .. } => Sharing::Counters,
        Target::Host(_) => Sharing::Probe {
            corun: corun_cpus(topology),
            shared_cache: shared_cache_plan(topology),
        },
    };
    let (apps, same) = match target {
        Target::Sim { .. } => distinct(apps, |a| Ok(model_identity(a)))?,
        Target::Host(_) => distinct(apps, |a| {
            let command = a.command.as_deref().unwrap_or_default();
            coloc_linux::program::program_identity(&a.name, command).map_err(|source| {
                HarnessError::Identity {
                    app: a.name.clone(),
                    source,
                }
            })
        })?,
    };
    Ok(Setup {
        apps,
        same,
        plan: characterization_plan(topology),
        platform: PlatformFingerprint::of(topology),
        signal,
        no_counters,
        sharing,
    })
}

/// The apps `names` selects (every app when empty), in workload order.
fn selected<'a>(
    workload: &'a Workload,
    names: &[String],
) -> Result<Vec<&'a AppSpec>, HarnessError> {
    if let Some(unknown) = names
        .iter()
        .find(|n| !workload.apps.iter().any(|a| &a.name == *n))
    {
        let known: Vec<&str> = workload.apps.iter().map(|a| a.name.as_str()).collect();
        return Err(HarnessError::UnknownApp {
            name: unknown.clone(),
            workload: workload.name.clone(),
            known: known.join(", "),
        });
    }
    Ok(workload
        .apps
        .iter()
        .filter(|a| names.is_empty() || names.contains(&a.name))
        .collect())
}

/// The apps to characterize with their identities, and those left out.
type Identified<'w> = (Vec<(&'w AppSpec, AppIdentity)>, Vec<SameAs>);

/// Each app with its identity, keeping the first of apps that run the same
/// thing (one profile each: the store keys it by identity, not by name),
/// and the apps left out.
fn distinct(
    apps: Vec<&AppSpec>,
    identity: impl Fn(&AppSpec) -> Result<AppIdentity, HarnessError>,
) -> Result<Identified<'_>, HarnessError> {
    let mut out: Vec<(&AppSpec, AppIdentity)> = Vec::new();
    let mut same = Vec::new();
    for app in apps {
        let id = identity(app)?;
        match out.iter().find(|(_, seen)| seen.key() == id.key()) {
            Some((first, _)) => same.push(SameAs {
                app: app.name.clone(),
                first: first.name.clone(),
            }),
            None => out.push((app, id)),
        }
    }
    Ok((out, same))
}

fn model_identity(app: &AppSpec) -> AppIdentity {
    AppIdentity::model(&app.name, app.model.as_deref().unwrap_or_default())
}

/// The signal for runs on this machine, and why it is not cycles when
/// `--signal auto` had to fall back.
fn host_signal(choice: SignalChoice) -> Result<(Signal, Option<NoCycles>), HarnessError> {
    Ok(match choice {
        SignalChoice::Auto => match cycles_available() {
            Ok(()) => (Signal::Cycles, None),
            Err(why) => (Signal::TaskClock, Some(why)),
        },
        SignalChoice::Cycles => {
            cycles_available().map_err(|why| HarnessError::NoCycles { why })?;
            (Signal::Cycles, None)
        }
        SignalChoice::TaskClock => (Signal::TaskClock, None),
        SignalChoice::Wall => (Signal::Wall, None),
    })
}

impl Characterization<'_> {
    /// Characterizes each of `apps` (with its identity, as the store keys
    /// its profile), writes the procedure's manifest, and returns it with
    /// the apps' profiles, in order.
    pub fn profiles(
        &self,
        setup: &Setup<'_>,
    ) -> Result<(ProcedureManifest, Vec<AppProfile>), HarnessError> {
        let mut manifest = ProcedureManifest {
            platform: setup.platform.clone(),
            signal: setup.signal,
            apps: Vec::new(),
        };
        // Only this machine's cycles are counted outside the trace.
        let meter = setup.signal == Signal::Cycles && matches!(self.runner.target, Target::Host(_));
        let mut profiles = Vec::new();
        for (app, identity) in &setup.apps {
            let levels = self.levels(app, &setup.plan, meter)?;
            let sharing_runs = self.sharing_runs(&app.name, &setup.sharing);
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
                &setup.platform,
                setup.signal,
                &entry,
            )?);
            manifest.apps.push(entry);
        }
        write_json(&self.runner.out, MANIFEST, &manifest)?;
        Ok((manifest, profiles))
    }

    /// The sharing runs of the app called `app`, or why it gets none.
    fn sharing_runs(
        &self,
        app: &str,
        sharing: &Sharing,
    ) -> Result<Vec<PlannedRun>, ProcedureError> {
        match sharing {
            Sharing::Counters => Ok(vec![counter_run(app, self.runner.target.topology())]),
            Sharing::Probe {
                corun,
                shared_cache,
            } => {
                let mut planned = sharing_runs(app, corun.clone()?, self.repeat)?;
                if let Ok(plan) = shared_cache {
                    planned.extend(plan.runs(app, self.repeat));
                }
                Ok(planned)
            }
        }
    }

    /// `app`'s ReSense levels as planned and run (a level that cannot be
    /// characterized runs nothing), with each run's cycles where they are
    /// counted around it (`meter`).
    fn levels(
        &self,
        app: &AppSpec,
        plan: &[LevelPlan],
        meter: bool,
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
                let meter = match meter {
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
    use coloc_model::profile::LevelResult;
    use coloc_model::testutils::app_spec;
    use coloc_model::Workload;

    use super::*;
    use crate::procedure::read_json;
    use crate::watch::seen::Seen;
    use crate::Target;

    fn clovertown() -> Target {
        Target::Sim {
            platform: coloc_sim::platform("clovertown").unwrap(),
            seed: 1,
        }
    }

    /// One model characterized on Clovertown (two cores share each L2)
    /// through the library alone: a second app of the same model is left
    /// out as the first, the simulator measures cycles with one counter
    /// run, its levels' runs and its counter run are watched, every
    /// characterizable level is scored, and the manifest on disk gives the
    /// same profile again.
    #[test]
    fn a_model_is_characterized_on_the_simulator_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let target = clovertown();
        let workload = Workload {
            name: "w".into(),
            epoch: None,
            apps: vec![
                coloc_model::AppSpec::model("mg", "mg", 2),
                coloc_model::AppSpec::model("mg-again", "mg", 4),
            ],
        };
        let setup = setup(&target, &workload, &[], SignalChoice::Auto).unwrap();
        assert_eq!(
            setup.same,
            [SameAs {
                app: "mg-again".into(),
                first: "mg".into()
            }]
        );
        assert_eq!(
            (setup.signal, setup.no_counters.is_none()),
            (Signal::Cycles, true)
        );
        assert!(
            matches!(setup.sharing, Sharing::Counters),
            "{:?}",
            setup.sharing
        );
        let seen = Seen::default();
        let runs = Characterization {
            runner: Runner {
                target: &target,
                workload: &workload,
                out: dir.path().into(),
                epoch: DEFAULT_EPOCH,
                stop: Arc::new(AtomicBool::new(false)),
            },
            repeat: 1,
            watch: &seen,
        };
        let identity = AppIdentity::model("mg", "mg");
        let (manifest, profiles) = runs.profiles(&setup).unwrap();
        let scorable = setup.plan.iter().filter(|l| l.setup.is_ok()).count();
        assert!(scorable >= 1 && setup.runnable(), "{:?}", setup.plan);
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
            profile_from_dir(dir.path(), &setup.platform, Signal::Cycles, &again.apps[0]).unwrap();
        assert_eq!(recomputed, profiles[0]);
    }

    /// The simulator measures cycles only: another `--signal` is refused
    /// by name before anything runs.
    #[test]
    fn the_simulator_refuses_a_signal_it_does_not_measure() {
        let w = Workload {
            name: "w".into(),
            epoch: None,
            apps: vec![coloc_model::AppSpec::model("mg", "mg", 2)],
        };
        for choice in [SignalChoice::TaskClock, SignalChoice::Wall] {
            let e = setup(&clovertown(), &w, &[], choice)
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "--signal {choice:?}: the simulator measures cycles; --signal chooses \
                     among this machine's measurements"
                )
            );
        }
    }

    #[test]
    fn unknown_app_names_the_known_ones() {
        let w = Workload {
            name: "w".into(),
            epoch: None,
            apps: vec![app_spec("a", 1), app_spec("b", 1)],
        };
        type Case<'a> = (&'a [&'a str], Result<Vec<&'a str>, &'a str>);
        let cases: [Case; 3] = [
            (&[], Ok(vec!["a", "b"])),
            (&["b"], Ok(vec!["b"])),
            (
                &["c"],
                Err("--app c: w has no app of that name (apps: a, b)"),
            ),
        ];
        for (names, want) in cases {
            let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            let got = selected(&w, &names)
                .map(|v| v.iter().map(|a| a.name.as_str()).collect::<Vec<_>>())
                .map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "{names:?}");
        }
    }

    /// Apps that run the same model are characterized once, under the first name.
    #[test]
    fn same_identity_is_characterized_once() {
        let mut a = app_spec("a", 1);
        a.model = Some("mg".into());
        let mut b = app_spec("b", 1);
        b.model = Some("mg".into());
        let mut c = app_spec("c", 1);
        c.model = Some("ft".into());
        let (got, same) = distinct(vec![&a, &b, &c], |x| Ok(model_identity(x))).unwrap();
        let names: Vec<&str> = got.iter().map(|(app, _)| app.name.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(got[0].1, AppIdentity::model("a", "mg"));
        assert_eq!(
            same,
            [SameAs {
                app: "b".into(),
                first: "a".into()
            }]
        );
    }
}
