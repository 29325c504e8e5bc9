//! Memory bandwidth measurements for calibration (NuPoCo §4.3: "the machine-dependent
//! parameters μ_mct and link_{i,m} are determined by executing a synthetic workload
//! from the Stream benchmark that generates memory accesses from one core to
//! specific memory nodes").
//!
//! The built-in `stream` kernel runs with its threads confined to given CPUs and,
//! where the machine has several NUMA nodes, its memory bound to one node with
//! `set_mempolicy(MPOL_BIND)` set in the child before `exec` (the policy is
//! inherited, and the kernel's first touch then allocates on that node). One
//! measurement is one kernel run; its own STREAM triad figure (GB/s) is the result.

use std::os::unix::process::CommandExt;
use std::process::Command;

use coloc_model::CpuSet;

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSample {
    /// CPUs the threads ran on.
    pub cpus: CpuSet,
    pub threads: u32,
    /// NUMA node the memory was bound to (None: first touch, i.e. local).
    pub mem_node: Option<u32>,
    /// Sustained bandwidth, GB/s (10^9 bytes/s, STREAM's convention).
    pub gbs: f64,
}

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("the stream kernel: {0}")]
    Kernel(#[from] coloc_workloads::KernelError),
    #[error("starting {path}: {source}")]
    Spawn {
        path: String,
        source: std::io::Error,
    },
    #[error("the stream kernel on CPUs {cpus} failed ({status}): {stderr}")]
    Failed {
        cpus: CpuSet,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("NUMA node {0} is beyond the 1024 nodes a memory-policy mask can name here")]
    NodeOutOfRange(u32),
}

/// Runs the `stream` kernel once with `threads` threads on `cpus`, memory on
/// `mem_node`, passing `args` (e.g. `--mb 64 --iters 10`) to it.
pub fn measure_stream(
    cpus: &CpuSet,
    threads: u32,
    mem_node: Option<u32>,
    args: &[String],
) -> Result<StreamSample, StreamError> {
    let path = coloc_workloads::kernel_path("stream")?;
    let mut cmd = Command::new(&path);
    cmd.args(args).env("OMP_NUM_THREADS", threads.to_string());
    // libgomp binds nothing by default; the affinity set here is inherited by its
    // threads, so they stay on `cpus`.
    let mut mask = nix::sched::CpuSet::new();
    for c in cpus.iter() {
        mask.set(c as usize)
            .map_err(|_| StreamError::NodeOutOfRange(c))?;
    }
    let nodemask = match mem_node {
        None => None,
        Some(n) if n < 1024 => {
            let mut words = [0 as libc::c_ulong; 1024 / libc::c_ulong::BITS as usize];
            let bits = libc::c_ulong::BITS;
            words[(n / bits) as usize] |= 1 << (n % bits);
            Some(words)
        }
        Some(n) => return Err(StreamError::NodeOutOfRange(n)),
    };
    // SAFETY: the closure runs in the forked child before exec and only makes two
    // system calls (sched_setaffinity, set_mempolicy) on data prepared before the
    // fork; it allocates nothing and takes no locks, so it is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &mask)
                .map_err(std::io::Error::from)?;
            if let Some(words) = &nodemask {
                const MPOL_BIND: libc::c_int = 2;
                let r = libc::syscall(
                    libc::SYS_set_mempolicy,
                    MPOL_BIND,
                    words.as_ptr(),
                    (words.len() * libc::c_ulong::BITS as usize) as libc::c_ulong,
                );
                if r != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let out = cmd.output().map_err(|source| StreamError::Spawn {
        path: path.display().to_string(),
        source,
    })?;
    if !out.status.success() {
        return Err(StreamError::Failed {
            cpus: cpus.clone(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let report = coloc_workloads::parse_report(&String::from_utf8_lossy(&out.stdout))?;
    Ok(StreamSample {
        cpus: cpus.clone(),
        threads,
        mem_node,
        gbs: report.metric,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_on_one_cpu_measures_a_positive_bandwidth() {
        let cpu = crate::topology::allowed_cpus()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let cpus: CpuSet = CpuSet::from_iter([cpu]);
        let args: Vec<String> = ["--mb", "16", "--iters", "3"].map(String::from).to_vec();
        let s = measure_stream(&cpus, 1, None, &args).unwrap();
        assert!(s.gbs > 0.0 && s.gbs.is_finite(), "{s:?}");
        assert_eq!(s.threads, 1);
    }

    #[test]
    fn a_bad_argument_is_an_error_with_the_kernels_message() {
        let cpus = crate::topology::allowed_cpus().unwrap();
        let err = measure_stream(&cpus, 1, None, &["--mb".into(), "zero".into()]).unwrap_err();
        assert!(err.to_string().contains("mb"), "{err}");
    }

    #[test]
    fn binding_memory_to_node_0_works_on_every_machine() {
        let cpus = crate::topology::allowed_cpus().unwrap();
        let args: Vec<String> = ["--mb", "16", "--iters", "2"].map(String::from).to_vec();
        let s = measure_stream(&cpus, 1, Some(0), &args).unwrap();
        assert!(s.gbs > 0.0);
    }
}
