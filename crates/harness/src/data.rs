//! coloc's data directory and the store in it (profiles, calibrations, what
//! was learned of each program: docs/knowledge.md).

use std::path::{Path, PathBuf};

use coloc_store::Store;

use crate::HarnessError;

/// coloc's data directory (solo times, profiles): `$XDG_DATA_HOME/coloc`, else
/// `~/.local/share/coloc`.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Path::new(&d).join("coloc");
    }
    match std::env::var_os("HOME") {
        Some(h) => Path::new(&h).join(".local/share/coloc"),
        None => std::env::temp_dir().join("coloc-data"),
    }
}

/// The store's default path: `profiles.sqlite` in the data directory.
pub fn default_store() -> PathBuf {
    data_dir().join("profiles.sqlite")
}

/// Opens the store at `path` if its file exists: commands that only read
/// (listing, a run looking for profiles) treat a missing store as an empty one
/// and do not create it.
pub fn open_existing(path: &Path) -> Result<Option<Store>, HarnessError> {
    if !path.exists() {
        return Ok(None);
    }
    Store::open(path)
        .map(Some)
        .map_err(|source| HarnessError::ProfileStore {
            path: path.to_path_buf(),
            source: Box::new(source),
        })
}
