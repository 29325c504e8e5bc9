//! Reading files as the user who asked (docs/service.md, Limits): root's
//! daemon examines the program a user's `coloc exec` names, and must neither
//! read what that user may not read nor reveal, by its answer, whether root
//! can see a path the user cannot.
//!
//! Approach: the work runs on a thread of its own whose file-system
//! credentials are the user's: its supplementary groups, file-system group
//! and file-system user (`setgroups`, `setfsgid`, `setfsuid`, in that order).
//! On Linux these are per thread; the raw system calls are used because the
//! C library's `setgroups` changes every thread of the process. The thread
//! ends with the work, and its credentials with it: no other thread of the
//! daemon ever runs as the user.

use std::io;
use std::path::Path;
use std::sync::mpsc::{self, Receiver};

/// File-system credentials: whose files a thread may open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creds {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// Most supplementary groups taken from a process (Linux's `NGROUPS_MAX`).
const MAX_GROUPS: usize = 65536;

impl Creds {
    /// The file-system credentials process `pid` opens files with (the
    /// fourth field of `Uid:` and `Gid:`, and `Groups:` of its status).
    pub fn of(proc_root: &Path, pid: u32) -> io::Result<Creds> {
        let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("status"))?;
        let bad = |key: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("no {key} line in the status of process {pid}"),
            )
        };
        let line = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .ok_or_else(|| bad(key))
        };
        let fs_id = |key: &str| -> io::Result<u32> {
            line(key)?
                .split_whitespace()
                .nth(3)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad(key))
        };
        let uid = fs_id("Uid:")?;
        let gid = fs_id("Gid:")?;
        let groups = line("Groups:")?
            .split_whitespace()
            .take(MAX_GROUPS)
            .map(|g| g.parse().map_err(|_| bad("Groups:")))
            .collect::<io::Result<Vec<u32>>>()?;
        Ok(Creds { uid, gid, groups })
    }
}

/// Runs `work` on a thread of its own with `creds` as its file-system
/// credentials; its result comes on the returned channel (an error when the
/// credentials could not be taken: the work is not run then), and `then`
/// runs once it is sent. A process that is not root cannot take another
/// user's credentials and runs `work` with its own, which are the most it
/// may read anyway.
pub fn spawn_as<T: Send + 'static>(
    creds: Creds,
    work: impl FnOnce() -> T + Send + 'static,
    then: impl FnOnce() + Send + 'static,
) -> io::Result<Receiver<io::Result<T>>> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("coloc-as-user".into())
        .spawn(move || {
            let result = if nix::unistd::geteuid().is_root() {
                take(&creds).map(|()| work())
            } else {
                Ok(work())
            };
            let _ = tx.send(result);
            then();
        })?;
    Ok(rx)
}

/// Takes `creds` for the calling thread only.
fn take(creds: &Creds) -> io::Result<()> {
    // SAFETY: the raw setgroups system call reads `len` ids from the vector's
    // buffer, which lives across the call; it changes this thread only.
    let r = unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            creds.groups.len(),
            creds.groups.as_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // setfsgid and setfsuid return the previous id and report no error: a
    // second call with the same id returns the one in force, which tells.
    for (set, id, what) in [
        (libc::SYS_setfsgid, creds.gid, "group"),
        (libc::SYS_setfsuid, creds.uid, "user"),
    ] {
        // SAFETY: plain system calls on integers, for this thread only.
        let now = unsafe {
            libc::syscall(set, id);
            libc::syscall(set, id)
        };
        if now != i64::from(id) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("could not take file-system {what} {id} (still {now})"),
            ));
        }
    }
    Ok(())
}
