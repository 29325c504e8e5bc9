//! Which threads make up an app instance: its main process, every descendant
//! process (started later included) and all their threads (docs/architecture.md, The loop:
//! "threads changed" is an event the policy reacts to).

use std::collections::BTreeMap;

use coloc_model::Tid;

use super::tasks::{ProcRoot, ProcTable, TaskId};

/// The processes and threads of one instance, as of the last rescan.
#[derive(Debug)]
pub(crate) struct Tracker {
    /// The main thread of the main process.
    main: u32,
    /// pid -> start time.
    processes: BTreeMap<u32, u64>,
    /// tid -> the thread.
    threads: BTreeMap<u32, TaskId>,
}

impl Tracker {
    /// Tracks the process `main` (its main thread has the same id and start).
    pub fn new(main: TaskId) -> Self {
        Self {
            main: main.tid,
            processes: BTreeMap::from([(main.pid, main.start)]),
            threads: BTreeMap::from([(main.tid, main)]),
        }
    }

    /// Brings the process and thread sets up to date; returns whether the
    /// thread set changed. Processes that exited (or whose pid now names another
    /// process) are dropped with their threads; new children are adopted.
    pub fn rescan(&mut self, proc: &ProcRoot, table: &ProcTable) -> bool {
        self.processes
            .retain(|pid, start| table.start_of(*pid) == Some(*start));
        loop {
            let new: Vec<(u32, u64)> = table
                .children_of(&self.processes)
                .filter(|(pid, _)| !self.processes.contains_key(pid))
                .collect();
            if new.is_empty() {
                break;
            }
            self.processes.extend(new);
        }
        let mut threads = BTreeMap::new();
        for &pid in self.processes.keys() {
            let Ok(tids) = proc.tids(pid) else { continue };
            for tid in tids {
                let known = self.threads.get(&tid).filter(|t| t.pid == pid).copied();
                let task = known.or_else(|| {
                    let start = proc.task_stat(pid, tid).ok()?.starttime;
                    Some(TaskId { pid, tid, start })
                });
                if let Some(t) = task {
                    threads.insert(tid, t);
                }
            }
        }
        let changed = threads.keys().ne(self.threads.keys());
        self.threads = threads;
        changed
    }

    /// Thread ids, oldest first (by start time, then id).
    pub fn tids(&self) -> Vec<Tid> {
        let mut all: Vec<&TaskId> = self.threads.values().collect();
        all.sort_by_key(|t| (t.start, t.tid));
        all.into_iter().map(|t| t.tid).collect()
    }

    /// Id of the main thread (and process).
    pub fn main(&self) -> u32 {
        self.main
    }

    pub fn threads(&self) -> impl Iterator<Item = &TaskId> {
        self.threads.values()
    }

    pub fn thread(&self, tid: Tid) -> Option<&TaskId> {
        self.threads.get(&tid)
    }

    /// Processes, with their start times.
    pub fn processes(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.processes.iter().map(|(p, s)| (*p, *s))
    }
}
