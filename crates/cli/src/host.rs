//! This machine: where coloc keeps its journal and data, and how the real
//! machine is made ready for runs ([`start`]; docs/safety.md: stale journals
//! are restored at every start).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use coloc_harness::Host;
use coloc_linux::machine::{
    recover_stale_journals, remove_stale_dop_records, secure_dir, LinuxOptions, RecoveryError,
    RecoveryReport,
};

/// The variable that names the journal directory instead of the defaults
/// (docs/safety.md, The journal): tests and experiments that run several
/// managers at once give each its own (and share the machine on purpose:
/// [`crate::one_manager::SHARE_MACHINE_ENV`]).
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

/// Unit tests that run apps on this machine take it in turn: two runs of
/// the Linux backend at once in one test process interfere (beside the
/// calibration test's stream runs, the profile test's app was seen as never
/// finishing). Integration tests run each coloc as a process of its own.
#[cfg(test)]
pub static HOST_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The real machine, ready for runs: this process claims it (one manager per
/// machine), settings left by a crashed coloc are restored first, and its
/// topology is read.
pub fn start() -> Result<Host> {
    let dir = journal_dir()?;
    crate::one_manager::claim(&dir)?;
    let report = recover_stale_journals(&dir, Path::new("/proc"))
        .context("restoring settings from an earlier coloc's journal")?;
    if !report.is_empty() {
        eprintln!("coloc: {report}");
    }
    remove_dop_records();
    let topology = coloc_harness::target::host_topology()?;
    Ok(Host {
        topology,
        process_events: true,
        journal_dir: dir,
    })
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
