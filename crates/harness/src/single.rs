//! One run of a workload under one policy (`coloc run`, `coloc sim`): what
//! the policy may know first (the knowledge store, docs/knowledge.md, and
//! `context.rs`), the run through the Manager on the target, and what it
//! gives back as data for the CLI to render: the run's metrics, what `auto`
//! or a guarded policy last measured against Linux per app set
//! (docs/policies/auto.md, "Checked against outcomes"), each app's levers
//! (docs/signals.md, Runtimes and levers) and what the run taught the
//! knowledge store.
//!
//! Two steps, so that the caller can say what runs before it runs:
//! [`prepare`] makes the policy, [`Ready::run`] runs it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use coloc_manager::{Recorder, RunSummary};
use coloc_model::explain::last_verdicts;
use coloc_model::knowledge::Source;
use coloc_model::metrics::RunMetrics;
use coloc_model::reason::levers::Levers;
use coloc_model::reason::Verdict;
use coloc_model::{Trace, TraceEvent, Workload};
use coloc_policy::auto::Objective;
use coloc_policy::Policy;

use crate::compare::Contender;
use crate::context::policy_context_with;
use crate::knowledge::Knowledge;
use crate::{HarnessError, Target};

/// A policy made for one run of `workload` on `target`, with what it may
/// know.
pub struct Ready<'a> {
    target: &'a Target,
    workload: &'a Workload,
    policy: Box<dyn Policy>,
    knowledge: Option<Knowledge>,
}

impl std::fmt::Debug for Ready<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ready")
            .field("workload", &self.workload.name)
            .field("policy", &self.policy.name())
            .finish_non_exhaustive()
    }
}

/// Makes `contender`'s policy for a run of `workload` on `target`, `auto`
/// optimizing `objective`, knowing what the knowledge store holds (where it
/// opens: without it the run goes on, said by the store's module).
pub fn prepare<'a>(
    target: &'a Target,
    workload: &'a Workload,
    contender: &dyn Contender,
    objective: Objective,
) -> Result<Ready<'a>, HarnessError> {
    let knowledge = Knowledge::open_or_warn(target, workload);
    let mut ctx = policy_context_with(target, workload, &[contender.name()], knowledge.as_ref())?;
    ctx.objective = objective;
    Ok(Ready {
        target,
        workload,
        policy: contender.make(&ctx)?,
        knowledge,
    })
}

/// One run as it went.
#[derive(Debug)]
pub struct SingleRun {
    pub summary: RunSummary,
    pub trace: Trace,
    pub metrics: RunMetrics,
    /// What `auto` or a guarded policy last measured against Linux per app
    /// set (none for the other policies).
    pub against_linux: Vec<Verdict>,
    /// Each app's name and what its program holds and which levers act on
    /// it, from its first instance's `start`.
    pub levers: Vec<(String, Levers)>,
    /// The knowledge store's path and how many records the run added to it,
    /// or why none; None without a store.
    pub learned: Option<(PathBuf, Result<usize, HarnessError>)>,
}

impl Ready<'_> {
    /// The policy's name, as the trace records it.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Runs the workload into `out` (its trace and, on Linux, the apps'
    /// output) at `epoch`, each event to `watch`, until its apps end or
    /// `stop` is set; then adds what the run says of each program to the
    /// knowledge store.
    pub fn run(
        self,
        out: &Path,
        epoch: Duration,
        stop: Arc<AtomicBool>,
        watch: &mut dyn Recorder,
    ) -> Result<SingleRun, HarnessError> {
        let (summary, events) =
            self.target
                .run_policy(self.workload, self.policy, out, epoch, 0, Some(stop), watch)?;
        let levers = levers(self.workload, &events);
        let against_linux = last_verdicts(events.iter().filter_map(|e| match e {
            TraceEvent::Plan { plan, .. } => Some(plan),
            _ => None,
        }));
        let trace = Trace::from_events(events).map_err(HarnessError::Events)?;
        let metrics = RunMetrics::from_trace(&trace, None);
        let learned = self.knowledge.as_ref().map(|k| {
            (
                k.path().to_path_buf(),
                k.learn(self.workload, &trace, Source::Run),
            )
        });
        Ok(SingleRun {
            summary,
            trace,
            metrics,
            against_linux,
            levers,
            learned,
        })
    }
}

/// Each app's levers, from its first instance's `start` that has them.
fn levers(workload: &Workload, events: &[TraceEvent]) -> Vec<(String, Levers)> {
    let mut seen = BTreeSet::new();
    events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Start {
                app,
                levers: Some(l),
                ..
            } if seen.insert(app.app) => {
                let name = workload
                    .apps
                    .get(app.app as usize)
                    .map_or("?", |a| a.name.as_str());
                Some((name.to_string(), l.clone()))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Registry;
    use crate::testing::{kvm, two_apps};

    /// One run of two models under `equal` on kvm-2cpu, through the
    /// library, its policy made without the knowledge store (a library
    /// test touches no store): both instances ran to a successful end, the
    /// watcher, the returned trace and the trace on disk saw both exits,
    /// the metrics hold both apps, and `equal` gives no verdict against
    /// Linux.
    #[test]
    fn a_run_on_the_simulator_gives_its_trace_and_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let target = kvm();
        let w = two_apps();
        let ready = Ready {
            target: &target,
            workload: &w,
            policy: Registry("equal".into())
                .make(&coloc_policy::PolicyContext::default())
                .unwrap(),
            knowledge: None,
        };
        assert_eq!(ready.policy_name(), "equal");
        let mut events = Vec::new();
        let run = ready
            .run(
                dir.path(),
                Duration::from_millis(100),
                Arc::new(AtomicBool::new(false)),
                &mut events,
            )
            .unwrap();
        assert!(!run.summary.interrupted);
        assert_eq!(run.summary.instances, 2);
        assert_eq!(run.summary.failed, 0);
        let on_disk = crate::read_trace(&dir.path().join("trace.jsonl")).unwrap();
        let exits = |e: &[TraceEvent]| {
            e.iter()
                .filter(|e| matches!(e, TraceEvent::Exit { .. }))
                .count()
        };
        let seen = (
            exits(&events),
            exits(&run.trace.events),
            exits(&on_disk.events),
        );
        assert_eq!(seen, (2, 2, 2));
        assert_eq!(run.metrics.apps.len(), 2);
        assert!(run.metrics.makespan_secs().is_some_and(|m| m > 0.0));
        assert!(run.against_linux.is_empty());
        assert!(run.learned.is_none());
    }
}
