//! Criterion benchmarks of the simulator's engine (docs/simulator.md,
//! Speed). `coloc bench sim` prints events per second of whole runs; these
//! time the engine's hot paths one at a time, so a regression shows where
//! it is:
//!
//! - `solve_64_threads`: one interval of 8 apps × 8 pinned threads on
//!   NuPoCo's 64-core machine, from a state never solved (the contention
//!   fixed point from scratch, then the interval's accounting);
//! - `event_remembered`: an interval of the same state again (the solution
//!   remembered: the per-event cost every other event pays);
//! - `native` and `equal`: a two-app mix of NPB models run to the end
//!   through the Manager under the Linux balancer model (the most events)
//!   and pinned (the fewest);
//! - `memory_queues_16_servers`: the response times of 16 loaded memory
//!   servers, as a round of the fixed point asks for them
//!   (`coloc_model::queueing::response_times`);
//! - `placement_cpus_64_threads`: the CPUs of a placement pinning 64
//!   threads one per CPU, a union of `CpuSet`s the Manager and the
//!   policies take at every epoch;
//! - `cpuset_cores_in_region`: every core of NuPoCo's 64-core machine
//!   intersected with half of it, as ReSense's `assign` splits a region
//!   into a level's instances at every decision;
//! - `conservation_check_64_threads`: the Manager's waste checks
//!   (`coloc_manager::conservation`) over one interval of 8 apps × 8
//!   pinned threads, some idle, run at every observation;
//! - `resense_decide_8_apps` and `nupoco_decide_8_apps`: one ReSense and
//!   one NuPoCo decision for 8 apps × 8 pinned threads on the 64-core
//!   machine (NuPoCo sees no OpenMP section there: every app is placed for
//!   its team, its core reservations and thread pinning);
//! - `oracle_space_count_4x8`: counting the oracle's space of 4 apps × 8
//!   threads on the 48-core Opteron (`coloc_model::topology::symmetry`'s
//!   class tables), what `coloc bench sim`'s oracle run does once per DoP
//!   split before it evaluates a configuration.

use std::hint::black_box;
use std::sync::Arc;

use coloc_manager::conservation::Conservation;
use coloc_manager::{run, RunOptions, DEFAULT_EPOCH};
use coloc_model::queueing::{response_times, FiniteSource};
use coloc_model::testutils::running_app;
use coloc_model::topology::symmetry::{Space, SymTree};
use coloc_model::workload::parse_workload;
use coloc_model::{AppId, AppPlan, AppSample, AppView, CpuSet, MemPolicy, Observation};
use coloc_model::{Placement, SchedSettings, ThreadSample, TraceEvent, Trigger, View};
use coloc_policy::PolicyContext;
use coloc_sim::engine::{AppLaunch, Engine};
use coloc_sim::model::model;
use coloc_sim::platform::platform;
use coloc_sim::SimMachine;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

const MIX: &str = r#"
name = "bench-engine"
[[app]]
name = "mg"
model = "mg"
threads = 32
[[app]]
name = "ep"
model = "ep"
threads = 32
arrive_at = "1s"
"#;

/// Eight apps of eight threads on nupoco-amd64, each pinned to one NUMA
/// node's eight CPUs (one thread per CPU), advanced into their first
/// parallel phase so that every team exists; nothing solved since their
/// placement.
fn eight_teams() -> Engine {
    let p = platform("nupoco-amd64").expect("a built-in platform");
    let mut e = Engine::new(p, 1);
    let models = ["mg", "ft", "sp", "bt", "ep", "is", "mg", "ft"];
    for (i, name) in models.iter().enumerate() {
        let cpus: Vec<u32> = (8 * i as u32..8 * i as u32 + 8).collect();
        let m = model(name).expect("a library model");
        e.launch(AppLaunch {
            id: AppId {
                app: i as u32,
                rep: 0,
            },
            model: Arc::new(m.scaled(1e-2)),
            threads: 8,
            placement: Placement::Shared(cpus.iter().copied().collect::<CpuSet>()),
            memory: MemPolicy::Default,
            sched: SchedSettings::default(),
            malleable: false,
        });
    }
    // Past every app's serial start: the teams are created.
    while e.apps().iter().any(|a| a.threads.len() < 8) {
        let now = e.now_ns();
        e.advance_until(now + 1_000_000);
    }
    for (i, a) in e.apps().to_vec().iter().enumerate() {
        let threads = a
            .threads
            .iter()
            .enumerate()
            .map(|(k, t)| (t.tid, CpuSet::single((8 * i + k) as u32)))
            .collect();
        e.set_placement(
            a.id,
            Placement::PerThread {
                threads,
                rest: CpuSet::new(),
            },
        );
    }
    e
}

fn engine(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim_engine");
    let fresh = eight_teams();
    group.bench_function("solve_64_threads", |b| {
        b.iter_batched(
            || fresh.clone(),
            |mut e| {
                let now = e.now_ns();
                e.advance_until(black_box(now + 1));
                e.solves()
            },
            BatchSize::SmallInput,
        )
    });
    let mut warm = eight_teams();
    let now = warm.now_ns();
    warm.advance_until(now + 1);
    group.bench_function("event_remembered", |b| {
        b.iter(|| {
            let now = warm.now_ns();
            warm.advance_until(black_box(now + 1));
        })
    });
    let w = parse_workload("bench-engine.toml", MIX).expect("the built-in mix parses");
    let p = platform("nupoco-amd64").expect("a built-in platform");
    group.sample_size(10);
    for policy in ["native", "equal"] {
        group.bench_function(policy, |b| {
            b.iter(|| {
                let mut machine = SimMachine::new(p.clone(), 1);
                let mut pol = coloc_policy::by_name_with(policy, &PolicyContext::default())
                    .expect("a registry policy");
                let opts = RunOptions::simulated(DEFAULT_EPOCH, 1);
                let mut trace: Vec<TraceEvent> = Vec::new();
                run(&mut machine, pol.as_mut(), black_box(&w), &opts, &mut trace)
                    .expect("the mix runs");
                machine.engine().steps()
            })
        });
    }
    group.finish();
}

fn hot_functions(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim_hot");
    // Controllers and links of a loaded 64-core machine: tens to hundreds
    // of requests in flight, from light to saturated.
    let servers: Vec<FiniteSource> = (0..16u32)
        .map(|k| FiniteSource::new(20 + 23 * k, 2e6 * f64::from(k + 1), 1.5625e8))
        .collect();
    let mut out = Vec::new();
    group.bench_function("memory_queues_16_servers", |b| {
        b.iter(|| {
            response_times(black_box(&servers), &mut out);
            out[0]
        })
    });
    let placement = Placement::PerThread {
        threads: (0..64u32).map(|k| (1000 + k, CpuSet::single(k))).collect(),
        rest: CpuSet::new(),
    };
    group.bench_function("placement_cpus_64_threads", |b| {
        b.iter(|| black_box(&placement).cpus().len())
    });
    let p = platform("nupoco-amd64").expect("a built-in platform");
    let cores = p.topology.cores();
    let half: CpuSet = (0..32).collect();
    group.bench_function("cpuset_cores_in_region", |b| {
        b.iter(|| {
            cores
                .iter()
                .filter(|c| !c.is_disjoint(black_box(&half)))
                .map(|c| c.intersection(&half).len())
                .sum::<usize>()
        })
    });
    let apps = pinned_apps();
    let (prev, last) = (interval_start(&apps, 0), interval_start(&apps, 1));
    group.bench_function("conservation_check_64_threads", |b| {
        b.iter_batched(
            Conservation::default,
            |mut c| {
                c.check(&p.topology, black_box(&apps), &prev, &last)
                    .events
                    .len()
            },
            BatchSize::SmallInput,
        )
    });
    let mut resense = coloc_policy::by_name_with("resense", &PolicyContext::default())
        .expect("a registry policy");
    let view = View {
        now: last.at,
        trigger: Trigger::Epoch,
        topology: &p.topology,
        apps: &apps,
        last: Some(&last),
        prev: Some(&prev),
    };
    group.bench_function("resense_decide_8_apps", |b| {
        b.iter(|| resense.decide(black_box(&view)).apps.len())
    });
    let mut nupoco =
        coloc_policy::by_name_with("nupoco", &PolicyContext::default()).expect("a registry policy");
    group.bench_function("nupoco_decide_8_apps", |b| {
        b.iter(|| nupoco.decide(black_box(&view)).apps.len())
    });
    let opteron = platform("opteron48").expect("a built-in platform");
    let tree = SymTree::new(&opteron.topology);
    group.bench_function("oracle_space_count_4x8", |b| {
        b.iter(|| Space::new(black_box(&tree), vec![8; 4]).configurations())
    });
    group.finish();
}

/// Eight running apps of eight threads (tids `100 * app + k`), thread k of
/// app i pinned to CPU `8 * i + k`.
fn pinned_apps() -> Vec<AppView> {
    (0..8u32)
        .map(|i| {
            let tids: Vec<u32> = (0..8).map(|k| 100 * i + k).collect();
            let mut a = running_app(i, &tids);
            let threads = tids
                .iter()
                .zip(8 * i..)
                .map(|(&t, c)| (t, CpuSet::single(c)))
                .collect();
            a.current = Some(AppPlan {
                placement: Placement::PerThread {
                    threads,
                    rest: CpuSet::new(),
                },
                ..AppPlan::native(a.id)
            });
            a
        })
        .collect()
}

/// The observation at the end of 100 ms interval `k` of [`pinned_apps`]:
/// every thread on its CPU, the odd ones busy all along and queueing for
/// half of it, the even ones idle.
fn interval_start(apps: &[AppView], k: u64) -> Observation {
    let ms = 1_000_000;
    Observation {
        at: std::time::Duration::from_millis(100 * k),
        apps: apps
            .iter()
            .map(|a| AppSample {
                app: a.id,
                pid: 1,
                threads: a
                    .threads
                    .iter()
                    .zip(8 * a.id.app..)
                    .map(|(&tid, cpu)| ThreadSample {
                        pid: 1,
                        tid,
                        cpu: Some(cpu),
                        run_ns: k * 100 * ms * u64::from(tid % 2),
                        wait_ns: k * 50 * ms * u64::from(tid % 2),
                        ..ThreadSample::default()
                    })
                    .collect(),
                ..AppSample::default()
            })
            .collect(),
        ..Observation::default()
    }
}

criterion_group!(benches, engine, hot_functions);
criterion_main!(benches);
