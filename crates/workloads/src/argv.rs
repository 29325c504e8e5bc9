//! `kernel:NAME` in a command line: how workloads name built-in kernels.

use crate::{kernel_path, KernelError};

/// argv\[0\] prefix naming a built-in kernel, as in `kernel:stream --mb 64`.
pub const KERNEL_PREFIX: &str = "kernel:";

/// Replaces a `kernel:NAME` argv\[0\] with the installed kernel's path;
/// any other command line comes back unchanged.
pub fn resolve_argv(argv: &[String]) -> Result<Vec<String>, KernelError> {
    let Some(name) = argv.first().and_then(|a| a.strip_prefix(KERNEL_PREFIX)) else {
        return Ok(argv.to_vec());
    };
    let path = kernel_path(name)?;
    let program = path
        .into_os_string()
        .into_string()
        .map_err(|p| KernelError::NonUtf8Path { path: p.into() })?;
    Ok(std::iter::once(program)
        .chain(argv[1..].iter().cloned())
        .collect())
}
