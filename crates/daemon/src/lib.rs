//! coloc as a node service (docs/service.md).
//!
//! Problem: coloc managed only the apps it launched from a workload file; a
//! cluster node or a shared workstation needs it to manage the apps people
//! start themselves, with the same policies, machine, journal and trace
//! (as numad, Kubernetes' CPU manager and sched_ext schedulers run).
//!
//! Approach: the daemon runs the Manager's own loop ([`coloc_manager::serve`])
//! with apps arriving over a control socket ([`server`], [`protocol`]) instead
//! of from a workload file, on a machine that adopts them ([`machine`]); it
//! saves the apps it manages ([`state`]) so that a successor re-adopts them
//! after a crash, and switches policy at run time ([`Switch`]). A detached
//! daemon's log is rotated while it runs ([`log`]).
//!
//! Its client side is here too, so the protocol has one owner: where a
//! command finds the socket and a connection's requests and replies
//! ([`client`]), and `coloc exec`'s handshake with the daemon ([`launch`]).

pub mod client;
pub mod histories;
pub mod launch;
pub mod learn;
pub mod log;
pub mod machine;
pub mod metrics;
pub mod protocol;
pub mod ready;
pub mod requests;
pub mod scrape;
pub mod server;
pub mod shared;
pub mod state;

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coloc_linux::machine::LinuxMachine;
use coloc_manager::{serve, Inbox, ManagerError, Recorder, RunOptions, RunSummary};
use coloc_model::knowledge::derive::Learned;
use coloc_model::profile::PlatformFingerprint;
use coloc_model::workload::to_app_name;
use coloc_model::{AppSpec, Plan, TraceEvent, View};
use coloc_policy::Policy;

use crate::learn::Learning;
use crate::machine::DaemonMachine;
use crate::requests::{Context, PolicyFactory};
use crate::server::Limits;
use crate::shared::{Entry, Kind, Shared, Waker};
use crate::state::{Saved, StateError};

/// How the daemon runs.
#[derive(Debug)]
pub struct DaemonOptions {
    pub socket: PathBuf,
    /// Where the managed apps are saved for a successor.
    pub state: PathBuf,
    pub epoch: Duration,
    pub stop: Arc<AtomicBool>,
    /// Everything the loop records, as a trace (none when unset).
    pub trace: Option<PathBuf>,
    /// Bounds on the control socket's connections.
    pub limits: Limits,
    /// The store what is learned of every app goes to (docs/knowledge.md;
    /// none: nothing is learned).
    pub knowledge: Option<PathBuf>,
    /// Where the metrics endpoint listens (none when unset).
    pub metrics: Option<std::net::SocketAddr>,
}

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("a coloc daemon already listens on {}", path.display())]
    Running { path: PathBuf },
    #[error(
        "{} is not a socket: only a stale socket is replaced (name another with --socket)",
        path.display()
    )]
    NotASocket { path: PathBuf },
    #[error("listening on {}", path.display())]
    Listen {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("setting up the control socket's thread")]
    Serve(#[source] io::Error),
    #[error("creating the trace {}", path.display())]
    Trace {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Metrics(#[from] crate::scrape::ScrapeError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

/// The policy in force, switched between decisions when asked
/// (`coloc policy set`). A switch starts the new policy fresh, with what was
/// learned of the apps present; before a decision whose apps (or the
/// records) changed, the policy is given what was learned of them
/// ([`Learning::known`]).
#[derive(Debug)]
pub struct Switch {
    current: Box<dyn Policy>,
    shared: Shared,
    learning: Option<Arc<Mutex<Learning>>>,
    /// What the policy was last given.
    known: Option<Learned>,
}

impl Switch {
    /// Gives the policy what was learned of the apps in `view`, when that
    /// changed.
    fn tell(&mut self, view: &View<'_>) {
        let Some(learning) = &self.learning else {
            return;
        };
        let present: Vec<learn::Present> = view
            .apps
            .iter()
            .map(|a| (a.id.app, a.spec.name.clone(), a.threads_requested))
            .collect();
        let cpus = view.topology.cpus().len() as u32;
        let fresh = learning
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .known(&present, cpus);
        if let Some(learned) = fresh {
            self.current.learned(&learned);
            self.known = Some(learned);
        }
    }
}

impl Policy for Switch {
    fn name(&self) -> &'static str {
        self.current.name()
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        if let Some(next) = self.shared.lock().switch_to.take() {
            tracing::info!("policy {} -> {}", self.current.name(), next.name());
            self.current = next;
            if let Some(learned) = &self.known {
                self.current.learned(learned);
            }
        }
        self.tell(view);
        self.current.decide(view)
    }
}

/// Hands the loop what the socket registered, in registration order.
#[derive(Debug)]
struct Registrations(Shared);

impl Inbox for Registrations {
    fn take(&mut self) -> Vec<AppSpec> {
        let mut state = self.0.lock();
        state
            .apps
            .values_mut()
            .filter(|e| !e.taken)
            .map(|e| {
                e.taken = true;
                e.spec()
            })
            .collect()
    }

    fn latency(&self) -> Duration {
        machine::LATENCY
    }
}

/// Keeps the last decision's reason for `coloc status`, each app's history
/// for `coloc why`, the metrics, and the trace, and learns from every event.
struct Record {
    shared: Shared,
    trace: Option<coloc_model::trace::TraceWriter<io::BufWriter<fs::File>>>,
    learning: Option<Arc<Mutex<Learning>>>,
    tally: Option<metrics::Tally>,
}

impl Recorder for Record {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        let policy = {
            let mut state = self.shared.lock();
            if let TraceEvent::Plan { plan, .. } = event {
                state.last_reason = coloc_model::explain::plan_line(plan);
            }
            let state = &mut *state;
            let apps = &state.apps;
            state
                .histories
                .record(event, |a| apps.get(&a).map(|e| e.uid));
            state.policy.clone()
        };
        if let Some(t) = &mut self.tally {
            t.record(event, &policy);
        }
        if let Some(l) = &self.learning {
            l.lock().unwrap_or_else(|e| e.into_inner()).feed(event);
        }
        match &mut self.trace {
            Some(t) => {
                t.write(event)?;
                t.flush()
            }
            None => Ok(()),
        }
    }
}

/// The listening socket and the inode it was bound to, so that only it is
/// removed at the end (whatever may have been put at its path since).
#[derive(Debug)]
pub struct Bound {
    pub listener: UnixListener,
    inode: (u64, u64),
}

/// Binds the socket at `path`, replacing a stale one (its daemon is gone);
/// refuses when a daemon answers there, and when anything but a socket is
/// there (a file, a symlink: never removed). Root's socket may be reached by
/// every user (0666: the daemon checks each caller's credentials); a user's
/// only by that user (0600).
pub fn bind(path: &Path) -> Result<Bound, DaemonError> {
    let err = |source| DaemonError::Listen {
        path: path.to_path_buf(),
        source,
    };
    if let Ok(meta) = fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(DaemonError::NotASocket {
                path: path.to_path_buf(),
            });
        }
        if UnixStream::connect(path).is_ok() {
            return Err(DaemonError::Running {
                path: path.to_path_buf(),
            });
        }
        tracing::warn!(
            "removing the stale socket {} (its daemon is gone)",
            path.display()
        );
        fs::remove_file(path).map_err(err)?;
    }
    let listener = UnixListener::bind(path).map_err(err)?;
    let meta = fs::symlink_metadata(path).map_err(err)?;
    if !meta.file_type().is_socket() {
        return Err(DaemonError::NotASocket {
            path: path.to_path_buf(),
        });
    }
    let mode = if nix::unistd::geteuid().is_root() {
        0o666
    } else {
        0o600
    };
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(err)?;
    Ok(Bound {
        listener,
        inode: (meta.dev(), meta.ino()),
    })
}

impl Bound {
    /// Removes the socket at `path` if it is still this one.
    pub fn remove(&self, path: &Path) {
        match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() && (m.dev(), m.ino()) == self.inode => {
                let _ = fs::remove_file(path);
            }
            Ok(_) => tracing::warn!(
                "{} is no longer this daemon's socket: left in place",
                path.display()
            ),
            Err(_) => {}
        }
    }
}

/// The trace file at `path`, emptied: never through a symlink, only a
/// regular file, and readable by all but writable by its owner alone
/// whatever the umask (0644, set on a file that was there too).
fn create_trace(path: &Path) -> io::Result<fs::File> {
    let f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    f.set_len(0)?;
    f.set_permissions(fs::Permissions::from_mode(0o644))?;
    Ok(f)
}

/// Raises the soft limit on open descriptors to the hard one: the socket's
/// bounds (docs/service.md, Limits) assume room for every connection they
/// allow.
fn raise_descriptor_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::warn!("raising the open file limit from {soft} to {hard}: {e}");
            }
        }
    }
}

/// Registers for re-adoption every app `saved` names that still runs with its
/// recorded start time; says what it did with each. Its owner is read from
/// /proc (the file only names the process).
pub fn readopt(shared: &Shared, saved: &Saved, proc_root: &Path) -> Vec<String> {
    let mut said = Vec::new();
    for a in &saved.apps {
        let now = procfs::process::Process::new_with_root(proc_root.join(a.pid.to_string()))
            .and_then(|p| Ok((p.stat()?, p.uid()?)));
        match now {
            Ok((s, uid)) if s.starttime == a.start && !matches!(s.state, 'Z' | 'X') => {
                let mut e = Entry::new(
                    to_app_name(&a.name),
                    Kind::Readopted,
                    a.pid,
                    uid,
                    a.program.clone(),
                );
                e.class = a.class;
                e.start = Some(a.start);
                let app = shared.lock().register(e);
                said.push(format!(
                    "re-adopting {} (pid {}) as app {app}",
                    to_app_name(&a.name),
                    a.pid
                ));
            }
            Ok(_) => said.push(format!(
                "{} (pid {}) ended and its pid was reused: left alone",
                to_app_name(&a.name),
                a.pid
            )),
            Err(_) => said.push(format!(
                "{} (pid {}) has ended",
                to_app_name(&a.name),
                a.pid
            )),
        }
    }
    said
}

/// Runs the daemon until `opts.stop` is set: the socket is served, the apps
/// `opts.state` names are re-adopted, and the Manager's loop runs `policy` on
/// `linux`. Every app is let go with its settings back at the end. `say`
/// hears what was done with each app the state file named, then that the
/// daemon listens.
pub fn run(
    linux: LinuxMachine,
    policy: Box<dyn Policy>,
    factory: PolicyFactory,
    opts: &DaemonOptions,
    say: impl Fn(&str),
) -> Result<RunSummary, DaemonError> {
    Saved::check_target(&opts.state)?;
    let shared = Shared::default();
    shared.lock().policy = policy.name().to_string();
    let saved = Saved::read(&opts.state).unwrap_or_else(|e| {
        tracing::warn!("{e}; starting without it");
        Saved::default()
    });
    let proc_root = PathBuf::from("/proc");
    for s in readopt(&shared, &saved, &proc_root) {
        tracing::info!("{s}");
        say(&s);
    }
    let learning = opts.knowledge.as_ref().map(|path| {
        let platform = PlatformFingerprint::of(coloc_machine::Machine::topology(&linux));
        let (learning, said) = Learning::open(path, platform, shared.clone(), &proc_root);
        for s in said {
            tracing::info!("{s}");
            say(&s);
        }
        Arc::new(Mutex::new(learning))
    });
    let trace = match &opts.trace {
        Some(path) => Some(coloc_model::trace::TraceWriter::new(io::BufWriter::new(
            create_trace(path).map_err(|source| DaemonError::Trace {
                path: path.clone(),
                source,
            })?,
        ))),
        None => None,
    };
    raise_descriptor_limit();
    let scrape = opts.metrics.map(scrape::bind).transpose()?;
    let bound = bind(&opts.socket)?;
    let listener = bound.listener.try_clone().map_err(DaemonError::Serve)?;
    say(&format!(
        "daemon {} listening on {} (policy {})",
        std::process::id(),
        opts.socket.display(),
        policy.name()
    ));
    let (wake, woken) = Waker::pair().map_err(DaemonError::Serve)?;
    let ctx = Context {
        shared: shared.clone(),
        factory,
        proc_root,
        started: Instant::now(),
        cpus: coloc_machine::Machine::topology(&linux).cpus().to_list(),
        owner: nix::unistd::geteuid().as_raw(),
        wake,
        checks: Default::default(),
    };
    let limits = opts.limits.clone();
    std::thread::Builder::new()
        .name("coloc-socket".into())
        .spawn(move || server::serve(listener, ctx, woken, limits))
        .map_err(DaemonError::Serve)?;
    let tally = match scrape {
        Some(l) => {
            let cpus = coloc_machine::Machine::topology(&linux).cpus().len() as u32;
            let (tally, exposition) = metrics::metrics(cpus);
            if let Ok(addr) = l.local_addr() {
                say(&format!("metrics on http://{addr}/metrics"));
            }
            std::thread::Builder::new()
                .name("coloc-metrics".into())
                .spawn(move || scrape::serve(l, exposition))
                .map_err(DaemonError::Serve)?;
            Some(tally)
        }
        None => None,
    };
    let mut machine = DaemonMachine::new(linux, shared.clone(), opts.state.clone());
    let mut policy = Switch {
        current: policy,
        shared: shared.clone(),
        learning: learning.clone(),
        known: None,
    };
    let mut rec = Record {
        shared: shared.clone(),
        trace,
        learning,
        tally,
    };
    let run_opts = RunOptions {
        epoch: opts.epoch,
        seed: None,
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        stop: Some(Arc::clone(&opts.stop)),
    };
    let result = serve(
        &mut machine,
        &mut policy,
        "daemon",
        &mut Registrations(shared.clone()),
        &run_opts,
        &mut rec,
    );
    shared.lock().stopping = true;
    bound.remove(&opts.socket);
    if let Some(t) = &mut rec.trace {
        let _ = t.flush();
    }
    let _ = io::stderr().flush();
    Ok(result?)
}
