//! Reading single sysfs/procfs files into typed values, with errors that name the
//! file.

use std::io;
use std::path::Path;

use coloc_model::cpuset::CpuSet;

use super::SysfsError;

/// The file's text. A missing file is an error here: callers use [`read_optional`]
/// where the kernel may leave a file out.
pub(crate) fn read(path: &Path) -> Result<String, SysfsError> {
    std::fs::read_to_string(path).map_err(|source| SysfsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The file's text, or `None` when it does not exist (the kernel hides attributes
/// it has no value for, e.g. a cache `size` the firmware did not report).
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, SysfsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SysfsError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A file in the kernel's CPU list format (`0-11,24-35`).
pub(crate) fn cpu_list(path: &Path) -> Result<CpuSet, SysfsError> {
    CpuSet::parse_list(&read(path)?).map_err(|source| SysfsError::CpuList {
        path: path.to_path_buf(),
        source,
    })
}

/// Applies `parse` to the file's text; `expected` says what the text should have
/// been, for the error message.
pub(crate) fn parsed<T>(
    path: &Path,
    text: &str,
    expected: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, SysfsError> {
    parse(text).ok_or_else(|| SysfsError::Parse {
        path: path.to_path_buf(),
        value: text.trim().to_string(),
        expected,
    })
}

/// The numbers `N` of the entries named `{prefix}N` in `dir` (`cpu0`, `node3`,
/// `index2`), sorted. A missing directory has none.
pub(crate) fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<u32>, SysfsError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(SysfsError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| SysfsError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name();
        let number = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|n| n.parse::<u32>().ok());
        out.extend(number);
    }
    out.sort_unstable();
    Ok(out)
}
