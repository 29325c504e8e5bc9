//! `coloc bench overhead`'s runs: a workload under one policy, measured
//! for coloc's own cost ([`coloc_manager::RunSummary`]'s CPU use, the
//! observations its loop made) and for what the page walks that interleave
//! a running app's memory did (`tranquilizer`, docs/policies/
//! tranquilizer.md, Agent CPU use): the part of coloc's CPU use that grows
//! with the apps' resident memory. And the scaling curve of coloc's own
//! cost with the threads it tracks ([`scaling_point`]).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use coloc_manager::RunSummary;
use coloc_model::workload::parse_workload;
use coloc_model::{TraceEvent, Workload};

use crate::context::policy_context;
use crate::output::default_out_dir;
use crate::watch::Watch;
use crate::{HarnessError, Target};

/// One run of `workload` under `policy` into `out`, watched as `label`; an
/// interrupted run is an error (its figures would mean nothing).
#[allow(clippy::too_many_arguments)]
pub fn run_once(
    target: &Target,
    workload: &Workload,
    policy: &str,
    epoch: Duration,
    out: &Path,
    stop: Arc<AtomicBool>,
    watch: &dyn Watch,
    label: &str,
) -> Result<(RunSummary, Vec<TraceEvent>), HarnessError> {
    let ctx = policy_context(target, workload, &[policy])?;
    let total: u64 = workload.apps.iter().map(|a| u64::from(a.repeat)).sum();
    let mut progress = watch.run(label, total);
    let (summary, events) = target.run(
        workload,
        policy,
        &ctx,
        out,
        epoch,
        0,
        Some(stop),
        &mut *progress,
    )?;
    progress.finish(String::new());
    if summary.interrupted {
        return Err(HarnessError::Interrupted);
    }
    Ok((summary, events))
}

/// The workload of one point of the scaling curve: one app, `exe bench
/// sleepers` (the coloc binary) with `threads` threads sleeping for `each`,
/// then exiting.
pub fn sleepers(exe: &Path, threads: u32, each: Duration) -> Result<Workload, HarnessError> {
    let command = [
        exe.display().to_string(),
        "bench".into(),
        "sleepers".into(),
        "--threads".into(),
        threads.to_string(),
        "--duration".into(),
        format!("{}ms", each.as_millis()),
    ];
    let quoted: Vec<String> = command.iter().map(|a| format!("{a:?}")).collect();
    let text = format!(
        "name = \"scaling-{threads}\"\n[[app]]\nname = \"sleepers\"\ncommand = [{}]\nthreads = 1\n",
        quoted.join(", ")
    );
    Ok(parse_workload("<bench overhead --threads>", &text)?)
}

/// What `bench sleepers` runs as the app of [`sleepers`]: `threads`
/// threads (this one among them) sleeping for `each`, then the end.
pub fn sleep_in_threads(threads: u32, each: Duration) {
    let others: Vec<_> = (1..threads.max(1))
        .map(|_| std::thread::spawn(move || std::thread::sleep(each)))
        .collect();
    std::thread::sleep(each);
    for t in others {
        let _ = t.join();
    }
}

/// One point of the scaling curve: coloc's cost of managing `threads`
/// sleeping threads.
#[derive(Debug)]
pub struct ScalingPoint {
    pub threads: u32,
    pub summary: RunSummary,
    /// The epochs due over the run's wall time: a loop that cannot keep up
    /// observes fewer, and CPU per wall time alone would hide it.
    pub due: usize,
}

/// Runs [`sleepers`] of `threads` threads for `each` under `policy` on
/// `target` (sleeping threads isolate coloc's cost of tracking, sampling
/// and applying from the apps' competition for the CPUs), into its own run
/// directory, watched as `N threads`.
#[allow(clippy::too_many_arguments)]
pub fn scaling_point(
    target: &Target,
    exe: &Path,
    threads: u32,
    each: Duration,
    policy: &str,
    epoch: Duration,
    stop: Arc<AtomicBool>,
    watch: &dyn Watch,
) -> Result<ScalingPoint, HarnessError> {
    let workload = target.resolve(sleepers(exe, threads, each)?)?;
    let out = default_out_dir(&workload.name, &format!("bench-{policy}"));
    let label = format!("{threads} threads");
    let (summary, _) = run_once(target, &workload, policy, epoch, &out, stop, watch, &label)?;
    let due = (summary.usage.wall.as_secs_f64() / epoch.as_secs_f64()).floor() as usize;
    Ok(ScalingPoint {
        threads,
        summary,
        due,
    })
}

/// What the page walks of one action (`interleave`, `restore`) did over a
/// run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageWalks {
    pub action: String,
    /// Applies that walked pages.
    pub applies: u64,
    pub examined: u64,
    pub moved: u64,
}

/// The page walks of a run's applies, per action in order of first
/// appearance (empty when no apply walked pages).
pub fn page_walks(events: &[TraceEvent]) -> Vec<PageWalks> {
    let mut by_action: Vec<PageWalks> = Vec::new();
    let outcomes = events.iter().flat_map(|e| match e {
        TraceEvent::Applied { outcomes, .. } => outcomes.as_slice(),
        _ => &[],
    });
    for pages in outcomes.filter_map(|o| o.pages.as_ref()) {
        let i = match by_action.iter().position(|a| a.action == pages.action) {
            Some(i) => i,
            None => {
                by_action.push(PageWalks {
                    action: pages.action.clone(),
                    applies: 0,
                    examined: 0,
                    moved: 0,
                });
                by_action.len() - 1
            }
        };
        let a = &mut by_action[i];
        a.applies += 1;
        a.examined += pages.examined;
        a.moved += pages.moved;
    }
    by_action
}

#[cfg(test)]
mod tests {
    use coloc_model::trace::{ApplyOutcome, PageMoves};

    use super::*;
    use crate::testing::{kvm, two_apps};
    use crate::watch::seen::Seen;

    /// A point of the scaling curve runs the binary given with `bench
    /// sleepers`, its threads and duration, quoted so any path parses.
    #[test]
    fn the_sleepers_workload_runs_the_binary_given() {
        let w = sleepers(
            Path::new("/opt/my \"coloc\"/coloc"),
            100,
            Duration::from_millis(1500),
        )
        .unwrap();
        assert_eq!(w.name, "scaling-100");
        assert_eq!(w.apps.len(), 1);
        assert_eq!(
            w.apps[0].command.as_deref().unwrap(),
            [
                "/opt/my \"coloc\"/coloc",
                "bench",
                "sleepers",
                "--threads",
                "100",
                "--duration",
                "1500ms"
            ]
        );
        assert_eq!(w.apps[0].threads, 1);
    }

    /// Two interleave walks (3 + 4 pages examined, 1 moved) and a restore,
    /// summed per action in order of first appearance; no walk, nothing.
    #[test]
    fn page_walks_are_summed_per_action() {
        let applied = |pages: Vec<Option<PageMoves>>| TraceEvent::Applied {
            t: Duration::ZERO,
            outcomes: pages
                .into_iter()
                .map(|pages| ApplyOutcome {
                    pages,
                    ..ApplyOutcome::default()
                })
                .collect(),
        };
        let moves = |action: &str, examined, moved| {
            Some(PageMoves {
                action: action.into(),
                examined,
                moved,
                ..PageMoves::default()
            })
        };
        let events = [
            applied(vec![moves("interleave", 3, 0), None]),
            applied(vec![moves("interleave", 4, 1)]),
            applied(vec![moves("restore", 1, 1)]),
        ];
        let walks = |action: &str, applies, examined, moved| PageWalks {
            action: action.into(),
            applies,
            examined,
            moved,
        };
        assert_eq!(
            page_walks(&events),
            [walks("interleave", 2, 7, 1), walks("restore", 1, 1, 1)]
        );
        assert_eq!(page_walks(&[applied(vec![None])]), []);
    }

    /// A run on the simulator through the library: watched to its two
    /// exits, its trace written under the directory given, and coloc's own
    /// loop seen observing.
    #[test]
    fn a_bench_run_on_the_simulator_is_watched_and_summarized() {
        let dir = tempfile::tempdir().unwrap();
        let target = kvm();
        let workload = two_apps();
        let seen = Seen::default();
        let (summary, events) = run_once(
            &target,
            &workload,
            "equal",
            Duration::from_millis(100),
            dir.path(),
            Arc::new(AtomicBool::new(false)),
            &seen,
            "equal",
        )
        .unwrap();
        let runs = seen.runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].label.as_str(), runs[0].instances, runs[0].exits),
            ("equal", 2, 2)
        );
        assert!(summary.observations > 0);
        assert!(matches!(events.last(), Some(TraceEvent::End { .. })));
        assert!(dir.path().join("trace.jsonl").exists());
        assert_eq!(page_walks(&events), []);
    }
}
