//! Workload kernels.
