//! Which processes forked or exited since the last poll, from the kernel's
//! process event connector (docs/signals.md, Tracking threads).
//!
//! Problem: finding an instance's new threads and children by listing
//! `/proc/<pid>/task` of every tracked process and all of `/proc` every poll
//! costs time proportional to the number of threads, 20 times a second, even
//! when nothing changed: 2,000 idle threads cost over half a core.
//!
//! Approach: the netlink process connector (`NETLINK_CONNECTOR`,
//! `CN_IDX_PROC`; needs `CAP_NET_ADMIN` and a kernel with
//! `CONFIG_PROC_EVENTS`) reports every fork (threads included: a new thread is
//! a fork whose child has its parent's thread group) and every exit. Each poll
//! drains what arrived and names the thread groups involved; an instance is
//! rescanned only when one of its processes is among them. When the kernel
//! dropped events (the socket's buffer overran), every instance is rescanned.
//! Where the connector cannot be opened, tracking falls back to rescanning
//! every poll, and says so once in the log.

use std::collections::BTreeSet;

use proc_connector::{NetlinkMessageIter, ProcConnector, ProcEvent};

/// Socket receive buffer: room for a burst of ~16,000 events between polls
/// (each is a 76-byte message in a 128-byte buffer slot, roughly).
const RECV_BUFFER: usize = 2 << 20;

/// The thread groups that forked or exited since the last [`ProcEvents::drain`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Touched {
    /// These thread groups (pids of processes) forked, had a thread or child
    /// created, or lost a thread.
    Groups(BTreeSet<u32>),
    /// Events were lost: any process may have changed.
    Everything,
}

impl Touched {
    /// Whether any of `pids` may have changed.
    pub fn any_of(&self, mut pids: impl Iterator<Item = u32>) -> bool {
        match self {
            Touched::Everything => true,
            Touched::Groups(g) => pids.any(|p| g.contains(&p)),
        }
    }

    /// The thread groups `event` concerns: for a fork, the parent's and the
    /// child's (the same group for a new thread); for an exit, the exiting
    /// one's and, for a process's last thread, its parent's (whose children
    /// changed).
    fn groups_of(event: &ProcEvent) -> Vec<u32> {
        match *event {
            ProcEvent::Fork {
                parent_tgid,
                child_tgid,
                ..
            } => vec![parent_tgid, child_tgid],
            ProcEvent::Exit {
                tgid, parent_tgid, ..
            } => vec![tgid, parent_tgid],
            _ => Vec::new(),
        }
    }
}

/// A subscription to fork and exit events, non-blocking.
#[derive(Debug)]
pub(crate) struct ProcEvents {
    conn: ProcConnector,
    buf: Vec<u8>,
}

impl ProcEvents {
    /// Subscribes to process events; the error says why not (not root, no
    /// connector in this kernel), for the log. Every event type is received
    /// and all but forks and exits are ignored: a second, filtered
    /// subscription (kernels since 6.6) is not acknowledged at once, and the
    /// wait for its acknowledgement blocked until some process on the machine
    /// forked (seconds to minutes on a quiet one).
    pub fn open() -> Result<Self, proc_connector::Error> {
        let conn = ProcConnector::new()?;
        conn.set_recv_buf_size(RECV_BUFFER)?;
        conn.set_nonblocking()?;
        Ok(Self {
            conn,
            buf: vec![0; 4096],
        })
    }

    /// Everything that arrived since the last call.
    pub fn drain(&mut self) -> Touched {
        let mut groups = BTreeSet::new();
        loop {
            // `recv_raw` (not `recv`, which reports an empty non-blocking
            // socket as an I/O error) and every message of each datagram.
            let n = match self.conn.recv_raw(&mut self.buf) {
                Ok(n) => n,
                Err(proc_connector::Error::WouldBlock) => return Touched::Groups(groups),
                Err(proc_connector::Error::Interrupted) => continue,
                // Overrun (ENOBUFS) and anything else: events may be lost.
                Err(e) => return lost(&e),
            };
            for msg in NetlinkMessageIter::new(&self.buf, n) {
                match msg {
                    Ok(Some(event)) => groups.extend(Touched::groups_of(&event)),
                    Ok(None) => {}
                    Err(e) => return lost(&e),
                }
            }
        }
    }
}

/// Events may have been lost: every instance is rescanned (what is still
/// queued is read at the next poll).
fn lost(e: &proc_connector::Error) -> Touched {
    tracing::debug!("process events lost ({e}): rescanning every instance");
    Touched::Everything
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fork(parent: u32, child_pid: u32, child_tgid: u32) -> ProcEvent {
        ProcEvent::Fork {
            cpu: 0,
            seq: 0,
            parent_pid: parent,
            parent_tgid: parent,
            child_pid,
            child_tgid,
            timestamp_ns: 0,
        }
    }

    #[test]
    fn a_new_thread_touches_its_own_group_and_a_new_child_its_parents_too() {
        // A thread created in process 100: child pid 101 in group 100.
        assert_eq!(Touched::groups_of(&fork(100, 101, 100)), vec![100, 100]);
        // A child process 200 of process 100.
        assert_eq!(Touched::groups_of(&fork(100, 200, 200)), vec![100, 200]);
        let exit = ProcEvent::Exit {
            cpu: 0,
            seq: 0,
            pid: 201,
            tgid: 200,
            exit_code: 0,
            exit_signal: 17,
            parent_pid: 100,
            parent_tgid: 100,
            timestamp_ns: 0,
        };
        assert_eq!(Touched::groups_of(&exit), vec![200, 100]);
    }

    #[test]
    fn an_instance_is_rescanned_only_when_one_of_its_processes_is_touched() {
        let touched = Touched::Groups(BTreeSet::from([100, 200]));
        assert!(touched.any_of([7, 200].into_iter()));
        assert!(!touched.any_of([7, 8].into_iter()));
        assert!(!Touched::Groups(BTreeSet::new()).any_of([7].into_iter()));
        assert!(Touched::Everything.any_of([7].into_iter()));
    }

    /// On this machine (root, CONFIG_PROC_EVENTS) the connector opens; a
    /// quiet poll names the groups that forked or exited (never
    /// "everything", which would rescan every instance every poll), and a
    /// thread started here shows up as this process's group being touched.
    /// Without the connector the test says why and checks nothing else.
    #[test]
    fn a_thread_started_here_is_reported() {
        let mut events = match ProcEvents::open() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("skipped: no process connector here ({e})");
                return;
            }
        };
        events.drain();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(matches!(events.drain(), Touched::Groups(_)));
        std::thread::spawn(|| {}).join().unwrap();
        let me = std::process::id();
        // Events are delivered asynchronously; give them a moment.
        let mut seen = false;
        for _ in 0..100 {
            if events.drain().any_of(std::iter::once(me)) {
                seen = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(seen, "no fork event for this process's new thread");
    }
}
