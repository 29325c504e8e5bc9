//! The cost of NuPoCo's decisions at NuPoCo's scale: 64 cores in 8 nodes, 8
//! co-located apps (§7.5 reports 1.8 ms per thread-count selection and 1.5 ms
//! per placement round on the 64-core AMD machine).
//!
//! `cargo run --release -p coloc-policy --example nupoco_decide`
//!
//! Prints the mean and the fastest of many calls of (1) Algorithm 1 alone
//! (`compute_dop`) and (2) a whole steady-state `decide` — observation
//! bookkeeping, Algorithm 1, an Algorithm 2 round and the plan — for the same
//! apps, their request rates spread from CPU-bound to memory-bound.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coloc_model::observation::{Counters, Signals};
use coloc_model::testutils::running_app;
use coloc_model::{
    AppSample, AppView, Observation, OmpSample, ThreadSample, Topology, Trigger, View,
};
use coloc_policy::nupoco::{compute_dop, Nupoco, NupocoConfig, Variant};
use coloc_policy::Policy;

const APPS: u32 = 8;
const THREADS: u32 = 8;

/// Mean and fastest duration of `runs` calls of `f`.
fn time(runs: u32, mut f: impl FnMut()) -> (Duration, Duration) {
    let mut fastest = Duration::MAX;
    let start = Instant::now();
    for _ in 0..runs {
        let t = Instant::now();
        f();
        fastest = fastest.min(t.elapsed());
    }
    (start.elapsed() / runs, fastest)
}

/// Every app's threads busy for the whole interval on the CPU its plan gave
/// them, each issuing its app's request rate.
fn observe(apps: &[AppView], rates: &[f64], at: Duration) -> Observation {
    let secs = at.as_secs_f64();
    let samples = apps
        .iter()
        .zip(rates)
        .map(|(a, rate)| AppSample {
            app: a.id,
            pid: a.threads[0],
            threads: a
                .threads
                .iter()
                .map(|&tid| {
                    let misses = (rate * secs) as u64;
                    ThreadSample {
                        pid: a.threads[0],
                        tid,
                        cpu: a
                            .current
                            .as_ref()
                            .and_then(|p| p.placement.cpus_of(tid))
                            .and_then(|s| s.first()),
                        run_ns: at.as_nanos() as u64,
                        counters: Some(Counters {
                            llc_misses: Some(misses),
                            llc_references: Some(2 * misses),
                            ..Counters::default()
                        }),
                        ..ThreadSample::default()
                    }
                })
                .collect(),
            omp: Some(OmpSample {
                in_parallel: true,
                team_size: THREADS,
                ..OmpSample::default()
            }),
            ..AppSample::default()
        })
        .collect();
    Observation {
        at,
        signals: Signals {
            hw_counters: true,
            schedstat: true,
        },
        apps: samples,
    }
}

fn main() {
    let topo = Topology::synthetic("nupoco-amd64", "package:4 numa:2 l3(8M):1 l2(2M):4 core:2")
        .expect("a valid description");
    // 1e3 .. 5e7 requests per second of CPU time per core.
    let rates: Vec<f64> = (0..APPS)
        .map(|i| 1e3 * 10f64.powf(f64::from(i) * 4.7 / f64::from(APPS - 1)))
        .collect();

    // With 8 apps on 8 nodes each app is held to its one node; fewer apps
    // leave Algorithm 1 real choices.
    for n in [2, 4, APPS as usize] {
        let mrr: Vec<f64> = rates
            .iter()
            .copied()
            .rev()
            .step_by(APPS as usize / n)
            .collect();
        let (mean, fastest) = time(200, || {
            black_box(compute_dop(&topo, None, black_box(&mrr)));
        });
        println!(
            "Algorithm 1 (compute_dop), {} cores, {n} apps: mean {:.3} ms, fastest {:.3} ms",
            topo.cores().len(),
            mean.as_secs_f64() * 1e3,
            fastest.as_secs_f64() * 1e3
        );
    }

    let mut apps: Vec<AppView> = (0..APPS)
        .map(|i| {
            let tids: Vec<u32> = (0..THREADS).map(|k| 1000 * (i + 1) + k).collect();
            let mut a = running_app(i, &tids);
            Arc::make_mut(&mut a.spec).malleable = true;
            a
        })
        .collect();
    let mut policy = Nupoco::new(NupocoConfig::default(), Variant::Full, None);
    let mut history: Vec<Observation> = Vec::new();
    let mut step = |apps: &mut Vec<AppView>, policy: &mut Nupoco, t: Duration| {
        history.push(observe(apps, &rates, t));
        let n = history.len();
        let view = View {
            now: t,
            trigger: Trigger::Epoch,
            topology: &topo,
            apps,
            last: history.last(),
            prev: (n >= 2).then(|| &history[n - 2]),
        };
        let plan = policy.decide(&view);
        for a in apps.iter_mut() {
            a.current = plan.for_app(a.id).cloned();
        }
        plan
    };
    // Profile every app (one 150 ms window, 50 ms epochs), then time steady decisions.
    let mut t = Duration::from_secs(1);
    let mut plan = step(&mut apps, &mut policy, t);
    for _ in 0..5 {
        t += Duration::from_millis(50);
        plan = step(&mut apps, &mut policy, t);
    }
    assert!(!plan.note.contains("profiling"), "{}", plan.note);
    println!("steady plan: {}", plan.note);
    let (mean, fastest) = time(200, || {
        t += Duration::from_millis(50);
        black_box(step(&mut apps, &mut policy, t));
    });
    println!(
        "nupoco decide (steady, Algorithm 1 + an Algorithm 2 round): mean {:.3} ms, fastest {:.3} ms",
        mean.as_secs_f64() * 1e3,
        fastest.as_secs_f64() * 1e3
    );
}
