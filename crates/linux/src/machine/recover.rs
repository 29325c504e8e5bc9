//! Restoring settings a coloc process changed and could not put back itself,
//! because it crashed or was killed (docs/safety.md: "at the next start
//! after a crash").
//!
//! A journal belongs to a dead coloc when no process has its pid with its start
//! time. For each task it names that is still alive (same pid, tid and start
//! time) and that coloc did not release, every setting is set back to the first
//! original the journal recorded; then the journal is deleted. Journals of a
//! live coloc are left alone.
//!
//! A journal is an instruction to change processes, so only trusted ones are
//! replayed (docs/safety.md): the directory must be the caller's and writable
//! by no one else, each journal a regular file owned by the caller (others are
//! reported as ignored and left in place), and a task is touched only while
//! /proc shows it with the journaled start time and, for a caller other than
//! root, owned by the caller.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::actuate::{Outcome, Slot, TaskSettings};
use super::journal::{journal_pid, read_entries, Entry, Journal, Original};
use super::pages::{restore_runs, PageRun};
use super::slice::{take_back, SLICE};
use super::tasks::{ProcRoot, TaskId};
use crate::cgroup::{CgroupError, Cpusets};

/// What recovery did, for the user.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// "coloc 123: thread 456 (pid 450): CPUs 0-3, nice 0"
    pub restored: Vec<String>,
    /// Tasks that had exited (or whose id was reused) before recovery.
    pub gone: Vec<String>,
    /// Settings the kernel refused to put back, with the reason.
    pub failed: Vec<String>,
    /// Stale journals read and deleted.
    pub journals_removed: Vec<PathBuf>,
    /// pids of live coloc processes whose journals were left alone.
    pub live: Vec<u32>,
    /// Journals and tasks not acted on because they are not the caller's.
    pub ignored: Vec<String>,
}

impl RecoveryReport {
    /// True when no stale journal was found (live ones do not count).
    pub fn is_empty(&self) -> bool {
        self.journals_removed.is_empty() && self.failed.is_empty() && self.ignored.is_empty()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() && self.live.is_empty() {
            return f.write_str("no settings left to restore");
        }
        if !self.journals_removed.is_empty() {
            write!(
                f,
                "restored settings from {} stale journal(s) of coloc processes that ended without restoring",
                self.journals_removed.len()
            )?;
        }
        for (what, lines) in [
            ("restored", &self.restored),
            ("already gone", &self.gone),
            ("could not restore", &self.failed),
            ("ignored", &self.ignored),
        ] {
            for line in lines {
                write!(f, "\n  {what}: {line}")?;
            }
        }
        for pid in &self.live {
            write!(f, "\n  left alone: the journal of running coloc {pid}")?;
        }
        Ok(())
    }
}

/// Why recovery could not run at all (per-task problems are in the report).
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    #[error("reading the journal directory {}: {source}", dir.display())]
    Dir { dir: PathBuf, source: io::Error },
    #[error("reading the journal {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("deleting the journal {}: {source}", path.display())]
    Remove { path: PathBuf, source: io::Error },
    #[error("the journal directory {} is not trusted: {why}", dir.display())]
    Untrusted { dir: PathBuf, why: String },
}

/// Whether `dir` is a directory (not a symlink) of the effective user that no
/// one else may write; None when it does not exist.
fn check_dir(dir: &Path) -> Result<Option<()>, RecoveryError> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(RecoveryError::Dir {
                dir: dir.to_path_buf(),
                source,
            })
        }
    };
    let me = nix::unistd::geteuid().as_raw();
    let why = if !meta.file_type().is_dir() {
        "not a directory (a symlink or a file)".to_string()
    } else if meta.uid() != me {
        format!("owned by uid {}, not by this user (uid {me})", meta.uid())
    } else if meta.mode() & 0o022 != 0 {
        format!("writable by others (mode {:o})", meta.mode() & 0o777)
    } else {
        return Ok(Some(()));
    };
    Err(RecoveryError::Untrusted {
        dir: dir.to_path_buf(),
        why,
    })
}

/// Restores what dead coloc processes left changed, from their journals in
/// `dir` (a missing directory holds no journal), reading tasks under
/// `proc_root`.
pub fn recover_stale_journals(
    dir: &Path,
    proc_root: &Path,
) -> Result<RecoveryReport, RecoveryError> {
    let proc = ProcRoot::new(proc_root);
    let mut report = RecoveryReport::default();
    if check_dir(dir)?.is_none() {
        return Ok(report);
    }
    let entries = fs::read_dir(dir).map_err(|source| RecoveryError::Dir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut journals: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            Some((journal_pid(&path)?, path))
        })
        .collect();
    journals.sort();
    for (pid, path) in journals {
        let (lines, _torn) = match read_entries(&path) {
            Ok(read) => read,
            // Its coloc ended cleanly between the listing and the read, and
            // removed it, or another coloc starting at the same time
            // recovered it first: nothing is left to restore (several colocs
            // start and stop at once, e.g. `coloc exec`s next to a daemon).
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied || is_link(&e) => {
                report
                    .ignored
                    .push(format!("{}: {e} (left in place)", path.display()));
                continue;
            }
            Err(source) => return Err(RecoveryError::Read { path, source }),
        };
        if coloc_is_alive(&proc, pid, &lines) {
            report.live.push(pid);
            continue;
        }
        restore_journal(&proc, dir, pid, &lines, &mut report);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(RecoveryError::Remove { path, source: e })
            }
            _ => report.journals_removed.push(path),
        }
    }
    Ok(report)
}

/// `O_NOFOLLOW` met a symlink.
fn is_link(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Whether the coloc that wrote the journal still runs: its pid runs (a
/// zombie does not) with the start time of the header (without a header,
/// the pid alone decides).
fn coloc_is_alive(proc: &ProcRoot, pid: u32, lines: &[Entry]) -> bool {
    let Some(started) = proc.running_start(pid) else {
        return false;
    };
    lines.iter().find_map(|e| match e {
        Entry::Coloc { pid: p, start } if *p == pid => Some(*start == started),
        _ => None,
    }) != Some(false)
}

/// Puts back the first recorded original of each setting of each unreleased task.
fn restore_journal(
    proc: &ProcRoot,
    dir: &Path,
    coloc: u32,
    lines: &[Entry],
    report: &mut RecoveryReport,
) {
    let mut tasks: BTreeMap<TaskId, TaskSettings> = BTreeMap::new();
    let mut pages: BTreeMap<TaskId, Vec<PageRun>> = BTreeMap::new();
    for line in lines {
        match line {
            Entry::Coloc { .. } => {}
            Entry::Changed {
                pid,
                tid,
                start,
                original,
            } => {
                let task = TaskId {
                    pid: *pid,
                    tid: *tid,
                    start: *start,
                };
                if let Original::PageNodes(runs) = original {
                    pages.entry(task).or_default().extend(runs);
                    continue;
                }
                let s = tasks.entry(task).or_insert_with(|| TaskSettings::new(task));
                match original {
                    Original::Affinity(c) => fill(&mut s.affinity, c.clone()),
                    Original::Nice(n) => fill(&mut s.nice, *n),
                    Original::SliceNs(ns) => fill(&mut s.slice_ns, *ns),
                    Original::PageNodes(_) => {}
                }
            }
            Entry::CgroupMade { .. } | Entry::CgroupMoved { .. } | Entry::CgroupRemoved { .. } => {}
            Entry::Released { pid, tid, start } => {
                let task = TaskId {
                    pid: *pid,
                    tid: *tid,
                    start: *start,
                };
                tasks.remove(&task);
                pages.remove(&task);
            }
        }
    }
    // Processes back in their cgroups first: the kernel resets affinities
    // on a move, and the threads' originals are put back after.
    restore_cgroups(coloc, lines, report);
    // Pages first, while the process is known to be the one journaled.
    for (task, runs) in pages {
        let name = format!("coloc {coloc}: pages of pid {}", task.pid);
        if !proc.is_alive(&task) {
            report.gone.push(name);
            continue;
        }
        match restore_runs(task.pid, &runs) {
            Ok(m) if m.failed == 0 => report
                .restored
                .push(format!("{name}: {} moved back", m.moved)),
            Ok(m) => report.failed.push(format!(
                "{name}: {} pages could not be moved back",
                m.failed
            )),
            Err(e) => report.failed.push(format!("{name}: {e}")),
        }
    }
    // Restoring writes nothing new: this coloc records nothing for tasks it
    // only puts back, so the scratch journal stays unwritten.
    let mut scratch = Journal::new(dir, std::process::id(), 0);
    let me = nix::unistd::geteuid().as_raw();
    for (task, mut settings) in tasks {
        let name = format!("coloc {coloc}: thread {} (pid {})", task.tid, task.pid);
        if me != 0 {
            match proc.task_status(task.pid, task.tid) {
                Ok(s) if s.euid != me => {
                    report
                        .ignored
                        .push(format!("{name}: owned by uid {}, not by this user", s.euid));
                    continue;
                }
                _ => {}
            }
        }
        let mut failed = Vec::new();
        match settings.restore(proc, &mut scratch, &mut failed) {
            Ok(Outcome::Vanished) => report.gone.push(name),
            Ok(_) if failed.is_empty() => report
                .restored
                .push(format!("{name}: {}", describe(&settings))),
            Ok(_) => report
                .failed
                .extend(failed.into_iter().map(|f| format!("{name}: {f}"))),
            Err(e) => report.failed.push(format!("{name}: {e}")),
        }
    }
}

/// Moves the processes of every cgroup coloc made and did not remove back to
/// the cgroup its app came from, and removes coloc's cgroups, the apps'
/// before the slice (`slice.rs`). Only cgroups under `coloc.slice` are
/// touched, whatever the journal says.
fn restore_cgroups(coloc: u32, lines: &[Entry], report: &mut RecoveryReport) {
    let mut made = Vec::new();
    let mut homes = BTreeMap::new();
    let mut removed = Vec::new();
    for line in lines {
        match line {
            Entry::CgroupMade {
                mount,
                version,
                rel,
                enabled,
            } => made.push((Cpusets::at(*version, mount.clone()), rel, *enabled)),
            Entry::CgroupMoved {
                mount, from, to, ..
            } => {
                homes.entry((mount, to)).or_insert(from);
            }
            Entry::CgroupRemoved { mount, rel } => removed.push((mount, rel)),
            _ => {}
        }
    }
    for (sets, rel, enabled) in made.into_iter().rev() {
        if removed.contains(&(&sets.mount, rel)) {
            continue;
        }
        let name = format!("coloc {coloc}: cgroup {}", sets.dir(rel).display());
        if !rel.starts_with(SLICE) {
            report.ignored.push(format!("{name}: not under {SLICE}"));
            continue;
        }
        let home = homes
            .get(&(&sets.mount, rel))
            .map_or(Path::new(""), |h| h.as_path());
        let done = take_back(&sets, rel, home).and_then(|moved| {
            if enabled {
                let parent = rel.parent().unwrap_or(Path::new(""));
                sets.disable_below(parent)?;
            }
            Ok(moved)
        });
        match done {
            Ok(moved) => report.restored.push(format!(
                "{name}: removed, {moved} process(es) back in cgroup /{}",
                home.display()
            )),
            // The slice holds a running daemon's cgroups (made since).
            Err(CgroupError::Io { source, .. })
                if rel == Path::new(SLICE) && source.raw_os_error() == Some(libc::EBUSY) =>
            {
                report.restored.push(format!(
                    "{name}: left in place, a running coloc's apps are in it"
                ))
            }
            Err(e) => report.failed.push(format!("{name}: {e}")),
        }
    }
}

/// Records a journaled original as one coloc put in force (so that restoring
/// writes it back); only the first, the true original, counts.
fn fill<T>(slot: &mut Slot<T>, original: T)
where
    T: Clone,
{
    if slot.original.is_none() {
        slot.in_force = Some(original.clone());
        slot.original = Some(original);
    }
}

fn describe(s: &TaskSettings) -> String {
    let mut parts = Vec::new();
    if let Some(c) = &s.affinity.original {
        parts.push(format!("CPUs {c}"));
    }
    if let Some(n) = s.nice.original {
        parts.push(format!("nice {n}"));
    }
    if let Some(ns) = s.slice_ns.original {
        parts.push(format!("slice {} us", ns / 1000));
    }
    parts.join(", ")
}

/// Removes the DoP records (`coloc-<pid>-…` in `shm_dir`, see `dop.rs`) of coloc
/// processes that are gone: a crash leaves them in shared memory (a tmpfs, so
/// in RAM) until reboot. Only regular files are touched, the caller's own (or,
/// for root, any user's: root's daemon gives each app's record to the app's
/// user), and a record whose pid is alive is kept. Returns the records removed.
pub fn remove_stale_dop_records(shm_dir: &Path, proc_root: &Path) -> io::Result<Vec<PathBuf>> {
    let proc = ProcRoot::new(proc_root);
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = Vec::new();
    let entries = match fs::read_dir(shm_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(removed),
        Err(e) => return Err(e),
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("coloc-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let theirs = me != 0 && meta.uid() != me;
        if !meta.file_type().is_file() || theirs || proc.running_start(pid).is_some() {
            continue;
        }
        match fs::remove_file(entry.path()) {
            Ok(()) => removed.push(entry.path()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}
