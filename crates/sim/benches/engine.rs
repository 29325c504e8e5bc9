//! Criterion benchmark of the simulator's engine (docs/simulator.md): a
//! two-app mix of NPB models on NuPoCo's 64-core machine, run to the end
//! through the Manager under `native` (the Linux balancer model: the most
//! events) and `equal` (pinned: the fewest). `coloc bench sim` prints events
//! per second and the oracle's speed; `cargo bench -p coloc-sim` tracks the
//! engine over time.

use std::hint::black_box;

use coloc_manager::{run, RunOptions, DEFAULT_EPOCH};
use coloc_model::workload::parse_workload;
use coloc_model::TraceEvent;
use coloc_policy::PolicyContext;
use coloc_sim::platform::platform;
use coloc_sim::SimMachine;
use criterion::{criterion_group, criterion_main, Criterion};

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

fn engine(c: &mut Criterion) {
    let w = parse_workload("bench-engine.toml", MIX).expect("the built-in mix parses");
    let p = platform("nupoco-amd64").expect("a built-in platform");
    let mut group = c.benchmark_group("sim_engine");
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

criterion_group!(benches, engine);
criterion_main!(benches);
