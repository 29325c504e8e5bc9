//! Mixes (`coloc bench mixes`): several workloads, each compared under the
//! same policies ([`crate::compare`]) and judged against its reference
//! points (`coloc_model::metrics::reference`): the CPU-work lower bound on
//! makespan and the SJF reference of ART, from solo times at every thread
//! count from 1 to the machine's CPUs.
//!
//! Those solo times come before a mix's runs, where its policies find them
//! in the store (measured now, the suite's programs once for all mixes, or
//! reused from the store with `reuse_solo`); with a [`Fresh`] maker nothing
//! is stored beforehand, and they are measured after all mixes and not
//! stored. The mixes are a directory's files or the real-program suite's
//! mix of each seed ([`select`], [`crate::suite`]). Each mix's results go to the caller as soon as it ran
//! ([`MixRun`]); [`Mixes::run`] returns every mix's outcome for the table
//! across mixes (`coloc_model::metrics::mixes`).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use coloc_manager::{waste_of, Waste, DEFAULT_EPOCH};
use coloc_model::explain::last_verdicts;
use coloc_model::metrics::mixes::{MixOutcome, Reference};
use coloc_model::metrics::{Comparison, SoloCurves};
use coloc_model::reason::Verdict;
use coloc_model::workload::suite::SeedRange;
use coloc_model::{AppSpec, TraceEvent, Workload};
use coloc_policy::auto::Objective;

use crate::compare::{Compare, Contender, Fresh, Plan};
use crate::knowledge::Knowledge;
use crate::load::toml_files;
use crate::procedure::write_text;
use crate::saved::{open, Saved};
use crate::solo::Solo;
use crate::suite::Suite;
use crate::watch::Watch;
use crate::{read_trace, HarnessError, Target};

/// A mix to run: its file, its workload (resolved), what to say about it
/// (e.g. `seed 104, held out`).
#[derive(Debug)]
pub struct Mix {
    pub path: PathBuf,
    pub workload: Workload,
    pub note: String,
}

/// The mix files of `dir` (`*.toml`), by name.
pub fn mix_files(dir: &Path) -> Result<Vec<PathBuf>, HarnessError> {
    let files = toml_files(dir).map_err(|source| HarnessError::Read {
        path: dir.into(),
        source,
    })?;
    if files.is_empty() {
        return Err(HarnessError::NoMixes { dir: dir.into() });
    }
    Ok(files)
}

/// Where the mixes come from.
#[derive(Clone, Copy, Debug)]
pub enum MixSource<'a> {
    /// The mix files of a directory ([`mix_files`]).
    Files(&'a Path),
    /// The real-program suite in a directory ([`Suite`]), one mix per seed.
    Suite {
        dir: &'a Path,
        seeds: &'a [SeedRange],
    },
}

/// The mixes `source` names, each resolved on `target`: a directory's
/// files, or the suite's mix of each seed, written to `out/mixes/` (all
/// checked, and the suite's needs on this machine, before anything runs).
pub fn select(
    source: MixSource<'_>,
    target: &Target,
    out: &Path,
) -> Result<Vec<Mix>, HarnessError> {
    let (dir, seeds) = match source {
        MixSource::Files(dir) => {
            return mix_files(dir)?
                .into_iter()
                .map(|path| {
                    Ok(Mix {
                        workload: target.load(&path)?,
                        path,
                        note: String::new(),
                    })
                })
                .collect()
        }
        MixSource::Suite { dir, seeds } => (dir, seeds),
    };
    let suite = Suite::load(dir)?;
    suite.check_installed()?;
    let files = out.join("mixes");
    let mut mixes = Vec::new();
    for seed in seeds.iter().flat_map(SeedRange::seeds) {
        let (w, text) = suite.mix_file(seed)?;
        let path = write_text(&files, &format!("{}.toml", w.name), &text)?;
        mixes.push(Mix {
            workload: target.load(&path)?,
            path,
            note: format!("seed {seed}, {}", suite.set_of(seed)),
        });
    }
    Ok(mixes)
}

/// How the mixes run.
#[derive(Debug)]
pub struct MixesPlan<'a> {
    /// Compared on each mix, against `native`.
    pub policies: &'a [String],
    /// Runs per policy and mix.
    pub repeat: u32,
    /// Solo runs per app and thread count.
    pub solo_repeat: u32,
    /// Reuse the solo times the store holds of a mix's programs, where it
    /// holds some.
    pub reuse_solo: bool,
    /// The mixes are the suite's: its programs' solo runs are made once for
    /// all mixes (program names are unique in a suite).
    pub suite: bool,
    pub objective: Objective,
    /// Every run's directory is under it: `MIX/POLICY-K`, `MIX/solo`, and
    /// `solo` for the suite's programs.
    pub out: &'a Path,
    /// Nothing stored beforehand: each run made by this (see
    /// [`crate::compare::Fresh`]), the solo runs after all mixes.
    pub fresh: Option<&'a dyn Fresh>,
}

/// One mix as it ran.
#[derive(Debug)]
pub struct MixRun<'a> {
    pub mix: &'a Mix,
    /// The solo times its runs were judged by (none before them with a
    /// fresh maker).
    pub curves: Option<&'a SoloCurves>,
    pub reference: Option<&'a Reference>,
    pub comparison: &'a Comparison,
    /// What its traces say beyond times.
    pub traces: &'a MixTraces,
}

/// What a mix's traces say beyond times: per policy, how often the Manager
/// saw CPUs wasted, by kind (`docs/trace-format.md`), and per run of `auto`
/// or a guarded policy (`BASE+guard`) what it last measured against Linux
/// for each app set (`docs/policies/auto.md`, "Checked against outcomes").
#[derive(Debug, Default, PartialEq)]
pub struct MixTraces {
    /// Per policy, in the comparison's order: its waste events over all
    /// runs.
    pub waste: Vec<(String, WasteEvents)>,
    /// Policy, run (from 1) and each app set's last verdict in it.
    pub verdicts: Vec<(String, usize, Verdict)>,
}

/// Waste events counted by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WasteEvents {
    /// CPUs idle while an app's threads waited.
    pub idle_while_waiting: usize,
    /// CPUs idle while an app ran below what it could use.
    pub underused: usize,
    /// CPU time burnt with no progress.
    pub no_progress: usize,
    /// CPU time burnt beyond what a team's progress took at its own rate.
    pub spinning: usize,
}

/// Where mixes run: their machine, the flag a signal sets to stop them,
/// what watches the comparisons' runs and what watches the solo runs, and
/// whether runs read the knowledge store and add to it (as
/// [`Compare::learn`]; without, solo times are measured for every mix and
/// none is reused).
#[derive(Clone, Copy, Debug)]
pub struct Mixes<'a> {
    pub target: &'a Target,
    pub stop: &'a Arc<AtomicBool>,
    pub runs: &'a dyn Watch,
    pub solo: &'a dyn Watch,
    pub learn: bool,
}

impl Mixes<'_> {
    /// Runs every mix under `contenders` (`plan.policies` resolved), hands
    /// each to `each` as soon as it ran, and returns their outcomes.
    pub fn run(
        &self,
        mixes: &[Mix],
        plan: &MixesPlan<'_>,
        contenders: &[&dyn Contender],
        each: &mut dyn FnMut(MixRun<'_>),
    ) -> Result<Vec<MixOutcome>, HarnessError> {
        let cpus = self.cpus();
        // The suite's programs alone, once for all mixes; after them when
        // nothing may be stored beforehand.
        let mut shared = if plan.suite && plan.fresh.is_none() {
            Some(self.program_curves(mixes, plan, true)?)
        } else {
            None
        };
        let mut runs: Vec<(&Mix, Comparison, Option<SoloCurves>)> = Vec::new();
        for mix in mixes {
            let workload = &mix.workload;
            let dir = plan.out.join(&workload.name);
            let curves = match plan.fresh {
                Some(_) => None,
                None => Some(self.curves_before(mix, plan, shared.as_ref(), &dir)?),
            };
            let reference = curves.as_ref().map(|c| Reference::of(workload, c, cpus));
            let compare = Compare {
                target: self.target,
                stop: self.stop,
                watch: self.runs,
                learn: self.learn,
            };
            let cmp = compare.run(
                &Plan {
                    workload,
                    policies: plan.policies,
                    baseline: "native",
                    repeat: plan.repeat,
                    out: &dir,
                    epoch: workload.epoch.unwrap_or(DEFAULT_EPOCH),
                    solo: reference.as_ref().map(|r| &r.solo),
                    objective: plan.objective,
                    fresh: plan.fresh,
                },
                contenders,
            )?;
            each(MixRun {
                mix,
                curves: curves.as_ref(),
                reference: reference.as_ref(),
                comparison: &cmp,
                traces: &mix_traces(&dir)?,
            });
            runs.push((mix, cmp, curves));
        }
        // Nothing stored after either, with a fresh maker.
        if plan.fresh.is_some() && plan.suite {
            shared = Some(self.program_curves(mixes, plan, false)?);
        }
        let mut outcomes = Vec::new();
        for (mix, cmp, before) in runs {
            let curves = match &shared {
                Some(c) => Some(c.clone()),
                None if plan.fresh.is_some() => Some(self.solo(false).measure_curves(
                    &mix.workload,
                    &(1..=cpus).collect::<Vec<_>>(),
                    plan.solo_repeat,
                    &plan.out.join(&mix.workload.name).join("solo"),
                )?),
                // What the store holds now (what later mixes measured
                // included), or without the store what was measured before.
                None if self.learn => self.stored_curves(&mix.workload)?,
                None => before,
            };
            outcomes.push(MixOutcome {
                mix: mix.workload.name.clone(),
                note: mix.note.clone(),
                bound: curves.and_then(|c| Reference::of(&mix.workload, &c, cpus).points.cpu_bound),
                comparison: cmp,
            });
        }
        Ok(outcomes)
    }

    fn cpus(&self) -> u32 {
        self.target.topology().cpus().len() as u32
    }

    fn solo(&self, learn: bool) -> Solo<'_> {
        Solo {
            target: self.target,
            stop: self.stop,
            watch: self.solo,
            learn: learn && self.learn,
        }
    }

    /// Every app of the suite's mixes alone at 1 to all CPUs' threads (each
    /// program once, however many mixes it is in), in `out/solo`; stored
    /// with `learn`.
    fn program_curves(
        &self,
        mixes: &[Mix],
        plan: &MixesPlan<'_>,
        learn: bool,
    ) -> Result<SoloCurves, HarnessError> {
        let mut apps: Vec<AppSpec> = Vec::new();
        for a in mixes.iter().flat_map(|m| &m.workload.apps) {
            if !apps.iter().any(|b| b.name == a.name) {
                apps.push(AppSpec {
                    arrive_at: Duration::ZERO,
                    ..a.clone()
                });
            }
        }
        let programs = Workload {
            name: "suite-programs".into(),
            epoch: None,
            apps,
        };
        let threads: Vec<u32> = (1..=self.cpus()).collect();
        self.solo(learn).measure_curves(
            &programs,
            &threads,
            plan.solo_repeat,
            &plan.out.join("solo"),
        )
    }

    /// A mix's solo curves before its runs: the suite's programs', those the
    /// store holds of its programs with `reuse_solo`, or measured now in
    /// `dir/solo` (and stored as its programs' solo runs, where its policies
    /// find them).
    fn curves_before(
        &self,
        mix: &Mix,
        plan: &MixesPlan<'_>,
        shared: Option<&SoloCurves>,
        dir: &Path,
    ) -> Result<SoloCurves, HarnessError> {
        if let Some(c) = shared {
            return Ok(c.clone());
        }
        if plan.reuse_solo {
            if let Some(c) = self.stored_curves(&mix.workload)? {
                return Ok(c);
            }
        }
        let threads: Vec<u32> = (1..=self.cpus()).collect();
        self.solo(true)
            .measure_curves(&mix.workload, &threads, plan.solo_repeat, &dir.join("solo"))
    }

    /// The solo times per team size the knowledge store holds of
    /// `workload`'s programs; None when it holds none (or cannot be opened,
    /// said).
    fn stored_curves(&self, workload: &Workload) -> Result<Option<SoloCurves>, HarnessError> {
        if !self.learn {
            return Ok(None);
        }
        let Some(k) = Knowledge::open_or_warn(self.target, workload) else {
            return Ok(None);
        };
        let c = k.solo_curves(workload)?;
        Ok((!c.is_empty()).then_some(c))
    }
}

/// What the traces of the comparison in `dir` say beyond times (nothing
/// when `dir` holds no comparison).
pub fn mix_traces(dir: &Path) -> Result<MixTraces, HarnessError> {
    let Saved::Comparison(saved) = open(dir, None)? else {
        return Ok(MixTraces::default());
    };
    let mut out = MixTraces::default();
    for (policy, traces) in &saved.runs {
        let mut waste = WasteEvents::default();
        for (n, path) in traces.iter().enumerate() {
            let trace = read_trace(path)?;
            for e in &trace.events {
                match waste_of(e) {
                    Some((_, Waste::IdleWhileWaiting)) => waste.idle_while_waiting += 1,
                    Some((_, Waste::Underused)) => waste.underused += 1,
                    Some((_, Waste::NoProgress)) => waste.no_progress += 1,
                    Some((_, Waste::Spinning)) => waste.spinning += 1,
                    None => {}
                }
            }
            if policy == "auto" || policy.ends_with("+guard") {
                let plans = trace.events.iter().filter_map(|e| match e {
                    TraceEvent::Plan { plan, .. } => Some(plan),
                    _ => None,
                });
                for verdict in last_verdicts(plans) {
                    out.verdicts.push((policy.clone(), n + 1, verdict));
                }
            }
        }
        out.waste.push((policy.clone(), waste));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use coloc_model::AppSpec;

    use super::*;
    use crate::compare::Registry;
    use crate::testing::kvm;
    use crate::watch::seen::Seen;

    fn mix(name: &str, apps: &[(&str, &str)]) -> Mix {
        Mix {
            path: PathBuf::from(format!("{name}.toml")),
            workload: Workload {
                name: name.into(),
                epoch: None,
                apps: apps
                    .iter()
                    .map(|(a, model)| AppSpec::model(*a, *model, 2))
                    .collect(),
            },
            note: String::new(),
        }
    }

    /// A suite of two programs at `dir`, each needing `need`.
    fn suite(dir: &Path, need: &str) {
        std::fs::create_dir_all(dir.join("programs")).unwrap();
        std::fs::write(
            dir.join("suite.toml"),
            "tuning = \"1..10\"\nheld_out = \"101..130\"\n",
        )
        .unwrap();
        for name in ["p", "q"] {
            std::fs::write(
                dir.join("programs").join(format!("{name}.toml")),
                format!(
                    "[suite]\nkind = \"pthreads\"\nneeds = [\"{need}\"]\n[[app]]\nname = \"{name}\"\ncommand = [\"true\"]\nthreads = 2\n"
                ),
            )
            .unwrap();
        }
    }

    /// The suite's mixes of seeds 5 and 105 are written to `out/mixes/`,
    /// resolved for the machine (kvm-2cpu's topology as a host's: loading
    /// touches no machine) and said to be a tuning and a held-out seed;
    /// the directory's files then give the same workloads. A suite whose
    /// needs this machine lacks is refused by name before any file is
    /// written, and an empty directory has no mixes.
    #[test]
    fn a_suites_mixes_are_written_and_read_back_as_files() {
        let dir = tempfile::tempdir().unwrap();
        let host = Target::Host(crate::Host {
            topology: coloc_sim::platform("kvm-2cpu").unwrap().topology,
            process_events: false,
            journal_dir: dir.path().join("journal"),
        });
        let (suite_dir, out) = (dir.path().join("suite"), dir.path().join("out"));
        suite(&suite_dir, "sh");
        let seeds = [
            SeedRange { first: 5, last: 5 },
            SeedRange {
                first: 105,
                last: 105,
            },
        ];
        let mixes = select(
            MixSource::Suite {
                dir: &suite_dir,
                seeds: &seeds,
            },
            &host,
            &out,
        )
        .unwrap();
        let notes: Vec<&str> = mixes.iter().map(|m| m.note.as_str()).collect();
        assert_eq!(notes, ["seed 5, tuning", "seed 105, held out"]);
        for m in &mixes {
            assert_eq!(m.path.parent(), Some(out.join("mixes").as_path()));
            assert!(m.workload.apps.iter().all(|a| a.command.is_some()));
        }
        let again = select(MixSource::Files(&out.join("mixes")), &host, &out).unwrap();
        let mut want: Vec<(&Path, &Workload)> = mixes
            .iter()
            .map(|m| (m.path.as_path(), &m.workload))
            .collect();
        want.sort_by_key(|(p, _)| *p);
        let got: Vec<(&Path, &Workload)> = again
            .iter()
            .map(|m| (m.path.as_path(), &m.workload))
            .collect();
        assert_eq!(got, want);

        let (lacking, out2) = (dir.path().join("lacking"), dir.path().join("out2"));
        suite(&lacking, "/nonexistent/input");
        let e = select(
            MixSource::Suite {
                dir: &lacking,
                seeds: &seeds,
            },
            &host,
            &out2,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("p: /nonexistent/input") && e.contains("scripts/setup --bench"),
            "{e}"
        );
        assert!(!out2.exists());
        let e = select(MixSource::Files(&out2), &host, &out2).unwrap_err();
        assert!(matches!(e, HarnessError::Read { .. }), "{e}");
    }

    /// Two mixes on the simulator, through the library alone: each mix's
    /// apps run alone at 1 and 2 threads first (kvm-2cpu has 2 CPUs), then
    /// native and equal on the mix; each mix reaches the caller as it ran,
    /// with the solo times it was judged by, its comparison and what its
    /// traces say, and every outcome has its CPU-work bound.
    #[test]
    fn mixes_on_the_simulator_are_judged_by_their_solo_runs() {
        let dir = tempfile::tempdir().unwrap();
        let target = kvm();
        let mixes = [
            mix("m1", &[("a", "content-analyzer"), ("b", "stitcher")]),
            mix("m2", &[("c", "stitcher"), ("d", "stitcher")]),
        ];
        let policies = ["native".to_string(), "equal".to_string()];
        let (runs, solo) = (Seen::default(), Seen::default());
        let on = Mixes {
            target: &target,
            stop: &Arc::new(AtomicBool::new(false)),
            runs: &runs,
            solo: &solo,
            learn: false,
        };
        let plan = MixesPlan {
            policies: &policies,
            repeat: 1,
            solo_repeat: 1,
            reuse_solo: false,
            suite: false,
            objective: Objective::default(),
            out: dir.path(),
            fresh: None,
        };
        let mut seen = Vec::new();
        let outcomes = on
            .run(
                &mixes,
                &plan,
                &[&Registry("native".into()), &Registry("equal".into())],
                &mut |run| {
                    let curves = run.curves.expect("solo runs came first");
                    assert!(!curves.is_empty());
                    assert!(run.reference.is_some());
                    let policies: Vec<&str> =
                        run.traces.waste.iter().map(|(p, _)| p.as_str()).collect();
                    assert_eq!(policies, ["native", "equal"]);
                    assert!(run.traces.verdicts.is_empty(), "no auto, no guard");
                    seen.push((run.mix.workload.name.clone(), run.comparison.clone()));
                },
            )
            .unwrap();
        let solo_labels: Vec<String> = solo.runs().into_iter().map(|r| r.label).collect();
        assert_eq!(
            solo_labels,
            [
                "solo a-1", "solo a-2", "solo b-1", "solo b-2", "solo c-1", "solo c-2", "solo d-1",
                "solo d-2"
            ]
        );
        let run_labels: Vec<String> = runs.runs().into_iter().map(|r| r.label).collect();
        assert_eq!(
            run_labels,
            [
                "1/2 native #1",
                "2/2 equal #1",
                "1/2 native #1",
                "2/2 equal #1"
            ]
        );
        assert_eq!(outcomes.len(), 2);
        for (o, (name, cmp)) in outcomes.iter().zip(&seen) {
            assert_eq!(&o.mix, name);
            assert_eq!(&o.comparison, cmp);
            let bound = o.bound.expect("solo runs give the bound");
            let makespan = cmp.policies[0].makespan.as_ref().unwrap().gmean.unwrap();
            assert!(
                bound > 0.0 && bound <= makespan + 1e-9,
                "{bound} {makespan}"
            );
        }
        assert!(dir.path().join("m1/solo/solo.json").exists());
        assert!(dir.path().join("m2/equal-1/trace.jsonl").exists());
    }

    #[test]
    fn a_directory_without_mixes_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        let e = mix_files(dir.path()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("no *.toml mix in {}", dir.path().display())
        );
    }
}
