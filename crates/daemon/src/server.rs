//! The control socket (docs/service.md, Protocol and Limits): one thread
//! waits on every connection at once (`poll`), reads each request line up to
//! [`MAX_REQUEST`] bytes and within [`Limits::request_timeout`], hands it to
//! [`requests::handle`] and writes the answer without blocking.
//!
//! Problem: every local user may connect to root's daemon. A thread per
//! connection and a request read whole let one user exhaust threads or
//! memory, or hold a thread for ever with half a line.
//!
//! Approach: no connection has a thread or a blocking call of its own. A
//! connection is a state machine (`Phase`) driven by readiness; requests
//! waiting for the loop (an admission, a release) wait on a channel whose
//! sender wakes this thread ([`crate::shared::Waker`]). Connections are
//! bounded per user and in total; one over a bound is answered with the
//! reason and closed, never a panic. Refusals are logged, at most one line
//! per user every [`LOG_EVERY`].

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

use crate::protocol::{parse_request, Reply, Request, MAX_REQUEST};
use crate::ready::ready;
use crate::requests::{self, Context, Next, Peer, Refused};
use crate::shared::Entry;

/// Bounds on the socket's connections (docs/service.md, Limits).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Open connections of all users but root.
    pub connections: usize,
    /// Open connections of one user.
    pub per_uid: usize,
    /// Open connections of root's, beyond the others: root can always ask.
    pub root: usize,
    /// Time a client has from connecting to the end of its request line.
    pub request_timeout: Duration,
    /// Time a client has to take an answer written to it.
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connections: 1024,
            per_uid: 128,
            root: 64,
            request_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(5),
        }
    }
}

/// How often refusals of one user are logged, at most.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Bytes read from one connection per wake-up (then the others get a turn).
const READ_CHUNK: usize = 16 * 1024;

/// Connections accepted per wake-up before the others get a turn.
const ACCEPT_BATCH: usize = 256;

/// Where a connection is in its exchange.
#[derive(Debug)]
enum Phase {
    /// Reading its request line.
    Request,
    /// Its app waits for the loop's admission.
    Admission {
        app: u32,
        answer: Receiver<Reply>,
        exec: bool,
    },
    /// A malleable `exec` whose program is being checked, not registered yet.
    Check { entry: Option<Box<Entry>> },
    /// Waiting for the loop to let an app go.
    Release { answer: Receiver<Reply> },
    /// An admitted `exec`: waiting for its client's `exited` line.
    Follow { app: u32 },
    /// Writing its last answer, then closed.
    Closing,
}

#[derive(Debug)]
struct Conn {
    stream: UnixStream,
    peer: Peer,
    phase: Phase,
    input: Vec<u8>,
    output: Vec<u8>,
    /// When it is closed unless it made progress: the end of its request,
    /// or its taking of an answer.
    deadline: Option<Instant>,
    /// Its client sent end of file: nothing more is read.
    read_closed: bool,
    /// Closed: removed at the end of the turn.
    done: bool,
}

/// Counts of open connections.
#[derive(Debug, Default)]
struct Counts {
    users: usize,
    root: usize,
    per_uid: HashMap<u32, usize>,
}

impl Counts {
    /// Why `uid` may not open one more connection, if it may not.
    fn refuse(&self, uid: u32, limits: &Limits) -> Option<String> {
        if uid == 0 {
            return (self.root >= limits.root)
                .then(|| format!("root has {} connections open, the most it may", limits.root));
        }
        let theirs = self.per_uid.get(&uid).copied().unwrap_or(0);
        if theirs >= limits.per_uid {
            return Some(format!(
                "uid {uid} has {theirs} connections open, the most one user may"
            ));
        }
        (self.users >= limits.connections).then(|| {
            format!(
                "the daemon has {} connections open, the most it takes",
                self.users
            )
        })
    }

    fn add(&mut self, uid: u32, n: isize) {
        if uid == 0 {
            self.root = self.root.saturating_add_signed(n);
            return;
        }
        self.users = self.users.saturating_add_signed(n);
        let c = self.per_uid.entry(uid).or_default();
        *c = c.saturating_add_signed(n);
        if *c == 0 {
            self.per_uid.remove(&uid);
        }
    }
}

/// Refusals logged at most once per user every [`LOG_EVERY`], with a count
/// of those not logged.
#[derive(Debug, Default)]
struct Throttle(HashMap<u32, (Instant, u64)>);

impl Throttle {
    fn refused(&mut self, peer: Peer, why: &str) {
        let now = Instant::now();
        let (last, quiet) = self
            .0
            .entry(peer.uid)
            .or_insert((now - LOG_EVERY - Duration::from_millis(1), 0));
        if now.duration_since(*last) > LOG_EVERY {
            let more = if *quiet > 0 {
                format!(" ({quiet} more refusals of this uid since the last such line)")
            } else {
                String::new()
            };
            tracing::warn!(uid = peer.uid, pid = peer.pid, "refused: {why}{more}");
            *last = now;
            *quiet = 0;
        } else {
            *quiet += 1;
        }
        if self.0.len() > 4096 {
            self.0
                .retain(|_, (l, _)| now.duration_since(*l) <= LOG_EVERY);
        }
    }
}

/// Serves `listener` until the process ends; `woken` is the end of the
/// context's waker.
pub fn serve(listener: UnixListener, ctx: Context, woken: UnixStream, limits: Limits) {
    if let Err(e) = listener.set_nonblocking(true) {
        tracing::error!("the control socket cannot be served: {e}");
        return;
    }
    let mut s = Server {
        ctx,
        limits,
        conns: Vec::new(),
        counts: Counts::default(),
        throttle: Throttle::default(),
        accept_paused: None,
    };
    loop {
        s.turn(&listener, &woken);
    }
}

struct Server {
    ctx: Context,
    limits: Limits,
    conns: Vec<Conn>,
    counts: Counts,
    throttle: Throttle,
    /// Accepting stops for a while when the process is out of descriptors.
    accept_paused: Option<Instant>,
}

impl Server {
    /// One wait and what it found.
    fn turn(&mut self, listener: &UnixListener, woken: &UnixStream) {
        let now = Instant::now();
        if self.accept_paused.is_some_and(|t| now >= t) {
            self.accept_paused = None;
        }
        let accepting = self.accept_paused.is_none();
        let timeout = self
            .conns
            .iter()
            .filter_map(|c| c.deadline)
            .chain(self.accept_paused)
            .min()
            .map_or(Duration::from_secs(1), |d| d.saturating_duration_since(now))
            .min(Duration::from_secs(1));
        let ready: Vec<PollFlags> = {
            let mut fds = vec![
                PollFd::new(
                    listener.as_fd(),
                    if accepting {
                        PollFlags::POLLIN
                    } else {
                        PollFlags::empty()
                    },
                ),
                PollFd::new(woken.as_fd(), PollFlags::POLLIN),
            ];
            fds.extend(self.conns.iter().map(|c| {
                let mut want = PollFlags::empty();
                if !c.read_closed {
                    want |= PollFlags::POLLIN;
                }
                if !c.output.is_empty() {
                    want |= PollFlags::POLLOUT;
                }
                PollFd::new(c.stream.as_fd(), want)
            }));
            match ready(&mut fds, timeout, "the control socket") {
                Some(ready) => ready,
                None => return,
            }
        };
        if ready[1].contains(PollFlags::POLLIN) {
            let mut buf = [0u8; 256];
            while matches!((&*woken).read(&mut buf), Ok(n) if n > 0) {}
        }
        for (k, flags) in ready[2..].iter().enumerate() {
            let bad = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
            if flags.intersects(bad) {
                if self.conns[k].read_closed {
                    if flags.intersects(PollFlags::POLLHUP | PollFlags::POLLERR) {
                        self.gone(k, "it closed its connection");
                    }
                } else {
                    self.readable(k);
                }
            }
            if flags.contains(PollFlags::POLLOUT) {
                self.flush(k);
            }
        }
        for k in 0..self.conns.len() {
            self.answers(k);
        }
        let now = Instant::now();
        for k in 0..self.conns.len() {
            if self.conns[k].deadline.is_some_and(|d| now >= d) {
                let why = match self.conns[k].phase {
                    Phase::Request => "its request did not arrive in time",
                    _ => "it did not take its answer in time",
                };
                self.gone(k, why);
            }
        }
        self.sweep();
        if accepting && ready[0].contains(PollFlags::POLLIN) {
            self.accept(listener);
        }
    }

    /// Takes the connections waiting to be accepted, each within the limits.
    fn accept(&mut self, listener: &UnixListener) {
        for _ in 0..ACCEPT_BATCH {
            let stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    tracing::warn!("accepting a connection: {e}; pausing for 100 ms");
                    self.accept_paused = Some(Instant::now() + Duration::from_millis(100));
                    return;
                }
                Err(_) => continue,
            };
            let Ok(cred) = getsockopt(&stream, PeerCredentials) else {
                continue;
            };
            let peer = Peer {
                pid: cred.pid() as u32,
                uid: cred.uid(),
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if let Some(why) = self.counts.refuse(peer.uid, &self.limits) {
                self.throttle.refused(peer, &why);
                // Best effort: a client that cannot take these bytes now
                // learns it from the closed connection.
                let _ = (&stream).write(&line(&Reply::Error { message: why }));
                continue;
            }
            self.counts.add(peer.uid, 1);
            self.conns.push(Conn {
                stream,
                peer,
                phase: Phase::Request,
                input: Vec::new(),
                output: Vec::new(),
                deadline: Some(Instant::now() + self.limits.request_timeout),
                read_closed: false,
                done: false,
            });
        }
    }

    /// Reads what connection `k` sent, and acts on complete lines.
    fn readable(&mut self, k: usize) {
        let c = &mut self.conns[k];
        if c.done || c.read_closed {
            return;
        }
        let mut buf = [0u8; 4096];
        let mut eof = false;
        let mut got = 0;
        while got < READ_CHUNK {
            match (&c.stream).read(&mut buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    got += n;
                    // Bytes past a bound are never kept: the connection is
                    // refused at the end of this read.
                    let room = (MAX_REQUEST + 1).saturating_sub(c.input.len());
                    c.input.extend_from_slice(&buf[..n.min(room)]);
                    if c.input.len() > MAX_REQUEST && !c.input.contains(&b'\n') {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        self.lines(k);
        let c = &mut self.conns[k];
        if !c.done && c.input.len() > MAX_REQUEST {
            let refusal = Refused(format!("the request is longer than {MAX_REQUEST} bytes"));
            match c.phase {
                Phase::Request => self.refuse(k, refusal),
                _ => self.gone(k, "it sent more than a request's bytes"),
            }
            return;
        }
        if eof {
            let c = &mut self.conns[k];
            c.read_closed = true;
            // An answer being written still goes out (the client may have
            // shut down only its sending side); anything else ends here.
            let answering = matches!(c.phase, Phase::Closing) && !c.output.is_empty();
            if !answering {
                self.gone(k, "it closed its connection");
            }
        }
    }

    /// Acts on the complete lines connection `k` sent.
    fn lines(&mut self, k: usize) {
        loop {
            let c = &mut self.conns[k];
            if c.done {
                return;
            }
            // Lines are kept until a phase that reads them.
            let follow = match c.phase {
                Phase::Request => None,
                Phase::Follow { app } => Some(app),
                _ => return,
            };
            let Some(end) = c.input.iter().position(|b| *b == b'\n') else {
                return;
            };
            let rest = c.input.split_off(end + 1);
            let line = std::mem::replace(&mut c.input, rest);
            match follow {
                None => self.request(k, &line),
                Some(app) => {
                    let status = match parse_request(&line) {
                        Ok(Request::Exited { status, pid: None }) => Some(status),
                        _ => None,
                    };
                    requests::exited(&self.ctx, app, status);
                    self.close(k);
                }
            }
        }
    }

    /// Connection `k`'s request.
    fn request(&mut self, k: usize, line: &[u8]) {
        let peer = self.conns[k].peer;
        let request = match parse_request(line) {
            Ok(r) => r,
            Err(e) => return self.refuse(k, Refused(e.to_string())),
        };
        let next = requests::handle(request, peer, &self.ctx);
        self.next(k, next);
    }

    /// Connection `k` goes on as its request's handling says.
    fn next(&mut self, k: usize, next: Result<Next, Refused>) {
        let c = &mut self.conns[k];
        let phase = match next {
            Err(refused) => return self.refuse(k, refused),
            Ok(Next::Reply(reply)) => {
                c.phase = Phase::Closing;
                return self.write(k, &reply);
            }
            Ok(Next::Admission { app, answer, exec }) => Phase::Admission { app, answer, exec },
            Ok(Next::Check { entry }) => Phase::Check { entry: Some(entry) },
            Ok(Next::Release { answer }) => Phase::Release { answer },
        };
        c.deadline = None;
        c.phase = phase;
        // A check may start (and a short one end) at once.
        self.answers(k);
    }

    /// The loop's answer for connection `k`, if it came.
    fn answers(&mut self, k: usize) {
        let c = &mut self.conns[k];
        if c.done {
            return;
        }
        if let Phase::Check { entry } = &mut c.phase {
            if let Some(next) = requests::checked(&self.ctx, entry) {
                self.next(k, next);
            }
            return;
        }
        let got = match &c.phase {
            Phase::Admission { answer, .. } | Phase::Release { answer } => answer.try_recv(),
            _ => return,
        };
        let reply = match got {
            Ok(r) => r,
            Err(TryRecvError::Empty) => return,
            Err(TryRecvError::Disconnected) => Reply::Error {
                message: "the daemon is stopping".into(),
            },
        };
        let next = match c.phase {
            Phase::Admission {
                app, exec: true, ..
            } if matches!(reply, Reply::Admitted { .. }) => Phase::Follow { app },
            _ => Phase::Closing,
        };
        c.phase = next;
        self.write(k, &reply);
        // Lines that came while it waited (an `exited` of a short command).
        self.lines(k);
    }

    /// Answers connection `k` with a refusal and closes it.
    fn refuse(&mut self, k: usize, Refused(message): Refused) {
        self.throttle.refused(self.conns[k].peer, &message);
        self.conns[k].phase = Phase::Closing;
        self.write(k, &Reply::Error { message });
    }

    /// Queues `reply` for connection `k` and writes what it can now.
    fn write(&mut self, k: usize, reply: &Reply) {
        let c = &mut self.conns[k];
        c.output.extend(line(reply));
        c.deadline = Some(Instant::now() + self.limits.write_timeout);
        self.flush(k);
    }

    /// Writes what connection `k` can take without blocking.
    fn flush(&mut self, k: usize) {
        let c = &mut self.conns[k];
        if c.done {
            return;
        }
        while !c.output.is_empty() {
            match (&c.stream).write(&c.output) {
                Ok(0) => break,
                Ok(n) => {
                    c.output.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.gone(k, "it closed its connection"),
            }
        }
        if c.output.is_empty() {
            c.deadline = None;
            if matches!(c.phase, Phase::Closing) {
                self.close(k);
            }
        }
    }

    /// Connection `k` ended from its side (or broke a bound): what it was
    /// waiting for is cancelled.
    fn gone(&mut self, k: usize, why: &str) {
        let c = &mut self.conns[k];
        if c.done {
            return;
        }
        match c.phase {
            Phase::Admission { app, .. } => requests::cancel(&self.ctx, app),
            Phase::Follow { app } => requests::exited(&self.ctx, app, None),
            _ => {}
        }
        tracing::debug!(
            uid = c.peer.uid,
            pid = c.peer.pid,
            "connection closed: {why}"
        );
        self.close(k);
    }

    fn close(&mut self, k: usize) {
        let c = &mut self.conns[k];
        if !c.done {
            c.done = true;
            let uid = c.peer.uid;
            self.counts.add(uid, -1);
        }
    }

    /// Drops the closed connections.
    fn sweep(&mut self) {
        self.conns.retain(|c| !c.done);
    }
}

/// `reply` as a line of the protocol.
fn line(reply: &Reply) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(reply).unwrap_or_else(|e| {
        format!("{{\"reply\":\"error\",\"message\":\"encoding the answer: {e}\"}}").into_bytes()
    });
    bytes.push(b'\n');
    bytes
}
