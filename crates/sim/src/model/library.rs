//! Named app models with the character of the papers' benchmarks (docs/simulator.md, Apps).
//!
//! The numbers are plausible, not measured: each model is tuned to show the
//! behaviour its paper reports, and the comment says which. Calibration against
//! real runs (docs/simulator.md, Validation) replaces them model by model. Work amounts give
//! solo runs of tens of seconds with 4–8 threads on the papers' machines.

use super::{AppModel, Phase};

mod parsec;
mod spec_omp;

/// The fields every model starts from: a light, cache-friendly OpenMP app.
fn base(name: &str, about: &str) -> AppModel {
    AppModel {
        name: name.into(),
        about: about.into(),
        phases: vec![Phase::serial(1.0), Phase::parallel(100.0)],
        cpi: 1.0,
        llc_apki: 1.0,
        reuse: 0.9,
        private_mb: 0.5,
        shared_mb: 0.0,
        shared_fraction: 0.0,
        write_sharing: 0.0,
        mlp: 4.0,
        barriers_per_ginstr: 0.0,
        lock_fraction: 0.0,
        lock_acquires_per_ginstr: 0.0,
        openmp: true,
    }
}

/// `n` iterations of a parallel section followed by a short serial step, each
/// section one parallel region.
fn iterations(setup: f64, parallel: f64, serial: f64, n: usize) -> Vec<Phase> {
    sections(setup, parallel, 1, serial, n)
}

/// Parallel regions per parallel section of the NPB models: NPB's OpenMP
/// codes open a region per loop nest (`!$omp parallel do`), several per time
/// step, so a section of a model (many time steps) is many back-to-back
/// regions of tens of milliseconds on a full machine. An OpenMP runtime applies
/// a new DoP at a region start, so this is how often DoP control can act.
const REGIONS_PER_SECTION: usize = 20;

/// `n` iterations of a parallel section of `regions` back-to-back parallel
/// regions (the section's work split evenly) followed by a short serial step.
fn sections(setup: f64, parallel: f64, regions: usize, serial: f64, n: usize) -> Vec<Phase> {
    let mut v = vec![Phase::serial(setup)];
    for _ in 0..n {
        v.extend(std::iter::repeat_n(
            Phase::parallel(parallel / regions as f64),
            regions,
        ));
        v.push(Phase::serial(serial));
    }
    v
}

/// NPB SP's character (NuPoCo Table 1: Type A, high memory demand, huge data),
/// shared by the `sp` model and its one-region variant.
fn sp_like(name: &str, about: &str) -> AppModel {
    AppModel {
        cpi: 0.8,
        llc_apki: 18.0,
        reuse: 0.4,
        private_mb: 128.0,
        mlp: 4.0,
        barriers_per_ginstr: 60.0,
        ..base(name, about)
    }
}

/// Every built-in model.
pub fn models() -> Vec<AppModel> {
    let mut all = core();
    all.extend(parsec::models());
    all.extend(spec_omp::models());
    all
}

/// The models of the papers' first experiments and coloc's kernels.
fn core() -> Vec<AppModel> {
    vec![
        // PARSEC streamcluster: the largest positive ReSense sensitivity for shared
        // L2/L3 (Table IV: +9.9 Yorkfield L2, +14.5 Xeon L3) — threads read the same
        // block of points, so one cache fetches it for all; memory-bound on FSBs.
        AppModel {
            phases: iterations(2.0, 40.0, 0.2, 5),
            cpi: 0.9,
            llc_apki: 15.0,
            reuse: 0.85,
            private_mb: 0.25,
            shared_mb: 3.0,
            shared_fraction: 0.85,
            write_sharing: 0.03,
            mlp: 3.0,
            barriers_per_ginstr: 500.0,
            ..base("streamcluster", "PARSEC streamcluster: read-shared points block, data sharing (ReSense SC)")
        },
        // PARSEC canneal: random accesses over a large shared netlist; positive L2/L3
        // scores and negative FSB score in ReSense Table IV.
        AppModel {
            phases: vec![Phase::serial(10.0), Phase::parallel(150.0)],
            cpi: 1.3,
            llc_apki: 20.0,
            reuse: 0.5,
            private_mb: 0.25,
            shared_mb: 96.0,
            shared_fraction: 0.9,
            write_sharing: 0.05,
            mlp: 1.5,
            openmp: false,
            ..base("canneal", "PARSEC canneal: large shared netlist, random access, data sharing (ReSense CN)")
        },
        // NPB FT class D: Type A in NuPoCo Table 1 (high CPU, high memory, huge
        // data); the most negative ReSense scores (Table V: -233 Opteron L3).
        AppModel {
            phases: sections(8.0, 60.0, REGIONS_PER_SECTION, 0.5, 6),
            cpi: 0.8,
            llc_apki: 30.0,
            reuse: 0.3,
            private_mb: 256.0,
            mlp: 5.0,
            barriers_per_ginstr: 40.0,
            ..base("ft", "NPB FT: all-to-all transposes over a huge array, memory-bound and contentious")
        },
        // NPB IS: random-access bucket sort, memory-bound (ReSense Table V: -52 Opteron L3).
        AppModel {
            phases: sections(4.0, 25.0, REGIONS_PER_SECTION, 0.5, 10),
            cpi: 1.0,
            llc_apki: 35.0,
            reuse: 0.2,
            private_mb: 64.0,
            mlp: 2.0,
            barriers_per_ginstr: 40.0,
            ..base("is", "NPB IS: random-access integer sort, memory-bound and contentious")
        },
        // NPB MG: streaming multigrid sweeps (ReSense Table V: -67 Opteron L3, -43 socket).
        AppModel {
            phases: sections(4.0, 40.0, REGIONS_PER_SECTION, 0.3, 8),
            cpi: 0.7,
            llc_apki: 25.0,
            reuse: 0.35,
            private_mb: 128.0,
            mlp: 6.0,
            barriers_per_ginstr: 100.0,
            ..base("mg", "NPB MG: streaming stencil sweeps, memory-bandwidth-bound")
        },
        // NPB BT: Type A with medium memory demand (NuPoCo Table 1).
        AppModel {
            phases: sections(4.0, 80.0, REGIONS_PER_SECTION, 0.5, 5),
            cpi: 0.7,
            llc_apki: 8.0,
            reuse: 0.6,
            private_mb: 64.0,
            mlp: 4.0,
            barriers_per_ginstr: 50.0,
            ..base("bt", "NPB BT: block-tridiagonal solver, CPU-heavy with medium memory demand (NuPoCo Type A)")
        },
        // NPB SP: Type A, high memory demand, huge data (NuPoCo Table 1).
        AppModel {
            phases: sections(4.0, 60.0, REGIONS_PER_SECTION, 0.5, 6),
            ..sp_like("sp", "NPB SP: scalar-pentadiagonal solver, CPU- and memory-heavy (NuPoCo Type A)")
        },
        // SP as C/C++ OpenMP codes are often written: the whole solver is one
        // parallel region (`omp parallel` around the time-step loop, worksharing
        // `omp for` inside, serial steps under `omp single`). Its team is sized
        // once, when that region starts; a DoP chosen later never reaches it,
        // so DoP control can only place its threads (compare `sp`, whose many
        // short regions each take the current DoP).
        AppModel {
            phases: vec![Phase::serial(4.0), Phase::parallel(363.0)],
            ..sp_like("sp-one-region", "NPB SP written as one long parallel region: its DoP is fixed when the region starts")
        },
        // NPB EP: Type B, almost no memory traffic, perfectly scalable; its
        // whole computation is one parallel region, as in NPB EP.
        AppModel {
            phases: vec![Phase::serial(0.5), Phase::parallel(400.0)],
            cpi: 0.6,
            llc_apki: 0.05,
            reuse: 1.0,
            private_mb: 0.05,
            ..base("ep", "NPB EP: embarrassingly parallel random numbers, compute-bound (NuPoCo Type B)")
        },
        // PARSEC swaptions: compute-bound, tiny working set, pthreads.
        AppModel {
            phases: vec![Phase::serial(0.5), Phase::parallel(300.0)],
            cpi: 0.7,
            llc_apki: 0.3,
            reuse: 0.99,
            private_mb: 0.1,
            openmp: false,
            ..base("swaptions", "PARSEC swaptions: Monte-Carlo pricing, compute-bound")
        },
        // PARSEC blackscholes: long serial input phase, one light parallel loop
        // (NuPoCo Type C).
        AppModel {
            phases: vec![Phase::serial(30.0), Phase::parallel(120.0), Phase::serial(5.0)],
            cpi: 0.8,
            llc_apki: 2.0,
            reuse: 0.9,
            private_mb: 0.5,
            ..base("blackscholes", "PARSEC blackscholes: long serial section, one light parallel loop (NuPoCo Type C)")
        },
        // Rodinia kmeans: long serial start, then short parallel iterations with
        // frequent synchronization; does not scale (NuPoCo Type C).
        AppModel {
            phases: iterations(25.0, 2.0, 0.3, 40),
            cpi: 1.0,
            llc_apki: 10.0,
            reuse: 0.7,
            private_mb: 2.0,
            shared_mb: 2.0,
            shared_fraction: 0.3,
            write_sharing: 0.1,
            mlp: 3.0,
            barriers_per_ginstr: 20000.0,
            ..base("kmeans", "Rodinia kmeans: serial section then frequently synchronized iterations (NuPoCo Type C)")
        },
        // Tang et al.: bigtable prefers sharing LLC and FSB, solo and co-located
        // (Table 3); highest share-state fraction of LLC references (Fig. 22).
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(200.0)],
            cpi: 1.1,
            llc_apki: 20.0,
            reuse: 0.9,
            private_mb: 0.5,
            shared_mb: 2.5,
            shared_fraction: 0.7,
            write_sharing: 0.1,
            mlp: 2.0,
            openmp: false,
            ..base("bigtable", "Tang et al. bigtable: latency-sensitive storage server, data sharing")
        },
        // Tang et al.: contentAnalyzer has the largest LLC footprint and the least
        // sharing (Fig. 22), 0.96 GB/s per thread on Clovertown (Fig. 21); best
        // spread alone, best packed on one socket next to stitcher (Table 3).
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(200.0)],
            cpi: 1.0,
            llc_apki: 18.0,
            reuse: 0.9,
            private_mb: 2.5,
            shared_mb: 0.25,
            shared_fraction: 0.1,
            mlp: 2.0,
            openmp: false,
            ..base("content-analyzer", "Tang et al. contentAnalyzer: latency-sensitive, large LLC footprint, little sharing")
        },
        // Tang et al.: webSearch, medium bus demand, fairly high sharing but still
        // hurt by cache contention (§5).
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(200.0)],
            cpi: 1.0,
            llc_apki: 15.0,
            reuse: 0.9,
            private_mb: 1.8,
            shared_mb: 1.0,
            shared_fraction: 0.4,
            write_sharing: 0.02,
            mlp: 2.0,
            openmp: false,
            ..base("websearch", "Tang et al. webSearch: latency-sensitive, medium bandwidth, moderate sharing")
        },
        // Tang et al.: stitcher, the bus hog (1.6 GB/s per core on Clovertown, Fig. 21).
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(200.0)],
            cpi: 0.9,
            llc_apki: 40.0,
            reuse: 0.2,
            private_mb: 16.0,
            mlp: 4.0,
            openmp: false,
            ..base("stitcher", "Tang et al. image stitcher: batch, bandwidth hog with a large streaming footprint")
        },
        // Tang et al.: protobuf, the lightest bus demand (Fig. 21).
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(200.0)],
            cpi: 0.9,
            llc_apki: 3.0,
            reuse: 0.95,
            private_mb: 0.5,
            openmp: false,
            ..base("protobuf", "Tang et al. protocol buffers: batch, light on caches and bus")
        },
        // The C/OpenMP kernels of crates/workloads at their default arguments, so
        // that simulated and real runs of one workload compare (docs/simulator.md,
        // Validation; coloc_sim::calibrate). Instruction counts
        // come from the loops as compiled (gcc -O2, x86-64); CPIs from their
        // instruction mix on a Zen core; the machine's own figures (clock,
        // memory, LLC hit, barrier and slice costs) are fitted on kvm-2cpu.
        //
        // stream: 3 × 128 MiB arrays, 40 triad sweeps a[i] = b[i] + s·c[i],
        // scalar (7 instructions per element: 2 loads, mul, add, store, loop),
        // plus first touch and verification: 16.8 M elements × (40 × 7 + 15)
        // = 4.93e9 instructions. Memory: 32 B per element and sweep (24 read
        // and written, 8 write-allocate), 1.1 lines per element for first
        // touch (page zeroing included): 3.57e8 lines = 72 per 1000
        // instructions, none reused; prefetched streams overlap misses.
        AppModel {
            phases: vec![Phase::parallel(4.93)],
            cpi: 0.3,
            llc_apki: 72.0,
            reuse: 0.0,
            private_mb: 192.0,
            mlp: 8.0,
            ..base("kernel-stream", "kernel:stream: STREAM triad over 3 x 128 MiB, memory-bandwidth-bound")
        },
        // compute: 20 M sweeps over a private 4 KiB array of x = x·m + k,
        // vectorized 2 doubles at a time: 7 instructions per 2 elements, 256
        // iterations per sweep: 1796 × 20e6 = 3.6e10 instructions, all in L1;
        // 512 independent chains keep the FP units busy (about one iteration,
        // 7 instructions, per 1.4 cycles).
        AppModel {
            phases: vec![Phase::parallel(36.0)],
            cpi: 0.2,
            llc_apki: 0.0,
            reuse: 1.0,
            private_mb: 0.004,
            ..base("kernel-compute", "kernel:compute: 20 M sweeps of multiply-add over 4 KiB per thread, compute-bound")
        },
        // share: 60 000 sweeps of a 2 MiB common array (262 144 u64), split
        // among the threads; 2 instructions per element (two SSE2 adds of 2
        // elements, 2 loads, loop): 3.15e10 instructions. The array overflows
        // the 512 KiB L2 but fits the L3, so every line (8 elements, 16
        // instructions) is an L3 access that hits: 62.5 per 1000 instructions,
        // all to the shared set, never written. The sweep is sequential, so
        // the prefetcher keeps many lines in flight (MLP 16).
        AppModel {
            phases: vec![Phase::parallel(31.5)],
            cpi: 0.25,
            llc_apki: 62.5,
            reuse: 1.0,
            private_mb: 0.0,
            shared_mb: 2.0,
            shared_fraction: 1.0,
            write_sharing: 0.0,
            mlp: 16.0,
            ..base("kernel-share", "kernel:share: every thread sweeps one common 2 MiB array, constructive LLC sharing")
        },
        // barrier: 5000 parallel regions of 80 000 iterations of 4 dependent
        // multiply-xorshift rounds (34 instructions per iteration): 1.36e10
        // instructions. Each region ends in a barrier: 5000 per thread, which
        // with the default 2 threads is 5000 per 6.8e9 instructions = 735 per
        // 10^9 (the model counts barriers per instruction of each thread).
        // Iterations are independent: about 3 instructions per cycle.
        AppModel {
            phases: vec![Phase::parallel(13.6)],
            cpi: 0.32,
            llc_apki: 0.0,
            reuse: 1.0,
            private_mb: 0.0,
            barriers_per_ginstr: 735.0,
            ..base("kernel-barrier", "kernel:barrier: 5000 short parallel regions, each ending in a barrier")
        },
        // lock: 60 M critical sections of 20 read-modify-writes of one shared
        // cache line (6 instructions each) between pthread_mutex_lock and
        // unlock, about 160 instructions per operation: 9.6e9 instructions,
        // 90 % of them inside the lock, 60e6 / 9.6 = 6.25e6 acquisitions per
        // 10^9 instructions. The 20 updates are a chain of dependent
        // read-modify-writes through store forwarding, about 60 cycles per
        // operation: CPI 0.375. The lines it writes (lock word, counter,
        // state) stay in the holder's L1 while it keeps the lock, so no LLC
        // traffic is modeled (the contention model's proportional LLC
        // occupancy would evict them under a streaming co-runner, which LRU
        // does not); a critical section taken over from a thread on another
        // CPU moves them (engine/lock.rs), and waiters sleep in the futex.
        AppModel {
            phases: vec![Phase::parallel(9.6)],
            cpi: 0.375,
            llc_apki: 0.0,
            reuse: 1.0,
            private_mb: 0.0,
            shared_mb: 0.0,
            lock_fraction: 0.9,
            lock_acquires_per_ginstr: 6.25e6,
            ..base("kernel-lock", "kernel:lock: 60 M critical sections around one mutex, lock-bound")
        },
    ]
}

/// The built-in model called `name`.
pub fn model(name: &str) -> Option<AppModel> {
    models().into_iter().find(|m| m.name == name)
}

/// The built-in model names, comma-separated, for error messages.
pub fn model_names() -> String {
    models()
        .iter()
        .map(|m| m.name.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_is_valid_and_uniquely_named() {
        let all = models();
        for m in &all {
            m.validate().unwrap();
            assert_eq!(
                all.iter().filter(|o| o.name == m.name).count(),
                1,
                "{}",
                m.name
            );
        }
        for name in [
            "streamcluster",
            "canneal",
            "ft",
            "is",
            "mg",
            "ep",
            "swaptions",
            "kmeans",
            "bigtable",
            "content-analyzer",
            "stitcher",
            "protobuf",
        ] {
            assert!(model(name).is_some(), "{name}");
        }
    }

    /// Each bad field is reported by name.
    #[test]
    fn validation_names_the_field() {
        let ok = model("ep").unwrap();
        let cases: Vec<(AppModel, &str)> = vec![
            (
                AppModel {
                    reuse: 1.5,
                    ..ok.clone()
                },
                "reuse",
            ),
            (
                AppModel {
                    cpi: 0.0,
                    ..ok.clone()
                },
                "cpi",
            ),
            (
                AppModel {
                    private_mb: -1.0,
                    ..ok.clone()
                },
                "private_mb",
            ),
            (
                AppModel {
                    phases: vec![],
                    ..ok.clone()
                },
                "phase",
            ),
            (
                AppModel {
                    phases: vec![Phase::serial(0.0)],
                    ..ok
                },
                "phase",
            ),
        ];
        for (m, field) in cases {
            let err = m.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        }
    }
}
