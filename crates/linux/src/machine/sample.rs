//! Raw samples of an instance's threads from /proc (STYLE.md: raw samples, then
//! pure models): cumulative counters only, rates are computed elsewhere.

use coloc_model::{AppId, AppSample, OmpSample, ThreadSample};

use super::counters::HwCounters;
use super::tasks::{ProcRoot, TaskId};
use super::track::Tracker;

/// One thread's counters; None if it vanished while being read.
pub(crate) fn sample_thread(
    proc: &ProcRoot,
    task: &TaskId,
    counters: &mut HwCounters,
) -> Option<ThreadSample> {
    let stat = proc.task_stat(task.pid, task.tid).ok()?;
    if stat.starttime != task.start {
        return None;
    }
    let sched = proc.task_schedstat(task.pid, task.tid).ok()?;
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
    let mut threads: Vec<ThreadSample> = tracker
        .threads()
        .filter_map(|t| sample_thread(proc, t, counters))
        .collect();
    threads.sort_by_key(|t| t.tid);
    AppSample {
        app,
        pid,
        threads,
        rss_bytes,
        omp,
    }
}
