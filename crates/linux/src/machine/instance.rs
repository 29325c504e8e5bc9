//! One running app instance: its child process, the threads it has, the
//! settings coloc put on them, its DoP channel and its output files.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use coloc_model::trace::{ApplyOutcome, ExitStatus};
use coloc_model::{AppId, AppPlan, MemPolicy, Placement};
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::actuate::{Base, Outcome, TaskSettings, Wanted};
use super::dop::DopControl;
use super::journal::{Journal, JournalError};
use super::tasks::{ProcRoot, ProcTable, TaskId};
use super::track::Tracker;

#[derive(Debug)]
pub(crate) struct Instance {
    pub id: AppId,
    pub child: Child,
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
    /// Refusals from the launch, reported with the next apply.
    pub pending_refused: Vec<String>,
    /// Where the app's metric is read from when it exits.
    pub output: PathBuf,
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
        self.child.id()
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
        Ok(changed)
    }

    /// Applies `plan` to every thread and the DoP channel.
    pub fn apply(
        &mut self,
        plan: &AppPlan,
        proc: &ProcRoot,
        journal: &mut Journal,
    ) -> ApplyOutcome {
        let mut out = ApplyOutcome {
            app: self.id,
            refused: std::mem::take(&mut self.pending_refused),
            ..ApplyOutcome::default()
        };
        let threads: Vec<TaskId> = self.tracker.threads().copied().collect();
        for task in threads {
            let want = Wanted {
                affinity: plan.placement.cpus_of(task.tid).cloned(),
                nice: plan.sched.nice.map(i32::from),
                slice_ns: plan.sched.slice_us.map(|us| u64::from(us) * 1000),
            };
            let settings = self
                .settings
                .entry(task)
                .or_insert_with(|| TaskSettings::new(task));
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
        if plan.memory != MemPolicy::Default
            && plan.memory != self.memory
            && self.memory_refused != Some(plan.memory)
        {
            self.memory_refused = Some(plan.memory);
            out.refused.push(format!(
                "memory policy {:?}: memory policy applies at launch (migrating a running app's pages is not implemented)",
                plan.memory
            ));
        }
        let cpus: Vec<u32> = plan.placement.cpus().iter().collect();
        self.dop.apply(plan.dop, cpus, &mut out.refused);
        out
    }

    /// Restores every thread coloc changed that is still alive and lets go of
    /// it; returns the settings that could not be put back.
    pub fn release_all(
        &mut self,
        proc: &ProcRoot,
        journal: &mut Journal,
    ) -> Result<Vec<String>, JournalError> {
        let mut refused = Vec::new();
        for settings in self.settings.values_mut() {
            settings.release(proc, journal, &mut refused)?;
        }
        self.settings.clear();
        Ok(refused)
    }

    /// Sends `signal` to the instance's process group (it was started as its
    /// leader); a group that is gone already is no error.
    pub fn signal_group(&self, signal: Signal) {
        match killpg(Pid::from_raw(self.pid() as i32), signal) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(e) => tracing::warn!(pid = self.pid(), "{signal}: {e}"),
        }
    }

    /// Its exit status, once the main process has exited (reaping it).
    pub fn try_exit(&mut self) -> std::io::Result<Option<ExitStatus>> {
        Ok(self.child.try_wait()?.map(exit_status))
    }

    /// The text the metric is read from: the metric file or the standard output.
    pub fn output(&self) -> Option<String> {
        std::fs::read_to_string(&self.output).ok()
    }
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
pub(crate) fn terminate(instances: &mut [Instance], grace: Duration) {
    for i in instances.iter() {
        i.signal_group(Signal::SIGTERM);
    }
    let until = Instant::now() + grace;
    let mut running: Vec<&mut Instance> = instances.iter_mut().collect();
    while !running.is_empty() && Instant::now() < until {
        running.retain_mut(|i| matches!(i.child.try_wait(), Ok(None)));
        std::thread::sleep(Duration::from_millis(10));
    }
    for i in running {
        i.signal_group(Signal::SIGKILL);
        if let Err(e) = i.child.wait() {
            tracing::warn!(pid = i.pid(), "waiting for the killed instance: {e}");
        }
    }
}
