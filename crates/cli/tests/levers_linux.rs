//! Levers that act, on this machine: a malleable OpenMP kernel whose work is one
//! parallel region (`kernel:compute`) next to a co-runner that exits early.
//! OpenMP applies a DoP when a region starts, so once the co-runner has left
//! no DoP reaches the kernel again; the policy must give its team both CPUs
//! instead. Checked from /proc (the union of its threads' `Cpus_allowed_list`)
//! while the run goes on; no timing is asserted.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use coloc_model::trace::TraceEvent;
use coloc_model::{AppId, CpuSet};
use common::{allowed_here, apps_by_pid, run_sampled, SampledRun};

const LONG: AppId = AppId { app: 0, rep: 0 };
const EARLY: AppId = AppId { app: 1, rep: 0 };

/// How long after the co-runner's exit the team may still be confined: two
/// epochs (the policy sees the lever stuck after a whole interval) and the
/// time to apply, on a loaded machine.
const GRACE: f64 = 0.6;

/// `long` has 24 times `early`'s work, so its one region outlives `early` by
/// seconds whether the machine is idle or loaded (at 16 M sweeps it ended
/// within the grace on an idle machine).
fn workload(dir: &Path) -> std::path::PathBuf {
    let text = r#"
name = "one-region"
[[app]]
name = "long"
command = ["kernel:compute", "--iters", "48000000"]
threads = 2
malleable = true

[[app]]
name = "early"
command = ["kernel:compute", "--iters", "2000000"]
threads = 2
arrive_at = "300ms"
"#;
    let path = dir.join("w.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The last observation (trace seconds) that saw `app` inside a parallel region.
fn last_in_region(run: &SampledRun, app: AppId) -> f64 {
    run.trace
        .observations()
        .filter(|o| {
            o.app(app)
                .and_then(|s| s.omp.as_ref())
                .is_some_and(|m| m.in_parallel)
        })
        .map(|o| o.at.as_secs_f64())
        .fold(0.0, f64::max)
}

fn exit_of(run: &SampledRun, app: AppId) -> f64 {
    run.trace
        .events
        .iter()
        .find_map(|e| match e {
            TraceEvent::Exit { t, app: a, .. } if *a == app => Some(t.as_secs_f64()),
            _ => None,
        })
        .expect("the app exits")
}

#[test]
fn a_one_region_kernel_may_use_both_cpus_once_its_co_runner_left() {
    let here = allowed_here();
    if here.len() != 2 {
        eprintln!("skipped: written for 2 CPUs, this process may use {here}");
        return;
    }
    for policy in ["scalability", "nupoco"] {
        let dir = tempfile::tempdir().unwrap();
        let run = run_sampled(
            &workload(dir.path()),
            policy,
            &dir.path().join("out"),
            Duration::from_millis(20),
            Duration::from_secs(120),
        );
        let pid = apps_by_pid(&run.trace)
            .into_iter()
            .find_map(|(pid, app)| (app == LONG).then_some(pid))
            .expect("long started");
        let left = exit_of(&run, EARLY);
        // Its region ends shortly before it exits; then it is serial and a
        // policy may rightly give it one CPU.
        let region_seen = last_in_region(&run, LONG);
        assert!(
            region_seen > left + GRACE + 0.5,
            "{policy}: long's region must outlive early by more than the grace ({left} s, {region_seen} s)"
        );
        let t0 = run.trace.header.started_unix;
        let late: Vec<_> = run
            .samples
            .iter()
            .filter(|s| s.pid == pid)
            .filter(|s| {
                let at = s.at_unix - t0;
                at > left + GRACE && at < region_seen - common::APPLY_SLACK
            })
            .collect();
        assert!(
            !late.is_empty(),
            "{policy}: sampled after the co-runner left"
        );
        // Per sampling round, the team's threads together may use both CPUs
        // (one each, pinned, or both, shared).
        let mut rounds: BTreeMap<usize, (f64, CpuSet)> = BTreeMap::new();
        for s in late {
            let r = rounds
                .entry(s.round)
                .or_insert((s.at_unix - t0, CpuSet::new()));
            r.1 = r.1.union(&s.cpus);
        }
        for (at, cpus) in rounds.values() {
            assert_eq!(
                *cpus, here,
                "{policy}: the team at {at:.2} s (co-runner left at {left:.2} s)"
            );
        }
    }
}
