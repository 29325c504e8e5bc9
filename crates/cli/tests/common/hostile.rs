//! Hostile clients of the control socket (docs/service.md, Limits), run as
//! another user: the test binary runs itself as that user, with the role in
//! its environment, and only the test [`ROLE_TEST`] (which does nothing
//! otherwise) plays it. Each role prints what it saw as `hostile: KEY VALUE`
//! lines.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The most resident memory root's daemon may use under attack, in KiB: its
/// memory at rest (about 20 MiB, docs/service.md, Tests and churn) plus
/// every connection's request buffer at the bounds (docs/service.md,
/// Limits: 128 connections of one user × 64 KiB = 8 MiB), with room for
/// the allocator; the attacks grew it to 1.2 to 3 GB.
pub const RSS_BOUND_KIB: u64 = 96 * 1024;

/// The environment variable that carries the role.
const ROLE: &str = "COLOC_HOSTILE_ROLE";
const SOCKET: &str = "COLOC_HOSTILE_SOCKET";

/// The name of the test that plays a role; every test file that uses this
/// module has one, calling [`play`].
pub const ROLE_TEST: &str = "hostile_client_role";

/// Starts this test binary as `uid`, playing `role` against `socket`.
pub fn spawn(uid: u32, socket: &Path, role: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([ROLE_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(SOCKET, socket)
        .uid(uid)
        .gid(uid)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// What a role printed: the values of its `hostile: KEY VALUE` lines.
pub fn said(out: &std::process::Output, key: &str) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        // The first is on the line of the test's name.
        .filter_map(|l| Some(l.split_once("hostile: ")?.1))
        .filter_map(|l| l.strip_prefix(key))
        .filter_map(|l| l.strip_prefix(' '))
        .map(str::to_string)
        .collect()
}

/// Plays the role in the environment, if any.
pub fn play() {
    let Some(role) = std::env::var_os(ROLE) else {
        return;
    };
    let socket = std::env::var_os(SOCKET).expect("the socket");
    let socket = Path::new(&socket);
    let role = role.to_string_lossy().into_owned();
    let (name, arg) = role.split_once(':').unwrap_or((&role, ""));
    match name {
        "long-line" => long_line(socket, arg.parse().unwrap()),
        "idle" => {
            let (n, secs) = arg.split_once(':').unwrap();
            idle(socket, n.parse().unwrap(), secs.parse().unwrap())
        }
        "half-line" => half_line(socket, arg.parse().unwrap()),
        "raw" => println!("hostile: reply {}", raw(socket, arg)),
        "soak" => soak(socket, arg.parse().unwrap()),
        "fake-manager" => fake_manager(arg.parse().unwrap()),
        other => panic!("no role {other}"),
    }
}

fn connect(socket: &Path) -> Option<UnixStream> {
    let s = UnixStream::connect(socket).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(20))).ok()?;
    Some(s)
}

/// Sends `line` and a newline; the answer line, or what went wrong.
pub fn raw(socket: &Path, line: &str) -> String {
    let Some(mut s) = connect(socket) else {
        return "no connection".into();
    };
    if s.write_all(format!("{line}\n").as_bytes()).is_err() {
        return "write failed".into();
    }
    answer(&mut s)
}

fn answer(s: &mut UnixStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.contains(&b'\n') {
            break;
        }
    }
    String::from_utf8_lossy(&got).trim().to_string()
}

/// One line of `bytes` bytes without end, in 1 MiB writes until the daemon
/// closes the connection.
fn long_line(socket: &Path, bytes: usize) {
    let mut s = connect(socket).expect("a connection");
    let reader = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || answer(&mut s))
    };
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0;
    while sent < bytes && s.write_all(&chunk).is_ok() {
        sent += chunk.len();
    }
    println!("hostile: sent {sent}");
    println!("hostile: reply {}", reader.join().unwrap());
}

/// Opens `n` connections and holds those accepted for `secs`.
fn idle(socket: &Path, n: usize, secs: u64) {
    let mut held = Vec::new();
    let mut refused = 0;
    let mut failed = 0;
    for _ in 0..n {
        match UnixStream::connect(socket) {
            Ok(s) => held.push(s),
            Err(_) => failed += 1,
        }
    }
    // Those refused were answered and closed at once.
    std::thread::sleep(Duration::from_millis(500));
    for s in &held {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 512];
        if let Ok(n) = (&*s).read(&mut buf) {
            if n > 0 && String::from_utf8_lossy(&buf[..n]).contains("connections open") {
                refused += 1;
            }
        }
    }
    println!("hostile: connected {}", held.len());
    println!("hostile: refused {refused}");
    println!("hostile: failed {failed}");
    std::thread::sleep(Duration::from_secs(secs));
}

/// Opens `n` connections each sending half a request, and measures how long
/// the daemon keeps the slowest.
fn half_line(socket: &Path, n: usize) {
    let started = Instant::now();
    let mut conns: Vec<UnixStream> = (0..n)
        .filter_map(|_| {
            let mut s = connect(socket)?;
            s.write_all(b"{\"v\":1,\"request\":\"sta").ok()?;
            Some(s)
        })
        .collect();
    let mut longest = Duration::ZERO;
    for s in &mut conns {
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        longest = longest.max(started.elapsed());
    }
    println!("hostile: held {}", conns.len());
    println!("hostile: closed-after-ms {}", longest.as_millis());
}

/// Everything at once for `secs` seconds: oversized lines, floods of
/// connections, slow writers, bad fields, a FIFO as a malleable program.
fn soak(socket: &Path, secs: u64) {
    let until = Instant::now() + Duration::from_secs(secs);
    let dir = std::env::temp_dir().join(format!("coloc-hostile-{}", std::process::id()));
    let _ = std::fs::create_dir(&dir);
    let fifo = dir.join("fifo");
    let _ = nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600));
    let fifo = fifo.display().to_string();
    let workers: Vec<_> = (0..6)
        .map(|k| {
            let socket = socket.to_path_buf();
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while Instant::now() < until {
                    match k {
                        0 => {
                            // 8 MiB without a newline.
                            if let Some(mut s) = connect(&socket) {
                                let chunk = vec![b'y'; 1 << 20];
                                for _ in 0..8 {
                                    if s.write_all(&chunk).is_err() {
                                        break;
                                    }
                                }
                            }
                        }
                        1 => {
                            // 5,000 connections, held a moment.
                            let held: Vec<_> = (0..5000)
                                .filter_map(|_| UnixStream::connect(&socket).ok())
                                .collect();
                            std::thread::sleep(Duration::from_millis(200));
                            drop(held);
                        }
                        2 => {
                            // Slow writers: a byte every 100 ms.
                            let mut conns: Vec<_> =
                                (0..16).filter_map(|_| connect(&socket)).collect();
                            for b in b"{\"v\":1,\"request\":\"status\"}\n" {
                                for s in &mut conns {
                                    let _ = s.write_all(&[*b]);
                                }
                                std::thread::sleep(Duration::from_millis(100));
                                if Instant::now() > until {
                                    break;
                                }
                            }
                        }
                        3 => {
                            for line in BAD_LINES {
                                raw(&socket, line);
                            }
                        }
                        4 => {
                            // A FIFO and a device as malleable programs.
                            for program in [fifo.as_str(), "/dev/zero"] {
                                malleable_exec(&socket, program);
                            }
                        }
                        _ => {
                            raw(&socket, "{\"v\":1,\"request\":\"status\"}");
                        }
                    }
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let rounds: Vec<u64> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let _ = std::fs::remove_dir_all(&dir);
    println!("hostile: rounds {rounds:?}");
}

/// `coloc exec --malleable -- PROGRAM`, ended after 2 s if it waits.
fn malleable_exec(socket: &Path, program: &str) {
    let Ok(mut c) = Command::new(env!("CARGO_BIN_EXE_coloc"))
        .arg("exec")
        .arg("--socket")
        .arg(socket)
        .args(["--malleable", "--", program])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return;
    };
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if c.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// Requests with bad fields.
pub const BAD_LINES: &[&str] = &[
    "{\"v\":1,\"request\":\"exec\",\"name\":\"\\u001b[2J\\u001b]0;pwned\\u0007\",\"class\":\"batch\",\"malleable\":false,\"threads\":1,\"pid\":1,\"argv\":[\"x\"]}",
    "{\"v\":1,\"request\":\"exec\",\"name\":\"x\",\"class\":\"batch\",\"malleable\":false,\"threads\":4294967295,\"pid\":1,\"argv\":[\"x\"]}",
    "{\"v\":1,\"request\":\"attach\",\"pid\":1,\"name\":null,\"class\":\"batch\"}",
    "{\"v\":1,\"request\":\"release\",\"pid\":1}",
    "{\"v\":1,\"request\":\"set_policy\",\"policy\":\"native\"}",
    "{\"v\":1,\"request\":\"exited\",\"status\":{\"kind\":\"code\",\"value\":0}}",
    "{\"v\":1,\"request\":\"attach\",\"pid\":0,\"name\":null,\"class\":\"batch\"}",
    "{\"v\":7}",
    "\u{0}\u{1}\u{2}garbage",
];

/// Listens on a name of the form every coloc manager registers
/// (docs/safety.md, One manager per machine) for `secs`, never accepting:
/// a user's fake registration.
fn fake_manager(secs: u64) {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("coloc-manager.{}.00000000deadbeef", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    println!("hostile: listening @{name}");
    std::thread::sleep(Duration::from_secs(secs));
}
