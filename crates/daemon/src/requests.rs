//! What each request does (docs/service.md, Protocol and Permissions), apart
//! from how its bytes travel (the `server` module): the caller's credentials
//! come from the kernel (`SO_PEERCRED`), never from the request; the work is
//! left for the loop in the shared state, and what the connection does next
//! is returned as data ([`Next`]).
//!
//! A user may register, query and release only processes it owns; root may
//! act on any. Every refusal says why.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Instant;

use coloc_model::trace::ExitStatus;
use coloc_model::workload::to_app_name;
use coloc_policy::Policy;

use crate::protocol::{Reply, Request, Status};
use crate::shared::{Answer, Entry, Kind, Release, Shared, Waker};

/// Builds a policy by name (the CLI's choice of policies), for `policy set`.
pub type PolicyFactory = Arc<dyn Fn(&str) -> Result<Box<dyn Policy>, String> + Send + Sync>;

/// Most apps one user may have registered at once (docs/service.md, Limits).
pub const MAX_APPS_PER_UID: usize = 256;

/// What every request needs besides the shared state.
#[derive(Clone)]
pub struct Context {
    pub shared: Shared,
    pub factory: PolicyFactory,
    pub proc_root: PathBuf,
    pub started: Instant,
    pub cpus: String,
    /// The user the daemon runs as (may switch its policy, like root).
    pub owner: u32,
    /// Wakes the socket's thread when the loop answers.
    pub wake: Waker,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("proc_root", &self.proc_root)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// The caller, as the kernel saw it connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub pid: u32,
    pub uid: u32,
}

/// A refusal, with what the caller is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// What a connection does once its request is handled.
#[derive(Debug)]
pub enum Next {
    /// Send this and close.
    Reply(Reply),
    /// Wait for the loop to admit (or refuse) `app`; a client that goes
    /// away first cancels it. An admitted `exec` then waits for its
    /// client's `exited`.
    Admission {
        app: u32,
        answer: Receiver<Reply>,
        exec: bool,
    },
    /// Wait for the loop to let an app go, then send its answer.
    Release { answer: Receiver<Reply> },
}

/// The owner of process `pid` (of its /proc directory).
fn owner_of(proc_root: &Path, pid: u32) -> Result<u32, Refused> {
    std::fs::metadata(proc_root.join(pid.to_string()))
        .map(|m| m.uid())
        .map_err(|_| Refused(format!("no process {pid}")))
}

/// How `pid`, to be held before its exec, came: the caller itself (a Slurm
/// task registering itself from the SPANK plugin, docs/slurm.md) or a child
/// of the caller (`coloc exec`). Anything else is refused: only a process
/// and its parent know it is waiting to exec.
fn held_kind(ctx: &Context, peer: Peer, pid: u32) -> Result<Kind, Refused> {
    if pid == peer.pid {
        return Ok(Kind::Task);
    }
    let parent = procfs::process::Process::new_with_root(ctx.proc_root.join(pid.to_string()))
        .and_then(|p| p.stat())
        .map(|s| s.ppid as u32)
        .map_err(|_| Refused(format!("no process {pid}")))?;
    if parent != peer.pid {
        return Err(Refused(format!(
            "process {pid} is neither the caller (pid {}) nor its child",
            peer.pid
        )));
    }
    Ok(Kind::Exec)
}

/// How a task that registered itself ended, reported on a connection of its
/// own (slurmstepd, once it has reaped the task): the loop records it and
/// lets the app go.
fn task_exited(ctx: &Context, peer: Peer, pid: u32, status: ExitStatus) -> Result<Next, Refused> {
    let mut state = ctx.shared.lock();
    let app = state
        .app_of(pid)
        .ok_or_else(|| Refused(format!("process {pid} is not managed by coloc")))?;
    let e = state.apps.get_mut(&app).expect("found above");
    if e.kind != Kind::Task {
        return Err(Refused(format!(
            "process {pid} did not register itself: its end is its client's to report"
        )));
    }
    if peer.uid != 0 && peer.uid != e.uid {
        return Err(Refused(format!(
            "process {pid} belongs to uid {}; uid {} may report only its own processes",
            e.uid, peer.uid
        )));
    }
    e.reported = Some(status);
    Ok(Next::Reply(Reply::Released { app }))
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

/// Does what `request` asks for `peer`.
pub fn handle(request: Request, peer: Peer, ctx: &Context) -> Result<Next, Refused> {
    match request {
        Request::Exec {
            name,
            class,
            malleable,
            threads,
            pid,
            argv,
            job,
        } => {
            may_act(ctx, peer, pid)?;
            let kind = held_kind(ctx, peer, pid)?;
            let program = argv.first().cloned().unwrap_or_default();
            let mut e = Entry::new(name, kind, pid, peer.uid, program);
            e.class = class;
            e.malleable = malleable;
            e.threads = threads;
            e.job = job;
            let (app, answer) = register(ctx, e)?;
            Ok(Next::Admission {
                app,
                answer,
                exec: true,
            })
        }
        Request::Exited {
            status,
            pid: Some(pid),
        } => task_exited(ctx, peer, pid, status),
        Request::Exited { pid: None, .. } => Err(Refused(
            "`exited` without a pid belongs on the connection of an admitted exec".into(),
        )),
        Request::Attach { pid, name, class } => {
            may_act(ctx, peer, pid)?;
            let uid = owner_of(&ctx.proc_root, pid)?;
            let program = std::fs::read_link(ctx.proc_root.join(format!("{pid}/exe")))
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            // A process names itself (`comm`, set with prctl): any bytes.
            let name = name.unwrap_or_else(|| {
                std::fs::read_to_string(ctx.proc_root.join(format!("{pid}/comm")))
                    .map(|c| to_app_name(c.trim()))
                    .unwrap_or_else(|_| format!("pid-{pid}"))
            });
            let mut e = Entry::new(name, Kind::Attach, pid, uid, program);
            e.class = class;
            let (app, answer) = register(ctx, e)?;
            Ok(Next::Admission {
                app,
                answer,
                exec: false,
            })
        }
        Request::Release { pid } => release(ctx, peer, pid),
        Request::Status => Ok(Next::Reply(Reply::Status(status(ctx, peer)))),
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
            Ok(Next::Reply(Reply::Policy { policy: name }))
        }
    }
}

fn release(ctx: &Context, peer: Peer, pid: u32) -> Result<Next, Refused> {
    let (tx, rx) = Answer::channel(&ctx.wake);
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
            r.send(Reply::Error {
                message: "released before it was admitted".into(),
            });
        }
        tx.send(Reply::Released { app });
    }
    Ok(Next::Release { answer: rx })
}

/// What `peer` may see: its own apps (root: all).
fn status(ctx: &Context, peer: Peer) -> Status {
    let state = ctx.shared.lock();
    Status {
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
    }
}

/// Registers `e` for the loop; returns its number and where its answer comes.
fn register(ctx: &Context, mut e: Entry) -> Result<(u32, Receiver<Reply>), Refused> {
    let (tx, rx) = Answer::channel(&ctx.wake);
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
    let theirs = state
        .apps
        .values()
        .filter(|a| a.uid == e.uid && a.cancelled.is_none())
        .count();
    if e.uid != 0 && theirs >= MAX_APPS_PER_UID {
        return Err(Refused(format!(
            "uid {} has {theirs} apps under the daemon, the most one user may have",
            e.uid
        )));
    }
    let pid = e.pid;
    let app = state.register(e);
    tracing::info!(app, pid, "registered");
    Ok((app, rx))
}

/// The client of `app` went away before it was admitted: the loop drops it.
pub fn cancel(ctx: &Context, app: u32) {
    if let Some(e) = ctx.shared.lock().apps.get_mut(&app) {
        if !e.running {
            e.cancelled = Some("its client went away before it was admitted".into());
        }
    }
}

/// The admitted `exec` client of `app` reported how its command ended (None:
/// it closed its connection without saying; a task's end comes later, on a
/// connection of its own, and is not overwritten).
pub fn exited(ctx: &Context, app: u32, status: Option<ExitStatus>) {
    if let Some(e) = ctx.shared.lock().apps.get_mut(&app) {
        if status.is_some() {
            e.reported = status;
        }
        e.client_gone = true;
    }
}
