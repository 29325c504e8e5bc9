//! Criterion benchmark of NuPoCo's Algorithm 1 (docs/policies/nupoco.md), the
//! hottest loop of a decision: the DoP split of 2, 4 and 8 steady apps on
//! NuPoCo's 64-core, 8-node machine. `coloc bench nupoco` prints the same
//! figures with a whole steady decision beside them; `cargo bench -p
//! coloc-policy` tracks them over time.

use std::hint::black_box;

use coloc_model::Topology;
use coloc_policy::nupoco::compute_dop;
use criterion::{criterion_group, criterion_main, Criterion};

/// NuPoCo §7.1's AMD machine: 4 packages × 2 nodes × 8 cores.
const TOPOLOGY: &str = "package:4 numa:2 l3(8M):1 l2(2M):4 core:2";

fn algorithm_1(c: &mut Criterion) {
    let topo = Topology::synthetic("nupoco-amd64", TOPOLOGY).expect("the built-in shape parses");
    let mut group = c.benchmark_group("nupoco_compute_dop");
    for apps in [2usize, 4, 8] {
        // Memory request rates from CPU-bound to memory-bound.
        let mrr: Vec<f64> = (0..apps)
            .map(|i| 1e6 * 10f64.powf(i as f64 * 3.0 / apps as f64))
            .collect();
        group.bench_function(format!("{apps}_apps"), |b| {
            b.iter(|| compute_dop(black_box(&topo), None, black_box(&mrr)))
        });
    }
    group.finish();
}

criterion_group!(benches, algorithm_1);
criterion_main!(benches);
