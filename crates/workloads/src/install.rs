//! Writing the embedded kernels out as files that can be executed.
//!
//! Kernels go to `<cache root>/<content hash>/<name>`. The hash covers every
//! kernel's name and bytes, so a rebuilt coloc gets a fresh directory and never
//! runs a stale kernel, while repeated runs of one build reuse the files. Each
//! file is written under a unique temporary name and renamed into place, so
//! concurrent installers (parallel tests, several coloc processes) never see,
//! or execute, a half-written file.

use std::ffi::OsString;
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::catalog::{known_names, KERNELS};
use crate::{kernel, KernelError};

/// The directory holding every kernel, installed on first use.
///
/// Tries `$XDG_CACHE_HOME/coloc/kernels`, then `$HOME/.cache/coloc/kernels`,
/// then `/tmp/coloc-kernels-<uid>`, and remembers the first that works for the
/// rest of the process.
pub fn install_dir() -> Result<PathBuf, KernelError> {
    // One installer per process; threads arriving meanwhile wait and reuse its
    // result. Otherwise one thread could hold a kernel open for writing while
    // another forks to run it, and the exec would fail with ETXTBSY.
    static INSTALLED: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(dir) = installed.as_ref() {
        return Ok(dir.clone());
    }
    let roots = cache_roots(
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
        effective_uid(),
    );
    let mut attempts = Vec::new();
    for root in roots {
        match install_in(&root) {
            Ok(dir) => return Ok(installed.insert(dir).clone()),
            Err(e) => attempts.push(e),
        }
    }
    Err(KernelError::NoCacheDir { attempts })
}

/// The installed executable of kernel `name`.
pub fn kernel_path(name: &str) -> Result<PathBuf, KernelError> {
    let k = kernel(name).ok_or_else(|| KernelError::Unknown {
        name: name.to_owned(),
        known: known_names(),
    })?;
    Ok(install_dir()?.join(k.name))
}

/// Installs every kernel under `root` (in `root/<content hash>/`, created with
/// mode 0700 if missing) and returns that directory. Files already in place
/// are kept.
///
/// Refuses directories that are not owned by this user or are writable by
/// others: coloc executes what it finds there, possibly as root.
pub fn install_in(root: &Path) -> Result<PathBuf, KernelError> {
    let dir = root.join(content_hash());
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| KernelError::io(&dir, e))?;
    check_private(root)?;
    check_private(&dir)?;
    for k in KERNELS {
        let path = dir.join(k.name);
        // Files appear only by rename of a complete file, so a present file of
        // the right length is this build's kernel.
        match fs::metadata(&path) {
            Ok(meta) if meta.is_file() && meta.len() == k.bytes().len() as u64 => continue,
            _ => write_atomically(&path, k.bytes())?,
        }
    }
    Ok(dir)
}

/// Candidate cache roots, most preferred first. Per the XDG base directory
/// spec, a relative `XDG_CACHE_HOME` is ignored.
fn cache_roots(xdg_cache: Option<OsString>, home: Option<OsString>, uid: u32) -> Vec<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let mut roots = Vec::new();
    if let Some(xdg) = absolute(xdg_cache) {
        roots.push(xdg.join("coloc/kernels"));
    }
    if let Some(home) = absolute(home) {
        roots.push(home.join(".cache/coloc/kernels"));
    }
    roots.push(PathBuf::from(format!("/tmp/coloc-kernels-{uid}")));
    roots
}

/// Fails unless `dir` is owned by this user and not writable by group or others.
fn check_private(dir: &Path) -> Result<(), KernelError> {
    let meta = fs::metadata(dir).map_err(|e| KernelError::io(dir, e))?;
    let unsafe_dir = |reason: String| KernelError::UnsafeDir {
        path: dir.to_owned(),
        reason,
    };
    let me = effective_uid();
    if meta.uid() != me {
        return Err(unsafe_dir(format!("owned by uid {}, not {me}", meta.uid())));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unsafe_dir(format!(
            "writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Writes `bytes` to a temporary file unique to this process and call, mode
/// 0755, then renames it to `path`, which therefore is either absent or whole.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), KernelError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| KernelError::io(&tmp, e))
        .and_then(|()| fs::rename(&tmp, path).map_err(|e| KernelError::io(path, e)));
    if written.is_err() {
        // Best effort: the error being returned is the one worth reporting.
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// FNV-1a over every kernel's name, length and bytes, as 16 hex digits: cheap,
/// dependency-free, and ample to tell builds apart (this is not a defence
/// against tampering; [`check_private`] is).
fn content_hash() -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for k in KERNELS {
        eat(k.name.as_bytes());
        eat(&(k.bytes().len() as u64).to_le_bytes());
        eat(k.bytes());
    }
    format!("{h:016x}")
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_roots_follow_xdg_then_home_then_tmp() {
        let roots = cache_roots(Some("/x/cache".into()), Some("/home/u".into()), 7);
        assert_eq!(
            roots,
            [
                PathBuf::from("/x/cache/coloc/kernels"),
                PathBuf::from("/home/u/.cache/coloc/kernels"),
                PathBuf::from("/tmp/coloc-kernels-7"),
            ]
        );
    }

    #[test]
    fn relative_or_missing_variables_are_skipped() {
        let roots = cache_roots(Some("rel/cache".into()), None, 0);
        assert_eq!(roots, [PathBuf::from("/tmp/coloc-kernels-0")]);
    }

    #[test]
    fn content_hash_is_stable_hex() {
        let h = content_hash();
        assert_eq!(h.len(), 16);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()), "{h}");
        assert_eq!(h, content_hash());
    }

    #[test]
    fn a_truncated_file_is_replaced() {
        let root = tempfile::tempdir().unwrap();
        let dir = install_in(root.path()).unwrap();
        fs::write(dir.join("lock"), b"partial").unwrap();
        install_in(root.path()).unwrap();
        assert_eq!(
            fs::read(dir.join("lock")).unwrap(),
            kernel("lock").unwrap().bytes()
        );
    }

    #[test]
    fn unknown_kernel_path_names_the_known_ones() {
        let err = kernel_path("strem").unwrap_err().to_string();
        assert!(err.contains("\"strem\""), "{err}");
        assert!(
            err.contains("stream, compute, share, barrier, lock"),
            "{err}"
        );
    }
}
