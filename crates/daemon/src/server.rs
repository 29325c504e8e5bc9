//! The control socket (docs/service.md, Protocol and Permissions): one thread
//! accepts, one thread per connection reads its request, checks the caller's
//! credentials (`SO_PEERCRED`, given by the kernel, not by the client) and
//! leaves the work for the loop in the shared state.
//!
//! A user may register, query and release only processes it owns; root may
//! act on any. Every refusal is answered with the reason and logged.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coloc_policy::Policy;
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

use crate::protocol::{Envelope, Reply, Request, Status, PROTOCOL_VERSION};
use crate::shared::{Entry, Kind, Release, Shared};

/// Builds a policy by name (the CLI's choice of policies), for `policy set`.
pub type PolicyFactory = Arc<dyn Fn(&str) -> Result<Box<dyn Policy>, String> + Send + Sync>;

/// What every connection needs besides the shared state.
#[derive(Clone)]
pub struct Context {
    pub shared: Shared,
    pub factory: PolicyFactory,
    pub proc_root: PathBuf,
    pub started: Instant,
    pub cpus: String,
    /// The user the daemon runs as (may switch its policy, like root).
    pub owner: u32,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("proc_root", &self.proc_root)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// How often a waiting connection checks that its client is still there.
const CHECK: Duration = Duration::from_millis(100);

/// Serves `listener` until the process ends.
pub fn serve(listener: UnixListener, ctx: Context) {
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                let ctx = ctx.clone();
                std::thread::spawn(move || {
                    if let Err(e) = connection(s, &ctx) {
                        tracing::debug!("connection: {e}");
                    }
                });
            }
            Err(e) => tracing::warn!("accepting a connection: {e}"),
        }
    }
}

/// The caller, as the kernel saw it connect.
#[derive(Debug, Clone, Copy)]
struct Peer {
    pid: u32,
    uid: u32,
}

fn send(stream: &mut UnixStream, reply: &Reply) -> io::Result<()> {
    let mut line = serde_json::to_string(reply).map_err(io::Error::other)?;
    line.push('\n');
    stream.write_all(line.as_bytes())
}

fn connection(mut stream: UnixStream, ctx: &Context) -> io::Result<()> {
    let cred = getsockopt(&stream, PeerCredentials).map_err(io::Error::from)?;
    let peer = Peer {
        pid: cred.pid() as u32,
        uid: cred.uid(),
    };
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(());
    }
    let request = match parse(&line) {
        Ok(r) => r,
        Err(message) => {
            tracing::warn!(uid = peer.uid, pid = peer.pid, "refused: {message}");
            return send(&mut stream, &Reply::Error { message });
        }
    };
    match handle(request, peer, ctx, &mut stream, &mut reader) {
        Ok(()) => Ok(()),
        Err(Refused(message)) => {
            tracing::warn!(uid = peer.uid, pid = peer.pid, "refused: {message}");
            send(&mut stream, &Reply::Error { message })
        }
    }
}

/// A request's line, checked for its version.
fn parse(line: &str) -> Result<Request, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not a JSON request: {e}"))?;
    match value.get("v").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(PROTOCOL_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "protocol version {v} is not spoken here (this daemon speaks {PROTOCOL_VERSION})"
            ))
        }
        None => return Err("field `v` (the protocol version) is missing".into()),
    }
    serde_json::from_value::<Envelope>(value)
        .map(|e| e.request)
        .map_err(|e| format!("bad request: {e}"))
}

/// A refusal, with what the caller is told.
struct Refused(String);

/// The owner of process `pid` (of its /proc directory).
fn owner_of(proc_root: &Path, pid: u32) -> Result<u32, Refused> {
    std::fs::metadata(proc_root.join(pid.to_string()))
        .map(|m| m.uid())
        .map_err(|_| Refused(format!("no process {pid}")))
}

/// `peer` may act on `pid`: root, or its owner.
fn may_act(ctx: &Context, peer: Peer, pid: u32) -> Result<(), Refused> {
    let owner = owner_of(&ctx.proc_root, pid)?;
    if peer.uid == 0 || peer.uid == owner {
        Ok(())
    } else {
        Err(Refused(format!(
            "process {pid} belongs to uid {owner}; uid {} may manage only its own processes",
            peer.uid
        )))
    }
}

fn handle(
    request: Request,
    peer: Peer,
    ctx: &Context,
    stream: &mut UnixStream,
    reader: &mut BufReader<UnixStream>,
) -> Result<(), Refused> {
    let io = |e: io::Error| Refused(format!("writing the reply: {e}"));
    match request {
        Request::Exec {
            name,
            class,
            malleable,
            threads,
            pid,
            argv,
        } => {
            may_act(ctx, peer, pid)?;
            let parent =
                procfs::process::Process::new_with_root(ctx.proc_root.join(pid.to_string()))
                    .and_then(|p| p.stat())
                    .map(|s| s.ppid as u32)
                    .map_err(|_| Refused(format!("no process {pid}")))?;
            if parent != peer.pid {
                return Err(Refused(format!(
                    "process {pid} is not a child of the caller (pid {})",
                    peer.pid
                )));
            }
            let program = argv.first().cloned().unwrap_or_default();
            let mut e = Entry::new(name, Kind::Exec, pid, peer.uid, program);
            e.class = class;
            e.malleable = malleable;
            e.threads = threads;
            let (app, reply) = register(ctx, e)?;
            let reply = wait_for(ctx, app, &reply, stream, reader)?;
            let admitted = matches!(reply, Reply::Admitted { .. });
            send(stream, &reply).map_err(io)?;
            if admitted {
                follow_exec(ctx, app, reader);
            }
            Ok(())
        }
        Request::Exited { .. } => Err(Refused(
            "`exited` belongs on the connection of an admitted exec".into(),
        )),
        Request::Attach { pid, name, class } => {
            may_act(ctx, peer, pid)?;
            let uid = owner_of(&ctx.proc_root, pid)?;
            let program = std::fs::read_link(ctx.proc_root.join(format!("{pid}/exe")))
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let name = name.unwrap_or_else(|| {
                std::fs::read_to_string(ctx.proc_root.join(format!("{pid}/comm")))
                    .map(|c| c.trim().to_string())
                    .unwrap_or_else(|_| format!("pid-{pid}"))
            });
            let mut e = Entry::new(name, Kind::Attach, pid, uid, program);
            e.class = class;
            let (app, reply) = register(ctx, e)?;
            let reply = wait_for(ctx, app, &reply, stream, reader)?;
            send(stream, &reply).map_err(io)
        }
        Request::Release { pid } => {
            let (tx, rx) = mpsc::channel();
            {
                let mut state = ctx.shared.lock();
                let app = state
                    .app_of(pid)
                    .ok_or_else(|| Refused(format!("process {pid} is not managed by coloc")))?;
                let e = &state.apps[&app];
                if peer.uid != 0 && peer.uid != e.uid {
                    return Err(Refused(format!(
                        "process {pid} belongs to uid {}; uid {} may release only its own processes",
                        e.uid, peer.uid
                    )));
                }
                if e.running {
                    state.releases.push(Release { app, reply: tx });
                } else {
                    let e = state.apps.get_mut(&app).expect("found above");
                    e.cancelled = Some("released before it was admitted".into());
                    if let Some(r) = e.reply.take() {
                        let _ = r.send(Reply::Error {
                            message: "released before it was admitted".into(),
                        });
                    }
                    let _ = tx.send(Reply::Released { app });
                }
            }
            let reply = rx
                .recv()
                .map_err(|_| Refused("the daemon is stopping".into()))?;
            send(stream, &reply).map_err(io)
        }
        Request::Status => {
            let state = ctx.shared.lock();
            let status = Status {
                policy: state.policy.clone(),
                daemon_pid: std::process::id(),
                uptime_secs: ctx.started.elapsed().as_secs_f64(),
                cpus: ctx.cpus.clone(),
                apps: state
                    .apps
                    .iter()
                    .filter(|(_, e)| e.cancelled.is_none())
                    .filter(|(_, e)| peer.uid == 0 || e.uid == peer.uid)
                    .map(|(a, e)| e.status(*a))
                    .collect(),
                last_reason: state.last_reason.clone(),
            };
            drop(state);
            send(stream, &Reply::Status(status)).map_err(io)
        }
        Request::SetPolicy { policy } => {
            if peer.uid != 0 && peer.uid != ctx.owner {
                return Err(Refused(format!(
                    "only root or the daemon's user (uid {}) may switch its policy",
                    ctx.owner
                )));
            }
            let p = (ctx.factory)(&policy).map_err(Refused)?;
            let name = p.name().to_string();
            {
                let mut state = ctx.shared.lock();
                state.switch_to = Some(p);
                state.policy = name.clone();
            }
            tracing::info!(uid = peer.uid, "policy switched to {name}");
            send(stream, &Reply::Policy { policy: name }).map_err(io)
        }
    }
}

type Answer = mpsc::Receiver<Reply>;

/// Registers `e` for the loop; returns its number and where its answer comes.
fn register(ctx: &Context, mut e: Entry) -> Result<(u32, Answer), Refused> {
    let (tx, rx) = mpsc::channel();
    e.reply = Some(tx);
    let mut state = ctx.shared.lock();
    if state.stopping {
        return Err(Refused("the daemon is stopping".into()));
    }
    if let Some(app) = state.app_of(e.pid) {
        return Err(Refused(format!(
            "process {} is managed already (app {app})",
            e.pid
        )));
    }
    let pid = e.pid;
    let app = state.register(e);
    tracing::info!(app, pid, "registered");
    Ok((app, rx))
}

/// Waits for the loop's answer about `app`; a client that goes away first
/// cancels it.
fn wait_for(
    ctx: &Context,
    app: u32,
    answer: &Answer,
    stream: &UnixStream,
    reader: &mut BufReader<UnixStream>,
) -> Result<Reply, Refused> {
    let _ = stream.set_read_timeout(Some(CHECK));
    loop {
        match answer.recv_timeout(CHECK) {
            Ok(reply) => {
                let _ = stream.set_read_timeout(None);
                return Ok(reply);
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Refused("the daemon is stopping".into()))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let gone = match reader.fill_buf() {
            Ok(buf) => buf.is_empty(),
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ),
        };
        if gone {
            if let Some(e) = ctx.shared.lock().apps.get_mut(&app) {
                if !e.running {
                    e.cancelled = Some("its client went away before it was admitted".into());
                }
            }
            return Err(Refused("client went away".into()));
        }
    }
}

/// Reads the admitted `exec` client's report of how its command ended.
fn follow_exec(ctx: &Context, app: u32, reader: &mut BufReader<UnixStream>) {
    let mut line = String::new();
    let status = match reader.read_line(&mut line) {
        Ok(n) if n > 0 => match parse(&line) {
            Ok(Request::Exited { status }) => Some(status),
            _ => None,
        },
        _ => None,
    };
    if let Some(e) = ctx.shared.lock().apps.get_mut(&app) {
        e.reported = status;
        e.client_gone = true;
    }
}
