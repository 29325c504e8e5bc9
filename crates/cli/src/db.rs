//! The profile store every command shares (ReSense §2.2 profiles, NuPoCo §4.3
//! calibrations): one SQLite file in coloc's data directory unless `--db` names
//! another, so that `profile`, `calibrate`, `run` and `profiles` agree on where
//! measurements live without being told.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use coloc_harness::data::{default_store, open_existing};
use coloc_store::Store;

/// `--db PATH`, shared by every command that reads or writes the store.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The profile store [default: $XDG_DATA_HOME/coloc/profiles.sqlite, else
    /// ~/.local/share/coloc/profiles.sqlite].
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// The store's path: `--db`, else the default in the data directory.
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(default_store)
    }

    /// Opens (creating it if needed) the store. The default one's directory is
    /// created too; a `--db` naming a directory that does not exist is an error
    /// (a typo should not leave a directory tree behind).
    pub fn open(&self) -> Result<Store> {
        let path = self.path();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if self.db.is_none() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            } else if !dir.is_dir() {
                anyhow::bail!(
                    "--db {}: the directory {} does not exist",
                    path.display(),
                    dir.display()
                );
            }
        }
        Store::open(&path).with_context(|| format!("opening the profile store {}", path.display()))
    }

    /// Opens the store if its file exists: commands that only read (listing,
    /// a run looking for profiles) treat a missing store as an empty one and do
    /// not create it.
    pub fn open_existing(&self) -> Result<Option<Store>> {
        Ok(open_existing(&self.path())?)
    }
}
