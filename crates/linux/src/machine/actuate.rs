//! Per-thread settings: what coloc found (the originals, journaled before the
//! first change) and what it put in force, so that a plan only changes what
//! differs and a restore puts back exactly what coloc changed.
//!
//! Three settings are managed per thread: CPU affinity (`sched_setaffinity`),
//! nice (`setpriority`) and the EEVDF slice request (`sched_setattr` with
//! `sched_runtime`, Linux 6.12+). Each goes through [`settle`], the one place
//! that journals, changes and classifies the kernel's answer: `ESRCH` or a
//! start-time mismatch means the thread vanished (counted, never an error);
//! anything else is a refusal with its reason.
//!
//! **Affinity drift.** An app may set its own threads' affinity (OpenMP's
//! `OMP_PROC_BIND`, `taskset`, `pthread_setaffinity_np`), which defeats the
//! plan silently if coloc only compares with what it last wrote. Each apply
//! therefore first asks the kernel where each thread coloc placed may run
//! ([`TaskSettings::affinity_drift`]), one `sched_getaffinity` per thread. The
//! rule: a thread found elsewhere is put back, up to [`MAX_REAPPLY`] times; found
//! elsewhere once more, the app is taken to manage that thread's placement
//! itself, and coloc leaves its affinity alone from then on (its nice and
//! slice are still applied) and says so once. Every drift is counted in the
//! trace (`affinity_drift` of the apply's outcome) and in the run's summary.

use std::fmt::Display;

use coloc_model::CpuSet;
use nix::errno::Errno;

use super::journal::{Entry, Journal, JournalError, Original};
use super::sys;
use super::tasks::{ProcRoot, TaskId};

/// What a plan asks of one thread; None leaves (or puts back) the original.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub affinity: Option<CpuSet>,
    pub nice: Option<i32>,
    /// Requested slice in ns.
    pub slice_ns: Option<u64>,
}

/// One setting of one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slot<T> {
    /// The value before coloc first changed it (journaled); None = never changed.
    pub original: Option<T>,
    /// What coloc asked for last; None = the original is in force.
    pub in_force: Option<T>,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self {
            original: None,
            in_force: None,
        }
    }
}

/// A thread's settings as coloc knows them.
#[derive(Clone, Debug)]
pub(crate) struct TaskSettings {
    pub task: TaskId,
    pub affinity: Slot<CpuSet>,
    pub nice: Slot<i32>,
    pub slice_ns: Slot<u64>,
    /// Times the thread was found off the CPUs coloc put it on.
    pub drifts: u32,
    /// The app places this thread itself (it drifted more than
    /// [`MAX_REAPPLY`] times): coloc no longer sets its affinity.
    pub app_owns_affinity: bool,
}

/// How many times a thread that moved itself off its planned CPUs is put back
/// before coloc leaves its affinity to the app.
pub const MAX_REAPPLY: u32 = 3;

/// What [`TaskSettings::affinity_drift`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Drift {
    /// On the CPUs coloc put it on (or coloc has not placed it).
    None,
    /// Elsewhere: the next apply puts it back.
    Reapply(CpuSet),
    /// Elsewhere once too often: from now on the app's choice stands.
    Respect(CpuSet),
}

/// What applying to one thread did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Everything asked was already in force.
    Unchanged,
    /// At least one setting was written.
    Changed,
    /// The thread exited, or its id now names another thread.
    Vanished,
}

/// Why one setting did not take.
#[derive(Debug)]
pub(crate) enum Fail {
    Gone,
    Refused(String),
}

impl From<Errno> for Fail {
    fn from(e: Errno) -> Self {
        match e {
            Errno::ESRCH => Fail::Gone,
            Errno::EINVAL => Fail::Refused(format!(
                "{} (CPU offline or outside the cpuset, or a value out of range)",
                e.desc()
            )),
            e => Fail::Refused(e.desc().to_string()),
        }
    }
}

/// The thread's nice value now.
pub(crate) fn read_nice(proc: &ProcRoot, task: &TaskId) -> Result<i32, Fail> {
    match proc.task_stat(task.pid, task.tid) {
        Ok(s) if s.starttime == task.start => Ok(s.nice as i32),
        _ => Err(Fail::Gone),
    }
}

/// The thread's slice now (`sched_runtime` as `sched_getattr` reports it).
pub(crate) fn read_slice(tid: u32) -> Result<u64, Fail> {
    let attr = sys::sched_getattr(tid)?;
    if !attr.is_fair() {
        return Err(Fail::Refused(format!(
            "scheduling policy {} is not SCHED_OTHER or SCHED_BATCH",
            attr.sched_policy
        )));
    }
    Ok(attr.sched_runtime)
}

/// Requests a slice of `ns` for `tid`, keeping its policy and nice, and checks
/// that the kernel took it: kernels before 6.12 ignore `sched_runtime` for fair
/// tasks, and 6.12+ clamp it to 0.1..100 ms.
pub(crate) fn write_slice(tid: u32, ns: u64) -> Result<(), Fail> {
    let attr = sys::sched_getattr(tid)?;
    sys::sched_setattr(
        tid,
        &sys::SchedAttr {
            sched_runtime: ns,
            ..attr
        },
    )?;
    check_slice(tid, ns)
}

/// Whether the kernel keeps the slice coloc asked for.
pub(crate) fn check_slice(tid: u32, ns: u64) -> Result<(), Fail> {
    let back = sys::sched_getattr(tid)?.sched_runtime;
    if back != ns {
        return Err(Fail::Refused(format!(
            "the kernel keeps a slice of {} us (Linux 6.12+ honours 100 us..100 ms)",
            back / 1000
        )));
    }
    Ok(())
}

/// An instance's originals (its main thread's values before coloc changed
/// them), what a thread created later would have had without coloc.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Base {
    pub affinity: Option<CpuSet>,
    pub nice: Option<i32>,
    pub slice_ns: Option<u64>,
}

impl TaskSettings {
    /// A thread coloc has not changed yet.
    pub fn new(task: TaskId) -> Self {
        Self {
            task,
            affinity: Slot::default(),
            nice: Slot::default(),
            slice_ns: Slot::default(),
            drifts: 0,
            app_owns_affinity: false,
        }
    }

    /// Compares the CPUs the kernel lets the thread use with those coloc last
    /// put in force, and follows the drift rule (module doc): what the thread
    /// has now is recorded as in force, so that a plan asking for coloc's CPUs
    /// writes them again, unless the app now owns the thread's placement.
    pub fn affinity_drift(&mut self) -> Drift {
        if self.app_owns_affinity {
            return Drift::None;
        }
        let Some(expected) = &self.affinity.in_force else {
            return Drift::None;
        };
        // Gone (an error): the apply that follows finds out and counts it.
        if sys::affinity_is(self.task.tid, expected).unwrap_or(true) {
            return Drift::None;
        }
        let Ok(actual) = sys::affinity(self.task.tid) else {
            return Drift::None;
        };
        self.drifts += 1;
        self.affinity.in_force = Some(actual.clone());
        if self.drifts > MAX_REAPPLY {
            self.app_owns_affinity = true;
            Drift::Respect(actual)
        } else {
            Drift::Reapply(actual)
        }
    }

    /// A thread found after its instance started. It inherited its creator's
    /// settings, coloc's where coloc changed them: each setting that differs
    /// from the instance's original is taken as coloc's, in force, with the
    /// instance's original journaled as its original, so a restore (or a
    /// recovery) gives it what it would have had without coloc.
    pub fn discovered(
        task: TaskId,
        base: &Base,
        proc: &ProcRoot,
        journal: &mut Journal,
    ) -> Result<Self, JournalError> {
        let mut s = Self::new(task);
        let tid = task.tid;
        inherit(
            &mut s.affinity,
            &base.affinity,
            &task,
            journal,
            Original::Affinity,
            || sys::affinity(tid).ok(),
        )?;
        inherit(
            &mut s.nice,
            &base.nice,
            &task,
            journal,
            Original::Nice,
            || read_nice(proc, &task).ok(),
        )?;
        inherit(
            &mut s.slice_ns,
            &base.slice_ns,
            &task,
            journal,
            Original::SliceNs,
            || read_slice(tid).ok(),
        )?;
        Ok(s)
    }

    /// The originals of this thread, as the base for threads it (or its
    /// instance) creates.
    pub fn base(&self) -> Base {
        Base {
            affinity: self.affinity.original.clone(),
            nice: self.nice.original,
            slice_ns: self.slice_ns.original,
        }
    }

    /// Whether coloc changed anything of this thread.
    pub fn touched(&self) -> bool {
        self.affinity.original.is_some()
            || self.nice.original.is_some()
            || self.slice_ns.original.is_some()
    }

    fn in_force(&self) -> Wanted {
        Wanted {
            affinity: self.affinity.in_force.clone(),
            nice: self.nice.in_force,
            slice_ns: self.slice_ns.in_force,
        }
    }

    /// Makes `want` the thread's settings, journaling each original before its
    /// first change. Refusals are appended to `refused`; only a journal that
    /// cannot be written is an error (and then nothing more is changed).
    pub fn apply(
        &mut self,
        want: &Wanted,
        proc: &ProcRoot,
        journal: &mut Journal,
        refused: &mut Vec<String>,
    ) -> Result<Outcome, JournalError> {
        if *want == self.in_force() {
            return Ok(Outcome::Unchanged);
        }
        if !proc.is_alive(&self.task) {
            return Ok(Outcome::Vanished);
        }
        let task = self.task;
        let tid = task.tid;
        let steps = [
            settle(
                "CPUs",
                &want.affinity,
                &mut self.affinity,
                &task,
                journal,
                || sys::affinity(tid).map_err(Fail::from),
                Original::Affinity,
                |cpus| sys::set_affinity(tid, cpus).map_err(Fail::from),
            )?,
            settle(
                "nice",
                &want.nice,
                &mut self.nice,
                &task,
                journal,
                || read_nice(proc, &task),
                Original::Nice,
                |n| sys::set_nice(tid, *n).map_err(Fail::from),
            )?,
            settle(
                "slice (ns)",
                &want.slice_ns,
                &mut self.slice_ns,
                &task,
                journal,
                || read_slice(tid),
                Original::SliceNs,
                |ns| write_slice(tid, *ns),
            )?,
        ];
        let mut outcome = Outcome::Unchanged;
        for step in steps {
            match step {
                Step::Same => {}
                Step::Written => outcome = Outcome::Changed,
                Step::Gone => return Ok(Outcome::Vanished),
                Step::Refused(why) => refused.push(why),
            }
        }
        Ok(outcome)
    }

    /// Journals, without waiting for the disk, the original of each setting
    /// `want` changes for the first time, so that [`TaskSettings::apply`] finds
    /// it recorded; the caller syncs the journal once before applying (see
    /// [`Journal`]). An original that cannot be read is left to `apply`, which
    /// tells a vanished thread from a refusal.
    pub fn journal_originals(
        &mut self,
        want: &Wanted,
        proc: &ProcRoot,
        journal: &mut Journal,
    ) -> Result<(), JournalError> {
        if *want == self.in_force() {
            return Ok(());
        }
        let task = self.task;
        let tid = task.tid;
        first_original(
            &want.affinity,
            &mut self.affinity,
            &task,
            journal,
            Original::Affinity,
            || sys::affinity(tid).ok(),
        )?;
        first_original(
            &want.nice,
            &mut self.nice,
            &task,
            journal,
            Original::Nice,
            || read_nice(proc, &task).ok(),
        )?;
        first_original(
            &want.slice_ns,
            &mut self.slice_ns,
            &task,
            journal,
            Original::SliceNs,
            || read_slice(tid).ok(),
        )
    }

    /// Puts back every original coloc changed.
    pub fn restore(
        &mut self,
        proc: &ProcRoot,
        journal: &mut Journal,
        refused: &mut Vec<String>,
    ) -> Result<Outcome, JournalError> {
        self.apply(&Wanted::default(), proc, journal, refused)
    }

    /// Restores and, unless a setting was refused, records in the journal that
    /// coloc let go of the thread (recovery after a crash leaves it alone).
    pub fn release(
        &mut self,
        proc: &ProcRoot,
        journal: &mut Journal,
        refused: &mut Vec<String>,
    ) -> Result<Outcome, JournalError> {
        let before = refused.len();
        let outcome = self.restore(proc, journal, refused)?;
        if self.touched() && refused.len() == before {
            // Not waited for: a lost `released` line only makes a recovery
            // put back again what is back already. The caller syncs.
            journal.record(&Entry::released(&self.task))?;
        }
        Ok(outcome)
    }
}

/// See [`TaskSettings::discovered`]: one setting of a new thread.
fn inherit<T: Clone + PartialEq>(
    slot: &mut Slot<T>,
    base: &Option<T>,
    task: &TaskId,
    journal: &mut Journal,
    record: impl FnOnce(T) -> Original,
    current: impl FnOnce() -> Option<T>,
) -> Result<(), JournalError> {
    let Some(original) = base else { return Ok(()) };
    let Some(now) = current() else { return Ok(()) };
    if now != *original {
        // Nothing is changed after this: the caller syncs once for all threads.
        journal.record(&Entry::changed(task, record(original.clone())))?;
        slot.original = Some(original.clone());
        slot.in_force = Some(now);
    }
    Ok(())
}

/// See [`TaskSettings::journal_originals`]: one setting.
fn first_original<T: Clone + PartialEq>(
    want: &Option<T>,
    slot: &mut Slot<T>,
    task: &TaskId,
    journal: &mut Journal,
    record: impl FnOnce(T) -> Original,
    read: impl FnOnce() -> Option<T>,
) -> Result<(), JournalError> {
    if want.is_none() || *want == slot.in_force || slot.original.is_some() {
        return Ok(());
    }
    if let Some(original) = read() {
        journal.record(&Entry::changed(task, record(original.clone())))?;
        slot.original = Some(original);
    }
    Ok(())
}

enum Step {
    Same,
    Written,
    Gone,
    Refused(String),
}

/// Brings one setting to `want` (None: back to the original, if coloc changed
/// it). The original is read and journaled before the first change.
#[allow(clippy::too_many_arguments)]
fn settle<T: Clone + PartialEq + Display>(
    what: &str,
    want: &Option<T>,
    slot: &mut Slot<T>,
    task: &TaskId,
    journal: &mut Journal,
    read: impl FnOnce() -> Result<T, Fail>,
    record: impl FnOnce(T) -> Original,
    write: impl FnOnce(&T) -> Result<(), Fail>,
) -> Result<Step, JournalError> {
    if *want == slot.in_force {
        return Ok(Step::Same);
    }
    let refused = |value: &T, why: String| {
        Step::Refused(format!("thread {}: {what} {value}: {why}", task.tid))
    };
    let target = match want {
        Some(v) => v.clone(),
        None => match &slot.original {
            Some(o) => o.clone(),
            None => {
                slot.in_force = None;
                return Ok(Step::Same);
            }
        },
    };
    if slot.original.is_none() {
        match read() {
            Ok(original) => {
                journal.append(&Entry::changed(task, record(original.clone())))?;
                slot.original = Some(original);
            }
            Err(Fail::Gone) => return Ok(Step::Gone),
            Err(Fail::Refused(why)) => {
                // Asked for, not in force: not retried until the plan changes.
                slot.in_force = want.clone();
                return Ok(refused(&target, why));
            }
        }
    }
    let result = write(&target);
    slot.in_force = want.clone();
    Ok(match result {
        Ok(()) => Step::Written,
        Err(Fail::Gone) => Step::Gone,
        Err(Fail::Refused(why)) => refused(&target, why),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn own_thread(proc: &ProcRoot) -> TaskId {
        let pid = std::process::id();
        let tid = nix::unistd::gettid().as_raw() as u32;
        let start = proc.task_stat(pid, tid).unwrap().starttime;
        TaskId { pid, tid, start }
    }

    /// A thread id that now names a thread started at another time is a
    /// different thread: nothing is journaled or changed.
    #[test]
    fn a_start_time_mismatch_counts_as_vanished() {
        let proc = ProcRoot::new(Path::new("/proc"));
        let me = own_thread(&proc);
        let before = sys::affinity(me.tid).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::new(dir.path(), 1, 1);
        let mut s = TaskSettings::new(TaskId {
            start: me.start + 1,
            ..me
        });
        let want = Wanted {
            affinity: Some(CpuSet::single(before.first().unwrap())),
            ..Wanted::default()
        };
        let mut refused = Vec::new();
        let out = s.apply(&want, &proc, &mut journal, &mut refused).unwrap();
        assert_eq!(out, Outcome::Vanished);
        assert!(refused.is_empty());
        assert!(!journal.path().exists(), "nothing journaled");
        assert_eq!(sys::affinity(me.tid).unwrap(), before, "nothing changed");
    }

    /// The whole cycle on this test's own thread: journal, change, no-op,
    /// restore.
    #[test]
    fn changes_are_journaled_first_and_restored() {
        let proc = ProcRoot::new(Path::new("/proc"));
        let me = own_thread(&proc);
        let before = sys::affinity(me.tid).unwrap();
        let nice = read_nice(&proc, &me).ok().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::new(dir.path(), 1, 1);
        let mut s = TaskSettings::new(me);
        let want = Wanted {
            affinity: Some(CpuSet::single(before.first().unwrap())),
            nice: Some(nice + 1),
            slice_ns: None,
        };
        let mut refused = Vec::new();
        assert_eq!(
            s.apply(&want, &proc, &mut journal, &mut refused).unwrap(),
            Outcome::Changed
        );
        assert_eq!(
            s.apply(&want, &proc, &mut journal, &mut refused).unwrap(),
            Outcome::Unchanged
        );
        assert_eq!(
            sys::affinity(me.tid).unwrap(),
            want.affinity.clone().unwrap()
        );
        assert_eq!(read_nice(&proc, &me).ok(), Some(nice + 1));
        let text = std::fs::read_to_string(journal.path()).unwrap();
        assert_eq!(text.lines().count(), 3, "header, affinity, nice: {text}");
        s.release(&proc, &mut journal, &mut refused).unwrap();
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(sys::affinity(me.tid).unwrap(), before);
        // Lowering nice again needs CAP_SYS_NICE; this runs as root.
        assert_eq!(read_nice(&proc, &me).ok(), Some(nice));
        let text = std::fs::read_to_string(journal.path()).unwrap();
        assert!(text.lines().last().unwrap().contains("released"), "{text}");
    }
}
