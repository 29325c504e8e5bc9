//! Reading a file a user named (docs/safety.md, Files users name): the one
//! way coloc reads a workload, an hwloc export, a platform file, a profile
//! export, a trace, an app's metric file or the program a node-service
//! request names.
//!
//! Problem: a path may name a FIFO (opening it waits for a writer, for ever),
//! a device (`/dev/zero` never ends) or a file far larger than any real one;
//! `std::fs::read` on such a path hangs or takes all memory before failing.
//!
//! Approach: open without blocking and without taking a terminal
//! (`O_NONBLOCK | O_NOCTTY`), refuse what the open file is not a regular
//! file, refuse a size over the caller's bound, and read at most one byte
//! past it (a file that grows meanwhile is refused too). Each error names the
//! path.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Most bytes of a workload or platform file: text a person writes or
/// `coloc gen` makes, a few KiB; 16 MiB is thousands of apps.
pub const MAX_WORKLOAD: u64 = 16 << 20;

/// Most bytes of an hwloc XML export: a few hundred KiB for a 1,000-PU
/// machine with every attribute; 64 MiB leaves room for far larger ones.
pub const MAX_HWLOC: u64 = 64 << 20;

/// Most bytes of a profile export (`coloc profiles import`): a profile is a
/// few KiB, so this is tens of thousands of them.
pub const MAX_PROFILES: u64 = 256 << 20;

/// Why a named file was not read.
#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {kind}, not a regular file: not read", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{}: larger than {max} bytes: not read", path.display())]
    TooLarge { path: PathBuf, max: u64 },
    #[error("{}: not UTF-8 text", path.display())]
    NotText { path: PathBuf },
}

impl UserFileError {
    /// The error as an `io::Error` of a fitting kind, for callers that speak
    /// `io`.
    pub fn into_io(self) -> io::Error {
        let kind = match &self {
            UserFileError::Io { source, .. } => source.kind(),
            UserFileError::NotRegular { .. } => io::ErrorKind::InvalidInput,
            UserFileError::TooLarge { .. } => io::ErrorKind::FileTooLarge,
            UserFileError::NotText { .. } => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, self.to_string())
    }
}

/// What a file that is not a regular one is, for the error.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// `path` opened for reading without blocking, refused unless a regular
/// file, with its length.
pub fn open_regular(path: &Path) -> Result<(File, u64), UserFileError> {
    let io_err = |source| UserFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.file_type().is_file() {
        return Err(UserFileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    Ok((file, meta.len()))
}

/// The bytes of the regular file `path`, refused when larger than `max`.
pub fn read_user_file(path: &Path, max: u64) -> Result<Vec<u8>, UserFileError> {
    let (file, len) = open_regular(path)?;
    let too_large = || UserFileError::TooLarge {
        path: path.to_path_buf(),
        max,
    };
    if len > max {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| UserFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of the regular file `path`, refused when larger than `max`
/// bytes or not UTF-8.
pub fn read_user_text(path: &Path, max: u64) -> Result<String, UserFileError> {
    String::from_utf8(read_user_file(path, max)?).map_err(|_| UserFileError::NotText {
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO, a device and a directory are refused at once (a FIFO with no
    /// writer used to block the reader for ever), naming what they are; a
    /// file over the bound is refused without being read.
    #[test]
    fn fifos_devices_directories_and_huge_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = read_user_file(&fifo, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("a FIFO, not a regular file"), "{e}");
        let e = read_user_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = read_user_file(dir.path(), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");

        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 2000]).unwrap();
        let e = read_user_file(&big, 1999).unwrap_err();
        assert!(
            matches!(e, UserFileError::TooLarge { max: 1999, .. }),
            "{e}"
        );
        assert_eq!(read_user_file(&big, 2000).unwrap().len(), 2000);
        assert_eq!(e.into_io().kind(), io::ErrorKind::FileTooLarge);

        std::fs::write(&big, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_user_text(&big, 10),
            Err(UserFileError::NotText { .. })
        ));
        let missing = read_user_file(&dir.path().join("none"), 10).unwrap_err();
        assert!(missing.to_string().contains("none"), "{missing}");
    }
}
