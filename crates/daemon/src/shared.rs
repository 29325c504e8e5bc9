//! What the socket's connections and the Manager's loop share (docs/service.md,
//! Inside): registrations waiting for the loop, the apps it manages, requests
//! to release or to switch policy. The loop owns the machine; connections only
//! leave work here and wait for the answer on a channel, so no syscall on an
//! app is ever made outside the loop's thread. An answer sent wakes the
//! socket's thread ([`Waker`]), which waits on its connections, not on the
//! channel.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use coloc_linux::machine::{OmpRuntime, ProgramCheck};

use coloc_model::trace::ExitStatus;
use coloc_model::{AppClass, AppPlan, AppSpec};
use coloc_policy::Policy;

use crate::protocol::{AppStatus, JobStep, Reply};

/// Wakes the socket's thread from its wait (a byte on a socket pair it
/// polls); a default one wakes nobody (tests without a socket).
#[derive(Debug, Clone, Default)]
pub struct Waker(Option<Arc<UnixStream>>);

impl Waker {
    /// A waker and the end the socket's thread polls (both non-blocking).
    pub fn pair() -> std::io::Result<(Waker, UnixStream)> {
        let (tx, rx) = UnixStream::pair()?;
        tx.set_nonblocking(true)?;
        rx.set_nonblocking(true)?;
        Ok((Waker(Some(Arc::new(tx))), rx))
    }

    pub fn wake(&self) {
        if let Some(s) = &self.0 {
            // A full buffer means a wake-up is pending already.
            let _ = (&**s).write(&[1]);
        }
    }
}

/// Where the loop's answer to a request goes: a channel the socket's thread
/// reads once woken.
#[derive(Debug, Clone)]
pub struct Answer {
    tx: Sender<Reply>,
    wake: Waker,
}

impl Answer {
    pub fn channel(wake: &Waker) -> (Answer, Receiver<Reply>) {
        let (tx, rx) = mpsc::channel();
        (
            Answer {
                tx,
                wake: wake.clone(),
            },
            rx,
        )
    }

    /// Sends `reply`; a connection gone meanwhile does not care.
    pub fn send(&self, reply: Reply) {
        let _ = self.tx.send(reply);
        self.wake.wake();
    }
}

/// How long a program check may take (docs/service.md, Limits).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The OpenMP-runtime check of a malleable `exec`'s program, made off the
/// loop, as the app's user; the app is registered for the loop once it is
/// done (docs/service.md, coloc exec).
#[derive(Debug)]
pub enum Check {
    /// Waiting for a free slot (docs/service.md, Limits).
    Queued {
        since: Instant,
    },
    Running {
        result: Receiver<std::io::Result<ProgramCheck>>,
        since: Instant,
    },
    Done(ProgramCheck),
}

impl Check {
    /// Whether it is done, taking its result if it just came; a check past
    /// [`CHECK_TIMEOUT`] is done, with that as its answer.
    pub fn poll(&mut self) -> bool {
        let (result, since) = match self {
            Check::Done(_) => return true,
            Check::Queued { since } if since.elapsed() < CHECK_TIMEOUT => return false,
            Check::Queued { .. } => {
                *self = Check::Done(ProgramCheck::failed(format!(
                    "no program check could start within {} s",
                    CHECK_TIMEOUT.as_secs()
                )));
                return true;
            }
            Check::Running { result, since } => (result, since),
        };
        let found = match result.try_recv() {
            Ok(Ok(check)) => check,
            Ok(Err(e)) => ProgramCheck::failed(format!("checking the program as its user: {e}")),
            Err(mpsc::TryRecvError::Empty) if since.elapsed() < CHECK_TIMEOUT => return false,
            Err(_) => ProgramCheck::failed(format!(
                "the program check took longer than {} s",
                CHECK_TIMEOUT.as_secs()
            )),
        };
        *self = Check::Done(found);
        true
    }

    /// What it found (an app is registered once its check is done; one not
    /// done is taken as a launcher).
    pub fn found(&mut self) -> ProgramCheck {
        self.poll();
        match self {
            Check::Done(c) => c.clone(),
            Check::Queued { .. } | Check::Running { .. } => ProgramCheck {
                exe: None,
                found: Ok(OmpRuntime::Unknown),
                threaded: Vec::new(),
            },
        }
    }
}

/// How an app came to the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `coloc exec`: a child of the client, waiting to exec its program.
    Exec,
    /// A process that registered itself, waiting to exec its program (a
    /// Slurm task, by the SPANK plugin): its connection ends at the exec, and
    /// its end is reported on a later one.
    Task,
    /// `coloc attach`: a running process tree.
    Attach,
    /// Managed by an earlier daemon that ended, found running at start.
    Readopted,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Exec => "exec",
            Kind::Task => "task",
            Kind::Attach => "attach",
            Kind::Readopted => "readopted",
        }
    }

    /// It has not exec'd its program when adopted: it takes the plan's
    /// environment and memory policy itself, and someone reports its end.
    pub fn held(self) -> bool {
        matches!(self, Kind::Exec | Kind::Task)
    }
}

/// One app the daemon was asked to manage.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    pub class: AppClass,
    pub kind: Kind,
    pub pid: u32,
    /// Its start time (field 22 of its stat) when the request came: only
    /// that process is adopted, whatever holds the pid later.
    pub start: Option<u64>,
    pub uid: u32,
    pub malleable: bool,
    /// Its threaded runtimes get the team at launch (`cap_threads`).
    pub cap_threads: bool,
    /// The program (for the shim's runtime check and the record).
    pub program: String,
    /// The command line `exec` asked for (what is learned of it is filed
    /// under its program and arguments, docs/knowledge.md); empty for a
    /// process attached or re-adopted, whose own is read from /proc.
    pub argv: Vec<String>,
    pub threads: u32,
    pub job: Option<JobStep>,
    /// Its program's check (a malleable `exec`), None when not needed.
    pub check: Option<Check>,
    pub arrived: Instant,
    /// Where the answer to the request that brought it goes (none for a
    /// re-adopted app: its client talked to the daemon that ended).
    pub reply: Option<Answer>,
    /// Handed to the loop (which numbers apps in the order handed over).
    pub taken: bool,
    /// Adopted by the machine.
    pub running: bool,
    /// The answer is ready, sent after the first apply (`exec` runs its
    /// program only once its CPUs are set).
    pub admitted: Option<Reply>,
    /// Its client went away before it was admitted, or it was released
    /// before: the loop drops it.
    pub cancelled: Option<String>,
    /// The status its `exec` client reported.
    pub reported: Option<ExitStatus>,
    /// Its `exec` client's connection closed (a [`Kind::Task`]'s closes at
    /// its exec: its end is reported on another).
    pub client_gone: bool,
    pub plan: Option<AppPlan>,
    pub allowed: Option<String>,
    pub self_managed: bool,
    pub threads_now: usize,
    pub notes: Vec<String>,
}

impl Entry {
    pub fn new(name: String, kind: Kind, pid: u32, uid: u32, program: String) -> Self {
        Self {
            name,
            class: AppClass::Batch,
            kind,
            pid,
            start: None,
            uid,
            malleable: false,
            cap_threads: false,
            program,
            argv: Vec::new(),
            threads: 0,
            job: None,
            check: None,
            arrived: Instant::now(),
            reply: None,
            taken: false,
            running: false,
            admitted: None,
            cancelled: None,
            reported: None,
            client_gone: false,
            plan: None,
            allowed: None,
            self_managed: false,
            threads_now: 0,
            notes: Vec::new(),
        }
    }

    /// What it looks like to the loop's policy.
    pub fn spec(&self) -> AppSpec {
        AppSpec {
            class: self.class,
            malleable: self.malleable,
            cap_threads: self.cap_threads,
            ..AppSpec::program(self.name.clone(), vec![self.program.clone()], self.threads)
        }
    }

    pub fn status(&self, app: u32) -> AppStatus {
        let state = match (self.running, self.self_managed) {
            (false, _) => "waiting",
            (true, false) => "running",
            (true, true) => "self-managed",
        };
        AppStatus {
            app,
            name: self.name.clone(),
            pid: self.pid,
            uid: self.uid,
            class: self.class,
            state: state.into(),
            kind: self.kind.as_str().into(),
            job: self.job.clone(),
            age_secs: self.arrived.elapsed().as_secs_f64(),
            threads: self.threads_now,
            plan: self.plan.clone(),
            allowed: self.allowed.clone(),
            notes: self.notes.clone(),
        }
    }
}

/// A request to let an app go, answered once done.
#[derive(Debug)]
pub struct Release {
    pub app: u32,
    pub reply: Answer,
}

/// The state behind the lock.
#[derive(Debug, Default)]
pub struct State {
    /// Every app by its number in the run, until it leaves.
    pub apps: BTreeMap<u32, Entry>,
    /// The number the next registration gets.
    pub next_app: u32,
    pub releases: Vec<Release>,
    /// A policy to switch to at the next decision.
    pub switch_to: Option<Box<dyn Policy>>,
    pub policy: String,
    pub last_reason: String,
    /// What applied to each app, for `coloc why`.
    pub histories: crate::histories::Histories,
    /// Set when the daemon stops: connections refuse new work.
    pub stopping: bool,
}

impl State {
    /// Registers `entry` and returns its app number.
    pub fn register(&mut self, entry: Entry) -> u32 {
        let app = self.next_app;
        self.next_app += 1;
        self.apps.insert(app, entry);
        app
    }

    /// The app whose main process is `pid`.
    pub fn app_of(&self, pid: u32) -> Option<u32> {
        self.apps
            .iter()
            .find(|(_, e)| e.pid == pid && e.cancelled.is_none())
            .map(|(a, _)| *a)
    }
}

/// The shared state.
#[derive(Debug, Clone, Default)]
pub struct Shared(Arc<Mutex<State>>);

impl Shared {
    /// The state; a connection that panicked holding the lock leaves it usable.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
