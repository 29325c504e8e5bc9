//! Which OpenMP runtime an executable uses, from its ELF dynamic section.
//!
//! The shim only understands libgomp's entry points; coloc asks this before it
//! preloads the shim, so that it can say "DoP not managed" for other runtimes
//! instead of believing a DoP it set took effect.

use std::fmt;
use std::path::Path;

use goblin::elf::Elf;

use crate::error::{Result, ShimError};

/// An executable's OpenMP runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OmpRuntime {
    /// GNU libgomp: the shim manages the DoP.
    Gomp,
    /// LLVM libomp: not managed (its entry points are `__kmpc_*`).
    LlvmOmp,
    /// Intel libiomp5: not managed.
    Intel,
    /// A dynamically linked ELF that needs none of them directly.
    None,
    /// A statically linked ELF: LD_PRELOAD cannot interpose anything in it.
    Static,
    /// Not an ELF file (a script, say), or one that could not be parsed.
    Unknown,
}

impl OmpRuntime {
    /// Whether the shim can change this app's DoP.
    pub fn dop_managed(self) -> bool {
        self == Self::Gomp
    }
}

impl fmt::Display for OmpRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Gomp => "GNU libgomp",
            Self::LlvmOmp => "LLVM libomp (DoP not managed)",
            Self::Intel => "Intel libiomp5 (DoP not managed)",
            Self::None => "no OpenMP runtime",
            Self::Static => "statically linked (DoP not managed)",
            Self::Unknown => "unknown (not a readable ELF)",
        })
    }
}

/// The runtime of `executable`, from its DT_NEEDED entries. Only direct
/// dependencies count: an app that gets libgomp through another library
/// reports `None`.
pub fn openmp_runtime_of(executable: &Path) -> Result<OmpRuntime> {
    let bytes = std::fs::read(executable).map_err(|e| ShimError::io(executable, e))?;
    let Ok(elf) = Elf::parse(&bytes) else {
        return Ok(OmpRuntime::Unknown);
    };
    if elf.dynamic.is_none() {
        return Ok(OmpRuntime::Static);
    }
    Ok(runtime_of_needed(elf.libraries.iter().copied()))
}

/// Classifies DT_NEEDED sonames. If several runtimes are needed the first one
/// wins: the dynamic linker binds `omp_*` and `GOMP_*` to the earliest loaded.
pub fn runtime_of_needed<'a>(needed: impl IntoIterator<Item = &'a str>) -> OmpRuntime {
    let mut found = OmpRuntime::None;
    for soname in needed {
        let base = soname.split(".so").next().unwrap_or(soname);
        let this = match base {
            "libomp" | "libomp5" => OmpRuntime::LlvmOmp,
            "libiomp5" => OmpRuntime::Intel,
            "libgomp" => OmpRuntime::Gomp,
            _ => continue,
        };
        if found == OmpRuntime::None {
            found = this;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames() {
        let r = |names: &[&str]| runtime_of_needed(names.iter().copied());
        assert_eq!(r(&["libc.so.6", "libgomp.so.1"]), OmpRuntime::Gomp);
        assert_eq!(r(&["libomp.so.5", "libc.so.6"]), OmpRuntime::LlvmOmp);
        assert_eq!(r(&["libomp.so"]), OmpRuntime::LlvmOmp);
        assert_eq!(r(&["libiomp5.so"]), OmpRuntime::Intel);
        assert_eq!(r(&["libc.so.6", "libm.so.6"]), OmpRuntime::None);
        // libgompd (the OMPD debugging library) is not the runtime.
        assert_eq!(r(&["libgompd.so.1"]), OmpRuntime::None);
        assert_eq!(r(&[]), OmpRuntime::None);
        assert_eq!(r(&["libomp.so.5", "libgomp.so.1"]), OmpRuntime::LlvmOmp);
    }

    #[test]
    fn non_elf_is_unknown_and_missing_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\nexec ./app\n").unwrap();
        assert_eq!(openmp_runtime_of(&script).unwrap(), OmpRuntime::Unknown);
        let err = openmp_runtime_of(&dir.path().join("absent")).unwrap_err();
        assert!(err.to_string().contains("absent"), "{err}");
    }

    #[test]
    fn only_libgomp_is_managed() {
        assert!(OmpRuntime::Gomp.dop_managed());
        for r in [
            OmpRuntime::LlvmOmp,
            OmpRuntime::Intel,
            OmpRuntime::None,
            OmpRuntime::Static,
            OmpRuntime::Unknown,
        ] {
            assert!(!r.dop_managed(), "{r}");
        }
    }
}
