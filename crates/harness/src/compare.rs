//! Comparisons (`coloc compare`, `coloc demo`, `coloc bench mixes` and the
//! paper benches): several policies on one workload, each `repeat` times,
//! interleaved (A B C A B C …) so that drift of the machine (thermal,
//! background load) hits all alike; the runs' metrics compared against a
//! baseline (docs/metrics.md).
//!
//! Which policy a name selects is the caller's ([`Contender`]: the CLI's
//! registry names and the simulator's oracle), and so is how a run with
//! nothing stored beforehand is made ([`Fresh`]: the CLI runs its own binary
//! again in an empty data directory).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use coloc_model::knowledge::Source;
use coloc_model::metrics::{Comparison, RunMetrics, SoloTimes};
use coloc_model::workload::to_toml;
use coloc_model::{Trace, Workload};
use coloc_policy::auto::Objective;
use coloc_policy::{Policy, PolicyContext};

use crate::context::{policy_context_with, refresh};
use crate::knowledge::Knowledge;
use crate::procedure::write_text;
use crate::runs::Runs;
use crate::saved::Manifest;
use crate::HarnessError;

/// A policy a comparison runs, by name.
pub trait Contender {
    /// The name its runs and its column are called by.
    fn name(&self) -> &str;
    /// A new policy for one run (policies keep state between decisions).
    fn make(&self, ctx: &PolicyContext) -> Result<Box<dyn Policy>, HarnessError>;
}

/// A policy of the registry (`coloc_policy::POLICIES`, with its layers:
/// `nupoco+guard`) by name, built afresh for every run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registry(pub String);

impl Contender for Registry {
    fn name(&self) -> &str {
        &self.0
    }

    fn make(&self, ctx: &PolicyContext) -> Result<Box<dyn Policy>, HarnessError> {
        Ok(coloc_policy::build(&self.0, ctx)?)
    }
}

/// What one run with nothing stored beforehand needs.
#[derive(Debug)]
pub struct FreshRun<'a> {
    /// The workload file (from [`write_workload`]).
    pub workload: &'a Path,
    pub policy: &'a str,
    pub objective: Objective,
    pub epoch: Duration,
    /// The run's directory: its trace, the apps' output and whatever else
    /// the run keeps (its data directory among it).
    pub out: &'a Path,
}

/// Makes runs with nothing stored beforehand, as a new user's first `coloc
/// run`: no policy may read what an earlier run, an earlier repeat or a solo
/// run measured.
pub trait Fresh {
    /// Makes `run` and returns its complete trace; a run stopped by `stop`
    /// is an error.
    fn run(
        &self,
        run: &FreshRun<'_>,
        stop: &AtomicBool,
    ) -> Result<Trace, Box<dyn std::error::Error + Send + Sync>>;
}

impl std::fmt::Debug for dyn Fresh + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fresh")
    }
}

/// What to compare, resolved.
#[derive(Debug)]
pub struct Plan<'a> {
    pub workload: &'a Workload,
    pub policies: &'a [String],
    pub baseline: &'a str,
    pub repeat: u32,
    pub out: &'a Path,
    pub epoch: Duration,
    pub solo: Option<&'a SoloTimes>,
    /// What `auto` optimizes (`--objective`); the other policies ignore it.
    pub objective: Objective,
    /// Nothing stored beforehand: each run made by this, from a workload
    /// file of its own, rather than in this process with the store shared.
    pub fresh: Option<&'a dyn Fresh>,
}

/// Refuses a baseline not among the policies and zero repeats, before
/// anything runs (the names themselves are the caller's to check).
pub fn check_plan(policies: &[String], baseline: &str, repeat: u32) -> Result<(), HarnessError> {
    if !policies.iter().any(|p| p == baseline) {
        return Err(HarnessError::Baseline {
            baseline: baseline.into(),
            policies: policies.join(","),
        });
    }
    if repeat == 0 {
        return Err(HarnessError::NoRepeat);
    }
    Ok(())
}

/// Writes `workload` where its fresh runs read it: `dir/workload.toml`.
pub fn write_workload(workload: &Workload, dir: &Path) -> Result<PathBuf, HarnessError> {
    write_text(dir, "workload.toml", &to_toml(workload))
}

/// Where comparisons run ([`Runs`]; with `learn`, the runs made in this
/// process read the knowledge store and add to it, docs/knowledge.md;
/// without, the policies know nothing stored).
pub type Compare<'a> = Runs<'a>;

impl Runs<'_> {
    /// Runs every contender `plan.repeat` times, interleaved, and compares;
    /// `contenders` are `plan.policies` resolved. The comparison's manifest
    /// is written first, so that `coloc report` reads even an interrupted
    /// comparison.
    pub fn run(
        &self,
        plan: &Plan<'_>,
        contenders: &[&dyn Contender],
    ) -> Result<Comparison, HarnessError> {
        Manifest {
            workload: plan.workload.name.clone(),
            policies: contenders.iter().map(|c| c.name().to_string()).collect(),
            baseline: plan.baseline.to_string(),
            repeat: plan.repeat,
            solo: plan.solo.cloned(),
        }
        .write(plan.out)?;
        let mut runs = Going::new(self, plan)?;
        let mut results: Vec<(String, Vec<RunMetrics>)> = contenders
            .iter()
            .map(|c| (c.name().to_string(), Vec::new()))
            .collect();
        let total = contenders.len() as u32 * plan.repeat;
        let mut n = 0;
        for rep in 0..plan.repeat {
            for (contender, (_, metrics)) in contenders.iter().zip(results.iter_mut()) {
                n += 1;
                let label = format!("{n}/{total} {} #{}", contender.name(), rep + 1);
                metrics.push(runs.one(*contender, rep, &label)?);
            }
        }
        Ok(Comparison::new(plan.baseline, results))
    }
}

/// A comparison's runs as they go: fresh ones from a workload file of
/// their own, the others in this process, sharing the store and one policy
/// context that each run's learning refreshes.
struct Going<'a, 'p> {
    on: &'a Runs<'a>,
    plan: &'a Plan<'p>,
    fresh_file: Option<PathBuf>,
    knowledge: Option<Knowledge>,
    ctx: PolicyContext,
}

impl<'a, 'p> Going<'a, 'p> {
    fn new(on: &'a Runs<'a>, plan: &'a Plan<'p>) -> Result<Self, HarnessError> {
        let (fresh_file, knowledge, mut ctx) = if plan.fresh.is_some() {
            let file = write_workload(plan.workload, plan.out)?;
            (Some(file), None, PolicyContext::default())
        } else {
            let knowledge = on
                .learn
                .then(|| Knowledge::open_or_warn(on.target, plan.workload))
                .flatten();
            let ctx =
                policy_context_with(on.target, plan.workload, plan.policies, knowledge.as_ref())?;
            (None, knowledge, ctx)
        };
        ctx.objective = plan.objective;
        Ok(Going {
            on,
            plan,
            fresh_file,
            knowledge,
            ctx,
        })
    }

    /// Makes repeat `rep` of `contender`, in `out/POLICY-K`, and returns
    /// its metrics.
    fn one(
        &mut self,
        contender: &dyn Contender,
        rep: u32,
        label: &str,
    ) -> Result<RunMetrics, HarnessError> {
        let (plan, watch) = (self.plan, self.on.watch);
        let policy = contender.name();
        let t0 = Instant::now();
        let out = plan.out.join(format!("{policy}-{}", rep + 1));
        let (trace, run_watch) = match (&self.fresh_file, plan.fresh) {
            (Some(file), Some(fresh)) => {
                watch.note(label, "`coloc run` with nothing stored beforehand");
                let run = FreshRun {
                    workload: file,
                    policy,
                    objective: plan.objective,
                    epoch: plan.epoch,
                    out: &out,
                };
                let trace = fresh.run(&run, self.on.stop).map_err(HarnessError::Fresh)?;
                (trace, None)
            }
            _ => {
                let instances: u64 = plan.workload.apps.iter().map(|a| u64::from(a.repeat)).sum();
                let mut run_watch = watch.run(label, instances);
                let (summary, events) = self.on.target.run_policy(
                    plan.workload,
                    contender.make(&self.ctx)?,
                    &out,
                    plan.epoch,
                    u64::from(rep),
                    Some(self.on.stop.clone()),
                    &mut *run_watch,
                )?;
                if summary.interrupted || self.on.stop.load(Ordering::Relaxed) {
                    return Err(HarnessError::Interrupted);
                }
                let trace = Trace::from_events(events).map_err(HarnessError::Events)?;
                self.learn(&trace, label)?;
                (trace, Some(run_watch))
            }
        };
        let metrics = RunMetrics::from_trace(&trace, plan.solo);
        let line = format!(
            "makespan {}, {:.1} s wall",
            metrics
                .makespan_secs()
                .map_or_else(|| "-".into(), |m| format!("{m:.2} s")),
            t0.elapsed().as_secs_f64()
        );
        match run_watch {
            Some(w) => w.finish(line),
            None => watch.note(label, &line),
        }
        Ok(metrics)
    }

    /// What the run says of each program, for the later runs (the policies
    /// that read it read it again) and the node service.
    fn learn(&mut self, trace: &Trace, label: &str) -> Result<(), HarnessError> {
        let plan = self.plan;
        if let Some(k) = &self.knowledge {
            if let Err(error) = k.learn(plan.workload, trace, Source::Run) {
                crate::said::warning(&crate::said::not_learned(label, &error));
            }
        }
        refresh(
            &mut self.ctx,
            self.knowledge.as_ref(),
            plan.workload,
            plan.policies,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use coloc_model::workload::parse_workload;

    use std::sync::Arc;

    use super::*;
    use crate::saved::{open, Saved};
    use crate::testing::{kvm, two_apps};
    use crate::watch::seen::Seen;

    fn plan<'a>(workload: &'a Workload, policies: &'a [String], out: &'a Path) -> Plan<'a> {
        Plan {
            workload,
            policies,
            baseline: "native",
            repeat: 2,
            out,
            epoch: Duration::from_millis(100),
            solo: None,
            objective: Objective::default(),
            fresh: None,
        }
    }

    /// A comparison on the simulator, through the library alone: the runs
    /// go interleaved (native, equal, native, equal), each watched to its
    /// two exits; what it returns is what `coloc report` computes again from
    /// the manifest and the traces it left.
    #[test]
    fn a_comparison_on_the_simulator_interleaves_its_runs_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let (target, workload) = (kvm(), two_apps());
        let policies = ["native".to_string(), "equal".to_string()];
        let seen = Seen::default();
        let compare = Compare {
            target: &target,
            stop: &Arc::new(AtomicBool::new(false)),
            watch: &seen,
            learn: false,
        };
        let cmp = compare
            .run(
                &plan(&workload, &policies, dir.path()),
                &[&Registry("native".into()), &Registry("equal".into())],
            )
            .unwrap();
        let runs = seen.runs();
        let labels: Vec<(&str, u64, u32)> = runs
            .iter()
            .map(|r| (r.label.as_str(), r.instances, r.exits))
            .collect();
        assert_eq!(
            labels,
            vec![
                ("1/4 native #1", 2, 2),
                ("2/4 equal #1", 2, 2),
                ("3/4 native #2", 2, 2),
                ("4/4 equal #2", 2, 2)
            ]
        );
        assert!(
            runs.iter()
                .all(|r| r.line.starts_with("makespan ") && r.notes.is_empty()),
            "{runs:?}"
        );
        let names: Vec<(&str, usize)> = cmp
            .policies
            .iter()
            .map(|p| (p.policy.as_str(), p.runs))
            .collect();
        assert_eq!(names, vec![("native", 2), ("equal", 2)]);
        assert_eq!(cmp.baseline, "native");
        let Saved::Comparison(saved) = open(dir.path(), None).unwrap() else {
            panic!("{} is no comparison", dir.path().display());
        };
        assert_eq!(saved.comparison().unwrap(), cmp);
    }

    /// Makes each fresh run in this process from the workload file it was
    /// given, under `native`, and keeps what it was asked.
    #[derive(Default)]
    struct InProcess(Mutex<Vec<(String, PathBuf, PathBuf)>>);

    impl Fresh for InProcess {
        fn run(
            &self,
            run: &FreshRun<'_>,
            _stop: &AtomicBool,
        ) -> Result<Trace, Box<dyn std::error::Error + Send + Sync>> {
            self.0
                .lock()
                .unwrap()
                .push((run.policy.into(), run.workload.into(), run.out.into()));
            let text = std::fs::read_to_string(run.workload)?;
            let workload = parse_workload("workload.toml", &text)?;
            let target = kvm();
            let (_, events) = target.run(
                &workload,
                "native",
                &PolicyContext::default(),
                run.out,
                run.epoch,
                0,
                None,
                &mut Vec::new(),
            )?;
            Ok(Trace::from_events(events)?)
        }
    }

    /// With a [`Fresh`] maker every run is its: from the workload written to
    /// `out/workload.toml`, in `out/POLICY-K`, each noted as it starts and
    /// ends (no run of it watched in this process).
    #[test]
    fn fresh_runs_are_made_by_the_callers_maker_from_the_written_workload() {
        let dir = tempfile::tempdir().unwrap();
        let (target, workload) = (kvm(), two_apps());
        let policies = ["native".to_string()];
        let fresh = InProcess::default();
        let seen = Seen::default();
        let compare = Compare {
            target: &target,
            stop: &Arc::new(AtomicBool::new(false)),
            watch: &seen,
            learn: false,
        };
        let cmp = compare
            .run(
                &Plan {
                    fresh: Some(&fresh),
                    ..plan(&workload, &policies, dir.path())
                },
                &[&Registry("native".into())],
            )
            .unwrap();
        let file = dir.path().join("workload.toml");
        let asked = fresh.0.lock().unwrap().clone();
        assert_eq!(
            asked,
            vec![
                ("native".into(), file.clone(), dir.path().join("native-1")),
                ("native".into(), file.clone(), dir.path().join("native-2")),
            ]
        );
        let written = parse_workload("", &std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written.apps.len(), 2);
        let runs = seen.runs();
        assert_eq!(runs.len(), 2, "{runs:?}");
        for (r, label) in runs.iter().zip(["1/2 native #1", "2/2 native #2"]) {
            assert_eq!(r.label, label);
            assert_eq!(r.instances, 0, "no run watched in this process");
            assert_eq!(r.notes.len(), 2, "{r:?}");
            assert_eq!(r.notes[0], "`coloc run` with nothing stored beforehand");
            assert!(r.notes[1].starts_with("makespan "), "{r:?}");
        }
        assert_eq!(cmp.policies[0].runs, 2);
    }

    #[test]
    fn a_baseline_not_compared_and_zero_repeats_are_refused() {
        let policies = ["native".to_string(), "equal".to_string()];
        let e = check_plan(&policies, "auto", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--baseline auto is not one of --policies native,equal"
        );
        let e = check_plan(&policies, "equal", 0).unwrap_err();
        assert_eq!(e.to_string(), "--repeat must be at least 1");
        check_plan(&policies, "equal", 1).unwrap();
    }
}
