//! The embedded `libcoloc_omp.so` and its extraction to a file that
//! `LD_PRELOAD` can name.

use std::ffi::{OsStr, OsString};
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::error::{Result, ShimError};

/// The shim, built by build.rs from `c/coloc_omp.c`.
pub static SHIM_BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libcoloc_omp.so"));
/// FNV-1a 64 of [`SHIM_BYTES`], in hex: a new build gets a new file name, so a
/// running app never has its library replaced under it.
const SHIM_HASH: &str = env!("COLOC_OMP_SHIM_HASH");

/// Path of the shim extracted into the per-user cache directory
/// (`$XDG_CACHE_HOME/coloc`, else `$HOME/.cache/coloc`, else
/// `<tmp>/coloc-<uid>`), extracted at the first call of the process.
pub fn shim_path() -> Result<PathBuf> {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = PATH.get() {
        return Ok(path.clone());
    }
    let path = extract_shim(&cache_dir())?;
    Ok(PATH.get_or_init(|| path).clone())
}

fn cache_dir() -> PathBuf {
    let non_empty = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(xdg) = non_empty(std::env::var_os("XDG_CACHE_HOME")) {
        return xdg.join("coloc");
    }
    if let Some(home) = non_empty(std::env::var_os("HOME")) {
        return home.join(".cache").join("coloc");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("coloc-{uid}"))
}

/// Writes the shim into `dir` (created 0700 if missing; it must belong to the
/// current user and not be writable by others) unless an identical copy is
/// already there, and returns its path. Safe when several coloc processes do
/// it at once: each writes a private temporary file and renames it into place.
pub fn extract_shim(dir: &Path) -> Result<PathBuf> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| ShimError::io(dir, e))?;
    let meta = fs::metadata(dir).map_err(|e| ShimError::io(dir, e))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(ShimError::UnsafeCacheDir {
            path: dir.to_path_buf(),
        });
    }
    let path = dir.join(format!("libcoloc_omp-{SHIM_HASH}.so"));
    if fs::read(&path).is_ok_and(|bytes| bytes == SHIM_BYTES) {
        return Ok(path);
    }
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".libcoloc_omp-{SHIM_HASH}.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)
        .and_then(|mut f| f.write_all(SHIM_BYTES))
        .map_err(|e| ShimError::io(&tmp, e))
        .and_then(|()| fs::rename(&tmp, &path).map_err(|e| ShimError::io(&path, e)));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.map(|()| path)
}

/// The `LD_PRELOAD` value that loads `shim` first and keeps whatever the app's
/// environment already preloads (`existing`, colon- or space-separated).
pub fn ld_preload_with(existing: Option<&OsStr>, shim: &Path) -> OsString {
    let mut value = shim.as_os_str().to_os_string();
    if let Some(rest) = existing.filter(|v| !v.is_empty()) {
        value.push(":");
        value.push(rest);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_is_idempotent_and_repairs_a_damaged_copy() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let first = extract_shim(&cache).unwrap();
        assert_eq!(fs::read(&first).unwrap(), SHIM_BYTES);
        assert_eq!(fs::metadata(&cache).unwrap().mode() & 0o777, 0o700);
        fs::write(&first, b"truncated").unwrap();
        let second = extract_shim(&cache).unwrap();
        assert_eq!(first, second);
        assert_eq!(fs::read(&second).unwrap(), SHIM_BYTES);
        // No temporary files are left behind.
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
    }

    #[test]
    fn concurrent_extractions_agree() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| extract_shim(dir.path()).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(paths.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(fs::read(&paths[0]).unwrap(), SHIM_BYTES);
    }

    #[test]
    fn refuses_a_directory_others_can_write() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            extract_shim(dir.path()),
            Err(ShimError::UnsafeCacheDir { .. })
        ));
    }

    #[test]
    fn shim_path_is_stable_within_a_process() {
        let a = shim_path().unwrap();
        assert_eq!(a, shim_path().unwrap());
        assert!(a.ends_with(format!("libcoloc_omp-{SHIM_HASH}.so")));
    }

    #[test]
    fn ld_preload_keeps_existing_preloads() {
        let shim = Path::new("/c/libcoloc_omp.so");
        assert_eq!(ld_preload_with(None, shim), "/c/libcoloc_omp.so");
        assert_eq!(
            ld_preload_with(Some(OsStr::new("")), shim),
            "/c/libcoloc_omp.so"
        );
        assert_eq!(
            ld_preload_with(Some(OsStr::new("/x/a.so /x/b.so")), shim),
            "/c/libcoloc_omp.so:/x/a.so /x/b.so"
        );
    }
}
