//! The built-in kernels and their embedded executables.

use std::fmt;

/// One built-in kernel: a C/OpenMP executable compiled by the build script.
pub struct Kernel {
    /// What `kernel:NAME` refers to, and the executable's file name.
    pub name: &'static str,
    /// One line on what the kernel stresses.
    pub about: &'static str,
    /// The kernel's `--help` text (a test keeps the two identical).
    pub usage: &'static str,
    bytes: &'static [u8],
}

impl Kernel {
    /// The executable, as compiled for the target of this build.
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }
}

impl fmt::Debug for Kernel {
    /// Leaves the executable's bytes out: they are long and say nothing to a reader.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("about", &self.about)
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// The executable the build script left in `OUT_DIR` under this name.
macro_rules! embedded {
    ($name:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/", $name))
    };
}

/// Every built-in kernel; the names match the build script's list.
pub const KERNELS: &[Kernel] = &[
    Kernel {
        name: "stream",
        about: "memory-bound: STREAM triad over three large arrays (GB/s)",
        usage: "stream [--mb N] [--iters N] [--mem-node N]\n  \
                --mb N        MiB per array, three arrays (default 128)\n  \
                --iters N     triad sweeps over the arrays (default 40)\n  \
                --mem-node N  allocate the arrays on NUMA node N only (default: where first touched)",
        bytes: embedded!("stream"),
    },
    Kernel {
        name: "compute",
        about: "compute-bound: cache-resident multiply-add chains per thread, optional serial phase and short regions before the main one (Gflop/s)",
        usage: "compute [--iters N] [--serial-iters N] [--short-regions N]\n  \
                --iters N          sweeps over a private 4 KiB array, divided among the threads (default 20000000)\n  \
                --serial-iters N   sweeps done by one thread before the parallel part (default 0)\n  \
                --short-regions N  parallel regions of iters/100 sweeps each before the main one (default 0)",
        bytes: embedded!("compute"),
    },
    Kernel {
        name: "share",
        about: "constructive sharing: all threads read one common cache-sized array (GB/s)",
        usage: "share [--kb N] [--iters N]\n  \
                --kb N     KiB in the common array (default 2048)\n  \
                --iters N  whole-array sweeps, divided among the threads (default 60000)",
        bytes: embedded!("share"),
    },
    Kernel {
        name: "barrier",
        about: "synchronization-bound: many short parallel regions, suffers when oversubscribed (regions/s)",
        usage: "barrier [--regions N] [--work N]\n  \
                --regions N  parallel regions, run one after the other (default 5000)\n  \
                --work N     loop iterations per region, divided among the threads (default 80000)",
        bytes: embedded!("barrier"),
    },
    Kernel {
        name: "lock",
        about: "lock contention: threads share one mutex (Mops/s)",
        usage: "lock [--ops N] [--work N]\n  \
                --ops N   critical sections in total, divided among the threads (default 60000000)\n  \
                --work N  shared-state updates inside each critical section (default 20)",
        bytes: embedded!("lock"),
    },
];

/// The built-in kernel called `name`, if there is one.
pub fn kernel(name: &str) -> Option<&'static Kernel> {
    KERNELS.iter().find(|k| k.name == name)
}

/// The kernel names, comma-separated, for error messages.
pub(crate) fn known_names() -> String {
    KERNELS
        .iter()
        .map(|k| k.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for k in KERNELS {
            assert_eq!(kernel(k.name).map(|found| found.name), Some(k.name));
            assert_eq!(KERNELS.iter().filter(|o| o.name == k.name).count(), 1);
        }
        assert!(kernel("nope").is_none());
        assert_eq!(known_names(), "stream, compute, share, barrier, lock");
    }

    #[test]
    fn embedded_bytes_are_elf_executables() {
        for k in KERNELS {
            assert_eq!(&k.bytes()[..4], b"\x7fELF", "{} is not an ELF file", k.name);
        }
    }

    #[test]
    fn debug_leaves_out_the_bytes() {
        let shown = format!("{:?}", KERNELS[0]);
        assert!(shown.contains("stream"), "{shown}");
        assert!(shown.len() < 200, "{shown}");
    }
}
