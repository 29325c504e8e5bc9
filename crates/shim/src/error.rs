//! Typed errors of the DoP channel, each naming the file or value at fault.

use std::io;
use std::path::PathBuf;

/// What can go wrong on coloc's side of the DoP channel.
#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    /// A file system or mapping operation on `path` failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A DoP of 0 threads cannot run anything; the record's "no limit" is not
    /// something coloc asks for through `set`.
    #[error("DoP must be at least 1 thread")]
    ZeroDop,
    /// The record has room for `max` CPUs.
    #[error("{count} CPUs given, the record holds at most {max}")]
    TooManyCpus { count: usize, max: usize },
    /// The record's interleave mask has one bit per node, nodes 0 to `max`.
    #[error("interleave_nodes: node {node} given, the record holds nodes 0 to {max}")]
    NodeOutOfRange { node: u32, max: u32 },
    /// Extracting the shim into a directory another user controls would let
    /// that user choose the code coloc preloads into apps.
    #[error("{path}: not a private directory of the current user (owner or mode)")]
    UnsafeCacheDir { path: PathBuf },
}

impl ShimError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// Results of this crate.
pub type Result<T, E = ShimError> = std::result::Result<T, E>;
