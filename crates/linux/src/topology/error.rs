//! Why the topology could not be read.

use std::io;
use std::path::PathBuf;

use coloc_model::cpuset::CpuListError;
use coloc_model::topology::TopologyError;

/// An error reading the topology, naming the file and what was wrong with it, so a
/// user can `cat` the file and see for themselves.
#[derive(Debug, thiserror::Error)]
pub enum SysfsError {
    #[error("cannot read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {value:?} is not {expected}", path.display())]
    Parse {
        path: PathBuf,
        value: String,
        expected: &'static str,
    },
    #[error("{}: bad CPU list", path.display())]
    CpuList {
        path: PathBuf,
        #[source]
        source: CpuListError,
    },
    #[error("the CPUs under {} do not form a topology", root.display())]
    Topology {
        root: PathBuf,
        #[source]
        source: TopologyError,
    },
    #[error("cannot read this process's CPU affinity (sched_getaffinity)")]
    Affinity(#[source] nix::Error),
}
