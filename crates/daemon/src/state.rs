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

use coloc_model::user_file::{read_user_file, UserFileError};
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
    #[error(
        "the daemon's state {} is {kind}: only a regular file is replaced (name another with --state)",
        path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("reading the daemon's state")]
    Unreadable(#[source] UserFileError),
    #[error("the daemon's state {} is damaged", path.display())]
    Damaged {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Most bytes a state file may have: 256 apps for each of many users, each a
/// line of a few hundred bytes, fit many times over.
const MAX_STATE: u64 = 16 << 20;

impl Saved {
    /// Whether `path` may be replaced: nothing there, or a regular file (a
    /// symlink, device, FIFO or directory never is).
    pub fn check_target(path: &Path) -> Result<(), StateError> {
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(StateError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let t = meta.file_type();
        if t.is_file() {
            return Ok(());
        }
        Err(StateError::NotRegular {
            path: path.to_path_buf(),
            kind: if t.is_symlink() {
                "a symlink"
            } else if t.is_dir() {
                "a directory"
            } else {
                "a device, FIFO or socket"
            },
        })
    }

    /// Replaces the file at `path` (written aside under a name of this
    /// process's, synced, then renamed over it: a crash leaves the old file
    /// or the new one, never half of one). Only a regular file is replaced.
    pub fn write(&self, path: &Path) -> Result<(), StateError> {
        let err = |source| StateError::Write {
            path: path.to_path_buf(),
            source,
        };
        Self::check_target(path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "state".into());
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        // A leftover of a process that had this pid (a link is removed, never
        // followed).
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(err)?;
        let text = serde_json::to_string(self).map_err(|e| err(io::Error::other(e)))?;
        let written = f
            .write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .and_then(|()| fs::rename(&tmp, path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written.map_err(err)
    }

    /// The file at `path`; empty when there is none.
    pub fn read(path: &Path) -> Result<Saved, StateError> {
        let bytes = match read_user_file(path, MAX_STATE) {
            Ok(b) => b,
            Err(UserFileError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(Saved::default())
            }
            Err(e) => return Err(StateError::Unreadable(e)),
        };
        serde_json::from_slice(&bytes).map_err(|source| StateError::Damaged {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileTypeExt;

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

    /// `--state PATH` renamed its file over whatever was at PATH (a device
    /// node was replaced by a regular file): only a regular file is.
    #[test]
    fn a_state_path_that_is_not_a_regular_file_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for (path, kind) in [
            (fifo.as_path(), "a device, FIFO or socket"),
            (Path::new("/dev/null"), "a device, FIFO or socket"),
            (link.as_path(), "a symlink"),
            (dir.path(), "a directory"),
        ] {
            let e = Saved::default().write(path).unwrap_err();
            assert!(e.to_string().contains(kind), "{}: {e}", path.display());
        }
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // No leftover beside them.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        // A FIFO is not read as the state either.
        let e = Saved::read(&fifo).unwrap_err();
        assert!(e.to_string().contains("reading"), "{e}");
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
