//! Which OpenMP runtime an executable uses, from its ELF dynamic section.
//!
//! The shim steers libgomp through its entry points and LLVM's and Intel's
//! runtimes through their tool interface (OMPT, `c/ompt.c`); coloc asks this
//! before it preloads the shim, so that it can say "DoP not managed" for a
//! program it cannot steer (static, or no OpenMP runtime it knows) instead of
//! believing a DoP it set took effect.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};

use goblin::elf::Elf;

use crate::error::{Result, ShimError};

/// An executable's OpenMP runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OmpRuntime {
    /// GNU libgomp: the shim manages the DoP through libgomp's entry points.
    Gomp,
    /// LLVM libomp: the shim manages the DoP as an OMPT tool.
    LlvmOmp,
    /// Intel libiomp5 (LLVM's runtime's origin, with the same tool
    /// interface): managed as LLVM's, though not tested here.
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
        matches!(self, Self::Gomp | Self::LlvmOmp | Self::Intel)
    }
}

impl fmt::Display for OmpRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Gomp => "GNU libgomp",
            Self::LlvmOmp => "LLVM libomp",
            Self::Intel => "Intel libiomp5",
            Self::None => "no OpenMP runtime",
            Self::Static => "statically linked (DoP not managed)",
            Self::Unknown => "unknown (not a readable ELF)",
        })
    }
}

/// The runtime of `executable`, from its DT_NEEDED entries and, when none of
/// them is an OpenMP runtime, theirs (an app may get libgomp through one of its
/// libraries; the shim manages it all the same). Libraries are looked up as
/// the dynamic linker would, approximately: the object's RUNPATH (or RPATH)
/// with `$ORIGIN`, the executable's, /etc/ld.so.conf's directories, then the
/// defaults; LD_LIBRARY_PATH is not known here and not used.
///
/// Every object is read through `read`: the caller's way of reading a file a
/// user named (coloc refuses FIFOs and devices and bounds sizes, and root's
/// daemon reads as the user who asked, docs/service.md).
pub fn openmp_runtime_of(executable: &Path, read: &ReadFile<'_>) -> Result<OmpRuntime> {
    let bytes = read(executable).map_err(|e| ShimError::io(executable, e))?;
    let Ok(elf) = Elf::parse(&bytes) else {
        return Ok(OmpRuntime::Unknown);
    };
    if elf.dynamic.is_none() {
        return Ok(OmpRuntime::Static);
    }
    let direct = runtime_of_needed(elf.libraries.iter().copied());
    if direct != OmpRuntime::None {
        return Ok(direct);
    }
    Ok(transitive_runtime(executable, &elf, read))
}

/// How [`openmp_runtime_of`] reads a file.
pub type ReadFile<'a> = dyn Fn(&Path) -> std::io::Result<Vec<u8>> + 'a;

/// Enough for any real program's dependency graph; bounds the work on a
/// cyclic or pathological one.
const MAX_OBJECTS: usize = 256;

/// Breadth-first over the dependencies of `exe`; the first runtime found wins.
fn transitive_runtime(exe_path: &Path, exe: &Elf, read: &ReadFile<'_>) -> OmpRuntime {
    let mut found = OmpRuntime::None;
    walk_needed(exe_path, exe, read, |_, _, lib| {
        if let Some(lib) = lib {
            found = runtime_of_needed(lib.libraries.iter().copied());
        }
        found == OmpRuntime::None
    });
    found
}

/// Breadth-first over the libraries `exe` needs and theirs, each soname
/// once and at most [`MAX_OBJECTS`], found as the dynamic linker finds them
/// (the object's run paths and the executable's, then the system's): `visit`
/// gets each soname, and its path and parsed ELF where it was found, and
/// returns whether to go on.
pub(crate) fn walk_needed(
    exe_path: &Path,
    exe: &Elf,
    read: &ReadFile<'_>,
    mut visit: impl FnMut(&str, Option<&Path>, Option<&Elf>) -> bool,
) {
    let system = system_dirs();
    let exe_dirs = search_dirs(exe_path, exe);
    let mut seen = HashSet::new();
    let mut queue: VecDeque<(String, Vec<PathBuf>)> = exe
        .libraries
        .iter()
        .map(|l| (l.to_string(), exe_dirs.clone()))
        .collect();
    while let Some((soname, dirs)) = queue.pop_front() {
        if !seen.insert(soname.clone()) || seen.len() > MAX_OBJECTS {
            continue;
        }
        let found = find_library(&soname, dirs.iter().chain(&system), exe, read);
        let lib = found.as_ref().and_then(|(_, bytes)| Elf::parse(bytes).ok());
        let path = found.as_ref().map(|(p, _)| p.as_path());
        if !visit(&soname, path, lib.as_ref()) {
            return;
        }
        if let (Some(path), Some(lib)) = (path, &lib) {
            let mut lib_dirs = search_dirs(path, lib);
            lib_dirs.extend(exe_dirs.iter().cloned());
            queue.extend(
                lib.libraries
                    .iter()
                    .map(|l| (l.to_string(), lib_dirs.clone())),
            );
        }
    }
}

/// An object's own DT_RUNPATH, or DT_RPATH when it has no RUNPATH, with
/// `$ORIGIN` replaced by its directory.
fn search_dirs(path: &Path, elf: &Elf) -> Vec<PathBuf> {
    let origin = path.parent().unwrap_or(Path::new("."));
    let origin = origin.to_string_lossy();
    let paths = if elf.runpaths.is_empty() {
        &elf.rpaths
    } else {
        &elf.runpaths
    };
    paths
        .iter()
        .flat_map(|p| p.split(':'))
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin)))
        .collect()
}

/// The directories of /etc/ld.so.conf (following `include` lines of the form
/// `dir/*.suffix`), then the built-in defaults.
fn system_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    read_ld_so_conf(Path::new("/etc/ld.so.conf"), &mut dirs, 0);
    for d in ["/lib64", "/usr/lib64", "/lib", "/usr/lib"] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

fn read_ld_so_conf(file: &Path, dirs: &mut Vec<PathBuf>, depth: u32) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    for line in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
    {
        if let Some(pattern) = line.strip_prefix("include ") {
            if depth < 4 {
                for conf in expand_glob(pattern.trim()) {
                    read_ld_so_conf(&conf, dirs, depth + 1);
                }
            }
        } else if line.starts_with('/') {
            dirs.push(PathBuf::from(line));
        }
    }
}

/// `dir/*suffix` (the form ld.so.conf uses) or a plain path, sorted.
fn expand_glob(pattern: &str) -> Vec<PathBuf> {
    let path = Path::new(pattern);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(suffix) = name.strip_prefix('*') else {
        return vec![path.to_path_buf()];
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    found.sort();
    found
}

/// The first file named `soname` in `dirs` that is an ELF of the same class
/// and machine as `exe` (a 32-bit library in a shared directory is skipped, as
/// the dynamic linker skips it).
fn find_library<'d>(
    soname: &str,
    dirs: impl Iterator<Item = &'d PathBuf>,
    exe: &Elf,
    read: &ReadFile<'_>,
) -> Option<(PathBuf, Vec<u8>)> {
    let candidates: Vec<PathBuf> = if soname.contains('/') {
        vec![PathBuf::from(soname)]
    } else {
        dirs.map(|d| d.join(soname)).collect()
    };
    candidates.into_iter().find_map(|path| {
        let bytes = read(&path).ok()?;
        let lib = Elf::parse(&bytes).ok()?;
        let same = lib.is_64 == exe.is_64 && lib.header.e_machine == exe.header.e_machine;
        drop(lib);
        same.then_some((path, bytes))
    })
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
        assert_eq!(
            openmp_runtime_of(&script, &|p| std::fs::read(p)).unwrap(),
            OmpRuntime::Unknown
        );
        let err = openmp_runtime_of(&dir.path().join("absent"), &|p| std::fs::read(p)).unwrap_err();
        assert!(err.to_string().contains("absent"), "{err}");
    }

    #[test]
    fn ld_so_conf_includes_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("conf.d")).unwrap();
        std::fs::write(
            d.join("ld.so.conf"),
            format!("# comment\ninclude {}/conf.d/*.conf\n/opt/a\n", d.display()),
        )
        .unwrap();
        std::fs::write(d.join("conf.d/b.conf"), "/opt/b # trailing\n").unwrap();
        std::fs::write(d.join("conf.d/a.conf"), "/opt/c\n").unwrap();
        std::fs::write(d.join("conf.d/ignored.txt"), "/opt/x\n").unwrap();
        let mut dirs = Vec::new();
        read_ld_so_conf(&d.join("ld.so.conf"), &mut dirs, 0);
        assert_eq!(
            dirs,
            [
                PathBuf::from("/opt/c"),
                PathBuf::from("/opt/b"),
                PathBuf::from("/opt/a")
            ]
        );
    }

    #[test]
    fn the_three_runtimes_are_managed() {
        for r in [OmpRuntime::Gomp, OmpRuntime::LlvmOmp, OmpRuntime::Intel] {
            assert!(r.dop_managed(), "{r}");
        }
        for r in [OmpRuntime::None, OmpRuntime::Static, OmpRuntime::Unknown] {
            assert!(!r.dop_managed(), "{r}");
        }
    }
}
