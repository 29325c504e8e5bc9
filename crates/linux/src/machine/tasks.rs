//! Reading tasks from procfs under a configurable root (docs/architecture.md, Conventions: readers take a
//! root path), with the `procfs` crate's parsers.
//!
//! A task is named by (pid, tid, start time): the start time (field 22 of
//! `stat`, clock ticks since boot) tells a thread from a later one that reused
//! its id, so every action and every restore checks it first.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use coloc_model::CpuSet;
use procfs::process::{Schedstat, Stat, Status};
use procfs::{FromRead, ProcResult};

/// One thread, as coloc names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TaskId {
    pub pid: u32,
    pub tid: u32,
    /// Field 22 of `/proc/<pid>/task/<tid>/stat`.
    pub start: u64,
}

/// A thread's `schedstat`, kept open between samples. Opening a /proc file
/// (a path walk through the pid and task directories) costs more than
/// reading it; read again from offset 0 it gives the current values, and
/// once the thread has exited the read fails (the open file names that
/// thread, never a later one with its id).
#[derive(Debug)]
pub(crate) struct SchedstatFile(fs::File);

impl SchedstatFile {
    pub fn read(&self) -> ProcResult<Schedstat> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let n = self.0.read_at(&mut buf, 0)?;
        Schedstat::from_read(&buf[..n])
    }
}

/// The procfs mount coloc reads (`/proc`, or a recorded tree in tests).
#[derive(Clone, Debug)]
pub(crate) struct ProcRoot(PathBuf);

impl ProcRoot {
    pub fn new(root: &Path) -> Self {
        Self(root.to_path_buf())
    }

    fn task_file(&self, pid: u32, tid: u32, file: &str) -> PathBuf {
        self.0
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string())
            .join(file)
    }

    /// A file of one process (`maps`, `numa_maps`), as text.
    pub fn process_file(&self, pid: u32, file: &str) -> io::Result<String> {
        std::fs::read_to_string(self.0.join(pid.to_string()).join(file))
    }

    /// `stat` of one thread.
    pub fn task_stat(&self, pid: u32, tid: u32) -> ProcResult<Stat> {
        Stat::from_file(self.task_file(pid, tid, "stat"))
    }

    pub fn task_status(&self, pid: u32, tid: u32) -> ProcResult<Status> {
        Status::from_file(self.task_file(pid, tid, "status"))
    }

    pub fn task_schedstat(&self, pid: u32, tid: u32) -> ProcResult<Schedstat> {
        Schedstat::from_file(self.task_file(pid, tid, "schedstat"))
    }

    /// The task's `schedstat` file, opened to be read again each epoch
    /// ([`SchedstatFile`]).
    pub fn open_task_schedstat(&self, pid: u32, tid: u32) -> io::Result<SchedstatFile> {
        fs::File::open(self.task_file(pid, tid, "schedstat")).map(SchedstatFile)
    }

    /// Migrations and context switches from the task's `sched` file; None where
    /// the kernel does not show it (no CONFIG_SCHED_DEBUG) or the thread is gone.
    /// One small file instead of `status` too: `status` is the costliest file of
    /// a sample to read and parse, and sampling every thread each epoch is most of
    /// coloc's steady CPU use.
    pub fn task_sched(&self, pid: u32, tid: u32) -> Option<SchedCounts> {
        let text = fs::read_to_string(self.task_file(pid, tid, "sched")).ok()?;
        Some(SchedCounts {
            migrations: sched_field(&text, "se.nr_migrations")?,
            voluntary_switches: sched_field(&text, "nr_voluntary_switches")?,
            involuntary_switches: sched_field(&text, "nr_involuntary_switches")?,
        })
    }

    /// `stat` of a whole process (`/proc/<pid>/stat`: rss, ppid, start time).
    pub fn process_stat(&self, pid: u32) -> ProcResult<Stat> {
        Stat::from_file(self.0.join(pid.to_string()).join("stat"))
    }

    /// The start time of process `pid` while it runs; None when it is gone
    /// or has ended and waits to be reaped (a zombie is dead: a coloc that
    /// is one restores nothing more and holds no journal alive).
    pub fn running_start(&self, pid: u32) -> Option<u64> {
        self.process_stat(pid)
            .ok()
            .filter(|s| !matches!(s.state, 'Z' | 'X'))
            .map(|s| s.starttime)
    }

    /// Whether the thread still runs and is the one that started at `start`.
    /// A zombie (exited, not yet reaped) is not alive: the kernel still accepts
    /// settings for it, but they would change nothing.
    pub fn is_alive(&self, task: &TaskId) -> bool {
        self.task_stat(task.pid, task.tid)
            .is_ok_and(|s| s.starttime == task.start && !matches!(s.state, 'Z' | 'X'))
    }

    /// The thread ids of process `pid` (its `task` directory).
    pub fn tids(&self, pid: u32) -> io::Result<Vec<u32>> {
        numeric_entries(&self.0.join(pid.to_string()).join("task"))
    }

    /// Every process id in the root.
    pub fn pids(&self) -> io::Result<Vec<u32>> {
        numeric_entries(&self.0)
    }
}

/// The CPU each thread of `pid` last ran on (its `stat`'s `processor`),
/// read under the procfs mount `root` (`/proc`); none for a process gone.
pub fn last_cpus(root: &Path, pid: u32) -> Vec<u32> {
    each_thread(root, pid, |proc, tid| {
        u32::try_from(proc.task_stat(pid, tid).ok()?.processor?).ok()
    })
    .map(|(_, cpu)| cpu)
    .collect()
}

/// What `read` finds of each thread of `pid` under the procfs mount `root`,
/// with its thread id; a thread `read` finds nothing of (gone, unreadable) is
/// left out, and a process gone has no threads.
fn each_thread<T>(
    root: &Path,
    pid: u32,
    read: impl Fn(&ProcRoot, u32) -> Option<T>,
) -> impl Iterator<Item = (u32, T)> {
    let proc = ProcRoot::new(root);
    proc.tids(pid)
        .unwrap_or_default()
        .into_iter()
        .filter_map(move |tid| Some((tid, read(&proc, tid)?)))
}

/// Each thread of `pid`'s CPU time so far, user and system (its `stat`'s
/// utime + stime, clock ticks), by thread id, read under the procfs mount
/// `root`; none for a process gone.
pub fn thread_ticks(root: &Path, pid: u32) -> BTreeMap<u32, u64> {
    each_thread(root, pid, |proc, tid| {
        let s = proc.task_stat(pid, tid).ok()?;
        Some(s.utime + s.stime)
    })
    .collect()
}

/// The CPUs each thread of `pid` may run on (its `status`'s
/// `Cpus_allowed_list`), by thread id, read under the procfs mount `root`;
/// none for a process gone.
pub fn thread_allowed(root: &Path, pid: u32) -> BTreeMap<u32, CpuSet> {
    each_thread(root, pid, |proc, tid| {
        let ranges = proc.task_status(pid, tid).ok()?.cpus_allowed_list?;
        Some(ranges.into_iter().flat_map(|(a, b)| a..=b).collect())
    })
    .collect()
}

/// Counters of a task's `sched` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SchedCounts {
    pub migrations: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// Names of a directory that are numbers (pids, tids), unordered.
fn numeric_entries(dir: &Path) -> io::Result<Vec<u32>> {
    Ok(fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect())
}

/// A `key : value` line of a `/proc/<pid>/sched` file.
fn sched_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().parse().ok())?
    })
}

/// Parent and start time of every process, refreshed once per poll so that new
/// children of tracked processes are found without reading every `stat` again:
/// only pids not seen before are read.
///
/// The kernel here is built without `/proc/<pid>/task/<tid>/children`
/// (CONFIG_PROC_CHILDREN), so scanning for parents is the portable way. A child
/// that is reparented (its parent exited) before coloc first sees it is not
/// found; one seen before keeps the parent it had.
#[derive(Debug, Default)]
pub(crate) struct ProcTable {
    /// pid -> (ppid, start time)
    procs: BTreeMap<u32, (u32, u64)>,
}

impl ProcTable {
    pub fn refresh(&mut self, proc: &ProcRoot) -> io::Result<()> {
        let mut pids = proc.pids()?;
        pids.sort_unstable();
        let old = std::mem::take(&mut self.procs);
        for pid in pids {
            let entry = match old.get(&pid) {
                Some(known) => Some(*known),
                None => proc
                    .process_stat(pid)
                    .ok()
                    .map(|s| (s.ppid.max(0) as u32, s.starttime)),
            };
            if let Some(e) = entry {
                self.procs.insert(pid, e);
            }
        }
        Ok(())
    }

    /// Start time of `pid`, if it exists.
    pub fn start_of(&self, pid: u32) -> Option<u64> {
        self.procs.get(&pid).map(|(_, start)| *start)
    }

    /// Processes whose parent is one of `parents`, with their start times.
    pub fn children_of<'a>(
        &'a self,
        parents: &'a BTreeMap<u32, u64>,
    ) -> impl Iterator<Item = (u32, u64)> + 'a {
        self.procs
            .iter()
            .filter(|(_, (ppid, _))| parents.contains_key(ppid))
            .map(|(pid, (_, start))| (*pid, *start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test process's threads each last ran on a CPU of this machine
    /// (this thread at least); a process that does not exist has none.
    #[test]
    fn the_threads_of_a_process_last_ran_on_cpus_of_this_machine() {
        let proc = Path::new("/proc");
        let cpus = last_cpus(proc, std::process::id());
        let here = crate::topology::host_topology().unwrap();
        assert!(!cpus.is_empty());
        assert!(
            cpus.iter().all(|&c| here.cpus().contains(c)),
            "{cpus:?} not all in {}",
            here.cpus()
        );
        assert_eq!(last_cpus(proc, u32::MAX), Vec::<u32>::new());
    }

    /// This test process's threads: this one among them, with CPU time
    /// counted once it has spun a little, and allowed CPUs that are this
    /// process's; a process that does not exist has none.
    #[test]
    fn the_threads_of_a_process_have_cpu_time_and_allowed_cpus() {
        let proc = Path::new("/proc");
        let me = std::process::id();
        let tid = nix::unistd::gettid().as_raw() as u32;
        let start = std::time::Instant::now();
        while thread_ticks(proc, me).get(&tid).copied().unwrap_or(0) < 2 {
            assert!(start.elapsed().as_secs() < 60, "no CPU time counted");
            std::hint::black_box((0..10_000u64).sum::<u64>());
        }
        let allowed = thread_allowed(proc, me);
        let mine = crate::topology::allowed_cpus().unwrap();
        assert_eq!(allowed.get(&tid), Some(&mine));
        assert!(thread_ticks(proc, u32::MAX).is_empty());
        assert!(thread_allowed(proc, u32::MAX).is_empty());
    }

    #[test]
    fn reads_migrations_from_a_sched_file() {
        let text = "cat (8207, #threads: 1)\n---\nse.exec_start  :  5120489.746378\n\
                    se.nr_migrations                             :                    7\n\
                    nr_switches : 3\n";
        assert_eq!(sched_field(text, "se.nr_migrations"), Some(7));
        assert_eq!(sched_field(text, "nr_switches"), Some(3));
        assert_eq!(sched_field(text, "se.nr_wakeups"), None);
    }

    #[test]
    fn own_thread_is_alive_and_a_wrong_start_is_not() {
        let proc = ProcRoot::new(Path::new("/proc"));
        let pid = std::process::id();
        let tid = nix::unistd::gettid().as_raw() as u32;
        let start = proc.task_stat(pid, tid).unwrap().starttime;
        assert!(proc.is_alive(&TaskId { pid, tid, start }));
        assert!(!proc.is_alive(&TaskId {
            pid,
            tid,
            start: start + 1
        }));
        assert!(proc.tids(pid).unwrap().contains(&tid));
    }

    #[test]
    fn table_finds_own_children() {
        let proc = ProcRoot::new(Path::new("/proc"));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let mut table = ProcTable::default();
        table.refresh(&proc).unwrap();
        let me = std::process::id();
        let parents = BTreeMap::from([(me, table.start_of(me).unwrap())]);
        let kids: Vec<u32> = table.children_of(&parents).map(|(p, _)| p).collect();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(kids.contains(&child.id()), "{kids:?}");
    }
}
