//! The control socket against hostile clients, without the Manager's loop
//! (docs/service.md, Limits): a test here stands in for the loop where one
//! is needed. Needs no root: the bounds that apply to the caller's uid are
//! the ones tested.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coloc_daemon::protocol::{Reply, MAX_REQUEST};
use coloc_daemon::requests::Context;
use coloc_daemon::server::{serve, Limits};
use coloc_daemon::shared::{Shared, Waker};

struct Daemon {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    shared: Shared,
}

/// A socket served with `limits`, the loop played by the test.
fn daemon(limits: Limits) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let shared = Shared::default();
    shared.lock().policy = "test".into();
    let (wake, woken) = Waker::pair().unwrap();
    let ctx = Context {
        shared: shared.clone(),
        factory: Arc::new(|_: &str| Err("no policies here".to_string())),
        proc_root: PathBuf::from("/proc"),
        started: Instant::now(),
        cpus: "0".into(),
        owner: nix::unistd::geteuid().as_raw(),
        wake,
        checks: Default::default(),
    };
    std::thread::spawn(move || serve(listener, ctx, woken, limits));
    Daemon {
        _dir: dir,
        socket,
        shared,
    }
}

/// The limits, with the bound on the caller's own connections at `n`.
fn own_bound(n: usize, limits: Limits) -> Limits {
    if nix::unistd::geteuid().is_root() {
        Limits { root: n, ..limits }
    } else {
        Limits {
            per_uid: n,
            ..limits
        }
    }
}

fn ask(d: &Daemon, line: &str) -> Reply {
    let mut s = UnixStream::connect(&d.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(line.as_bytes()).unwrap();
    read_reply(&s).expect("an answer")
}

fn read_reply(s: &UnixStream) -> Option<Reply> {
    let mut text = String::new();
    BufReader::new(s).read_line(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

fn status_answers(d: &Daemon) {
    match ask(d, "{\"v\":1,\"request\":\"status\"}\n") {
        Reply::Status(s) => assert_eq!(s.policy, "test"),
        other => panic!("status: {other:?}"),
    }
}

fn refusal(r: Option<Reply>) -> String {
    match r {
        Some(Reply::Error { message }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A line without end is refused once past the bound; the daemon goes on.
#[test]
fn an_endless_request_line_is_refused_at_the_bound() {
    let d = daemon(Limits::default());
    let s = UnixStream::connect(&d.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let writer = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || {
            let chunk = vec![b'x'; 1 << 20];
            let mut sent = 0usize;
            // 100 MiB, or until the daemon closes the connection.
            while sent < 100 << 20 && s.write_all(&chunk).is_ok() {
                sent += chunk.len();
            }
            sent
        })
    };
    let message = refusal(read_reply(&s));
    assert!(
        message.contains(&format!("longer than {MAX_REQUEST}")),
        "{message}"
    );
    let sent = writer.join().unwrap();
    assert!(sent < 100 << 20, "the daemon read {sent} bytes of one line");
    status_answers(&d);
}

/// Connections past the caller's bound are answered with the reason and
/// closed; one freed makes room again; the daemon answers all along.
#[test]
fn connections_past_the_bound_are_refused_with_the_reason() {
    let d = daemon(own_bound(3, Limits::default()));
    let held: Vec<UnixStream> = (0..3)
        .map(|_| UnixStream::connect(&d.socket).unwrap())
        .collect();
    // Let the daemon accept them before the one too many.
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..50 {
        let s = UnixStream::connect(&d.socket).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let message = refusal(read_reply(&s));
        assert!(message.contains("connections open"), "{message}");
    }
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    status_answers(&d);
}

/// Half a request does not hold its connection past the request timeout.
#[test]
fn half_a_request_line_is_dropped_after_the_timeout() {
    let d = daemon(own_bound(
        1,
        Limits {
            request_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
    ));
    let mut s = UnixStream::connect(&d.socket).unwrap();
    s.write_all(b"{\"v\":1,\"req").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(started.elapsed() < Duration::from_secs(9), "never closed");
    assert!(rest.is_empty(), "{rest:?}");
    // Its slot is free again (the bound is 1).
    status_answers(&d);
}

/// Slow writers, bad fields and garbage, all at once, against a bound of
/// 8: every client gets an answer or a closed connection, and the daemon
/// answers throughout (docs/service.md, Limits; the same with clients of
/// another user and root's status is `crates/cli/tests/daemon_hostile.rs`).
#[test]
fn hostile_clients_get_refusals_and_the_daemon_answers_throughout() {
    let d = daemon(own_bound(
        8,
        Limits {
            request_timeout: Duration::from_millis(500),
            ..Limits::default()
        },
    ));
    let lines = [
        "{\"v\":1,\"request\":\"exec\",\"name\":\"\\u001b[31m\",\"class\":\"batch\",\"malleable\":false,\"threads\":1,\"pid\":1,\"argv\":[\"x\"]}\n",
        "{\"v\":1,\"request\":\"exec\",\"name\":\"x\",\"class\":\"batch\",\"malleable\":false,\"threads\":4294967295,\"pid\":1,\"argv\":[\"x\"]}\n",
        "\u{0}\u{1}\u{2}\n",
        "{\"v\":1,\"request\":\"set_policy\",\"policy\":\"x\"}\n",
        "{\"v\":1,\"request\":\"exited\",\"status\":{\"kind\":\"code\",\"value\":0}}\n",
    ];
    let mut clients = Vec::new();
    for k in 0..40 {
        let path = d.socket.clone();
        let line = lines[k % lines.len()].to_string();
        clients.push(std::thread::spawn(move || {
            let Ok(mut s) = UnixStream::connect(&path) else {
                return;
            };
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            // Every third writes a byte at a time.
            if k % 3 == 0 {
                for b in line.bytes() {
                    if s.write_all(&[b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            } else {
                let _ = s.write_all(line.as_bytes());
            }
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer);
        }));
        if k % 10 == 0 {
            // The clients share the test's uid: the answer may be the bound.
            match ask(&d, "{\"v\":1,\"request\":\"status\"}\n") {
                Reply::Status(_) => {}
                Reply::Error { message } => assert!(message.contains("connections open")),
                other => panic!("{other:?}"),
            }
        }
    }
    for c in clients {
        c.join().unwrap();
    }
    status_answers(&d);
}

/// A request waiting for the loop is answered when the loop answers, and
/// cancelled when its client goes away first.
#[test]
fn a_waiting_request_gets_the_loops_answer_and_a_client_gone_cancels_it() {
    let d = daemon(Limits::default());
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = sleeper.id();
    let attach = format!(
        "{{\"v\":1,\"request\":\"attach\",\"pid\":{pid},\"name\":\"s\",\"class\":\"batch\"}}\n"
    );
    let mut s = UnixStream::connect(&d.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(attach.as_bytes()).unwrap();
    let app = wait_registered(&d);
    // The loop admits it.
    {
        let mut state = d.shared.lock();
        let e = state.apps.get_mut(&app).unwrap();
        e.running = true;
        e.reply
            .as_ref()
            .unwrap()
            .send(Reply::Attached { app, notes: vec![] });
    }
    assert_eq!(read_reply(&s), Some(Reply::Attached { app, notes: vec![] }));
    d.shared.lock().apps.clear();

    let mut s = UnixStream::connect(&d.socket).unwrap();
    s.write_all(attach.as_bytes()).unwrap();
    let app = wait_registered(&d);
    drop(s);
    let until = Instant::now() + Duration::from_secs(10);
    while d.shared.lock().apps[&app].cancelled.is_none() {
        assert!(Instant::now() < until, "not cancelled");
        std::thread::sleep(Duration::from_millis(20));
    }
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

fn wait_registered(d: &Daemon) -> u32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(app) = d.shared.lock().apps.keys().next().copied() {
            return app;
        }
        assert!(Instant::now() < until, "never registered");
        std::thread::sleep(Duration::from_millis(20));
    }
}
