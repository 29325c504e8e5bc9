//! The learner on scripted events and what policies read from its records.

use std::time::Duration;

use super::derive::{coruns, region_records, solo_curves, solo_times, KnownApp};
use super::*;
use crate::cpuset::CpuSet;
use crate::ids::AppId;
use crate::metrics::corun::RatesFrom;
use crate::metrics::SoloCurves;
use crate::observation::{AppSample, Observation, OmpSample};
use crate::plan::{AppPlan, Placement, Plan};
use crate::testutils::app_spec;
use crate::topology::Topology;
use crate::trace::{ExitStatus, Header, TraceEvent, TRACE_VERSION};
use crate::view::Trigger;
use crate::workload::Workload;
use crate::InstanceUsage;

/// Events of a scripted run on 2 CPUs, apps by index.
enum Ev {
    Start(u32),
    /// Start with this many threads.
    StartWith(u32, u32),
    /// Exit 0, with this much CPU time (ms).
    Exit(u32),
    ExitCpu(u32, u64),
    Fail(u32),
    /// A plan: per app, its CPUs ("" unmanaged) and DoP.
    Plan(&'static [(u32, &'static str, Option<u32>)]),
    /// An observation of app's OpenMP counts: regions, iterations, parallel ms.
    Omp(u32, u64, u64, u64),
    /// An observation of app's regions ended and whether it is inside one.
    Region(u32, u64, bool),
}

fn id(app: u32) -> AppId {
    AppId { app, rep: 0 }
}

fn events(script: &[(f64, Ev)]) -> Vec<TraceEvent> {
    let header = TraceEvent::Header(Box::new(Header {
        version: TRACE_VERSION,
        coloc_version: "test".into(),
        policy: "test".into(),
        machine: "linux".into(),
        workload: Workload {
            name: "w".into(),
            epoch: None,
            apps: vec![app_spec("x", 2)],
        },
        topology: Topology::synthetic("t", "package:1 core:2").expect("valid"),
        epoch: Duration::from_millis(100),
        seed: None,
        started_unix: 1000.0,
    }));
    let body = script.iter().map(|(secs, ev)| {
        let t = Duration::from_secs_f64(*secs);
        let exit = |app: u32, status, cpu_ms: Option<u64>| TraceEvent::Exit {
            t,
            app: id(app),
            status,
            metric: None,
            usage: cpu_ms.map(|ms| InstanceUsage {
                cpu_ns: ms * 1_000_000,
                ..InstanceUsage::default()
            }),
        };
        match *ev {
            Ev::Start(a) | Ev::StartWith(a, _) => TraceEvent::Start {
                t,
                app: id(a),
                pid: 100 + a,
                threads_requested: match *ev {
                    Ev::StartWith(_, k) => k,
                    _ => 2,
                },
                argv: vec!["true".into()],
                levers: None,
            },
            Ev::Exit(a) => exit(a, ExitStatus::Code(0), None),
            Ev::ExitCpu(a, ms) => exit(a, ExitStatus::Code(0), Some(ms)),
            Ev::Fail(a) => exit(a, ExitStatus::Code(1), None),
            Ev::Plan(apps) => TraceEvent::Plan {
                t,
                trigger: Trigger::Epoch,
                plan: Plan {
                    apps: apps
                        .iter()
                        .map(|&(a, cpus, dop)| AppPlan {
                            placement: if cpus.is_empty() {
                                Placement::Unmanaged
                            } else {
                                Placement::Shared(CpuSet::parse_list(cpus).unwrap())
                            },
                            dop,
                            ..AppPlan::native(id(a))
                        })
                        .collect(),
                    ..Plan::default()
                },
                decide: Duration::ZERO,
            },
            Ev::Omp(..) | Ev::Region(..) => {
                let (a, omp) = match *ev {
                    Ev::Omp(a, regions, iterations, parallel_ms) => (
                        a,
                        OmpSample {
                            regions_completed: regions,
                            iterations_completed: iterations,
                            parallel_ns: parallel_ms * 1_000_000,
                            ..OmpSample::default()
                        },
                    ),
                    Ev::Region(a, regions, inside) => (
                        a,
                        OmpSample {
                            regions_completed: regions,
                            in_parallel: inside,
                            ..OmpSample::default()
                        },
                    ),
                    _ => unreachable!("matched above"),
                };
                TraceEvent::Obs(Box::new(Observation {
                    at: t,
                    apps: vec![AppSample {
                        app: id(a),
                        omp: Some(omp),
                        ..AppSample::default()
                    }],
                    ..Observation::default()
                }))
            }
        }
    });
    std::iter::once(header).chain(body).collect()
}

fn key(name: &str) -> ProgramKey {
    ProgramKey::program("sha256:ab", &["/bin/x".into(), name.into()])
}

/// The records a learner makes of `script` with apps named `names` (each
/// its own program), in the order they completed.
fn learn(names: &[&str], script: &[(f64, Ev)]) -> Vec<Record> {
    let mut l = Learner::new(Source::Run);
    for (i, n) in names.iter().enumerate() {
        l.identify(i as u32, key(n), n);
    }
    events(script).iter().flat_map(|e| l.feed(e)).collect()
}

fn solo() -> SoloCurves {
    let mut s = SoloCurves::default();
    for (app, one, two) in [("dgemm", 6.2, 3.4), ("xz", 7.76, 5.26), ("c", 4.0, 2.0)] {
        s.add(app, 1, one);
        s.add(app, 2, two);
    }
    s
}

fn known(names: &[&str], records: &[Record]) -> Vec<KnownApp> {
    names
        .iter()
        .map(|n| KnownApp {
            name: n.to_string(),
            program: key(n),
            threads: 2,
            records: records
                .iter()
                .filter(|r| r.program == key(n))
                .cloned()
                .collect(),
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The blas-xz pair of `docs/policies/auto.md`: both start at 0, dgemm exits
/// at 6.44 s, xz at 8.79 s. Each overlapped only the other: dgemm did 3.4 s
/// of solo work in 6.44 s shared (0.528); xz ran 2.35 s alone, so
/// 5.26 - 2.35 = 2.91 s of it in 6.44 s (0.452).
#[test]
fn a_clean_pair_gives_each_its_rate_beside_the_other() {
    let names = ["dgemm", "xz"];
    let recs = learn(
        &names,
        &[
            (0.0, Ev::Start(0)),
            (0.0, Ev::Start(1)),
            (6.44, Ev::Exit(0)),
            (8.79, Ev::Exit(1)),
        ],
    );
    assert_eq!(recs.len(), 2);
    let (d, x) = (&recs[0], &recs[1]);
    assert_eq!((d.name.as_str(), x.name.as_str()), ("dgemm", "xz"));
    assert!(close(d.wall_secs, 6.44) && close(d.shared_secs, 6.44));
    assert!(close(x.wall_secs, 8.79) && close(x.weighted_secs, 6.44));
    assert_eq!(
        d.partner,
        Partner::Program {
            program: key("xz"),
            name: "xz".into()
        }
    );
    // Left to Linux (no plan), whole teams, ended, at the run's start + exit.
    assert_eq!(
        (d.arrangement, d.threads, d.ended),
        (Arrangement::Linux, Some(2), true)
    );
    assert_eq!((d.at_unix, x.at_unix), (1006, 1008));
    assert_eq!(d.instance, "1000.000/0.0/100");
    let c = coruns(&known(&names, &recs), &solo(), 2);
    let r = c.rates("dgemm", "xz").unwrap();
    assert_eq!(r.from, RatesFrom::Pairs(1));
    assert!(close(r.a, 3.4 / 6.44) && close(r.b, 2.91 / 6.44), "{r:?}");
    // On 1 CPU the fastest solo time is the 1-thread one.
    let d1 = coruns(&known(&names, &recs), &solo(), 1)
        .rates("dgemm", "xz")
        .unwrap()
        .a;
    assert!(close(d1, 6.2 / 6.44), "{d1}");
    // Without solo times, no rate.
    assert!(coruns(&known(&names, &recs), &SoloCurves::default(), 2).is_empty());
}

/// Three lives overlapping: no clean pair, but each instance's rate beside
/// others, a span shared by three counting 2/3. dgemm (0–5 s, 3.4 s alone)
/// shared 1 s with xz and 4 s with both: 3.4 / (1 + 8/3). xz (0–6 s, 5.26
/// s) also 1 s with c at the end: 5.26 / (2 + 8/3). c (1–7 s, 2.0 s) ran its
/// last second alone: (2.0 - 1) / (8/3 + 1).
#[test]
fn instances_that_shared_with_several_give_each_its_rate_beside_others() {
    let names = ["dgemm", "xz", "c"];
    let recs = learn(
        &names,
        &[
            (0.0, Ev::Start(0)),
            (0.0, Ev::Start(1)),
            (1.0, Ev::Start(2)),
            (5.0, Ev::Exit(0)),
            (6.0, Ev::Exit(1)),
            (7.0, Ev::Exit(2)),
        ],
    );
    let third = 8.0 / 3.0;
    let want = [
        3.4 / (1.0 + third),
        5.26 / (2.0 + third),
        1.0 / (third + 1.0),
    ];
    for r in &recs {
        assert_eq!(r.partner, Partner::Others { instances: 2 }, "{r:?}");
    }
    let c = coruns(&known(&names, &recs), &solo(), 2);
    let r = c.rates("c", "dgemm").unwrap();
    assert_eq!(r.from, RatesFrom::Shared(1, 1));
    assert!(close(r.a, want[2]) && close(r.b, want[0]), "{r:?}");
    let r = c.rates("xz", "c").unwrap();
    assert!(close(r.a, want[1]), "{r:?}");
}

/// A failed instance gets no record but counted as a co-runner; an app
/// without a program gets none either, and is "another" to its partner; an
/// overlap under half a second gives no rate.
#[test]
fn failures_and_strangers_share_the_machine_but_leave_no_record() {
    let recs = learn(
        &["dgemm"],
        &[
            (0.0, Ev::Start(0)),
            (0.0, Ev::Start(1)),
            (0.0, Ev::Start(2)),
            (1.0, Ev::Fail(2)),
            (5.0, Ev::Exit(1)),
            (6.0, Ev::Exit(0)),
        ],
    );
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].partner, Partner::Others { instances: 2 });
    let recs = learn(
        &["dgemm"],
        &[
            (0.0, Ev::Start(0)),
            (0.0, Ev::Start(1)),
            (5.0, Ev::Exit(1)),
            (6.0, Ev::Exit(0)),
        ],
    );
    assert_eq!(recs[0].partner, Partner::Others { instances: 1 });
    let recs = learn(
        &["dgemm", "xz"],
        &[
            (0.0, Ev::Start(0)),
            (3.2, Ev::Start(1)),
            (3.5, Ev::Exit(0)),
            (8.0, Ev::Exit(1)),
        ],
    );
    assert!(coruns(&known(&["dgemm", "xz"], &recs), &solo(), 2).is_empty());
}

/// The arrangement is the placement that held for 90% of the time counted:
/// alone on every CPU (a solo time), alone on fewer, each on CPUs of its
/// own, on CPUs shared with another, or no one of them. The team size is the
/// thread count or the DoP that held as long.
#[test]
fn arrangements_and_team_sizes() {
    type Case = (&'static str, Vec<(f64, Ev)>, Arrangement, Option<u32>);
    let cases: Vec<Case> = vec![
        (
            "alone, left to Linux",
            vec![(0.0, Ev::StartWith(0, 1)), (4.0, Ev::ExitCpu(0, 3900))],
            Arrangement::Alone,
            Some(1),
        ),
        (
            "alone on every CPU, named",
            vec![
                (0.0, Ev::Start(0)),
                (0.0, Ev::Plan(&[(0, "0-1", None)])),
                (4.0, Ev::Exit(0)),
            ],
            Arrangement::Alone,
            Some(2),
        ),
        (
            "alone on one CPU",
            vec![
                (0.0, Ev::Start(0)),
                (0.0, Ev::Plan(&[(0, "1", None)])),
                (4.0, Ev::Exit(0)),
            ],
            Arrangement::Confined,
            Some(2),
        ),
        (
            "a partition each, DoP 1 from 0.2 s (95%)",
            vec![
                (0.0, Ev::Start(0)),
                (0.0, Ev::Start(1)),
                (0.2, Ev::Plan(&[(0, "0", Some(1)), (1, "1", None)])),
                (4.0, Ev::Exit(0)),
                (5.0, Ev::Exit(1)),
            ],
            Arrangement::Partitioned,
            Some(1),
        ),
        (
            "CPU 1 shared with the other",
            vec![
                (0.0, Ev::Start(0)),
                (0.0, Ev::Start(1)),
                (0.0, Ev::Plan(&[(0, "1", None), (1, "", None)])),
                (4.0, Ev::Exit(0)),
                (5.0, Ev::Exit(1)),
            ],
            Arrangement::Pinned,
            Some(2),
        ),
        (
            "partitioned half the time, DoP 1 half",
            vec![
                (0.0, Ev::Start(0)),
                (0.0, Ev::Start(1)),
                (2.0, Ev::Plan(&[(0, "0", Some(1)), (1, "1", None)])),
                (4.0, Ev::Exit(0)),
                (5.0, Ev::Exit(1)),
            ],
            Arrangement::Mixed,
            None,
        ),
    ];
    for (what, script, arrangement, threads) in cases {
        let recs = learn(&["a", "b"], &script);
        let a = &recs[0];
        assert_eq!(a.name, "a", "{what}");
        assert_eq!((a.arrangement, a.threads), (arrangement, threads), "{what}");
        assert_eq!(
            a.is_solo_time(),
            arrangement == Arrangement::Alone,
            "{what}"
        );
    }
    // Solo times come from alone records only, at their team size, with CPU
    // time where recorded; at the app's own count for speedups.
    let recs = learn(
        &["a"],
        &[
            (0.0, Ev::StartWith(0, 1)),
            (4.0, Ev::ExitCpu(0, 3900)),
            (4.0, Ev::Start(0)),
            (6.5, Ev::Exit(0)),
        ],
    );
    let apps = known(&["a"], &recs);
    let curves = solo_curves(&apps);
    assert_eq!(
        curves.curve("a").unwrap().into_iter().collect::<Vec<_>>(),
        [(1, 4.0), (2, 2.5)]
    );
    assert_eq!(curves.cpu_curve("a").unwrap().get(&1), Some(&3.9));
    assert_eq!(solo_times(&apps).mean("a"), Some(2.5));
}

/// The region structure and progress come from the last observation before
/// the exit; snapshots of a running instance come every period, not ended.
#[test]
fn openmp_totals_and_snapshots() {
    let mut l = Learner::new(Source::Daemon).with_snapshots(Duration::from_secs(60));
    l.identify(0, key("svc"), "svc");
    let recs: Vec<Record> = events(&[
        (0.0, Ev::Start(0)),
        (30.0, Ev::Omp(0, 10, 0, 15_000)),
        (61.0, Ev::Omp(0, 20, 0, 30_000)),
        (100.0, Ev::Omp(0, 40, 4000, 50_000)),
        (121.0, Ev::Omp(0, 40, 4000, 50_000)),
        (130.0, Ev::Exit(0)),
    ])
    .iter()
    .flat_map(|e| l.feed(e))
    .collect();
    let shape: Vec<(bool, f64)> = recs.iter().map(|r| (r.ended, r.wall_secs)).collect();
    assert_eq!(shape, [(false, 61.0), (false, 121.0), (true, 130.0)]);
    assert!(recs.iter().all(|r| r.instance == recs[0].instance));
    let omp = recs[2].omp.unwrap();
    assert_eq!((omp.regions, omp.observed_secs), (40, 121.0));
    assert_eq!(omp.mean_region_secs(), Some(50.0 / 40.0));
    assert!(close(omp.serial_fraction().unwrap(), 1.0 - 50.0 / 121.0));
    let (rate, unit) = omp.progress_per_sec().unwrap();
    assert!(close(rate, 4000.0 / 121.0) && unit == "iterations");
    let first = recs[0].omp.unwrap().progress_per_sec().unwrap();
    assert_eq!(first, (20.0 / 61.0, "regions"));
}

/// Keys: argv[0] left out, arguments kept apart; a key without arguments
/// covers every record of its executable, one with them only its own.
#[test]
fn program_keys() {
    let a = ProgramKey::program("sha256:ab", &["/usr/bin/xz".into(), "-T2".into()]);
    let b = ProgramKey::program("sha256:ab", &["xz".into(), "-T2".into()]);
    let c = ProgramKey::program("sha256:ab", &["xz".into(), "-T1".into()]);
    assert_eq!(a, b);
    assert_eq!(a.key(), r#"sha256:ab ["-T2"]"#);
    assert_ne!(a.key(), c.key());
    let exe = ProgramKey {
        args: None,
        ..a.clone()
    };
    assert_eq!(exe.key(), "sha256:ab");
    assert!(exe.covers(&a) && exe.covers(&c) && a.covers(&a) && !a.covers(&c));
    assert!(!c.covers(&exe));
    assert_eq!(ProgramKey::model("cg").key(), "model:cg []");
    let spaced = ProgramKey::program("h", &["x".into(), "y z".into()]);
    let split = ProgramKey::program("h", &["x".into(), "y".into(), "z".into()]);
    assert_ne!(spaced.key(), split.key());
}

/// How long a program's regions last, from whole runs only: three short
/// regions, then one seen inside at 0.4, 0.5, 0.6 and 0.7 s (a span of
/// 300 ms at 100 ms epochs, so up to 500 ms long), ended by 0.8 s. The run
/// that exits 0 gives its span and epoch; the one that fails gives none.
#[test]
fn whole_runs_give_how_long_a_program_s_regions_last() {
    let script = |end: Ev| {
        vec![
            (0.0, Ev::Start(0)),
            (0.1, Ev::Region(0, 1, true)),
            (0.2, Ev::Region(0, 2, true)),
            (0.3, Ev::Region(0, 3, false)),
            (0.4, Ev::Region(0, 3, true)),
            (0.5, Ev::Region(0, 3, true)),
            (0.6, Ev::Region(0, 3, true)),
            (0.7, Ev::Region(0, 3, true)),
            (0.8, Ev::Region(0, 4, false)),
            (0.9, end),
        ]
    };
    let ok = learn(&["x"], &script(Ev::Exit(0)));
    let omp = ok[0].omp.expect("reported");
    assert!(close(omp.longest_region_secs.unwrap(), 0.3), "{omp:?}");
    assert!(close(omp.epoch_secs.unwrap(), 0.1), "{omp:?}");
    let regions = region_records(&known(&["x"], &ok));
    let r = regions.get("x").expect("a whole run");
    assert_eq!(r.runs, 1);
    assert!((r.bound().as_secs_f64() - 0.5).abs() < 1e-6, "{r:?}");
    let failed = learn(&["x"], &script(Ev::Fail(0)));
    assert!(region_records(&known(&["x"], &failed)).get("x").is_none());
}
