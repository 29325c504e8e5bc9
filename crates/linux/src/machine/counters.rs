//! Hardware counters per thread (docs/signals.md): cycles,
//! instructions, LLC references and LLC misses through `perf_event_open`,
//! where the machine has them. Many VMs and containers do not; a probe at start
//! says so once, and samples then carry no counters and `hw_counters = false`
//! (schedstat, context switches and faults are still there).
//!
//! A thread's counters are opened when coloc first observes it, so they count
//! from then on, not from the thread's start.

use std::collections::HashMap;

use coloc_model::observation::Counters;
use perf_event::events::{Event, Hardware};
use perf_event::{Builder, Counter};

use super::tasks::TaskId;

/// The counters coloc reads, in the order of [`Counters`]' fields.
pub(crate) const HARDWARE_EVENTS: [Hardware; 4] = [
    Hardware::CPU_CYCLES,
    Hardware::INSTRUCTIONS,
    Hardware::CACHE_REFERENCES,
    Hardware::CACHE_MISSES,
];

/// Per-thread counters of four events, or why there are none.
#[derive(Debug)]
pub(crate) enum HwCounters<E: Event + Copy = Hardware> {
    Available {
        events: [E; 4],
        threads: HashMap<TaskId, [Option<Counter>; 4]>,
    },
    Unavailable {
        reason: String,
    },
}

impl<E: Event + Copy> HwCounters<E> {
    /// Opens the first event on the calling thread to see whether the machine
    /// counts it at all.
    pub fn probe(events: [E; 4]) -> Self {
        match Builder::new(events[0]).observe_self().any_cpu().build() {
            Ok(_) => HwCounters::Available {
                events,
                threads: HashMap::new(),
            },
            Err(e) => HwCounters::Unavailable {
                reason: format!("perf_event_open: {e}"),
            },
        }
    }

    pub fn available(&self) -> bool {
        matches!(self, HwCounters::Available { .. })
    }

    /// The thread's counts so far (opening its counters at the first call);
    /// None when counters are unavailable or none could be opened for it.
    pub fn read(&mut self, task: &TaskId) -> Option<Counters> {
        let HwCounters::Available { events, threads } = self else {
            return None;
        };
        let counters = threads.entry(*task).or_insert_with(|| {
            events.map(|e| {
                let mut c = Builder::new(e)
                    .observe_pid(task.tid as i32)
                    .any_cpu()
                    .build()
                    .ok()?;
                c.enable().ok()?;
                Some(c)
            })
        });
        let [cycles, instructions, llc_references, llc_misses] =
            counters.each_mut().map(|c| c.as_mut()?.read().ok());
        let read = Counters {
            cycles,
            instructions,
            llc_references,
            llc_misses,
        };
        (read != Counters::default()).then_some(read)
    }

    /// Closes the counters of threads that are gone.
    pub fn retain(&mut self, mut live: impl FnMut(&TaskId) -> bool) {
        if let HwCounters::Available { threads, .. } = self {
            threads.retain(|t, _| live(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use perf_event::events::Software;

    use super::*;

    #[test]
    fn hardware_probe_says_why_when_there_are_none() {
        match HwCounters::probe(HARDWARE_EVENTS) {
            HwCounters::Available { .. } => {
                eprintln!("this machine has hardware counters; the fallback is not exercised")
            }
            HwCounters::Unavailable { reason } => {
                assert!(reason.starts_with("perf_event_open: "), "{reason}");
                let mut none = HwCounters::<Hardware>::Unavailable { reason };
                let me = TaskId {
                    pid: std::process::id(),
                    tid: nix::unistd::gettid().as_raw() as u32,
                    start: 0,
                };
                assert_eq!(none.read(&me), None);
            }
        }
    }

    /// The per-thread path, with software events every machine has.
    #[test]
    fn counts_another_thread_with_software_events() {
        let mut hw = HwCounters::probe([
            Software::TASK_CLOCK,
            Software::CONTEXT_SWITCHES,
            Software::PAGE_FAULTS,
            Software::CPU_MIGRATIONS,
        ]);
        if !hw.available() {
            eprintln!("skipped: perf_event_open refuses software events here");
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            let mut x = 0u64;
            while done_rx.try_recv().is_err() {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
        });
        let tid = rx.recv().unwrap();
        let task = TaskId {
            pid: std::process::id(),
            tid,
            start: 1,
        };
        let first = hw.read(&task).expect("counters open");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let second = hw.read(&task).expect("counters read");
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        assert!(
            second.cycles.unwrap() > first.cycles.unwrap(),
            "task clock advances: {first:?} then {second:?}"
        );
        hw.retain(|_| false);
        assert!(matches!(hw, HwCounters::Available { ref threads, .. } if threads.is_empty()));
    }
}
