//! Raw samples of an instance's threads from /proc (docs/architecture.md, Conventions: raw samples, then
//! pure models): cumulative counters only, rates are computed elsewhere.
//!
//! Cost follows what changed: `schedstat` (three numbers) is read first, and
//! a thread whose run time and wait time are where they were at the last
//! sample has not been on a CPU or a run queue since, so none of its other
//! counters (switches, faults, migrations, hardware counters) can have moved:
//! its last sample is reused without reading `stat` and `sched`, the costly
//! files. An app of a thousand sleeping threads then costs a thousand small
//! reads per epoch instead of three thousand large ones. The `schedstat`
//! files themselves stay open between epochs ([`SchedstatFile`]): opening
//! was half of coloc's CPU time with 2,000 threads. Open files are limited
//! to a budget (half the process's file limit, [`schedstat_budget`]); threads
//! beyond it have their file opened at each read.

use std::collections::BTreeMap;

use coloc_model::{AppId, AppSample, OmpSample, ThreadSample};
use nix::sys::resource::{getrlimit, Resource};
use procfs::process::Schedstat;

use super::counters::HwCounters;
use super::tasks::{ProcRoot, SchedstatFile, TaskId};
use super::track::Tracker;

/// A thread's last sample, to be reused while the thread does not run, and
/// its open `schedstat` where the budget allowed one.
#[derive(Debug)]
pub(crate) struct Last {
    sample: ThreadSample,
    schedstat: Option<SchedstatFile>,
}

/// Each thread's [`Last`].
pub(crate) type LastSamples = BTreeMap<TaskId, Last>;

/// How many `schedstat` files sampling may keep open: half the soft limit on
/// open files, leaving the rest to everything else coloc opens.
pub(crate) fn schedstat_budget() -> usize {
    getrlimit(Resource::RLIMIT_NOFILE).map_or(0, |(soft, _)| (soft / 2) as usize)
}

/// One thread's counters; None if it vanished while being read. `last` is
/// its previous sample, returned again if it has not run or waited since;
/// `sched` its current schedstat.
pub(crate) fn sample_thread(
    proc: &ProcRoot,
    task: &TaskId,
    counters: &mut HwCounters,
    last: Option<&ThreadSample>,
    sched: Schedstat,
) -> Option<ThreadSample> {
    if let Some(last) =
        last.filter(|l| l.run_ns == sched.sum_exec_runtime && l.wait_ns == sched.run_delay)
    {
        return Some(last.clone());
    }
    let stat = proc.task_stat(task.pid, task.tid).ok()?;
    if stat.starttime != task.start {
        return None;
    }
    let counts = proc.task_sched(task.pid, task.tid);
    let (voluntary, involuntary) = match counts {
        Some(c) => (c.voluntary_switches, c.involuntary_switches),
        None => {
            let status = proc.task_status(task.pid, task.tid).ok()?;
            (
                status.voluntary_ctxt_switches.unwrap_or(0),
                status.nonvoluntary_ctxt_switches.unwrap_or(0),
            )
        }
    };
    Some(ThreadSample {
        pid: task.pid,
        tid: task.tid,
        cpu: stat.processor.and_then(|c| u32::try_from(c).ok()),
        run_ns: sched.sum_exec_runtime,
        wait_ns: sched.run_delay,
        voluntary_switches: voluntary,
        involuntary_switches: involuntary,
        migrations: counts.map(|c| c.migrations),
        minor_faults: stat.minflt,
        major_faults: stat.majflt,
        counters: counters.read(task),
        omp_steps: None,
    })
}

/// All threads of all processes of one instance, and their resident memory.
/// `budget` is how many more `schedstat` files may stay open; it is lowered by
/// those this instance keeps.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sample_app(
    proc: &ProcRoot,
    app: AppId,
    pid: u32,
    tracker: &Tracker,
    last: &mut LastSamples,
    counters: &mut HwCounters,
    omp: Option<OmpSample>,
    budget: &mut usize,
) -> AppSample {
    let page = procfs::page_size();
    let rss_bytes = tracker
        .processes()
        .filter_map(|(pid, start)| {
            let s = proc.process_stat(pid).ok()?;
            (s.starttime == start).then_some(s.rss * page)
        })
        .sum();
    let mut now = LastSamples::new();
    for t in tracker.threads() {
        let (before, file) = match last.remove(t) {
            Some(Last { sample, schedstat }) => (Some(sample), schedstat),
            None => (None, None),
        };
        // Its file stays open if it was; a new thread's is opened while the
        // budget lasts.
        let file = file.or_else(|| {
            (*budget > 0)
                .then(|| proc.open_task_schedstat(t.pid, t.tid).ok())
                .flatten()
        });
        if file.is_some() {
            *budget = budget.saturating_sub(1);
        }
        let sched = match &file {
            Some(f) => f.read(),
            None => proc.task_schedstat(t.pid, t.tid),
        };
        let Ok(sched) = sched else { continue };
        if let Some(sample) = sample_thread(proc, t, counters, before.as_ref(), sched) {
            now.insert(
                *t,
                Last {
                    sample,
                    schedstat: file,
                },
            );
        }
    }
    let mut threads: Vec<ThreadSample> = now.values().map(|l| l.sample.clone()).collect();
    *last = now;
    threads.sort_by_key(|t| t.tid);
    AppSample {
        app,
        pid,
        threads,
        rss_bytes,
        omp,
        omp_steps: None,
        metric: None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const STAT: &str = "7 (app) S 1 7 7 0 -1 4194304 MINFLT 0 0 0 0 0 0 0 20 0 1 0 \
        500 3133440 390 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 1 1 1 1 1 1 1 0\n";

    fn write_task(root: &Path, minflt: u64, run_ns: u64) {
        let dir = root.join("7/task/7");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("stat"),
            STAT.replace("MINFLT", &minflt.to_string()),
        )
        .unwrap();
        std::fs::write(dir.join("schedstat"), format!("{run_ns} 1000 5\n")).unwrap();
        std::fs::write(
            dir.join("sched"),
            "se.nr_migrations : 1\nnr_voluntary_switches : 2\nnr_involuntary_switches : 3\n",
        )
        .unwrap();
    }

    /// Sampling read three files of every thread every epoch, sleeping or not:
    /// 2,000 idle threads cost over half a core. A thread that has not run
    /// since its last sample is not read again.
    #[test]
    fn a_thread_that_did_not_run_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let proc = ProcRoot::new(dir.path());
        let task = TaskId {
            pid: 7,
            tid: 7,
            start: 500,
        };
        let mut counters = HwCounters::Unavailable {
            reason: "test".into(),
        };
        let sched = || proc.task_schedstat(7, 7).unwrap();
        write_task(dir.path(), 10, 2000);
        let first = sample_thread(&proc, &task, &mut counters, None, sched()).unwrap();
        assert_eq!(first.minor_faults, 10);
        // stat changes but schedstat does not: the thread did not run, the
        // last sample stands (stat is not read).
        write_task(dir.path(), 99, 2000);
        let same = sample_thread(&proc, &task, &mut counters, Some(&first), sched()).unwrap();
        assert_eq!(same, first);
        // It ran: everything is read again.
        write_task(dir.path(), 99, 3000);
        let ran = sample_thread(&proc, &task, &mut counters, Some(&first), sched()).unwrap();
        assert_eq!((ran.minor_faults, ran.run_ns), (99, 3000));
    }
}

#[cfg(test)]
mod kept_open_tests {
    use std::path::Path;
    use std::sync::mpsc;

    use super::*;

    /// A `schedstat` kept open reads the thread's current run time at every
    /// read, and fails once the thread has exited (it never names another).
    #[test]
    fn a_schedstat_kept_open_reads_current_values_and_fails_after_exit() {
        let proc = ProcRoot::new(Path::new("/proc"));
        let pid = std::process::id();
        let (tid_tx, tid_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            go_rx.recv().unwrap();
            // Run for a while: at least 20 ms of CPU time.
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while start.elapsed() < std::time::Duration::from_millis(20) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        let tid = tid_rx.recv().unwrap();
        let file = proc.open_task_schedstat(pid, tid).unwrap();
        assert!(file.read().is_ok(), "the live thread's schedstat reads");
        go_tx.send(()).unwrap();
        worker.join().unwrap();
        assert!(
            file.read().is_err(),
            "the exited thread's open schedstat still reads"
        );
        // The values moved while it ran: read through a fresh open of this
        // thread's own file, then again through the kept one.
        let me = nix::unistd::gettid().as_raw() as u32;
        let mine = proc.open_task_schedstat(pid, me).unwrap();
        let a = mine.read().unwrap().sum_exec_runtime;
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(mine.read().unwrap().sum_exec_runtime > a);
    }
}
