//! Store errors: each names the store file, so a user with several stores (or a
//! misplaced `--store` path) knows which file is at fault.

use std::path::PathBuf;

/// Why the profile store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("profile store {path}: cannot open the file: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("profile store {path}: the file is damaged or is not an SQLite database ({source}); move it away and let coloc create a new one")]
    Corrupt {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("profile store {path}: this is an SQLite database of another program (tables: {tables}), not a coloc profile store")]
    Foreign { path: PathBuf, tables: String },
    #[error("profile store {path}: the coloc schema is incomplete ({reason})")]
    Damaged { path: PathBuf, reason: String },
    #[error("profile store {path}: schema version {found} is newer than this coloc supports ({supported}); use a newer coloc or another store file")]
    Newer {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("profile store {path}: {source}")]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("profile store {path}: the stored {what} is unreadable: {source}")]
    Record {
        path: PathBuf,
        what: String,
        source: serde_json::Error,
    },
    #[error("profile store {path}: the calibration was measured on a machine of shape {found:016x}, not on {platform}")]
    CalibrationMismatch {
        path: PathBuf,
        platform: String,
        found: u64,
    },
    #[error("profile store {path}: it is damaged and could not be moved away: {source}")]
    SetAside {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("knowledge import: the export was made on {found}, not on {here}: what one platform learned does not hold on another")]
    ForeignPlatform { found: String, here: String },
    #[error("writing JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("profile import: not a coloc profile export: {0}")]
    Import(String),
    #[error("{why} on {platform} in {} (known: {known})", path.display())]
    Unchosen {
        why: Box<crate::Unchosen>,
        platform: String,
        path: PathBuf,
        /// The names of the programs known on the platform, or `none`.
        known: String,
    },
    #[error("no stored profile of \"{app}\" in {} (stored apps: {known})", path.display())]
    NoProfile {
        app: String,
        path: PathBuf,
        /// The names of the apps with a stored profile, or `none`.
        known: String,
    },
}

impl StoreError {
    /// A failed SQLite call on the store at `path`: damage reported as such.
    pub(crate) fn sql(path: &std::path::Path, source: rusqlite::Error) -> Self {
        let damaged = matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
        );
        let path = path.to_path_buf();
        if damaged {
            StoreError::Corrupt { path, source }
        } else {
            StoreError::Sql { path, source }
        }
    }
}
