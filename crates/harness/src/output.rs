//! Where runs write their output by default and how their files are created.
//!
//! Output directories are predictable (`coloc-runs/<workload>/<what>-<time>`), so
//! anyone who can write where they go could plant a symlink named `trace.jsonl`
//! there and have coloc (often root) overwrite the file it points to. Run
//! directories are therefore created, not reused: atomically, with a unique name
//! (two runs in the same second get two), and a trace is only ever a new file,
//! never a link followed or an existing file truncated (docs/safety.md).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::HarnessError;

/// `coloc-runs/<workload>/<what>-<UTC timestamp>[-N]`, relative to the current
/// directory, created here (see [`unique_dir`]) so that runs are kept and never
/// share a directory. Should creating it fail, the path is returned all the same
/// and the run reports the error when it creates its files.
pub fn default_out_dir(workload: &str, what: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "");
    let base = PathBuf::from("coloc-runs")
        .join(sanitize(workload))
        .join(format!("{}-{stamp}", sanitize(what)));
    unique_dir(&base).unwrap_or(base)
}

/// Creates a new directory `base`, or `base-2`, `base-3`, … when taken, and
/// returns it. `mkdir` creates or fails atomically, so two runs never get the
/// same one, and an existing entry (a symlink included) is never reused.
pub fn unique_dir(base: &Path) -> io::Result<PathBuf> {
    if let Some(parent) = base.parent().filter(|p| !p.as_os_str().is_empty()) {
        out_dir_builder().recursive(true).create(parent)?;
    }
    let mut name = base.as_os_str().to_owned();
    for n in 2..10_000 {
        match out_dir_builder().create(&name) {
            Ok(()) => return Ok(PathBuf::from(name)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                name = base.as_os_str().to_owned();
                name.push(format!("-{n}"));
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{}-N: every name is taken", base.display()),
    ))
}

/// Creates the run directory `out` (and its parents) if missing, refusing
/// to go through a symlink that is neither the caller's nor root's: a
/// directory named with `--out` is written into, and a link another user
/// planted on the way (`--out /tmp/results`, pointing into a directory of
/// root's) would have coloc create its files where the link leads. Links of
/// root's (`/var/run`) and of the caller's own are followed, as the
/// kernel's `protected_symlinks` does in sticky directories (docs/safety.md,
/// Output coloc writes).
pub fn create_out_dir(out: &Path) -> Result<(), HarnessError> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let mut path = PathBuf::new();
    for part in out.components() {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() && m.uid() != me && m.uid() != 0 => {
                return Err(HarnessError::ForeignLink { path, uid: m.uid() });
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    out_dir_builder()
        .recursive(true)
        .create(out)
        .map_err(|source| HarnessError::Write {
            what: "creating",
            path: out.to_path_buf(),
            source,
        })
}

/// How run directories are made: readable by all, writable by their owner
/// alone whatever the umask (under `umask 000` they were world-writable).
pub fn out_dir_builder() -> std::fs::DirBuilder {
    use std::os::unix::fs::DirBuilderExt;
    let mut b = std::fs::DirBuilder::new();
    b.mode(0o755);
    b
}

/// Creates the trace file `path`: a new file only, 0644 whatever the umask.
/// An existing trace is not truncated and a symlink in its place is not
/// followed; both are errors.
pub fn create_trace(path: &Path) -> Result<File, HarnessError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|source| HarnessError::CreateTrace {
            path: path.to_path_buf(),
            source,
        })
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_runs_started_in_the_same_second_get_their_own_directories() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("runs/w/native-20260101T000000Z");
        let a = unique_dir(&base).unwrap();
        let b = unique_dir(&base).unwrap();
        assert_eq!(a, base);
        assert_ne!(a, b);
        assert!(a.is_dir() && b.is_dir());
    }

    /// A symlink planted under the predictable name is not taken as the run's
    /// directory.
    #[test]
    fn a_planted_output_directory_link_is_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let base = dir.path().join("native-x");
        std::os::unix::fs::symlink(&elsewhere, &base).unwrap();
        let got = unique_dir(&base).unwrap();
        assert_ne!(got, base);
        assert!(!got.is_symlink());
    }

    #[test]
    fn a_planted_trace_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let trace = dir.path().join("trace.jsonl");
        std::os::unix::fs::symlink(&victim, &trace).unwrap();
        assert!(create_trace(&trace).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn an_existing_trace_is_never_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace.jsonl");
        std::fs::write(&trace, "{}\n").unwrap();
        let e = create_trace(&trace).unwrap_err();
        assert!(format!("{e:#}").contains("trace.jsonl"), "{e:#}");
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), "{}\n");
    }
}
