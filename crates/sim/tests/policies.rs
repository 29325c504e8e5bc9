//! Every policy in `coloc_policy::POLICIES` runs through the unchanged Manager
//! on SimMachine (docs/architecture.md, Conventions: one conformance test for every policy): a small
//! dynamic workload — staggered arrivals, a repeated app, a malleable OpenMP
//! app, a latency-class app, more threads than CPUs at the peak — must finish,
//! every instance must start after it arrived and exit successfully, and every
//! plan must satisfy the invariants (the Manager refuses a plan that breaks
//! them, which would end the run with an error), and no policy may keep an
//! app's waiting threads off idle CPUs for more than an epoch (work
//! conservation, which the Manager records as `idle_while_waiting`).

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_manager::{run, waste_of, RunOptions, Waste};
use coloc_model::workload::parse_workload;
use coloc_model::{AppId, TraceEvent};
use coloc_policy::{PolicyContext, POLICIES};
use coloc_sim::model::{AppModel, Phase};
use coloc_sim::{platform, SimMachine};

/// Short models (a few hundred ms of simulated time each) so that every policy
/// runs in well under a second: a memory-bound malleable OpenMP app with
/// several parallel sections, a sharing pthreads app, a compute-bound one.
fn models() -> Vec<AppModel> {
    let mut stream = coloc_sim::model::model("mg").unwrap();
    stream.name = "t-mem".into();
    stream.phases = vec![
        Phase::serial(0.05),
        Phase::parallel(0.6),
        Phase::serial(0.02),
        Phase::parallel(0.6),
    ];
    let mut share = coloc_sim::model::model("streamcluster").unwrap();
    share.name = "t-share".into();
    share.phases = vec![Phase::serial(0.05), Phase::parallel(0.8)];
    let mut cpu = coloc_sim::model::model("swaptions").unwrap();
    cpu.name = "t-cpu".into();
    cpu.phases = vec![Phase::serial(0.02), Phase::parallel(0.5)];
    vec![stream, share, cpu]
}

const WORKLOAD: &str = r#"
name = "conformance"
epoch = "50ms"

[[app]]
name = "mem"
model = "t-mem"
threads = 4
malleable = true
cpus = "0-3"

[[app]]
name = "share"
model = "t-share"
threads = 4
arrive_at = "100ms"
repeat = 2
cpus = ["4", "5", "6", "7"]

[[app]]
name = "cpu"
model = "t-cpu"
threads = 6
arrive_at = "150ms"
class = "latency"

[[app]]
name = "late"
model = "t-mem"
threads = 0
arrive_at = "400ms"
"#;

/// Checks one run's trace: every instance arrived, started no earlier, exited
/// successfully no earlier than it started; every recorded plan passes the
/// invariants against the apps present when it was made.
fn check_trace(policy: &str, trace: &[TraceEvent], expected: usize) {
    let mut arrived: BTreeMap<AppId, Duration> = BTreeMap::new();
    let mut started: BTreeMap<AppId, Duration> = BTreeMap::new();
    let mut exited: BTreeMap<AppId, Duration> = BTreeMap::new();
    for e in trace {
        match e {
            TraceEvent::Arrive { t, app, .. } => {
                arrived.insert(*app, *t);
            }
            TraceEvent::Start { t, app, .. } => {
                let a = arrived[app];
                assert!(
                    *t >= a,
                    "{policy}: {app} started at {t:?} before arriving at {a:?}"
                );
                started.insert(*app, *t);
            }
            TraceEvent::Exit { t, app, status, .. } => {
                assert!(status.success(), "{policy}: {app} {status:?}");
                let s = started[app];
                assert!(*t >= s, "{policy}: {app} exited before it started");
                exited.insert(*app, *t);
            }
            _ => {}
        }
    }
    assert_eq!(arrived.len(), expected, "{policy}: arrivals");
    assert_eq!(started.len(), expected, "{policy}: starts");
    assert_eq!(exited.len(), expected, "{policy}: exits");
    let reps: Vec<u32> = arrived
        .keys()
        .filter(|id| id.app == 1)
        .map(|id| id.rep)
        .collect();
    assert_eq!(reps, [0, 1], "{policy}: the repeated app ran twice");
}

/// Policies that leave CPUs idle by construction: ReSense's ablation with every
/// score fixed positive packs every app onto one instance of each resource
/// (TACO 2013 Table VII), whatever else is idle.
const NOT_WORK_CONSERVING: &[&str] = &["resense-positive"];

#[test]
fn every_policy_runs_a_dynamic_workload_to_the_end() {
    let w = parse_workload("conformance.toml", WORKLOAD).unwrap();
    let expected: usize = w.apps.iter().map(|a| a.repeat as usize).sum();
    assert!(!POLICIES.is_empty());
    for info in POLICIES {
        for seed in [1, 2] {
            let mut m =
                SimMachine::new(platform("clovertown").unwrap(), seed).with_models(models());
            let mut p = info.make(&PolicyContext::default());
            assert_eq!(p.name(), info.name);
            let opts = RunOptions::simulated(w.epoch.unwrap(), seed);
            let mut trace: Vec<TraceEvent> = Vec::new();
            let summary = run(&mut m, p.as_mut(), &w, &opts, &mut trace)
                .unwrap_or_else(|e| panic!("{} (seed {seed}): {e:#}", info.name));
            assert_eq!(summary.instances, expected, "{}", info.name);
            assert_eq!(summary.failed, 0, "{}", info.name);
            assert!(!summary.interrupted);
            assert!(
                matches!(trace.last(), Some(TraceEvent::End { .. })),
                "{}: the trace ends with End",
                info.name
            );
            check_trace(info.name, &trace, expected);
            let idle: Vec<&TraceEvent> = trace
                .iter()
                .filter(|e| matches!(e, TraceEvent::IdleWhileWaiting { .. }))
                .collect();
            assert_eq!(
                summary.waste.idle_while_waiting.observations,
                idle.len(),
                "{}",
                info.name
            );
            if !NOT_WORK_CONSERVING.contains(&info.name) {
                assert!(idle.is_empty(), "{} (seed {seed}): {idle:?}", info.name);
            }
            // Under auto, no CPU idles beside a team or a placement smaller
            // than what is free, and no team burns CPU without progress, for
            // more than an epoch (docs/trace-format.md, `underused`,
            // `no_progress`).
            let wasted: Vec<&TraceEvent> = trace
                .iter()
                .filter(|e| waste_of(e).is_some_and(|(_, w)| w != Waste::IdleWhileWaiting))
                .collect();
            eprintln!(
                "{} seed {seed}: {} underused/no_progress event(s)",
                info.name,
                wasted.len()
            );
            if info.name == "auto" {
                assert!(wasted.is_empty(), "auto (seed {seed}): {wasted:?}");
            }
            assert!(
                m.engine().apps().is_empty(),
                "{}: nothing left running",
                info.name
            );
        }
    }
}
