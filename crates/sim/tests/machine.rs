//! SimMachine through the Machine trait, alone and driven by the Manager with
//! the `equal` and `native` policies.

use std::time::Duration;

use coloc_manager::{run, LaunchRequest, Machine, MachineEvent, RunOptions};
use coloc_model::trace::ExitStatus;
use coloc_model::workload::parse_workload;
use coloc_model::{AppId, AppPlan, TraceEvent};
use coloc_sim::{platform, SimMachine};

fn spec(model: Option<&str>, command: bool) -> coloc_model::AppSpec {
    let mut s = coloc_model::testutils::app_spec("a", 2);
    s.model = model.map(str::to_string);
    if !command {
        s.command = None;
    }
    s
}

/// Launch errors name the model and list the known ones; a real program is
/// refused with a clear reason.
#[test]
fn launch_errors_are_clear() {
    let cases = [
        (spec(Some("quake"), false), "unknown model `quake`"),
        (spec(None, true), "has `command"),
        (spec(None, false), "no `model`"),
    ];
    for (s, want) in cases {
        let mut m = SimMachine::new(platform("kvm-2cpu").unwrap(), 1);
        let id = AppId::default();
        let plan = AppPlan::native(id);
        let err = m
            .launch(LaunchRequest {
                id,
                spec: &s,
                threads: 2,
                plan: &plan,
            })
            .unwrap_err();
        let Some(reason) = err.launch_reason() else {
            panic!("{}", err.chain())
        };
        assert!(reason.contains(want), "{reason}");
        assert!(
            reason.contains("streamcluster"),
            "lists the known models: {reason}"
        );
    }
}

/// A 2-thread compute-only model (one parallel phase of 100e9 instructions at
/// CPI 0.5 on 2.45 GHz: 4.9e9/s per CPU) on kvm-2cpu clocked at 2.45 GHz: threads exist at launch,
/// the observation after 1 s shows 1 s of run time and 4.9e9 instructions per
/// thread, and the app exits at 100e9 / 9.8e9 = 10.204 s with its throughput
/// (100 / 10.204 = 9.8 units) in its output.
#[test]
fn trait_calls() {
    let unit = coloc_sim::AppModel {
        name: "unit-compute".into(),
        about: "CPI 0.5, no memory traffic".into(),
        phases: vec![coloc_sim::Phase::parallel(100.0)],
        cpi: 0.5,
        llc_apki: 0.0,
        reuse: 1.0,
        private_mb: 0.01,
        shared_mb: 0.0,
        shared_fraction: 0.0,
        write_sharing: 0.0,
        mlp: 4.0,
        barriers_per_ginstr: 0.0,
        lock_fraction: 0.0,
        lock_acquires_per_ginstr: 0.0,
        openmp: true,
    };
    let mut p = platform("kvm-2cpu").unwrap();
    p.params.freq_ghz = 2.45;
    let mut m = SimMachine::new(p, 1).with_models([unit]);
    let id = AppId { app: 0, rep: 0 };
    let s = spec(Some("unit-compute"), false);
    let plan = AppPlan::native(id);
    let l = m
        .launch(LaunchRequest {
            id,
            spec: &s,
            threads: 2,
            plan: &plan,
        })
        .unwrap();
    assert_eq!(l.tids.len(), 2);
    assert_eq!(l.tids[0], l.pid);
    assert_eq!(m.kind(), "sim:kvm-2cpu");
    assert!(m.wait_until(Duration::from_secs(1)).unwrap().is_empty());
    let obs = m.observe().unwrap();
    assert!(obs.signals.hw_counters);
    let t = &obs.apps[0].threads[0];
    assert_eq!(t.run_ns, 1_000_000_000);
    let instr = t.counters.unwrap().instructions.unwrap();
    assert!((instr as f64 - 4.9e9).abs() < 1e3, "{instr}");
    let events = m.wait_until(Duration::from_secs(100)).unwrap();
    let [MachineEvent::Exited {
        at,
        status,
        output,
        usage: Some(whole_life),
        ..
    }] = &events[..]
    else {
        panic!("{events:?}")
    };
    // Two threads on a CPU each from launch to exit, at 2.45 GHz.
    let cpu = 2.0 * at.as_secs_f64();
    assert!(
        (whole_life.cpu_ns as f64 - cpu * 1e9).abs() < 1e3,
        "{whole_life:?}"
    );
    let cycles = whole_life.cycles.unwrap() as f64;
    assert!((cycles - cpu * 2.45e9).abs() < 1e4, "{whole_life:?}");
    assert_eq!(*status, ExitStatus::Code(0));
    assert!((at.as_secs_f64() - 100.0 / 9.8).abs() < 1e-6, "{at:?}");
    assert_eq!(output.as_deref(), Some("coloc-metric: 9.800000 units\n"));
    let usage = m.finish().unwrap();
    assert_eq!((usage.cpu, usage.wall), (Duration::ZERO, *at));
}

const WORKLOAD: &str = r#"
name = "sim-small"
epoch = "100ms"

[[app]]
name = "sc"
model = "streamcluster"
threads = 4

[[app]]
name = "mg"
model = "mg"
threads = 4
arrive_at = "2s"

[app.metric]
regex = 'coloc-metric: ([0-9.]+)'
"#;

/// Exit times of a Manager run, per app.
fn exits(policy: &str, seed: u64) -> Vec<(AppId, Duration, Option<f64>)> {
    let w = parse_workload("sim-small.toml", WORKLOAD).unwrap();
    let mut m = SimMachine::new(platform("westmere").unwrap(), seed);
    let mut p = coloc_policy::by_name(policy).unwrap();
    let opts = RunOptions::simulated(Duration::from_millis(100), seed);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let summary = run(&mut m, p.as_mut(), &w, &opts, &mut trace).unwrap();
    assert_eq!((summary.instances, summary.failed), (2, 0), "{policy}");
    trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit {
                t,
                app,
                status,
                metric,
                ..
            } => {
                assert!(status.success(), "{policy}: {status:?}");
                Some((*app, *t, *metric))
            }
            _ => None,
        })
        .collect()
}

/// The Manager runs the workload to the end under `equal` and `native`; the
/// metric regex reads the simulated output; runs repeat exactly for a seed; and
/// `equal` (pinned) does not depend on the seed.
#[test]
fn manager_runs_equal_and_native() {
    for policy in ["equal", "native"] {
        let a = exits(policy, 1);
        assert_eq!(a.len(), 2, "{policy}");
        let mg = a.iter().find(|(id, _, _)| id.app == 1).unwrap();
        assert!(
            mg.2.is_some_and(|x| x > 0.0),
            "{policy}: metric read from output"
        );
        assert_eq!(exits(policy, 1), a, "{policy}: same seed, same run");
    }
    assert_eq!(
        exits("equal", 1),
        exits("equal", 2),
        "pinned runs ignore the seed"
    );
}

/// The workload files under `dir` and its subdirectories.
fn workload_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            files.extend(workload_files(&path));
        } else if path.extension().is_some_and(|x| x == "toml") {
            files.push(path);
        }
    }
    files
}

/// Every simulated example workload (subdirectories included) parses and
/// names library models only; the Tang pair runs to the end under `equal` on
/// Clovertown.
#[test]
fn examples_parse_and_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim");
    let mut files = workload_files(&dir);
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let w = parse_workload(&f.display().to_string(), &text).unwrap();
        for a in &w.apps {
            let name = a.model.as_deref().unwrap();
            assert!(
                coloc_sim::model::model(name).is_some(),
                "{}: {name}",
                f.display()
            );
        }
    }
    let text = std::fs::read_to_string(dir.join("tang-pairs.toml")).unwrap();
    let w = parse_workload("tang-pairs.toml", &text).unwrap();
    let mut m = SimMachine::new(platform("clovertown").unwrap(), 1);
    let mut p = coloc_policy::by_name("equal").unwrap();
    let opts = RunOptions::simulated(w.epoch.unwrap(), 1);
    let mut trace: Vec<TraceEvent> = Vec::new();
    let summary = run(&mut m, p.as_mut(), &w, &opts, &mut trace).unwrap();
    assert_eq!((summary.instances, summary.failed), (2, 0));
}
