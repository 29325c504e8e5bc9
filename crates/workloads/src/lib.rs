//! coloc's workload kernels: small C/OpenMP programs with known behaviour,
//! for tests, calibration and demos.
//!
//! | kernel    | bound by                        | metric    |
//! |-----------|---------------------------------|-----------|
//! | `stream`  | memory bandwidth                | GB/s      |
//! | `compute` | the core (cache-resident FP)    | Gflop/s   |
//! | `share`   | a shared cache (constructive)   | GB/s      |
//! | `barrier` | synchronization (short regions) | regions/s |
//! | `lock`    | one contended mutex             | Mops/s    |
//!
//! The build script compiles them with the system C compiler and this crate
//! embeds the executables, so a single `coloc` binary carries them;
//! [`install_dir`] writes them out once to a per-user cache directory. A
//! workload names one with `kernel:NAME` as argv\[0\] ([`resolve_argv`]).
//!
//! They are ordinary OpenMP programs: the thread count comes from
//! `OMP_NUM_THREADS` and the wait policy is libgomp's default, exactly what
//! coloc faces with unmodified binaries. Each prints one `coloc-metric:` and one
//! `coloc-threads:` line at the end ([`parse_report`]).

mod argv;
mod catalog;
mod error;
mod install;
mod report;

pub use argv::{resolve_argv, KERNEL_PREFIX};
pub use catalog::{kernel, Kernel, KERNELS};
pub use error::KernelError;
pub use install::{install_dir, install_in, kernel_path};
pub use report::{parse_report, Report, METRIC_REGEX, THREADS_REGEX};
