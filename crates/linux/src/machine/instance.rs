//! One running app instance: its child process, the threads it has, the
//! settings coloc put on them, its DoP channel and its output files.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use coloc_model::trace::{ApplyOutcome, ExitStatus};
use coloc_model::{AppId, AppPlan, InstanceUsage, MemPolicy, Placement};
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::actuate::{Base, Drift, Outcome, TaskSettings, Wanted};
use super::dop::DopControl;
use super::journal::{Entry, Journal, JournalError, Original};
use super::pages::{PageMover, PAGES_PER_APPLY};
use super::tasks::{ProcRoot, ProcTable, TaskId};
use super::track::Tracker;

#[derive(Debug)]
pub(crate) struct Instance {
    pub id: AppId,
    /// The main process as coloc's child; None for a process coloc adopted
    /// (`LinuxMachine::adopt`): not coloc's to wait for, signal or end.
    pub child: Option<Child>,
    /// The main process's main thread.
    pub main: TaskId,
    /// Readable once the main process exits (`exit_wait.rs`); None where the
    /// kernel has no pidfds.
    pub exit_fd: Option<std::os::fd::OwnedFd>,
    pub tracker: Tracker,
    /// Threads whose settings coloc manages (entries of exited threads are dropped).
    pub settings: BTreeMap<TaskId, TaskSettings>,
    /// The instance's originals, for threads it creates later.
    pub base: Base,
    pub dop: DopControl,
    /// The memory policy set at launch.
    pub memory: MemPolicy,
    /// A later memory policy already refused (said once per request).
    pub memory_refused: Option<MemPolicy>,
    /// Pages of the running app moved for a later `Interleave` (`pages.rs`).
    pub pages: PageMover,
    /// Refusals from the launch, reported with the next apply.
    pub pending_refused: Vec<String>,
    /// Where the app's metric is read from when it exits.
    pub output: PathBuf,
    /// Each thread's last sample (`sample.rs`: reused while it does not run).
    pub last_samples: super::sample::LastSamples,
    /// The app's metric read as its output appears, when it has one.
    pub live_metric: Option<super::live_metric::LiveMetric>,
    /// Rescanned at the next poll whatever the process connector reported:
    /// true for a new instance, whose first threads may predate the events
    /// coloc saw (an adopted process's always do).
    pub rescan_due: bool,
    /// For an adopted process, the CPUs it allowed itself when adopted (its
    /// affinity within its cpuset): coloc never widens them.
    pub allowed: Option<coloc_model::CpuSet>,
    /// Its cpuset cgroup of coloc's, where the machine has a slice
    /// (`slice.rs`).
    pub slice: super::app_cgroup::InSlice,
}

/// The CPUs of a placement for a thread the plan does not name: the set for
/// `Shared`, `rest` (or, if empty, every CPU of the app) for `PerThread`.
pub(crate) fn default_cpus(p: &Placement) -> Option<coloc_model::CpuSet> {
    match p {
        Placement::Unmanaged => None,
        Placement::Shared(c) => Some(c.clone()),
        Placement::PerThread { rest, .. } if !rest.is_empty() => Some(rest.clone()),
        Placement::PerThread { .. } => Some(p.cpus()),
    }
}

impl Instance {
    pub fn pid(&self) -> u32 {
        self.main.pid
    }

    /// Whether coloc adopted this instance rather than starting it.
    pub fn adopted(&self) -> bool {
        self.child.is_none()
    }

    /// Re-reads the thread set: drops the settings of threads that exited and
    /// takes over (journaling) coloc's settings that new threads inherited.
    pub fn rescan(
        &mut self,
        proc: &ProcRoot,
        table: &ProcTable,
        journal: &mut Journal,
    ) -> Result<bool, JournalError> {
        let changed = self.tracker.rescan(proc, table);
        let tracker = &self.tracker;
        self.settings
            .retain(|t, _| tracker.thread(t.tid).is_some_and(|k| k == t));
        for task in self.tracker.threads() {
            if !self.settings.contains_key(task) {
                let s = TaskSettings::discovered(*task, &self.base, proc, journal)?;
                self.settings.insert(*task, s);
            }
        }
        journal.sync()?;
        Ok(changed)
    }

    /// Applies `plan` to every thread, the app's pages (`nodes`: the NUMA
    /// nodes of its CPUs, for interleaving) and the DoP channel.
    pub fn apply(
        &mut self,
        plan: &AppPlan,
        proc: &ProcRoot,
        journal: &mut Journal,
        nodes: &[u32],
    ) -> ApplyOutcome {
        let mut out = ApplyOutcome {
            app: self.id,
            refused: std::mem::take(&mut self.pending_refused),
            ..ApplyOutcome::default()
        };
        let threads: Vec<TaskId> = self.tracker.threads().copied().collect();
        // First every thread's drift and originals, journaled with one sync;
        // then the changes.
        let mut wants = Vec::with_capacity(threads.len());
        let planned = plan.placement.by_thread();
        for task in threads {
            let settings = self
                .settings
                .entry(task)
                .or_insert_with(|| TaskSettings::new(task));
            match settings.affinity_drift() {
                Drift::None => {}
                Drift::Reapply(_) => out.affinity_drift += 1,
                Drift::Respect(cpus) => {
                    out.affinity_drift += 1;
                    out.refused.push(format!(
                        "thread {}: moved itself to CPUs {cpus} {} times; its affinity is left \
                         to the app from now on",
                        task.tid, settings.drifts
                    ));
                }
            }
            let want = Wanted {
                affinity: if settings.app_owns_affinity {
                    settings.affinity.in_force.clone()
                } else {
                    planned.get(task.tid).cloned()
                },
                nice: plan.sched.nice.map(i32::from),
                slice_ns: plan.sched.slice_us.map(|us| u64::from(us) * 1000),
            };
            if let Err(e) = settings.journal_originals(&want, proc, journal) {
                out.refused.push(format!("{e}: settings left unchanged"));
                return out;
            }
            wants.push((task, want));
        }
        if let Err(e) = journal.sync() {
            out.refused.push(format!("{e}: settings left unchanged"));
            return out;
        }
        for (task, want) in wants {
            let settings = self.settings.get_mut(&task).expect("inserted above");
            let result = settings.apply(&want, proc, journal, &mut out.refused);
            if task.tid == self.tracker.main() {
                let main = settings.base();
                self.base = Base {
                    affinity: self.base.affinity.take().or(main.affinity),
                    nice: self.base.nice.or(main.nice),
                    slice_ns: self.base.slice_ns.or(main.slice_ns),
                };
            }
            match result {
                Ok(Outcome::Unchanged) => {}
                Ok(Outcome::Changed) => out.threads_set += 1,
                Ok(Outcome::Vanished) => out.threads_vanished += 1,
                Err(e) => {
                    out.refused.push(format!("{e}: settings left unchanged"));
                    break;
                }
            }
        }
        self.apply_memory(plan.memory, proc, journal, nodes, &mut out);
        let cpus: Vec<u32> = plan.placement.cpus().iter().collect();
        self.dop.apply(plan.dop, cpus, &mut out.refused);
        let interleave =
            plan.memory == MemPolicy::Interleave && self.memory != MemPolicy::Interleave;
        self.dop
            .apply_interleave(interleave.then_some(nodes), &mut out.refused);
        out
    }

    /// A running app's memory policy (`pages.rs`): `Interleave` when it was not
    /// launched so walks its pages (in passes with a rest between them,
    /// rate-limited, journaled first); `Local` or
    /// `Default` after coloc moved pages moves them back. `set_mempolicy` acts
    /// on the calling thread only, so the policy of its future allocations is
    /// set by its own threads where the shim runs in it
    /// (`DopControl::apply_interleave`); elsewhere it stays the app's own, and
    /// later pages are interleaved by the following walks.
    fn apply_memory(
        &mut self,
        memory: MemPolicy,
        proc: &ProcRoot,
        journal: &mut Journal,
        nodes: &[u32],
        out: &mut ApplyOutcome,
    ) {
        let pid = self.pid();
        let main = self.tracker.thread(self.tracker.main()).copied();
        let result = match memory {
            MemPolicy::Interleave if self.memory != MemPolicy::Interleave => {
                let Some(main) = main else {
                    return;
                };
                self.pages
                    .interleave(proc, pid, nodes, PAGES_PER_APPLY, Instant::now(), |runs| {
                        journal.append(&Entry::changed(&main, Original::PageNodes(runs.to_vec())))
                    })
            }
            MemPolicy::Local | MemPolicy::Default if self.pages.has_moved() => {
                self.pages.restore(pid).map(Some)
            }
            MemPolicy::Local
                if self.memory == MemPolicy::Interleave && self.memory_refused != Some(memory) =>
            {
                self.memory_refused = Some(memory);
                out.refused.push(format!(
                    "memory policy {memory:?}: the app was launched with {:?}, which stays the \
                     policy of its allocations (the policy set at launch cannot be changed from \
                     outside: set_mempolicy acts on the calling thread only)",
                    self.memory
                ));
                return;
            }
            _ => {
                // Not interleaved now (and nothing to move back): a later
                // Interleave starts a pass at once.
                self.pages.stop();
                return;
            }
        };
        match result {
            Ok(moves) => out.pages = moves,
            Err(e) if self.memory_refused != Some(memory) => {
                self.memory_refused = Some(memory);
                out.refused.push(format!("memory policy {memory:?}: {e}"));
            }
            Err(_) => {}
        }
    }

    /// Restores every thread coloc changed that is still alive, and the pages
    /// it moved, and lets go of it; returns what could not be put back.
    pub fn release_all(
        &mut self,
        proc: &ProcRoot,
        journal: &mut Journal,
    ) -> Result<Vec<String>, JournalError> {
        let mut refused = Vec::new();
        if self.pages.has_moved() {
            match self.pages.restore(self.pid()) {
                Ok(m) if m.failed > 0 => {
                    refused.push(format!("{} pages could not be moved back", m.failed))
                }
                Ok(_) => {}
                Err(e) => refused.push(format!("moving pages back: {e}")),
            }
        }
        for settings in self.settings.values_mut() {
            settings.release(proc, journal, &mut refused)?;
        }
        journal.sync()?;
        self.settings.clear();
        Ok(refused)
    }

    /// Its exit status, once the main process has exited (reaping it), with
    /// what it consumed over its whole life. An adopted process is not
    /// coloc's child: its end is seen in /proc (gone, a zombie, or its pid
    /// reused) and its status and usage are unknown.
    pub fn try_exit(
        &mut self,
        proc: &ProcRoot,
    ) -> std::io::Result<Option<(ExitStatus, Option<InstanceUsage>)>> {
        match &self.child {
            Some(child) => {
                Ok(try_reap(child.id())?.map(|(status, usage)| (exit_status(status), Some(usage))))
            }
            None if proc.is_alive(&self.main) => Ok(None),
            None => Ok(Some((ExitStatus::Unknown, None))),
        }
    }

    /// The text the metric is read from: the end of the metric file or of the
    /// standard output (see [`read_tail`]).
    pub fn output(&self) -> Option<String> {
        if self.adopted() {
            return None;
        }
        match read_tail(&self.output, OUTPUT_TAIL) {
            Ok(text) => Some(text),
            Err(e) => {
                tracing::warn!(app = %self.id, "reading {}: {e}", self.output.display());
                None
            }
        }
    }
}

/// How much of an app's output the metric is looked for in: its last MiB (the
/// metric is the regex's last match, printed at the end).
pub(crate) const OUTPUT_TAIL: u64 = 1 << 20;

/// The last `max` bytes of the regular file `path` (invalid UTF-8 replaced),
/// without blocking: a FIFO, a device (`/dev/zero`) or a directory is refused,
/// and a huge file is not read whole.
pub(crate) fn read_tail(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut file, len) = open_regular(path)?;
    file.seek(SeekFrom::Start(len.saturating_sub(max)))?;
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `path` opened for reading without blocking, with its length: a FIFO, a
/// device or a directory is refused (the one way coloc opens a file a user
/// named, `coloc_model::user_file`).
pub(crate) fn open_regular(path: &std::path::Path) -> std::io::Result<(std::fs::File, u64)> {
    coloc_model::user_file::open_regular(path).map_err(|e| e.into_io())
}

/// Reaps the child `pid` if it has exited: its status and `wait4`'s rusage,
/// the CPU time of all its threads and of the descendants it reaped, which
/// the kernel adds up as each one is reaped (the app's whole life, with no
/// gap after the last sample). Cycles are not counted here.
fn try_reap(pid: u32) -> std::io::Result<Option<(std::process::ExitStatus, InstanceUsage)>> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes only to the two locals passed by pointer; `pid` is
    // coloc's unreaped child (std's `Child` is never waited on afterwards: the
    // instance is dropped once its exit is seen).
    let got = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
    if got < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if got == 0 {
        return Ok(None);
    }
    let ns =
        |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000_000 + t.tv_usec.max(0) as u64 * 1000;
    Ok(Some((
        std::process::ExitStatus::from_raw(status),
        InstanceUsage {
            cpu_ns: ns(usage.ru_utime) + ns(usage.ru_stime),
            cycles: None,
            llc: None,
        },
    )))
}

fn exit_status(s: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => ExitStatus::Code(c),
        (None, Some(sig)) => ExitStatus::Signal(sig),
        (None, None) => ExitStatus::Code(-1),
    }
}

/// Ends instances still running at the end or on interruption: SIGTERM to each
/// process group, `grace` to exit, then SIGKILL. Reaps every main process.
/// Adopted instances are left running: coloc did not start them.
pub(crate) fn terminate(instances: &mut [Instance], grace: Duration) {
    let mut running: Vec<(u32, &mut Child)> = instances
        .iter_mut()
        .filter_map(|i| Some((i.main.pid, i.child.as_mut()?)))
        .collect();
    for (pid, _) in &running {
        signal_group(*pid, Signal::SIGTERM);
    }
    let until = Instant::now() + grace;
    while !running.is_empty() && Instant::now() < until {
        running.retain_mut(|(_, c)| matches!(c.try_wait(), Ok(None)));
        std::thread::sleep(Duration::from_millis(10));
    }
    for (pid, child) in running {
        signal_group(pid, Signal::SIGKILL);
        if let Err(e) = child.wait() {
            tracing::warn!(pid, "waiting for the killed instance: {e}");
        }
    }
}

/// Sends `signal` to the process group of an instance coloc started (its main
/// process `pid` leads it); a group that is gone already is no error.
fn signal_group(pid: u32, signal: Signal) {
    match killpg(Pid::from_raw(pid as i32), signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pid, "{signal}: {e}"),
    }
}

/// Ends processes an app left running (descendants that outlived it, or escaped
/// its process group), their settings already restored: SIGTERM to each one
/// still alive with its start time (a reused pid is someone else's), `grace`
/// to exit, then SIGKILL. coloc started them; they do not outlive the run.
pub(crate) fn end_leftovers(proc: &ProcRoot, leftovers: Vec<(u32, u64)>, grace: Duration) {
    let alive = |&(pid, start): &(u32, u64)| {
        proc.is_alive(&TaskId {
            pid,
            tid: pid,
            start,
        })
    };
    let signal = |(pid, _): &(u32, u64), sig: Signal| match nix::sys::signal::kill(
        Pid::from_raw(*pid as i32),
        sig,
    ) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pid, "{sig} to a process the app left running: {e}"),
    };
    let mut running: Vec<(u32, u64)> = leftovers.into_iter().filter(alive).collect();
    if running.is_empty() {
        return;
    }
    tracing::info!("ending {} process(es) the apps left running", running.len());
    for p in &running {
        signal(p, Signal::SIGTERM);
    }
    let until = Instant::now() + grace;
    while !running.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
        running.retain(alive);
    }
    for p in &running {
        signal(p, Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metric file that is a FIFO no one writes to would block the manager
    /// forever if it were opened and read like a file.
    #[test]
    fn a_metric_fifo_does_not_block_the_loop() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("metric");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(read_tail(&fifo, OUTPUT_TAIL).is_err()));
        let refused = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("read_tail returned instead of blocking");
        assert!(refused, "a FIFO is not read");
    }

    #[test]
    fn a_device_is_not_read_whole() {
        let e = read_tail(std::path::Path::new("/dev/zero"), OUTPUT_TAIL).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn only_the_end_of_huge_output_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut text = "x".repeat(3 * OUTPUT_TAIL as usize);
        text.push_str("\nresult: 42\n");
        std::fs::write(&path, &text).unwrap();
        let tail = read_tail(&path, OUTPUT_TAIL).unwrap();
        assert_eq!(tail.len() as u64, OUTPUT_TAIL);
        assert!(tail.ends_with("result: 42\n"));
    }
}
