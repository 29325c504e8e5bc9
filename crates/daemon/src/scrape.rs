//! The metrics endpoint (docs/service.md, Metrics): `GET /metrics` over
//! loopback TCP, answered with [`Exposition::text`].
//!
//! Problem: a scraper is one more client of a root process. A thread per
//! connection, or a request read whole with no deadline, would let a local
//! user hold the daemon's threads or memory, as on the control socket.
//!
//! Approach: one thread waits on the listener and every open connection at
//! once (`poll`), as the control socket's does (`server.rs`): at most
//! [`MAX_CONNECTIONS`] open, a request head of at most [`MAX_HEAD`] bytes
//! read within [`DEADLINE`], the answer written without blocking within the
//! same deadline, then the connection closed. The metrics are encoded from
//! atomics the loop updates: a scrape never waits for the loop, nor the loop
//! for a scrape.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags};

use crate::metrics::Exposition;
use crate::ready::ready;

/// Open connections at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 16;

/// Bytes of a request's head (request line and headers) read at most.
pub const MAX_HEAD: usize = 8 * 1024;

/// Time a connection has to send its request and take the answer.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// Why the endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("--metrics {addr}: serve metrics on a loopback address (127.0.0.1:PORT or [::1]:PORT): they name every user's apps")]
    NotLoopback { addr: SocketAddr },
    #[error("--metrics {addr}: listening")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
}

/// Binds the endpoint at `addr`, which must be a loopback address.
pub fn bind(addr: SocketAddr) -> Result<TcpListener, ScrapeError> {
    if !addr.ip().is_loopback() {
        return Err(ScrapeError::NotLoopback { addr });
    }
    let err = |source| ScrapeError::Listen { addr, source };
    let l = TcpListener::bind(addr).map_err(err)?;
    l.set_nonblocking(true).map_err(err)?;
    Ok(l)
}

/// One connection: its request head, then its answer.
struct Conn {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    deadline: Instant,
}

/// The answer to a request head: `GET /metrics` gets the metrics, anything
/// else a short error. Pure but for `metrics`, called only for a scrape.
pub fn answer(head: &[u8], metrics: impl FnOnce() -> String) -> Vec<u8> {
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (status, kind, body) = match (words.next(), words.next()) {
        (Some("GET"), Some("/metrics")) => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            metrics(),
        ),
        (Some("GET"), _) => (
            "404 Not Found",
            "text/plain",
            "coloc serves GET /metrics\n".into(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "coloc serves GET /metrics\n".into(),
        ),
    };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Whether `input` holds a whole request head.
fn head_done(input: &[u8]) -> bool {
    input.windows(4).any(|w| w == b"\r\n\r\n") || input.windows(2).any(|w| w == b"\n\n")
}

/// Serves `listener` until the process ends.
pub fn serve(listener: TcpListener, metrics: Exposition) {
    let mut conns: Vec<Conn> = Vec::new();
    loop {
        let now = Instant::now();
        let timeout = conns
            .iter()
            .map(|c| c.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        let ready: Vec<PollFlags> = {
            let mut fds = vec![PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
            fds.extend(conns.iter().map(|c| {
                let want = if c.output.is_empty() {
                    PollFlags::POLLIN
                } else {
                    PollFlags::POLLOUT
                };
                PollFd::new(c.stream.as_fd(), want)
            }));
            match ready(&mut fds, timeout, "the metrics endpoint") {
                Some(ready) => ready,
                None => continue,
            }
        };
        let mut done = vec![false; conns.len()];
        for (k, flags) in ready[1..].iter().enumerate() {
            if flags.is_empty() {
                continue;
            }
            done[k] = turn(&mut conns[k], &metrics);
        }
        let now = Instant::now();
        let mut k = 0;
        conns.retain(|c| {
            let keep = !done[k] && now < c.deadline;
            k += 1;
            keep
        });
        if ready[0].contains(PollFlags::POLLIN) {
            accept(&listener, &mut conns);
        }
    }
}

/// Takes the connections waiting, within [`MAX_CONNECTIONS`].
fn accept(listener: &TcpListener, conns: &mut Vec<Conn>) {
    for _ in 0..MAX_CONNECTIONS {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) => {
                tracing::warn!("accepting a metrics connection: {e}");
                return;
            }
        };
        // One over the bound is closed at once (dropped).
        if conns.len() >= MAX_CONNECTIONS || stream.set_nonblocking(true).is_err() {
            continue;
        }
        conns.push(Conn {
            stream,
            input: Vec::new(),
            output: Vec::new(),
            deadline: Instant::now() + DEADLINE,
        });
    }
}

/// Reads or writes what connection `c` is ready for; true when it is done.
fn turn(c: &mut Conn, metrics: &Exposition) -> bool {
    if c.output.is_empty() {
        let mut buf = [0u8; 4096];
        loop {
            match (&c.stream).read(&mut buf) {
                Ok(0) => return true,
                Ok(n) => {
                    let room = MAX_HEAD.saturating_sub(c.input.len());
                    c.input.extend_from_slice(&buf[..n.min(room)]);
                    if head_done(&c.input) {
                        c.output = answer(&c.input, || metrics.text());
                        break;
                    }
                    if c.input.len() >= MAX_HEAD {
                        return true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return true,
            }
        }
    }
    loop {
        match (&c.stream).write(&c.output) {
            Ok(0) => return true,
            Ok(n) => {
                c.output.drain(..n);
                if c.output.is_empty() {
                    return true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_gets_the_metrics_and_anything_else_an_error() {
        let ok = answer(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", || {
            "m 1\n".into()
        });
        let ok = String::from_utf8(ok).unwrap();
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("Content-Length: 4\r\n"), "{ok}");
        assert!(ok.ends_with("\r\n\r\nm 1\n"), "{ok}");
        let called = std::cell::Cell::new(false);
        let other = answer(b"GET / HTTP/1.1\r\n\r\n", || {
            called.set(true);
            String::new()
        });
        assert!(String::from_utf8(other)
            .unwrap()
            .starts_with("HTTP/1.1 404"));
        let post = answer(b"POST /metrics HTTP/1.1\r\n\r\n", String::new);
        assert!(String::from_utf8(post).unwrap().starts_with("HTTP/1.1 405"));
        assert!(!called.get(), "metrics are encoded only for a scrape");
        assert!(head_done(b"GET /metrics HTTP/1.0\n\n"));
        assert!(!head_done(b"GET /metrics HTTP/1.1\r\n"));
    }

    #[test]
    fn a_metrics_address_off_loopback_is_refused_naming_it() {
        let e = bind("0.0.0.0:0".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("--metrics 0.0.0.0:0"), "{e}");
    }
}
