//! What each request does (docs/service.md, Protocol and Permissions), apart
//! from how its bytes travel (the `server` module): the caller's credentials
//! come from the kernel (`SO_PEERCRED`), never from the request; the work is
//! left for the loop in the shared state, and what the connection does next
//! is returned as data ([`Next`]).
//!
//! A user may register, query and release only processes it owns; root may
//! act on any. Every refusal says why.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use coloc_linux::credentials::{spawn_as, Creds};
use coloc_linux::machine::{check_program, ProgramCheck};
use coloc_model::trace::ExitStatus;
use coloc_model::workload::to_app_name;
use coloc_policy::Policy;

use crate::protocol::{AppWhy, Reply, Request, Status};
use crate::shared::{Answer, Check, Entry, Kind, Release, Shared, Waker};

/// Builds a policy by name (the CLI's choice of policies), for `policy set`.
/// Its error is text on purpose: it is the refusal the client is sent over
/// the socket (`Reply::Error`), and the factory is the binary's, which
/// renders its own error chain into it; nothing here inspects it.
pub type PolicyFactory = Arc<dyn Fn(&str) -> Result<Box<dyn Policy>, String> + Send + Sync>;

/// Most apps one user may have registered at once (docs/service.md, Limits).
pub const MAX_APPS_PER_UID: usize = 256;

/// Most program checks running at once, and for one user (docs/service.md,
/// Limits).
pub const MAX_CHECKS: usize = 4;
pub const MAX_CHECKS_PER_UID: usize = 1;

/// `flags` of a kernel thread (`PF_KTHREAD`, field 9 of its stat).
const PF_KTHREAD: u32 = 0x0020_0000;

/// Most parents walked up from a process (a bound, not a depth any real
/// tree has).
const MAX_DEPTH: usize = 4096;

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
    /// Program checks running now.
    pub checks: Checks,
}

/// Program checks running now, per user.
#[derive(Debug, Clone, Default)]
pub struct Checks(Arc<Mutex<HashMap<u32, usize>>>);

/// One running check, counted until dropped (its work ended, or never ran).
struct Running {
    checks: Checks,
    uid: u32,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = self.checks.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = running.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                running.remove(&self.uid);
            }
        }
    }
}

impl Checks {
    /// Counts one more check of `uid`'s; None when over a bound.
    fn start(&self, uid: u32) -> Option<Running> {
        let mut running = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let theirs = running.get(&uid).copied().unwrap_or(0);
        if theirs >= MAX_CHECKS_PER_UID || running.values().sum::<usize>() >= MAX_CHECKS {
            return None;
        }
        *running.entry(uid).or_default() += 1;
        Some(Running {
            checks: self.clone(),
            uid,
        })
    }
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
    /// Wait for the check of a malleable `exec`'s program, then register it
    /// ([`checked`]): the loop never sees an app whose check is running.
    Check { entry: Box<Entry> },
    /// Wait for the loop to let an app go, then send its answer.
    Release { answer: Receiver<Reply> },
}

/// What /proc says of a process, read through one handle on its directory:
/// every fact is of the same process, whatever holds the pid later.
#[derive(Debug, Clone, Copy)]
struct Facts {
    pid: u32,
    /// Field 22 of its stat: with the pid, its identity.
    start: u64,
    /// The owner of its /proc directory.
    uid: u32,
    ppid: u32,
    zombie: bool,
    kernel: bool,
    /// Its thread group (the process; not `pid` for a thread's id).
    tgid: u32,
}

/// How `pid`, to be held before its exec, came: the caller itself (a Slurm
/// task registering itself from the SPANK plugin, docs/slurm.md) or a child
/// of the caller (`coloc exec`). Anything else is refused: only a process
/// and its parent know it is waiting to exec.
fn held_kind(peer: Peer, f: &Facts) -> Result<Kind, Refused> {
    if f.pid == peer.pid {
        return Ok(Kind::Task);
    }
    if f.ppid != peer.pid {
        return Err(Refused(format!(
            "process {} is neither the caller (pid {}) nor its child",
            f.pid, peer.pid
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

fn facts(ctx: &Context, pid: u32) -> Result<Facts, Refused> {
    let gone = || Refused(format!("no process {pid}"));
    let p = procfs::process::Process::new_with_root(ctx.proc_root.join(pid.to_string()))
        .map_err(|_| gone())?;
    let stat = p.stat().map_err(|_| gone())?;
    let uid = p.uid().map_err(|_| gone())?;
    let tgid = p.status().map_or(pid, |s| s.tgid.max(0) as u32);
    Ok(Facts {
        pid,
        start: stat.starttime,
        uid,
        ppid: stat.ppid.max(0) as u32,
        zombie: matches!(stat.state, 'Z' | 'X'),
        kernel: stat.flags & PF_KTHREAD != 0,
        tgid,
    })
}

/// The parents of `pid`, nearest first, up to init.
fn ancestors(ctx: &Context, pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut at = pid;
    while out.len() < MAX_DEPTH {
        let Ok(stat) = procfs::process::Process::new_with_root(ctx.proc_root.join(at.to_string()))
            .and_then(|p| p.stat())
        else {
            break;
        };
        let parent = stat.ppid.max(0) as u32;
        if parent == 0 || out.contains(&parent) {
            break;
        }
        out.push(parent);
        at = parent;
    }
    out
}

/// `peer` may act on the process: root, or its owner.
fn may_act(peer: Peer, f: &Facts) -> Result<(), Refused> {
    if peer.uid == 0 || peer.uid == f.uid {
        Ok(())
    } else {
        Err(Refused(format!(
            "process {} belongs to uid {}; uid {} may manage only its own processes",
            f.pid, f.uid, peer.uid
        )))
    }
}

/// Refuses what coloc must not manage (docs/service.md, Permissions): a
/// thread's id, a kernel thread, init, a zombie, the daemon or one of its
/// ancestors, and a process whose tree and a managed app's meet.
fn manageable(ctx: &Context, f: &Facts) -> Result<(), Refused> {
    let pid = f.pid;
    let no = |why: String| Err(Refused(why));
    if f.tgid != pid {
        return no(format!(
            "{pid} is a thread of process {}, not a process: name the process",
            f.tgid
        ));
    }
    if f.kernel {
        return no(format!(
            "process {pid} is a kernel thread: coloc manages user processes only"
        ));
    }
    if pid == 1 {
        return no("process 1 is init: coloc does not manage it".into());
    }
    if f.zombie {
        return no(format!(
            "process {pid} has ended (a zombie waiting for its parent)"
        ));
    }
    let me = std::process::id();
    if pid == me {
        return no(format!("process {pid} is the coloc daemon itself"));
    }
    if ancestors(ctx, me).contains(&pid) {
        return no(format!(
            "process {pid} is an ancestor of the coloc daemon (pid {me})"
        ));
    }
    let managed: Vec<(u32, u32)> = {
        let state = ctx.shared.lock();
        state
            .apps
            .iter()
            .filter(|(_, e)| e.cancelled.is_none())
            .map(|(a, e)| (*a, e.pid))
            .collect()
    };
    let above = ancestors(ctx, pid);
    for (app, m) in managed {
        if m == pid {
            return no(format!("process {pid} is managed already (app {app})"));
        }
        if above.contains(&m) {
            return no(format!(
                "process {pid} is inside app {app} (process {m}), which coloc manages already"
            ));
        }
        if ancestors(ctx, m).contains(&pid) {
            return no(format!(
                "process {pid} has app {app} (process {m}) in its tree: release that app first"
            ));
        }
    }
    Ok(())
}

/// Starts the OpenMP-runtime check of `e`'s program, as the user of its
/// process and off the loop (docs/service.md, coloc exec); None while every
/// slot its user may take is busy (it waits for one).
fn start_check(ctx: &Context, e: &Entry) -> Option<Check> {
    let running = ctx.checks.start(e.uid)?;
    let failed = |why: String| Some(Check::Done(ProgramCheck::failed(why)));
    let pid = e.pid;
    let creds = match Creds::of(&ctx.proc_root, pid) {
        Ok(c) => c,
        Err(err) => return failed(format!("reading the credentials of process {pid}: {err}")),
    };
    let program = e.program.clone();
    let path = std::env::var_os("PATH");
    let wake = ctx.wake.clone();
    let result = spawn_as(
        creds,
        move || {
            let _running = running;
            check_program(&program, path.as_deref())
        },
        move || wake.wake(),
    );
    match result {
        Ok(result) => Some(Check::Running {
            result,
            since: Instant::now(),
        }),
        Err(err) => failed(format!("starting the program check: {err}")),
    }
}

/// Does what `request` asks for `peer`.
pub fn handle(request: Request, peer: Peer, ctx: &Context) -> Result<Next, Refused> {
    match request {
        Request::Exec {
            name,
            class,
            malleable,
            cap_threads,
            threads,
            pid,
            argv,
            job,
        } => {
            let f = facts(ctx, pid)?;
            may_act(peer, &f)?;
            let kind = held_kind(peer, &f)?;
            manageable(ctx, &f)?;
            let program = argv.first().cloned().unwrap_or_default();
            let mut e = Entry::new(name, kind, pid, peer.uid, program);
            e.argv = argv;
            e.class = class;
            e.malleable = malleable;
            e.cap_threads = cap_threads;
            e.threads = threads;
            e.job = job;
            e.start = Some(f.start);
            // The program check tells the runtimes a DoP or a cap acts on.
            if malleable || cap_threads {
                e.check = Some(Check::Queued {
                    since: Instant::now(),
                });
                return Ok(Next::Check { entry: Box::new(e) });
            }
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
            let f = facts(ctx, pid)?;
            may_act(peer, &f)?;
            manageable(ctx, &f)?;
            let program = std::fs::read_link(ctx.proc_root.join(format!("{pid}/exe")))
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            // A process names itself (`comm`, set with prctl): any bytes.
            let name = name.unwrap_or_else(|| {
                std::fs::read_to_string(ctx.proc_root.join(format!("{pid}/comm")))
                    .map(|c| to_app_name(c.trim()))
                    .unwrap_or_else(|_| format!("pid-{pid}"))
            });
            let mut e = Entry::new(name, Kind::Attach, pid, f.uid, program);
            e.class = class;
            e.start = Some(f.start);
            let (app, answer) = register(ctx, e)?;
            Ok(Next::Admission {
                app,
                answer,
                exec: false,
            })
        }
        Request::Release { pid } => release(ctx, peer, pid),
        Request::Status => Ok(Next::Reply(Reply::Status(status(ctx, peer)))),
        Request::Why { app } => Ok(Next::Reply(why(ctx, peer, &app))),
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

/// The histories of the apps `app` names (by name or number) that `peer`
/// may see: its own (root: all).
fn why(ctx: &Context, peer: Peer, app: &str) -> Reply {
    let number = app.parse::<u32>().ok();
    let apps = ctx
        .shared
        .lock()
        .histories
        .find(|k| {
            (k.name == app || number == Some(k.history.app.app))
                && (peer.uid == 0 || k.uid == Some(peer.uid))
        })
        .into_iter()
        .map(|k| AppWhy {
            name: k.name,
            history: k.history,
        })
        .collect();
    Reply::Why { apps }
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

/// A malleable `exec` whose program check is done (or timed out): it is
/// registered for the loop. None while the check runs.
pub fn checked(ctx: &Context, entry: &mut Option<Box<Entry>>) -> Option<Result<Next, Refused>> {
    let e = entry.as_mut()?;
    if matches!(e.check, Some(Check::Queued { .. })) {
        if let Some(started) = start_check(ctx, e) {
            e.check = Some(started);
        }
    }
    let done = e.check.as_mut().is_none_or(|c| c.poll());
    if !done {
        return None;
    }
    let e = *entry.take()?;
    Some(register(ctx, e).map(|(app, answer)| Next::Admission {
        app,
        answer,
        exec: true,
    }))
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
