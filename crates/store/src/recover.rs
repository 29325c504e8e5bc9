//! A damaged store set aside (docs/knowledge.md, When the store is damaged):
//! what coloc learned is worth less than the service that learns it, so a
//! file SQLite reports damaged is moved away, with its write-ahead log, and
//! a new store is made in its place. Another program's database and a newer
//! coloc's store are left alone: they are not damaged, only not ours.

use std::path::{Path, PathBuf};

use crate::{Store, StoreError};

/// A damaged store that was moved away.
#[derive(Debug)]
pub struct SetAside {
    /// Where the damaged file is now.
    pub moved_to: PathBuf,
    /// What was wrong with it.
    pub error: StoreError,
}

impl Store {
    /// Opens the store at `path` and checks every page of it (SQLite's
    /// `quick_check`: a file cut short opens, and fails only where it is
    /// read). A damaged file ([`StoreError::Corrupt`], [`StoreError::Damaged`])
    /// is renamed `<path>.damaged-<unix time>`, and a new store opened in its
    /// place; the answer says so. Other errors are returned, the file
    /// untouched.
    pub fn open_or_set_aside(
        path: impl AsRef<Path>,
    ) -> Result<(Store, Option<SetAside>), StoreError> {
        let path = path.as_ref();
        match Store::open(path).and_then(|s| s.quick_check().map(|()| s)) {
            Ok(store) => Ok((store, None)),
            Err(error @ (StoreError::Corrupt { .. } | StoreError::Damaged { .. })) => {
                let moved_to = set_aside(path).map_err(|source| StoreError::SetAside {
                    path: path.to_path_buf(),
                    source,
                })?;
                let store = Store::open(path)?;
                Ok((store, Some(SetAside { moved_to, error })))
            }
            Err(e) => Err(e),
        }
    }

    /// Reads every page: an error names the damage.
    pub fn quick_check(&self) -> Result<(), StoreError> {
        let rows: Vec<String> = self
            .conn
            .prepare("PRAGMA quick_check")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| self.sql(e))?;
        match &rows[..] {
            [ok] if ok == "ok" => Ok(()),
            _ => Err(StoreError::Damaged {
                path: self.path.clone(),
                reason: rows.join("; "),
            }),
        }
    }
}

/// Renames `path`, and its `-wal` and `-shm` files where present, with the
/// suffix `.damaged-<unix time>` (a second damage the same second gets `-2`).
fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let with = |p: &Path, suffix: &str| {
        let mut s = p.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    let mut suffix = format!(".damaged-{now}");
    let mut n = 2;
    while with(path, &suffix).exists() {
        suffix = format!(".damaged-{now}-{n}");
        n += 1;
    }
    for side in ["-wal", "-shm"] {
        let from = with(path, side);
        if from.exists() {
            std::fs::rename(&from, with(&with(path, &suffix), side))?;
        }
    }
    let to = with(path, &suffix);
    std::fs::rename(path, &to)?;
    Ok(to)
}
