//! This machine: where coloc keeps its journal and data, and how a run on the real
//! machine is set up (docs/safety.md: stale journals are restored at every start).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use coloc_linux::machine::{
    recover_stale_journals, remove_stale_dop_records, secure_dir, LinuxMachine, LinuxOptions,
    RecoveryError, RecoveryReport,
};
use coloc_model::Topology;

/// The variable that names the journal directory instead of the defaults
/// (docs/safety.md, The journal): one coloc manager per directory, so tests
/// and experiments that run several at once give each its own.
pub const JOURNAL_DIR_ENV: &str = "COLOC_JOURNAL_DIR";

/// Where journals of changed settings may live, first choice first:
/// `$COLOC_JOURNAL_DIR` when set, else `/run/coloc` for root (cleared at
/// boot, when the processes it describes are gone too), else the user's
/// runtime dir; without one, `<tmp>/coloc-<uid>` and then, should that name
/// be taken by someone else (anyone may create it first), coloc's directory
/// in the user's state dir.
pub fn journal_dirs() -> Vec<PathBuf> {
    if let Some(d) = std::env::var_os(JOURNAL_DIR_ENV).filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(d)];
    }
    if nix::unistd::geteuid().is_root() {
        return vec![PathBuf::from("/run/coloc")];
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return vec![Path::new(&d).join("coloc")];
    }
    let state = match std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        Some(d) => Path::new(&d).join("coloc"),
        None => match std::env::var_os("HOME") {
            Some(h) => Path::new(&h).join(".local/state/coloc"),
            None => {
                return vec![std::env::temp_dir().join(format!("coloc-{}", nix::unistd::geteuid()))]
            }
        },
    };
    vec![
        std::env::temp_dir().join(format!("coloc-{}", nix::unistd::geteuid())),
        state.join("journal"),
    ]
}

/// The first journal directory of [`journal_dirs`] that is safe to use (the
/// caller's, writable by no one else: [`secure_dir`]), created if missing; each one
/// refused is said on stderr, once: the choice holds for the process.
pub fn journal_dir() -> Result<PathBuf> {
    static CHOSEN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(dir) = CHOSEN.get() {
        return Ok(dir.clone());
    }
    let dir = choose_journal_dir()?;
    Ok(CHOSEN.get_or_init(|| dir).clone())
}

fn choose_journal_dir() -> Result<PathBuf> {
    let mut refused = Vec::new();
    for dir in journal_dirs() {
        match secure_dir(&dir) {
            Ok(()) => {
                if !refused.is_empty() {
                    eprintln!(
                        "coloc: not using {}; journals go to {}",
                        refused.join("; "),
                        dir.display()
                    );
                }
                return Ok(dir);
            }
            Err(e) => refused.push(format!("{:#}", anyhow::Error::from(e))),
        }
    }
    anyhow::bail!("no safe journal directory: {}", refused.join("; "))
}

/// Restores what crashed coloc processes left, from the journals in every
/// directory of [`journal_dirs`] that is trusted; an untrusted one is named on
/// stderr and nothing in it is acted on.
pub fn restore_all() -> Result<Vec<RecoveryReport>> {
    let mut reports = Vec::new();
    for dir in journal_dirs() {
        match recover_stale_journals(&dir, Path::new("/proc")) {
            Ok(r) => reports.push(r),
            Err(e @ RecoveryError::Untrusted { .. }) => eprintln!("coloc: {e}"),
            Err(e) => return Err(e).context("restoring from stale journals"),
        }
    }
    remove_dop_records();
    Ok(reports)
}

/// Removes DoP records crashed coloc processes left in shared memory (a failure
/// is only a warning: they cost memory, not correctness).
fn remove_dop_records() {
    let shm = LinuxOptions::default().shm_dir;
    match remove_stale_dop_records(&shm, Path::new("/proc")) {
        Ok(removed) if !removed.is_empty() => eprintln!(
            "coloc: removed {} DoP record(s) of ended coloc processes from {}",
            removed.len(),
            shm.display()
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!("looking for stale DoP records in {}: {e}", shm.display()),
    }
}

/// coloc's data directory (solo times, profiles): `$XDG_DATA_HOME/coloc`, else
/// `~/.local/share/coloc`.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Path::new(&d).join("coloc");
    }
    match std::env::var_os("HOME") {
        Some(h) => Path::new(&h).join(".local/share/coloc"),
        None => std::env::temp_dir().join("coloc-data"),
    }
}

/// The real machine, ready for runs: its topology, with settings left by a crashed
/// coloc restored first.
#[derive(Debug)]
pub struct Host {
    pub topology: Topology,
    /// Track threads by the kernel's process connector where it is available
    /// ([`LinuxOptions::process_events`]); on unless a benchmark measures
    /// polling.
    pub process_events: bool,
}

/// The file whose lock one manager holds per journal directory.
pub const MANAGER_LOCK: &str = "manager.lock";

/// Set by a manager on a `coloc run` it starts and waits for (`bench mixes
/// --fresh`) to its own pid: the run manages the apps in its stead, under
/// the lock the parent holds (checked against the lock file and the run's
/// parent, so it cannot let a second manager in by mistake).
pub const MANAGER_PARENT_ENV: &str = "COLOC_MANAGER_PARENT";

/// Root's daemon directory: reachable by every user (the daemon checks each
/// caller's credentials), writable by root alone; it holds root's socket,
/// which a user's manager looks for too.
pub const ROOT_DAEMON_DIR: &str = "/run/coloc-daemon";

/// Root's daemon's socket in [`ROOT_DAEMON_DIR`].
pub fn root_socket() -> PathBuf {
    Path::new(ROOT_DAEMON_DIR).join("coloc.sock")
}

/// One manager per machine (docs/safety.md, One manager per machine): takes
/// the lock of journal directory `dir` for the rest of this process, or
/// refuses, naming the manager that holds it. A user's manager (with the
/// default journal directory) also refuses beside root's daemon, whose lock
/// it cannot see.
fn one_manager(dir: &Path) -> Result<()> {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    static HELD: std::sync::OnceLock<nix::fcntl::Flock<std::fs::File>> = std::sync::OnceLock::new();
    if HELD.get().is_some() {
        return Ok(());
    }
    let explicit = std::env::var_os(JOURNAL_DIR_ENV).is_some_and(|d| !d.is_empty());
    if !explicit
        && !nix::unistd::geteuid().is_root()
        && std::os::unix::net::UnixStream::connect(root_socket()).is_ok()
    {
        anyhow::bail!(
            "root's coloc daemon manages this machine ({}): two managers would \
             plan the same CPUs; run your apps under it with `coloc exec`",
            root_socket().display()
        );
    }
    let path = dir.join(MANAGER_LOCK);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut lock = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
    {
        Ok(lock) => lock,
        Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut holder = String::new();
            let _ = (&mut file).take(4096).read_to_string(&mut holder);
            if held_by_my_parent(&holder) {
                return Ok(());
            }
            anyhow::bail!(
                "another coloc manages this machine's apps ({}, holding {}): two managers \
                 would plan the same CPUs; wait for it to end, or run your apps under the \
                 daemon with `coloc exec`",
                printable_holder(&holder),
                path.display()
            );
        }
        Err((_, e)) => return Err(e).with_context(|| format!("locking {}", path.display())),
    };
    let me: Vec<String> = std::env::args().take(4).collect();
    lock.set_len(0)?;
    let _ = writeln!(&mut *lock, "pid {}: {}", std::process::id(), me.join(" "));
    let _ = HELD.set(lock);
    Ok(())
}

/// Whether the lock's holder (its file's `pid N:` line) is this process's
/// parent and said so ([`MANAGER_PARENT_ENV`]): a run it started and waits
/// for, planning its apps in its stead.
fn held_by_my_parent(holder: &str) -> bool {
    let parent = std::os::unix::process::parent_id().to_string();
    let said = std::env::var(MANAGER_PARENT_ENV).is_ok_and(|p| p == parent);
    let holds = holder
        .strip_prefix("pid ")
        .and_then(|rest| rest.split(':').next())
        .is_some_and(|pid| pid == parent);
    said && holds
}

/// What a lock file says of its holder, on one line of printable text.
fn printable_holder(text: &str) -> String {
    let line: String = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    if line.is_empty() {
        "a process starting".into()
    } else {
        line
    }
}

impl Host {
    pub fn new() -> Result<Self> {
        let dir = journal_dir()?;
        one_manager(&dir)?;
        let report = recover_stale_journals(&dir, Path::new("/proc"))
            .context("restoring settings from an earlier coloc's journal")?;
        if !report.is_empty() {
            eprintln!("coloc: {report}");
        }
        remove_dop_records();
        let topology =
            coloc_linux::topology::host_topology().context("reading the topology from sysfs")?;
        Ok(Self {
            topology,
            process_events: true,
        })
    }

    /// A fresh backend for one run whose apps' output goes to `out`.
    pub fn machine(&self, out: &Path) -> Result<LinuxMachine> {
        self.machine_with(self.options(out)?)
    }

    /// The backend's options for a run whose apps' output goes to `out`.
    pub fn options(&self, out: &Path) -> Result<LinuxOptions> {
        Ok(LinuxOptions {
            out_dir: out.to_path_buf(),
            journal_dir: journal_dir()?,
            process_events: self.process_events,
            ..LinuxOptions::default()
        })
    }

    /// A fresh backend with `opts`.
    pub fn machine_with(&self, opts: LinuxOptions) -> Result<LinuxMachine> {
        LinuxMachine::new(self.topology.clone(), opts).context("setting up the Linux backend")
    }
}

/// Every signal whose default action ends the process and that a process may
/// handle (docs/safety.md): SIGKILL and SIGSTOP cannot be caught, and the fault
/// signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE) are bugs, not requests to stop.
/// SIGPIPE is left ignored, as Rust sets it: a closed pipe is a write error.
/// (SIGABRT, SIGSYS and SIGTRAP are faults too.)
pub const STOP_SIGNALS: &[i32] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGPWR,
    libc::SIGIO,
];

/// A flag set by any of [`STOP_SIGNALS`], so an interrupted run (Ctrl-C, the
/// terminal closed, `kill`) still restores settings and closes its trace.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for &sig in STOP_SIGNALS {
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("installing the interrupt handler")?;
    }
    Ok(flag)
}
