//! AToM's phases with a scripted signal: every candidate gets an equal slot,
//! the best one runs, and a co-runner change or a drift starts a new
//! competition; the candidates and the signals with their fallbacks.

use std::sync::Arc;
use std::time::Duration;

use coloc_model::observation::Counters;
use coloc_model::testutils::running_app;
use coloc_model::workload::{AppClass, MetricSpec};
use coloc_model::{
    AppSample, AppView, MetricSample, Observation, OmpSample, Plan, ThreadSample, Topology,
    Trigger, View,
};

use super::*;

const CLOVERTOWN: &str = "package:2 group(FSB):1 l2(4M):2 core:2";
const EPOCH: Duration = Duration::from_millis(500);

fn app(index: u32, threads: u32, class: AppClass, metric: bool) -> AppView {
    let mut a = running_app(
        index,
        &(0..threads).map(|t| 100 * index + t).collect::<Vec<_>>(),
    );
    let mut spec = (*a.spec).clone();
    spec.class = class;
    spec.metric = metric.then(|| MetricSpec {
        regex: "qps=([0-9.]+)".into(),
        file: None,
        higher_is_better: true,
        unit: None,
    });
    a.spec = Arc::new(spec);
    a
}

/// Drives `atom` epoch by epoch: each scripted app reports `script(CPUs it ran
/// on, time)` once per epoch, as a service prints its throughput.
struct Run {
    topo: Topology,
    apps: Vec<AppView>,
    atom: Atom,
    now: Duration,
    lines: u64,
    last: Option<Observation>,
    prev: Option<Observation>,
    /// Every other observation arrives with a thread change as the trigger.
    churn: bool,
}

/// What a scripted app reports, from the CPUs it ran on ("linux" when left to
/// Linux) and the time.
type Script<'a> = &'a dyn Fn(&str, Duration) -> f64;

impl Run {
    fn new(apps: Vec<AppView>) -> Self {
        Self {
            topo: Topology::synthetic("c", CLOVERTOWN).unwrap(),
            apps,
            atom: Atom::default(),
            now: Duration::ZERO,
            lines: 0,
            last: None,
            prev: None,
            churn: false,
        }
    }

    /// One epoch where apps[0] reports `script`; its CPUs.
    fn epoch(&mut self, script: Script<'_>) -> String {
        self.epoch_each(&[script]).swap_remove(0)
    }

    /// One epoch where apps[k] reports `scripts[k]` (apps past the scripts
    /// report nothing); every app's CPUs.
    fn epoch_each(&mut self, scripts: &[Script<'_>]) -> Vec<String> {
        let view = View {
            now: self.now,
            trigger: if self.churn && self.lines % 2 == 1 {
                Trigger::ThreadsChanged(self.apps[0].id)
            } else {
                Trigger::Epoch
            },
            topology: &self.topo,
            apps: &self.apps,
            last: self.last.as_ref(),
            prev: self.prev.as_ref(),
        };
        let plan: Plan = self.atom.decide(&view);
        assert_eq!(plan.apps.len(), self.apps.len());
        let running: Vec<String> = self
            .apps
            .iter()
            .map(|a| {
                let cpus = plan.for_app(a.id).unwrap().placement.cpus();
                if cpus.is_empty() {
                    "linux".into()
                } else {
                    cpus.to_list()
                }
            })
            .collect();
        // The next epoch: each app ran there and printed one line.
        self.now += EPOCH;
        self.lines += 1;
        let obs = Observation {
            at: self.now,
            apps: scripts
                .iter()
                .zip(self.apps.iter().zip(&running))
                .map(|(script, (a, cpus))| AppSample {
                    app: a.id,
                    metric: Some(MetricSample {
                        value: script(cpus, self.now),
                        lines: self.lines,
                    }),
                    ..AppSample::default()
                })
                .collect(),
            ..Observation::default()
        };
        self.prev = self.last.replace(obs);
        running
    }
}

/// {XX..XX..} is best (100), Linux worst (60), the rest 80.
fn prefers_pairs(cpus: &str, _: Duration) -> f64 {
    match cpus {
        "0-1,4-5" => 100.0,
        "linux" => 60.0,
        _ => 80.0,
    }
}

/// Learning: after a 2 s warm-up on the first candidate (4 epochs), 4 threads
/// on Clovertown have 5 sharing configurations, plus Linux: 6 slots of 2 s (4
/// epochs) each, every candidate once and for the same time; then the winner
/// runs.
#[test]
fn learns_with_equal_slots_then_executes_the_winner() {
    let mut run = Run::new(vec![
        app(0, 4, AppClass::Latency, true),
        app(1, 4, AppClass::Batch, false),
    ]);
    let mut seen: Vec<(String, u32)> = Vec::new();
    let first = run.epoch(&prefers_pairs);
    for _ in 0..3 {
        assert_eq!(run.epoch(&prefers_pairs), first, "warming up");
    }
    for _ in 0..24 {
        let cpus = run.epoch(&prefers_pairs);
        match seen.last_mut() {
            Some((c, n)) if *c == cpus => *n += 1,
            _ => seen.push((cpus, 1)),
        }
        assert!(run.atom.state().unwrap().1, "still learning");
    }
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert!(seen.iter().all(|(_, n)| *n == 4), "{seen:?}");
    assert_eq!(seen.last().unwrap().0, "linux");
    for _ in 0..8 {
        assert_eq!(run.epoch(&prefers_pairs), "0-1,4-5");
        assert!(!run.atom.state().unwrap().1, "executing");
    }
    assert_eq!(run.atom.competitions, 1);
}

/// {XXXX....} is best, but every mapping reports a tenth during the app's
/// first 1.5 s (its initialization).
fn packed_after_init(cpus: &str, t: Duration) -> f64 {
    if t <= Duration::from_millis(1500) {
        10.0
    } else if cpus == "0-3" {
        100.0
    } else {
        80.0
    }
}

/// A batch app started with the service arrives an epoch after it: that
/// co-runner change must not end the warm-up, or the first candidate's slot
/// scores the service's initialization and loses (what made AToM pick a
/// mapping 24% slower than the packed one for bigtable next to protobuf on
/// Westmere, docs/policies/tang-atom.md, Results).
#[test]
fn a_corunner_arriving_during_warm_up_does_not_end_it() {
    let mut run = Run::new(vec![app(0, 4, AppClass::Latency, true)]);
    assert_eq!(run.epoch(&packed_after_init), "0-3");
    run.apps.push(app(1, 4, AppClass::Batch, false));
    for _ in 0..3 {
        assert_eq!(run.epoch(&packed_after_init), "0-3");
        assert_eq!(
            run.atom.state().map(|s| (s.1, s.2)),
            Some((true, Cause::Corunners))
        );
    }
    // Warm-up over at 2 s; then 6 slots of 4 epochs.
    for _ in 0..24 {
        run.epoch(&packed_after_init);
    }
    assert_eq!(run.epoch(&packed_after_init), "0-3");
    assert_eq!(run.atom.state().map(|s| s.1), Some(false));
}

/// A service whose threads come and go (a load generator's rounds) gets
/// observations whose decision is triggered by the thread change: they are
/// sampled all the same, and the competition ends as with plain epochs.
#[test]
fn observations_arriving_with_a_thread_change_are_sampled() {
    let mut run = Run::new(vec![
        app(0, 4, AppClass::Latency, true),
        app(1, 4, AppClass::Batch, false),
    ]);
    run.churn = true;
    for _ in 0..28 {
        run.epoch(&prefers_pairs);
    }
    assert_eq!(run.epoch(&prefers_pairs), "0-1,4-5");
    assert_eq!(run.atom.state().map(|s| s.1), Some(false));
}

/// A new co-runner starts a new competition; so does a drift of the
/// winner's score beyond 15% in two windows in a row — one window is not
/// enough.
#[test]
fn competes_again_on_a_new_corunner_and_on_drift() {
    let mut run = Run::new(vec![
        app(0, 4, AppClass::Latency, true),
        app(1, 4, AppClass::Batch, false),
    ]);
    for _ in 0..30 {
        run.epoch(&prefers_pairs);
    }
    assert_eq!(run.atom.state().map(|s| s.1), Some(false));
    run.apps.push(app(2, 1, AppClass::Batch, false));
    run.epoch(&prefers_pairs);
    let (_, learning, cause) = run.atom.state().unwrap();
    assert!(learning);
    assert_eq!(cause, Cause::Corunners);
    assert_eq!(run.atom.competitions, 2);

    // Back to two apps, learn again, then the winner's throughput halves.
    run.apps.pop();
    for _ in 0..30 {
        run.epoch(&prefers_pairs);
    }
    assert_eq!(
        run.atom.state().map(|s| (s.1, s.2)),
        Some((false, Cause::Corunners))
    );
    let dropped_at = run.now;
    let slump = move |cpus: &str, t: Duration| {
        if t > dropped_at {
            prefers_pairs(cpus, t) * 0.5
        } else {
            prefers_pairs(cpus, t)
        }
    };
    // One slow window (4 epochs) is not drift yet.
    for _ in 0..4 {
        run.epoch(&slump);
    }
    assert_eq!(run.atom.state().map(|s| s.1), Some(false));
    for _ in 0..4 {
        run.epoch(&slump);
    }
    let (_, learning, cause) = run.atom.state().unwrap();
    assert!(learning);
    assert_eq!(cause, Cause::Drift);
}

/// The candidates: 5 configurations of 4 threads on Clovertown (sockets 4+0,
/// 3+1, and 2+2 with each pair packed or spread: both packed, one of each,
/// both spread) and Linux; one thread on a 2-core, one-L3 VM has one
/// configuration, so only Linux competes with it. A later latency app
/// chooses among the layouts of the cores left.
#[test]
fn candidates_are_the_sharing_configurations() {
    let topo = Topology::synthetic("c", CLOVERTOWN).unwrap();
    let apps = [app(0, 4, AppClass::Latency, false)];
    let view = View {
        now: Duration::ZERO,
        trigger: Trigger::Epoch,
        topology: &topo,
        apps: &apps,
        last: None,
        prev: None,
    };
    let levels = Levels::new(&topo);
    let all: Vec<usize> = (0..8).collect();
    let got: Vec<String> = candidates(&levels, &view, 4, &all, &Params::default(), true)
        .iter()
        .map(|c| match c {
            Candidate::Cores(c) => levels.cpus(c).to_list(),
            Candidate::Linux => "linux".into(),
        })
        .collect();
    assert_eq!(got.len(), 6, "{got:?}");
    for want in ["0-3", "0-1,4-5", "0,2,4,6", "linux"] {
        assert!(got.iter().any(|g| g == want), "{want} in {got:?}");
    }
    // Cores an earlier latency app left (it took 0 and 4): the distinct
    // layouts of the four level choices, without Linux.
    let left = Candidate::Cores;
    assert_eq!(
        candidates(
            &levels,
            &view,
            2,
            &[1, 2, 3, 5, 6, 7],
            &Params::default(),
            false
        ),
        vec![left(vec![2, 3]), left(vec![2, 6]), left(vec![1, 2])]
    );
    let vm = Topology::synthetic("vm", "package:1 l3(32M):1 core:2").unwrap();
    let view = View {
        topology: &vm,
        ..view
    };
    let levels = Levels::new(&vm);
    assert_eq!(
        candidates(&levels, &view, 1, &[0, 1], &Params::default(), true),
        vec![Candidate::Cores(vec![0]), Candidate::Linux]
    );
}

fn sample(at_ms: u64, run_ns: u64, omp: Option<u64>, instr: Option<u64>) -> Observation {
    Observation {
        at: Duration::from_millis(at_ms),
        apps: vec![AppSample {
            app: app(0, 2, AppClass::Latency, false).id,
            threads: (0..2)
                .map(|t| ThreadSample {
                    tid: t,
                    run_ns,
                    counters: instr.map(|i| Counters {
                        instructions: Some(i),
                        ..Counters::default()
                    }),
                    ..ThreadSample::default()
                })
                .collect(),
            omp: omp.map(|i| OmpSample {
                iterations_completed: i,
                ..OmpSample::default()
            }),
            ..AppSample::default()
        }],
        ..Observation::default()
    }
}

/// The fallbacks, in order, and their rates over 0.5 s: 2 threads × 0.4 s of
/// CPU = 1.6 CPU-s/s; 1000 iterations = 2000/s; 2 × 1e9 instructions = 4e9/s.
#[test]
fn signals_fall_back_in_order() {
    let plain = app(0, 2, AppClass::Latency, false);
    let cases = [
        (
            sample(0, 0, None, None),
            sample(500, 400_000_000, None, None),
            Signal::CpuTime,
            1.6,
        ),
        (
            sample(0, 0, Some(0), None),
            sample(500, 1, Some(1000), None),
            Signal::Progress,
            2000.0,
        ),
        (
            sample(0, 0, None, Some(0)),
            sample(500, 1, None, Some(1_000_000_000)),
            Signal::Instructions,
            4e9,
        ),
    ];
    for (prev, last, want, rate) in cases {
        let s = Signal::for_app(&plain, Some(&last));
        assert_eq!(s, want);
        let got = s.sample(plain.id, Some(&prev), Some(&last)).unwrap();
        assert!((got - rate).abs() < 1e-6 * rate, "{want}: {got}");
    }
    let with_metric = app(0, 2, AppClass::Latency, true);
    assert_eq!(
        Signal::for_app(&with_metric, None),
        Signal::Metric { higher: true }
    );
    // No new line since the last observation: no sample.
    let mut a = sample(0, 0, None, None);
    a.apps[0].metric = Some(MetricSample {
        value: 5.0,
        lines: 3,
    });
    let b = a.clone();
    assert_eq!(
        Signal::Metric { higher: true }.sample(with_metric.id, Some(&a), Some(&b)),
        None
    );
    let mut c = b.clone();
    c.apps[0].metric = Some(MetricSample {
        value: 7.0,
        lines: 4,
    });
    assert_eq!(
        Signal::Metric { higher: false }.sample(with_metric.id, Some(&b), Some(&c)),
        Some(-7.0)
    );
}

/// The first of two latency apps prefers its threads on two sockets, the
/// second a pair sharing an L2.
fn spread(cpus: &str, _: Duration) -> f64 {
    if cpus == "0,4" {
        100.0
    } else {
        80.0
    }
}

fn paired(cpus: &str, _: Duration) -> f64 {
    if cpus == "2-3" {
        100.0
    } else {
        80.0
    }
}

/// Two latency apps (2 threads each) and a batch app on Clovertown, one
/// learning at a time in arrival order. The first warms up and learns its 3
/// configurations (one L2, one socket, two sockets; no Linux with two latency
/// apps) while the second waits spread over the cores left; then the second,
/// started long ago, learns at once among the distinct layouts of the cores
/// the first's winner leaves, the first keeping its winner; then both execute.
/// A drift of the first app makes the second wait again and, after the first's
/// new competition, compete again (cause `Earlier`). When the first leaves,
/// the second competes again for its new co-runners, Linux among them.
#[test]
fn several_latency_apps_learn_one_at_a_time_in_arrival_order() {
    let mut run = Run::new(vec![
        app(0, 2, AppClass::Latency, true),
        app(1, 2, AppClass::Latency, true),
        app(2, 4, AppClass::Batch, false),
    ]);
    // Phases of (first app, second app) per run of epochs: the CPUs each ran
    // on, distinct in order of appearance, and whether it learned.
    let phase = |run: &mut Run, epochs: usize, scripts: &[Script<'_>]| {
        let mut cpus: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut states = Vec::new();
        for _ in 0..epochs {
            let got = run.epoch_each(scripts);
            for k in 0..2 {
                if cpus[k].last() != Some(&got[k]) {
                    cpus[k].push(got[k].clone());
                }
            }
            assert!(
                got[0]
                    .split(',')
                    .all(|c| !got[1].split(',').any(|d| c == d)),
                "latency apps apart: {got:?}"
            );
            let s = |i| {
                run.atom
                    .state_of(i)
                    .map(|(_, learning, cause)| (learning, cause))
            };
            states.push((s(0), s(1)));
        }
        states.dedup();
        (cpus, states)
    };
    // Warm-up (4 epochs) and 3 slots (12) of the first app; the second waits.
    let (cpus, states) = phase(&mut run, 16, &[&spread, &paired]);
    assert_eq!(cpus[0], ["0-1", "0,2", "0,4"]);
    assert_eq!(states, [(Some((true, Cause::Start)), None)]);
    // The second learns 3 slots of 4 epochs on the 6 cores left.
    let (cpus, states) = phase(&mut run, 12, &[&spread, &paired]);
    assert_eq!(cpus[0], ["0,4"]);
    assert_eq!(cpus[1], ["2-3", "2,6", "1-2"]);
    assert_eq!(
        states,
        [(Some((false, Cause::Start)), Some((true, Cause::Start)))]
    );
    let (cpus, states) = phase(&mut run, 8, &[&spread, &paired]);
    assert_eq!(cpus, [["0,4"], ["2-3"]]);
    assert_eq!(
        states,
        [(Some((false, Cause::Start)), Some((false, Cause::Start)))]
    );
    // The first app's throughput halves: its execution windows close every 4
    // epochs since it began executing, and the second slow one closes on the
    // 9th epoch; it learns again (12 epochs) while the second waits, then
    // the second learns again without a warm-up.
    let slump = |cpus: &str, t: Duration| spread(cpus, t) * 0.5;
    let (_, states) = phase(&mut run, 9, &[&slump, &paired]);
    assert_eq!(states.last(), Some(&(Some((true, Cause::Drift)), None)));
    let (cpus, states) = phase(&mut run, 11, &[&slump, &paired]);
    assert_eq!(cpus[0], ["0-1", "0,2", "0,4"]);
    assert_eq!(states, [(Some((true, Cause::Drift)), None)]);
    let (cpus, states) = phase(&mut run, 12, &[&slump, &paired]);
    assert_eq!(cpus, [vec!["0,4"], vec!["2-3", "2,6", "1-2"]]);
    assert_eq!(
        states,
        [(Some((false, Cause::Drift)), Some((true, Cause::Earlier)))]
    );
    assert_eq!(run.epoch_each(&[&slump, &paired])[..2], ["0,4", "2-3"]);
    assert_eq!(run.atom.competitions, 4);
    // The first leaves: the second, alone now, competes again for its new
    // co-runners at once, among its 3 configurations on the whole machine
    // and Linux.
    run.apps.remove(0);
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..16 {
        let cpus = run.epoch_each(&[&paired]).swap_remove(0);
        assert_eq!(
            run.atom.state().map(|s| (s.1, s.2)),
            Some((true, Cause::Corunners))
        );
        if seen.last() != Some(&cpus) {
            seen.push(cpus);
        }
    }
    assert_eq!(seen, ["0-1", "0,2", "0,4", "linux"]);
    assert_eq!(run.atom.competitions, 5);
}
