//! The threaded runtimes in an executable besides OpenMP, from its ELF
//! dynamic section and its libraries' (docs/signals.md, Runtimes and
//! levers): the ones whose thread count a variable read at start sets
//! (OpenBLAS, MKL, Go, the JVM) and oneTBB. coloc names them at launch and
//! says which of its levers will act on them; with `cap_threads` it sets
//! their variables to the team the policy chose.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use goblin::elf::Elf;

use crate::error::{Result, ShimError};
use crate::runtime::{walk_needed, ReadFile};

/// A threaded runtime found in a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Threaded {
    /// OpenBLAS' pthreads build: it starts `OPENBLAS_NUM_THREADS - 1`
    /// workers when it loads.
    OpenBlasPthreads,
    /// OpenBLAS' OpenMP build: its calls run in OpenMP regions (the DoP
    /// channel sizes them).
    OpenBlasOpenmp,
    /// OpenBLAS of another or an unknown build.
    OpenBlas,
    /// Intel's MKL (`MKL_NUM_THREADS`).
    Mkl,
    /// oneTBB: sizes its arena by the CPUs the process may use.
    Tbb,
    /// A Go program (`GOMAXPROCS`).
    Go,
    /// The Java launcher or a JVM (`-XX:ActiveProcessorCount`).
    Jvm,
}

impl fmt::Display for Threaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenBlasPthreads => "OpenBLAS (pthreads)",
            Self::OpenBlasOpenmp => "OpenBLAS (OpenMP)",
            Self::OpenBlas => "OpenBLAS",
            Self::Mkl => "Intel MKL",
            Self::Tbb => "oneTBB",
            Self::Go => "Go",
            Self::Jvm => "JVM",
        })
    }
}

/// Every threaded runtime of [`Threaded`] that `executable` or one of the
/// libraries it needs (looked up as `openmp_runtime_of` looks them up)
/// holds, sorted. An executable that is no ELF file gives none.
pub fn threaded_runtimes_of(executable: &Path, read: &ReadFile<'_>) -> Result<Vec<Threaded>> {
    let bytes = read(executable).map_err(|e| ShimError::io(executable, e))?;
    let Ok(exe) = Elf::parse(&bytes) else {
        return Ok(Vec::new());
    };
    let mut found = HashSet::new();
    if is_go(&exe) {
        found.insert(Threaded::Go);
    }
    walk_needed(executable, &exe, read, |soname, path, lib| {
        found.extend(classify(soname, path, lib));
        true
    });
    let mut out: Vec<Threaded> = found.into_iter().collect();
    out.sort();
    Ok(out)
}

/// Go's linker writes the build information in a section of its own.
fn is_go(elf: &Elf) -> bool {
    elf.section_headers.iter().any(|s| {
        matches!(
            elf.shdr_strtab.get_at(s.sh_name),
            Some(".go.buildinfo" | ".note.go.buildid")
        )
    })
}

/// What one needed library is: by its soname, and for OpenBLAS and a generic
/// BLAS by where it really is (Debian installs each OpenBLAS build in a
/// directory of its own, `openblas-pthread`, `openblas-openmp`, and points
/// `libblas.so.3` at one of them through its alternatives) or, failing that,
/// by whether it needs an OpenMP runtime.
fn classify(soname: &str, path: Option<&Path>, elf: Option<&Elf>) -> Option<Threaded> {
    let base = soname.split(".so").next().unwrap_or(soname);
    if base.starts_with("libmkl_") {
        return Some(Threaded::Mkl);
    }
    if base == "libtbb" {
        return Some(Threaded::Tbb);
    }
    if base == "libjli" || base == "libjvm" {
        return Some(Threaded::Jvm);
    }
    let blas = matches!(base, "libblas" | "libcblas" | "liblapack");
    if !base.starts_with("libopenblas") && !blas {
        return None;
    }
    let real = path
        .and_then(|p| std::fs::canonicalize(p).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if real.contains("openblas-pthread") {
        return Some(Threaded::OpenBlasPthreads);
    }
    if real.contains("openblas-openmp") {
        return Some(Threaded::OpenBlasOpenmp);
    }
    if !real.contains("openblas") && !base.starts_with("libopenblas") {
        return None; // a reference or another BLAS
    }
    let openmp = elf.is_some_and(|e| {
        e.libraries
            .iter()
            .any(|l| l.starts_with("libgomp") || l.starts_with("libomp"))
    });
    Some(if openmp {
        Threaded::OpenBlasOpenmp
    } else {
        Threaded::OpenBlas
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames_alone() {
        assert_eq!(classify("libmkl_rt.so.2", None, None), Some(Threaded::Mkl));
        assert_eq!(classify("libtbb.so.12", None, None), Some(Threaded::Tbb));
        assert_eq!(classify("libjli.so", None, None), Some(Threaded::Jvm));
        assert_eq!(
            classify("libopenblas.so.0", None, None),
            Some(Threaded::OpenBlas)
        );
        assert_eq!(classify("libc.so.6", None, None), None);
        // A generic BLAS that is not OpenBLAS is none of these.
        assert_eq!(classify("libblas.so.3", None, None), None);
    }

    #[test]
    fn go_java_and_plain_programs() {
        let read = |p: &Path| std::fs::read(p);
        assert_eq!(
            threaded_runtimes_of(Path::new("/bin/ls"), &read).unwrap(),
            []
        );
        if let Ok(java) = std::fs::canonicalize("/usr/bin/java") {
            assert_eq!(threaded_runtimes_of(&java, &read).unwrap(), [Threaded::Jvm]);
        }
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert_eq!(threaded_runtimes_of(&script, &read).unwrap(), []);
    }
}
