//! The PARSEC programs of ReSense Table IV and Thread Tranquilizer Table I
//! that [`super::models`] did not have yet (docs/simulator.md, Apps).
//!
//! Each model's character follows what the literature says of the program,
//! never a result the simulator is asked to reproduce:
//! - Bienia et al., *The PARSEC Benchmark Suite: Characterization and
//!   Architectural Implications* (PACT 2008), Table 1: parallelization model
//!   (data-parallel or pipeline), working set (small … unbounded), data
//!   sharing and data exchange (low, medium, high);
//! - Thread Tranquilizer Table I (memory- or CPU-intensive on its Opteron)
//!   and §2.4 (bodytrack's lock contention), §2.2.2 (facesim's 306 MB heap).
//!
//! How a qualitative grade becomes a number, for every model alike:
//! working set small ≤ 1 MiB, medium ~4–8 MiB, large ~16–64 MiB, unbounded
//! ≥ 64 MiB; data sharing low → under 0.15 of LLC accesses to shared data,
//! medium ~0.3–0.5, high ≥ 0.5; memory-intensive (Tranquilizer's "Mem")
//! ≥ 8 LLC accesses per 1000 instructions, CPU-intensive ≤ 6. Work amounts
//! give solo runs of tens of seconds at 4–8 threads, like the other models.
//! The numbers are plausible, not measured, as every library model's.

use super::{base, iterations, AppModel, Phase};

pub(super) fn models() -> Vec<AppModel> {
    vec![
        // bodytrack: data-parallel, medium working set, high sharing (every
        // thread reads the frame's images), medium exchange; a barrier per
        // annealing layer of each frame; CPU-intensive with high lock
        // contention (Tranquilizer §2.4: its thread pool's task queue).
        AppModel {
            phases: iterations(2.0, 8.0, 0.3, 20),
            cpi: 0.8,
            llc_apki: 4.0,
            reuse: 0.9,
            private_mb: 0.5,
            shared_mb: 6.0,
            shared_fraction: 0.6,
            write_sharing: 0.02,
            mlp: 3.0,
            barriers_per_ginstr: 200.0,
            lock_fraction: 0.03,
            lock_acquires_per_ginstr: 2.0e5,
            openmp: false,
            ..base("bodytrack", "PARSEC bodytrack: particle-filter body tracking, read-shared frames, lock-contended task queue")
        },
        // dedup: a pipeline over a large shared hash table of chunks
        // (unbounded working set, high sharing and exchange); queues and
        // hash buckets under locks.
        AppModel {
            phases: vec![Phase::serial(2.0), Phase::parallel(120.0)],
            cpi: 1.0,
            llc_apki: 10.0,
            reuse: 0.4,
            private_mb: 2.0,
            shared_mb: 128.0,
            shared_fraction: 0.5,
            write_sharing: 0.1,
            mlp: 2.0,
            lock_fraction: 0.02,
            lock_acquires_per_ginstr: 2.0e5,
            openmp: false,
            ..base("dedup", "PARSEC dedup: compression pipeline over a shared chunk hash table")
        },
        // facesim: data-parallel physics over a large mesh (large working
        // set, low sharing, medium exchange), memory-intensive, a 306 MB heap
        // (Tranquilizer §2.2.2) split among its threads; a barrier per
        // solver step.
        AppModel {
            phases: iterations(8.0, 18.0, 0.5, 10),
            cpi: 0.9,
            llc_apki: 12.0,
            reuse: 0.5,
            private_mb: 16.0,
            shared_mb: 16.0,
            shared_fraction: 0.1,
            write_sharing: 0.05,
            mlp: 3.0,
            barriers_per_ginstr: 100.0,
            openmp: false,
            ..base("facesim", "PARSEC facesim: face physics over a large mesh, memory-intensive, low sharing")
        },
        // ferret: a pipeline searching an image database (unbounded working
        // set, high sharing and exchange), CPU-intensive with low lock
        // contention (Tranquilizer Table I, §2.4).
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(250.0)],
            cpi: 0.9,
            llc_apki: 5.0,
            reuse: 0.8,
            private_mb: 1.0,
            shared_mb: 64.0,
            shared_fraction: 0.5,
            write_sharing: 0.02,
            mlp: 2.0,
            lock_fraction: 0.005,
            lock_acquires_per_ginstr: 5.0e4,
            openmp: false,
            ..base("ferret", "PARSEC ferret: similarity-search pipeline over a shared image database")
        },
        // fluidanimate: data-parallel SPH over a grid of cells (large working
        // set, low sharing, medium exchange at cell borders), memory-intensive
        // in Tranquilizer Table I; several barriers per frame, fine-grained
        // cell locks rarely contended.
        AppModel {
            phases: iterations(3.0, 40.0, 0.1, 5),
            cpi: 0.8,
            llc_apki: 8.0,
            reuse: 0.6,
            private_mb: 8.0,
            shared_mb: 0.5,
            shared_fraction: 0.05,
            write_sharing: 0.1,
            mlp: 3.0,
            barriers_per_ginstr: 200.0,
            lock_fraction: 0.002,
            lock_acquires_per_ginstr: 1.0e4,
            openmp: false,
            ..base("fluidanimate", "PARSEC fluidanimate: particle fluid simulation, large private grids, border exchange")
        },
        // freqmine: OpenMP frequent-itemset mining over a shared FP-tree
        // (unbounded working set, high sharing, medium exchange), after a
        // long serial tree build.
        AppModel {
            phases: vec![Phase::serial(20.0), Phase::parallel(200.0)],
            cpi: 1.0,
            llc_apki: 6.0,
            reuse: 0.7,
            private_mb: 2.0,
            shared_mb: 64.0,
            shared_fraction: 0.6,
            write_sharing: 0.02,
            mlp: 2.0,
            ..base("freqmine", "PARSEC freqmine: FP-growth mining over a shared FP-tree, OpenMP")
        },
        // raytrace: data-parallel rendering over a read-only scene hierarchy
        // (unbounded working set, high sharing, low exchange), after the
        // scene is loaded serially.
        AppModel {
            phases: vec![Phase::serial(15.0), Phase::parallel(200.0)],
            cpi: 0.9,
            llc_apki: 6.0,
            reuse: 0.8,
            private_mb: 0.5,
            shared_mb: 64.0,
            shared_fraction: 0.8,
            mlp: 2.0,
            openmp: false,
            ..base("raytrace", "PARSEC raytrace: ray tracing over a read-only shared scene")
        },
        // vips: an image-processing pipeline (medium working set, low sharing,
        // medium exchange), CPU-bound.
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(200.0)],
            cpi: 0.8,
            llc_apki: 3.0,
            reuse: 0.9,
            private_mb: 2.0,
            shared_mb: 1.0,
            shared_fraction: 0.1,
            write_sharing: 0.05,
            mlp: 3.0,
            openmp: false,
            ..base("vips", "PARSEC vips: image transformation pipeline, CPU-bound")
        },
        // x264: a frame pipeline whose threads read each other's reference
        // frames (medium working set, high sharing and exchange),
        // CPU-intensive in Tranquilizer Table I.
        AppModel {
            phases: vec![Phase::serial(1.0), Phase::parallel(150.0)],
            cpi: 0.7,
            llc_apki: 3.0,
            reuse: 0.9,
            private_mb: 4.0,
            shared_mb: 8.0,
            shared_fraction: 0.5,
            write_sharing: 0.1,
            mlp: 3.0,
            openmp: false,
            ..base("x264", "PARSEC x264: H.264 encoding pipeline sharing reference frames")
        },
    ]
}
