//! A detached daemon's log (docs/service.md, Logs): `daemon.log` in the
//! journal directory takes its stdout and stderr, and is rotated while the
//! daemon runs so that a long-lived node service never fills the journal
//! directory's tmpfs.

use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The size at which `daemon.log` is rotated: a daemon logs a few lines per
/// app and per refusal (refusals at most once per user every 10 s), so 16
/// MiB is weeks of a busy node; with the one older file kept, the log takes
/// at most 32 MiB of the journal directory's tmpfs (docs/service.md, Logs).
pub const MAX_LOG: u64 = 16 << 20;

/// How often the log's size is looked at.
const LOG_CHECK: Duration = Duration::from_secs(5);

/// The older file a rotation keeps: `path.1`.
pub fn older(path: &Path) -> PathBuf {
    let mut old = path.to_path_buf().into_os_string();
    old.push(".1");
    PathBuf::from(old)
}

/// Rotates the log at `path`, this process's stdout and stderr, for as long
/// as it runs: once it is over [`MAX_LOG`] it becomes [`older`] (replacing
/// an older one) and a new `path` takes the output (dup2 onto 1 and 2: lines
/// being written finish in the old file). A thread that cannot start is
/// logged, and the log is then not rotated.
pub fn rotate_while_running(path: PathBuf) {
    let old = older(&path);
    let spawned = std::thread::Builder::new()
        .name("log-rotation".into())
        .spawn(move || loop {
            std::thread::sleep(LOG_CHECK);
            let size = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .and_then(|fd| std::fs::File::from(fd).metadata())
                .map(|m| m.len())
                .unwrap_or(0);
            if size <= MAX_LOG {
                continue;
            }
            if let Err(e) = rotate(&path, &old) {
                tracing::warn!("rotating {}: {e}", path.display());
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("the log is not rotated: {e}");
    }
}

/// Moves `path` to `old` and sends stdout and stderr to a new `path`, whose
/// first line says where the earlier lines are.
pub fn rotate(path: &Path, old: &Path) -> std::io::Result<()> {
    std::fs::rename(path, old)?;
    let log = open_new(path)?;
    // Said whatever the log level: the file begins with where the rest is.
    use std::io::Write;
    writeln!(
        &log,
        "coloc: log rotated: the lines before this are in {}",
        old.display()
    )?;
    nix::unistd::dup2_stdout(&log)?;
    nix::unistd::dup2_stderr(&log)?;
    Ok(())
}

/// A new log file at `path`, the caller's alone (0600), refused when it is
/// there already or a symlink.
fn open_new(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A rotation keeps the older lines in `path.1` and starts `path` anew,
    /// private, with where the older lines went. The test's own stdout and
    /// stderr are moved to the new file by the rotation, so it runs in a
    /// child process (the test binary re-run with an environment variable).
    #[test]
    fn a_rotation_keeps_the_old_lines_and_starts_a_new_file() {
        const CHILD: &str = "COLOC_TEST_LOG_ROTATION";
        if let Some(dir) = std::env::var_os(CHILD) {
            let path = Path::new(&dir).join("daemon.log");
            rotate(&path, &older(&path)).unwrap();
            eprintln!("after");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.log");
        std::fs::write(&path, "before\n").unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "log::tests::a_rotation_keeps_the_old_lines_and_starts_a_new_file",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(std::fs::read_to_string(older(&path)).unwrap(), "before\n");
        let new = std::fs::read_to_string(&path).unwrap();
        assert!(
            new.starts_with(&format!(
                "coloc: log rotated: the lines before this are in {}\n",
                older(&path).display()
            )),
            "{new}"
        );
        assert!(new.contains("after\n"), "{new}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A second rotation onto a file that is there is refused, not followed.
        assert!(open_new(&path).is_err());
    }
}
