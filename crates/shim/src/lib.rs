//! The OpenMP DoP channel: coloc's side of `libcoloc_omp.so`.
//!
//! coloc changes how many threads an unmodified OpenMP program runs per
//! parallel region (its degree of parallelism, DoP) and where they run, because
//! co-located parallel programs share cores and memory bandwidth better with
//! the right thread counts than when each assumes it owns the machine (NuPoCo,
//! PACT'18). An OpenMP runtime fixes a team's size when a region starts, so the shim
//! (`c/coloc_omp.c`, LD_PRELOAD'ed into the app) interposes libgomp's parallel
//! entry points and starts each outermost region without a `num_threads`
//! clause with `min(nthreads-var, dop)` threads, member i pinned to
//! `cpus[i % len]`; `omp_get_max_threads()` outside a region answers the DoP.
//! An explicit `num_threads` clause is honoured while dynamic adjustment is off
//! (OpenMP's rule): OpenBLAS splits each call into exactly that many parts that
//! wait on one another, and a team capped below the clause ran one part and
//! spun forever on the others. OpenBLAS reads `omp_get_max_threads()` before
//! every call, so it takes the DoP that way.
//!
//! coloc and the shim talk through a small shared-memory record
//! (`c/coloc_omp_record.h`, mirrored in `src/record.rs`): coloc writes DoP, CPUs and
//! a heartbeat; the app writes back whether it is in a parallel region, regions
//! and loop iterations finished, its team size, and what its team does inside
//! a region (barriers, construct ends, chunks, tasks: `c/progress.c`), so
//! coloc can see serial sections and progress without hardware counters, also
//! inside one long region.
//!
//! Use:
//! 1. [`openmp_runtime_of`] the app's executable: libgomp, LLVM's and Intel's
//!    runtimes are managed ([`OmpRuntime::dop_managed`]); for a static
//!    executable say that the DoP is not managed.
//! 2. [`DopChannel::create`] `/dev/shm/coloc-<coloc pid>-<app id>`.
//! 3. Start the app with `LD_PRELOAD` = [`ld_preload_with`]`(old, `[`shim_path`]`()?)`
//!    and [`RECORD_ENV`] = the record's path.
//! 4. Every epoch: [`DopChannel::heartbeat`], [`DopChannel::set`] when the plan
//!    changes, [`DopChannel::read`] for the observation.
//! 5. [`DopChannel::remove`] when the app leaves coloc's control.
//!
//! **Only for apps marked `malleable = true`.** A program that sizes its work
//! by `omp_get_max_threads()` outside a region and expects that many threads
//! inside computes wrongly with fewer, so the DoP channel is opt-in per app.
//!
//! A missing or invalid record leaves the app as if coloc were absent; so does
//! a heartbeat older than [`STALE_NS`] (until it is refreshed), and threads the
//! shim pinned get the process's original affinity back at their next region.
//! Nested regions are left alone. LLVM's libomp and Intel's libiomp5 are
//! steered the same way through their tool interface: the library is their
//! OMPT tool (`c/ompt.c`, docs/signals.md).
//!
//! The shim pins each thread only when its setting changed; libgomp's own
//! binding (`OMP_PROC_BIND`, `OMP_PLACES`, `GOMP_CPU_AFFINITY`) may re-bind
//! threads behind it, so coloc should remove those variables from the
//! environment of apps whose CPUs it manages through the record.

mod channel;
mod embed;
mod error;
mod record;
mod runtime;
mod threaded;

pub use channel::{monotonic_ns, DopChannel, OmpState};
pub use embed::{extract_shim, ld_preload_with, shim_path, SHIM_BYTES};
pub use error::{Result, ShimError};
pub use record::{
    AFFINITY_ENV, MAGIC, MAX_CPUS, RECORD_ENV, RECORD_SIZE, STALE_NS, THREAD_SLOTS, VERSION,
};
pub use runtime::{openmp_runtime_of, runtime_of_needed, OmpRuntime, ReadFile};
pub use threaded::{threaded_runtimes_of, Threaded};
