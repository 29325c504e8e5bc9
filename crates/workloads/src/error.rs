//! Errors from finding, installing and reading the output of kernels.

use std::io;
use std::path::PathBuf;

/// What can go wrong; each variant names the kernel, path or line involved.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// `kernel:NAME` named no built-in kernel.
    #[error("unknown kernel {name:?}; the built-in kernels are: {known}")]
    Unknown { name: String, known: String },

    /// Creating, writing or inspecting a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// A cache directory that another user could have filled with programs
    /// that coloc would then run.
    #[error("{} is not safe to run kernels from: {reason}", path.display())]
    UnsafeDir { path: PathBuf, reason: String },

    /// Every candidate cache directory failed; each failure is listed.
    #[error("no usable directory to install the kernels in: {}", list(attempts))]
    NoCacheDir { attempts: Vec<KernelError> },

    /// The install path cannot go into a `String` argv.
    #[error("kernel path {} is not valid UTF-8", path.display())]
    NonUtf8Path { path: PathBuf },

    /// A kernel's output lacks a line of the output contract, or has it twice.
    #[error("kernel output has {count} {prefix:?} lines, expected exactly one")]
    ReportLines { prefix: &'static str, count: usize },

    /// A line of the output contract whose value does not parse.
    #[error("kernel output line {line:?} does not parse: {reason}")]
    ReportValue { line: String, reason: String },
}

impl KernelError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        KernelError::Io {
            path: path.into(),
            source,
        }
    }
}

fn list(errors: &[KernelError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
