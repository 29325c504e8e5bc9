//! Raw samples of an instance's threads from /proc (docs/architecture.md, Conventions: raw samples, then
//! pure models): cumulative counters only, rates are computed elsewhere.
//!
//! Cost follows what changed: `schedstat` (three numbers) is read first, and
//! a thread whose run time and wait time are where they were at the last
//! sample has not been on a CPU or a run queue since, so none of its other
//! counters (switches, faults, migrations, hardware counters) can have moved:
//! its last sample is reused without reading `stat` and `sched`, the costly
//! files. An app of a thousand sleeping threads then costs a thousand small
//! reads per epoch instead of three thousand large ones.

use std::collections::BTreeMap;

use coloc_model::{AppId, AppSample, OmpSample, ThreadSample};

use super::counters::HwCounters;
use super::tasks::{ProcRoot, TaskId};
use super::track::Tracker;

/// Each thread's last sample, to be reused while the thread does not run.
pub(crate) type LastSamples = BTreeMap<TaskId, ThreadSample>;

/// One thread's counters; None if it vanished while being read. `last` is
/// its previous sample, returned again if it has not run or waited since.
pub(crate) fn sample_thread(
    proc: &ProcRoot,
    task: &TaskId,
    counters: &mut HwCounters,
    last: Option<&ThreadSample>,
) -> Option<ThreadSample> {
    let sched = proc.task_schedstat(task.pid, task.tid).ok()?;
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
    })
}

/// All threads of all processes of one instance, and their resident memory.
pub(crate) fn sample_app(
    proc: &ProcRoot,
    app: AppId,
    pid: u32,
    tracker: &Tracker,
    last: &mut LastSamples,
    counters: &mut HwCounters,
    omp: Option<OmpSample>,
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
        if let Some(sample) = sample_thread(proc, t, counters, last.get(t)) {
            now.insert(*t, sample);
        }
    }
    let mut threads: Vec<ThreadSample> = now.values().cloned().collect();
    *last = now;
    threads.sort_by_key(|t| t.tid);
    AppSample {
        app,
        pid,
        threads,
        rss_bytes,
        omp,
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
        write_task(dir.path(), 10, 2000);
        let first = sample_thread(&proc, &task, &mut counters, None).unwrap();
        assert_eq!(first.minor_faults, 10);
        // stat changes but schedstat does not: the thread did not run, the
        // last sample stands (stat is not read).
        write_task(dir.path(), 99, 2000);
        let same = sample_thread(&proc, &task, &mut counters, Some(&first)).unwrap();
        assert_eq!(same, first);
        // It ran: everything is read again.
        write_task(dir.path(), 99, 3000);
        let ran = sample_thread(&proc, &task, &mut counters, Some(&first)).unwrap();
        assert_eq!((ran.minor_faults, ran.run_ns), (99, 3000));
    }
}
