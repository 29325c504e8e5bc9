//! Waking on an instance's exit without polling for it: a pidfd per main
//! process (`pidfd_open(2)`, Linux 5.3), readable once the process has exited.
//!
//! Exits end apps, so their times are what every metric is made of; with a
//! pidfd the loop wakes the moment an app exits, and the /proc rescan for new
//! threads and processes can run at a slower `poll` interval (the rescan is
//! most of coloc's own CPU use). Where `pidfd_open` is missing (older kernels,
//! seccomp), waiting falls back to sleeping for the poll interval and exits are
//! seen at the next rescan, as before.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// A pidfd for `pid`, or None where the kernel refuses one.
pub(crate) fn open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        tracing::debug!(
            pid,
            "pidfd_open refused ({}); exits are seen by polling",
            std::io::Error::last_os_error()
        );
        return None;
    }
    // SAFETY: the syscall returned a fresh descriptor that nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Waits up to `timeout` for one of `fds` to become readable (its process
/// exited); sleeps the whole timeout when there is none to wait on.
pub(crate) fn wait<'a>(fds: impl Iterator<Item = &'a OwnedFd>, timeout: Duration) {
    let mut polled: Vec<PollFd<'_>> = fds
        .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
        .collect();
    if polled.is_empty() {
        std::thread::sleep(timeout);
        return;
    }
    let ms = PollTimeout::try_from(timeout.as_millis().max(1).min(i32::MAX as u128) as i32)
        .unwrap_or(PollTimeout::MAX);
    if let Err(e) = poll(&mut polled, ms) {
        // EINTR (a signal such as Ctrl-C) ends the wait early, as sleep would.
        tracing::debug!("poll on pidfds: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn wakes_when_the_child_exits_not_at_the_timeout() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let Some(fd) = open(child.id()) else {
            eprintln!("pidfd_open not available here; nothing to test");
            child.wait().unwrap();
            return;
        };
        let t0 = Instant::now();
        wait([&fd].into_iter(), Duration::from_secs(30));
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "woke only at the timeout"
        );
        child.wait().unwrap();
    }

    #[test]
    fn without_fds_it_sleeps_the_timeout() {
        let t0 = Instant::now();
        wait(std::iter::empty(), Duration::from_millis(30));
        assert!(t0.elapsed() >= Duration::from_millis(30));
    }
}
