//! A program on LLVM's OpenMP runtime under coloc: `bench/programs/heat.c`
//! built with clang against libomp, malleable, steered through the OMPT tool
//! (docs/signals.md, The DoP channel under LLVM's runtime). Beside it one
//! co-runner at the start and one later, so that `auto` and `nupoco` ask it
//! for one thread, then two, then one. Checked from /proc: over every stretch
//! where the record's team stayed the same, the threads of the program that
//! ran (by schedstat) are that team; the record's progress counts move in
//! every stretch and agree with the program (one region, one loop and n - 2
//! rows per step). Skipped, saying why, without clang and libomp
//! (scripts/setup installs them). About 25 s (two runs of 12 s).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use coloc_model::reason::levers::{Channel, Runtime};
use coloc_model::trace::Trace;
use coloc_model::AppId;
use common::{
    apps_by_pid, finished, fresh_data_dir, run_command, run_sampled_by, Sample, APPLY_SLACK,
    CLOCK_SLACK,
};

const HEAT: AppId = AppId { app: 0, rep: 0 };
const N: u64 = 256;

/// heat.c built with clang for LLVM's runtime, or None with the reason.
fn heat(dir: &Path) -> Option<PathBuf> {
    let exe = dir.join("heat");
    let out = std::process::Command::new("clang")
        .args(["-O2", "-fopenmp=libomp", "-o"])
        .arg(&exe)
        .arg(common::repo("bench/programs/heat.c"))
        .output();
    match out {
        Ok(o) if o.status.success() => Some(exe),
        Ok(o) => {
            eprintln!(
                "skipped: clang -fopenmp=libomp failed (LLVM's libomp missing? scripts/setup installs libomp-dev): {}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("skipped: clang not runnable ({e}); scripts/setup installs it");
            None
        }
    }
}

/// heat (12 s on any machine) first beside a one-thread co-runner (under a
/// second alone here, a few on a loaded machine), then alone, then beside
/// another from 7 s (a few seconds, so that a team cut beside it is seen). KMP_BLOCKTIME=0: a thread outside the team sleeps at
/// once, so /proc shows the team as the threads that run.
fn workload(dir: &Path, heat: &Path) -> PathBuf {
    let text = format!(
        r#"
name = "heat-llvm"
[[app]]
name = "heat"
command = ["{}", "--n", "{N}", "--steps", "1000000000", "--seconds", "12"]
threads = 2
malleable = true
env = {{ KMP_BLOCKTIME = "0" }}

[[app]]
name = "first"
command = ["kernel:compute", "--iters", "2000000"]
threads = 1

[[app]]
name = "second"
command = ["kernel:compute", "--iters", "30000000"]
threads = 1
arrive_at = "7s"
"#,
        heat.display()
    );
    let path = dir.join("heat.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// (trace seconds, the record's team, regions, loops ended, iterations) of
/// heat at each observation.
fn records(trace: &Trace) -> Vec<(f64, u32, u64, u64, u64)> {
    trace
        .observations()
        .filter_map(|o| {
            let a = o.app(HEAT)?;
            let omp = a.omp.as_ref()?;
            Some((
                o.at.as_secs_f64(),
                omp.team_size,
                omp.regions_completed,
                a.omp_steps?,
                omp.iterations_completed,
            ))
        })
        .collect()
}

/// heat's threads' run time per sampling round: (trace seconds, tid -> ns).
fn rounds(samples: &[Sample], pid: u32, t0: f64) -> Vec<(f64, BTreeMap<u32, u64>)> {
    let mut by_round: BTreeMap<usize, (f64, BTreeMap<u32, u64>)> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.pid == pid) {
        if let Some(run) = s.run_ns {
            let r = by_round
                .entry(s.round)
                .or_insert((s.at_unix - t0, BTreeMap::new()));
            r.1.insert(s.tid, run);
        }
    }
    by_round.into_values().collect()
}

/// Threads that ran between two rounds: those with at least a quarter of the
/// busiest one's CPU time (the machine may be shared: what counts is who
/// ran, not how fast). None when nobody ran 5 ms.
fn ran(a: &BTreeMap<u32, u64>, b: &BTreeMap<u32, u64>) -> Option<usize> {
    let d: Vec<u64> = b
        .iter()
        .map(|(t, run)| run.saturating_sub(*a.get(t).unwrap_or(&0)))
        .collect();
    let max = *d.iter().max()?;
    (max >= 5_000_000).then(|| d.iter().filter(|&&x| x * 4 >= max).count())
}

#[test]
fn an_llvm_openmp_programs_team_follows_the_record_under_auto_and_nupoco() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = heat(dir.path()) else {
        return;
    };
    let w = workload(dir.path(), &exe);
    // A team is cut only where the program's regions are known to be short
    // (docs/policies/auto.md, reversible first): heat is run once before,
    // under native, so the knowledge store holds its regions.
    let data = fresh_data_dir();
    let mut first = run_command(&w, "native", &dir.path().join("first"));
    first.env("XDG_DATA_HOME", &data);
    finished(first.spawn().unwrap());
    for policy in ["auto", "nupoco"] {
        let out = dir.path().join(policy);
        let mut cmd = run_command(&w, policy, &out);
        cmd.env("XDG_DATA_HOME", &data);
        let run = run_sampled_by(
            cmd,
            &out,
            Duration::from_millis(100),
            Duration::from_secs(300),
        );
        let pid = apps_by_pid(&run.trace)
            .into_iter()
            .find_map(|(pid, app)| (app == HEAT).then_some(pid))
            .expect("heat started");
        // The run found LLVM's runtime in heat and says its DoP channel acts.
        let levers = run.trace.events.iter().find_map(|e| match e {
            coloc_model::TraceEvent::Start { app, levers, .. } if *app == HEAT => levers.clone(),
            _ => None,
        });
        let levers = levers.expect("heat's program was checked");
        assert_eq!(levers.runtimes, [Runtime::LlvmOmp], "{policy}");
        assert_eq!(levers.channel, Channel::Acts, "{policy}");
        let recs = records(&run.trace);
        assert!(
            recs.len() > 10,
            "{policy}: heat reported through the record"
        );

        // The record's team was cut and given back, or given and cut (its
        // own DoP beside a co-runner, both threads alone): 1 → 2 → 1 or
        // 2 → 1 → 2.
        let mut teams: Vec<u32> = recs.iter().map(|r| r.1).collect();
        teams.dedup();
        let seq = teams.windows(3).any(|w| w == [1, 2, 1] || w == [2, 1, 2]);
        assert!(seq, "{policy}: teams in the record {teams:?}");

        // /proc: over every stretch between two sampling rounds (100 ms)
        // where the observations from 100 ms before to 100 ms after it saw
        // one team, that team ran.
        let t0 = run.trace.header.started_unix;
        let rs = rounds(&run.samples, pid, t0);
        let mut judged = BTreeMap::<u32, usize>::new();
        // Not the stretch where it ends: its serial end and exit come after
        // the last observation.
        let last_seen = recs.last().unwrap().0;
        let plans = common::decisions(&run.trace);
        for w in rs.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            if b.0 > last_seen - 0.1 {
                continue;
            }
            let around: Vec<u32> = recs
                .iter()
                .filter(|r| r.0 >= a.0 - 0.1 - CLOCK_SLACK && r.0 <= b.0 + 0.1 + CLOCK_SLACK)
                .map(|r| r.1)
                .collect();
            let Some(&team) = around.first() else {
                continue;
            };
            if around.len() < 2 || around.iter().any(|&t| t != team) {
                continue;
            }
            // A team of two on one CPU (a partition of one, as auto places
            // it before its co-runner's cut) shares it: who ran says
            // nothing of the team. Only stretches whose plans, from 100 ms
            // before, give heat no fewer CPUs than its team are judged.
            let from = a.0 - 0.1 - APPLY_SLACK;
            let squeezed = plans
                .iter()
                .filter(|d| d.t <= b.0 && d.t >= from)
                .chain(plans.iter().rev().find(|d| d.t < from))
                .filter_map(|d| d.plan.for_app(HEAT))
                .any(|p| {
                    let cpus = p.placement.cpus().len();
                    cpus > 0 && cpus < team as usize
                });
            if squeezed {
                continue;
            }
            let Some(n) = ran(&a.1, &b.1) else { continue };
            assert_eq!(
                n, team as usize,
                "{policy}: from {:.2} s to {:.2} s the record's team was {team}",
                a.0, b.0
            );
            *judged.entry(team).or_default() += 1;
        }
        assert!(
            judged.get(&1).is_some_and(|&n| n > 0) && judged.get(&2).is_some_and(|&n| n > 0),
            "{policy}: stretches judged per team {judged:?}"
        );

        // Progress: regions per second over every half second of the run
        // (its last stretch aside), and the counters agree with the
        // program: one worksharing loop of n - 2 rows per region. coloc
        // reads the record's fields one after another while the program
        // runs on, so they may be some regions apart (a preempted read):
        // 2% at most.
        for (at, _, regions, loops, iterations) in recs.iter().filter(|r| r.2 >= 1000) {
            let close = |x: u64, y: u64| x.abs_diff(y) <= y / 50;
            assert!(
                close(*loops, *regions),
                "{policy} at {at}: {loops} loops, {regions} regions"
            );
            assert!(
                close(*iterations, regions * (N - 2)),
                "{policy} at {at}: {iterations} iterations, {regions} regions"
            );
        }
        let last = recs.last().unwrap().0;
        let rate = |from: f64, to: f64| {
            let at = |t: f64| recs.iter().rev().find(|r| r.0 <= t).map_or(0, |r| r.2);
            (at(to) - at(from)) as f64 / (to - from)
        };
        let mut t = recs[0].0;
        while t + 0.5 < last {
            assert!(
                rate(t, t + 0.5) > 0.0,
                "{policy}: no region ended from {t:.2} s to {:.2} s",
                t + 0.5
            );
            t += 0.5;
        }
    }
}
