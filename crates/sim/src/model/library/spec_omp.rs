//! The SPEC OMP2001 programs of Thread Tranquilizer Table I (swim, wupwise,
//! equake, gafort, mgrid; docs/simulator.md, Apps), on its medium inputs.
//!
//! Each model's character follows the program's published description
//! (Aslot et al., *SPEComp: A New Benchmark Suite for Measuring Parallel
//! Computer Performance*, WOMPAT 2001: the computation and its data
//! structures) and Thread Tranquilizer Table I's type (memory- or
//! CPU-intensive on its Opteron), never a result the simulator is asked to
//! reproduce; the grades become numbers as in [`super::parsec`]. All are
//! OpenMP programs whose parallel loops each end in a barrier. The numbers
//! are plausible, not measured, as every library model's.

use super::{base, sections, AppModel};

/// Parallel loops per time step of the SPEC OMP codes, as regions: each
/// `!$omp parallel do` is a region of its own.
const REGIONS: usize = 20;

pub(super) fn models() -> Vec<AppModel> {
    vec![
        // swim: shallow-water finite differences, 2-D stencil sweeps over
        // large arrays (streaming, little reuse), memory-intensive.
        AppModel {
            phases: sections(2.0, 40.0, REGIONS, 0.1, 6),
            cpi: 0.6,
            llc_apki: 30.0,
            reuse: 0.2,
            private_mb: 32.0,
            mlp: 6.0,
            barriers_per_ginstr: 60.0,
            ..base("swim", "SPEC OMP swim: shallow-water stencil sweeps over large arrays, memory-bandwidth-bound")
        },
        // wupwise: lattice QCD, BiCGStab iterations of complex matrix-vector
        // products over a 4-D lattice, memory-intensive.
        AppModel {
            phases: sections(3.0, 30.0, REGIONS, 0.2, 8),
            cpi: 0.8,
            llc_apki: 12.0,
            reuse: 0.5,
            private_mb: 24.0,
            shared_mb: 4.0,
            shared_fraction: 0.1,
            mlp: 4.0,
            barriers_per_ginstr: 60.0,
            ..base("wupwise", "SPEC OMP wupwise: lattice-QCD solver, complex matrix-vector products, memory-intensive")
        },
        // equake: unstructured finite-element earthquake simulation, sparse
        // matrix-vector products with indirect (irregular) accesses over a
        // mesh every thread reads, after a long serial read of the mesh.
        AppModel {
            phases: sections(20.0, 25.0, REGIONS, 0.3, 8),
            cpi: 1.0,
            llc_apki: 20.0,
            reuse: 0.4,
            private_mb: 8.0,
            shared_mb: 48.0,
            shared_fraction: 0.5,
            write_sharing: 0.02,
            mlp: 2.0,
            barriers_per_ginstr: 100.0,
            ..base("equake", "SPEC OMP equake: sparse irregular FEM over a shared mesh, serial input phase, memory-intensive")
        },
        // gafort: a genetic algorithm; the parallel shuffle swaps random
        // members of a shared population under per-member locks (rarely
        // contended), memory-intensive random accesses.
        AppModel {
            phases: sections(2.0, 30.0, REGIONS, 0.2, 8),
            cpi: 1.0,
            llc_apki: 15.0,
            reuse: 0.3,
            private_mb: 4.0,
            shared_mb: 64.0,
            shared_fraction: 0.8,
            write_sharing: 0.2,
            mlp: 1.5,
            barriers_per_ginstr: 40.0,
            lock_fraction: 0.002,
            lock_acquires_per_ginstr: 1.0e5,
            ..base("gafort", "SPEC OMP gafort: genetic algorithm, random swaps in a shared population under locks")
        },
        // mgrid: 3-D multigrid V-cycles (stencils with good reuse on the
        // coarse grids); CPU-intensive in Tranquilizer Table I.
        AppModel {
            phases: sections(1.0, 25.0, REGIONS, 0.1, 8),
            cpi: 0.7,
            llc_apki: 6.0,
            reuse: 0.6,
            private_mb: 16.0,
            mlp: 5.0,
            barriers_per_ginstr: 100.0,
            ..base("mgrid", "SPEC OMP mgrid: 3-D multigrid V-cycles, CPU-intensive on the Opteron")
        },
    ]
}
