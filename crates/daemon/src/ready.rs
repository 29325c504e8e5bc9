//! One wait on a set of descriptors, shared by the control socket's loop
//! (`server.rs`) and the metrics endpoint (`scrape.rs`).

use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// Waits up to `timeout` (at most about a minute, at least 1 ms) for `fds`;
/// the events each got, or None when the wait was interrupted or failed (a
/// failure is logged naming `what`, and waited out for 100 ms so a failing
/// poll cannot spin).
pub fn ready(fds: &mut [PollFd], timeout: Duration, what: &str) -> Option<Vec<PollFlags>> {
    let ms = u16::try_from(timeout.as_millis().max(1)).unwrap_or(1000);
    match poll(fds, PollTimeout::from(ms)) {
        Ok(_) => Some(
            fds.iter()
                .map(|f| f.revents().unwrap_or(PollFlags::empty()))
                .collect(),
        ),
        Err(nix::errno::Errno::EINTR) => None,
        Err(e) => {
            tracing::warn!("waiting on {what}: {e}");
            std::thread::sleep(Duration::from_millis(100));
            None
        }
    }
}
