//! The daemon's state file (docs/service.md, Restart): the apps it manages,
//! each named by pid **and start time**, rewritten at every change. A daemon
//! killed with SIGKILL leaves it behind; the next one restores what the dead
//! one changed (its journal, docs/safety.md) and then re-adopts every app the
//! file names that still runs with its recorded start time: a reused pid is
//! someone else's process and is left alone.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use coloc_model::AppClass;
use serde::{Deserialize, Serialize};

/// The file's contents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    pub apps: Vec<SavedApp>,
}

/// One managed app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedApp {
    pub name: String,
    pub pid: u32,
    /// Field 22 of `/proc/<pid>/stat`.
    pub start: u64,
    pub uid: u32,
    pub class: AppClass,
    pub program: String,
}

/// The state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("writing the daemon's state {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("reading the daemon's state {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the daemon's state {} is damaged", path.display())]
    Damaged {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl Saved {
    /// Replaces the file at `path` (written aside, synced, then renamed over
    /// it: a crash leaves the old file or the new one, never half of one).
    pub fn write(&self, path: &Path) -> Result<(), StateError> {
        let err = |source| StateError::Write {
            path: path.to_path_buf(),
            source,
        };
        let tmp = path.with_extension("tmp");
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(err)?;
        let text = serde_json::to_string(self).map_err(|e| err(io::Error::other(e)))?;
        f.write_all(text.as_bytes()).map_err(err)?;
        f.sync_all().map_err(err)?;
        fs::rename(&tmp, path).map_err(err)
    }

    /// The file at `path`; empty when there is none.
    pub fn read(path: &Path) -> Result<Saved, StateError> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Saved::default()),
            Err(source) => {
                return Err(StateError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|source| StateError::Damaged {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_state_reads_back_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.state");
        assert_eq!(Saved::read(&path).unwrap(), Saved::default());
        let saved = Saved {
            apps: vec![SavedApp {
                name: "a".into(),
                pid: 42,
                start: 7,
                uid: 0,
                class: AppClass::Latency,
                program: "/bin/a".into(),
            }],
        };
        saved.write(&path).unwrap();
        assert_eq!(Saved::read(&path).unwrap(), saved);
    }

    #[test]
    fn a_damaged_state_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.state");
        fs::write(&path, "{not json").unwrap();
        let e = Saved::read(&path).unwrap_err();
        assert!(e.to_string().contains("daemon.state"), "{e}");
    }
}
