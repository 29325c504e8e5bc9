//! Raw samples, as a backend collects them (docs/architecture.md, Conventions: raw samples, then pure models).
//!
//! Both the Linux backend and the simulator emit this one type; the trace stores it
//! unchanged, so every rate and metric can be recomputed later. Counters are
//! cumulative since the thread started; rates come from two consecutive samples.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cpuset::Cpu;
use crate::ids::{AppId, Tid};

/// Which signal sources a sample came from (docs/signals.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signals {
    /// Hardware counters (cycles, instructions, LLC) were read.
    pub hw_counters: bool,
    /// `/proc/<pid>/task/<tid>/schedstat` was read (run and wait time in ns).
    pub schedstat: bool,
}

/// Hardware counter values, cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    pub llc_references: Option<u64>,
    pub llc_misses: Option<u64>,
}

/// One thread's cumulative counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSample {
    pub pid: u32,
    pub tid: Tid,
    /// CPU it last ran on.
    pub cpu: Option<Cpu>,
    /// Time on a CPU, ns.
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU, ns.
    pub wait_ns: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// Migrations between CPUs, where the kernel reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    pub minor_faults: u64,
    pub major_faults: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// Progress events this thread counted inside OpenMP parallel regions
    /// (barriers passed, worksharing constructs ended, chunks taken, tasks
    /// completed; docs/signals.md, Progress inside a region), where its
    /// runtime reports them through the DoP channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omp_steps: Option<u64>,
}

/// One app instance's sample: all threads of all its processes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppSample {
    pub app: AppId,
    /// The process coloc started.
    pub pid: u32,
    pub threads: Vec<ThreadSample>,
    /// Resident memory of all its processes, bytes.
    pub rss_bytes: u64,
    /// What the OpenMP runtime reports through the DoP channel (malleable apps run
    /// with `libcoloc_omp.so`; the simulator reports the same for its models). This is
    /// how coloc sees serial sections and progress without hardware counters
    /// (NuPoCo §5.1 on machines without counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omp: Option<OmpSample>,
    /// Progress inside parallel regions, counted by the app's team as it runs
    /// (docs/signals.md, Progress inside a region): barriers passed and
    /// worksharing constructs ended, once each, and chunks of loops taken and
    /// tasks completed. It does not depend on the team's size, and it moves
    /// inside one long region, where `omp`'s regions and iterations may not.
    /// None when the runtime does not report it (no DoP channel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omp_steps: Option<u64>,
    /// The app's own metric as it prints it while running (docs/signals.md):
    /// the workload's `metric` regex applied to each output line as it
    /// appears; None when the app has no metric or printed no match yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<MetricSample>,
}

/// What an instance consumed over its whole life, from its start to its exit:
/// what a characterization run is measured by (ReSense §2.2, Equation 1).
/// Epoch samples cannot give it: the stretch after the last one is lost, as
/// are threads that ended between two (docs/trace-format.md, `exit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceUsage {
    /// CPU time (user + system) of all its threads and of the descendants it
    /// reaped, ns (task-clock).
    pub cpu_ns: u64,
    /// Cycles of all its threads, where the backend counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    /// LLC requests, misses and requests that hit lines its threads share
    /// (Tang et al. §5), where the backend counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc: Option<LlcTotals>,
}

/// An instance's LLC counts over its whole life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlcTotals {
    pub references: u64,
    pub misses: u64,
    /// References that hit lines in a shared state.
    pub shared_references: u64,
}

/// The live reading of an app's metric: the last value its output gave and
/// how many lines matched so far, so that a reader sees whether a new value
/// arrived between two observations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricSample {
    pub value: f64,
    /// Lines that matched the regex since the app started.
    pub lines: u64,
}

impl AppSample {
    /// Thread `tid`'s sample, if it was seen (the earlier sample of a thread
    /// whose counters a rate compares).
    ///
    /// Both backends list threads by id, so a binary search finds it: looking
    /// up every thread of a 2,000-thread app by a linear search each epoch
    /// cost more than sampling it. A list in another order (built by hand)
    /// is still searched whole when the binary search misses.
    pub fn thread(&self, tid: Tid) -> Option<&ThreadSample> {
        match self.threads.binary_search_by_key(&tid, |t| t.tid) {
            Ok(i) => Some(&self.threads[i]),
            Err(_) => self.threads.iter().find(|t| t.tid == tid),
        }
    }
}

/// The OpenMP side of an app, cumulative like the thread counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OmpSample {
    /// Inside a parallel region right now (false = serial section).
    pub in_parallel: bool,
    /// Threads of the current (or last) team.
    pub team_size: u32,
    pub regions_completed: u64,
    /// Worksharing-loop iterations completed, where the entry point tells them.
    pub iterations_completed: u64,
    /// Time spent inside parallel regions, ns.
    pub parallel_ns: u64,
    /// `omp_get_max_threads()` calls outside any region. A library that sizes
    /// each call's team itself asks before every call (OpenBLAS does), so
    /// this counts its calls, also at a DoP of 1, where it runs serially and
    /// starts no region; other programs may ask once or never.
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub max_threads_asked: u64,
    /// The DoP the app has acknowledged (coloc's last `set` it has seen); None when
    /// the DoP is not managed (no channel, or a runtime the shim cannot steer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dop_seen: Option<u32>,
}

/// A sample of every managed app at one instant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Time since the start of the run.
    #[serde(with = "crate::nanos")]
    pub at: Duration,
    pub signals: Signals,
    pub apps: Vec<AppSample>,
}

impl Observation {
    pub fn app(&self, id: AppId) -> Option<&AppSample> {
        self.apps.iter().find(|a| a.app == id)
    }
}

/// Whether a counter is 0: serde leaves such fields out of traces.
pub(crate) fn is_zero64(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(tids: &[Tid]) -> AppSample {
        AppSample {
            threads: tids
                .iter()
                .map(|&tid| ThreadSample {
                    tid,
                    ..ThreadSample::default()
                })
                .collect(),
            ..AppSample::default()
        }
    }

    /// Sorted (as both backends list them) or not, every listed thread is
    /// found and an unlisted one is not.
    #[test]
    fn a_thread_is_found_in_any_order() {
        for tids in [vec![1, 4, 9, 12], vec![12, 1, 9, 4]] {
            let a = app(&tids);
            for &t in &tids {
                assert_eq!(a.thread(t).map(|s| s.tid), Some(t), "{tids:?}");
            }
            assert!(a.thread(5).is_none());
        }
    }

    /// Traces written before progress inside regions was reported still
    /// read (the fields are absent: None), and a sample without it writes
    /// none of it.
    #[test]
    fn samples_without_in_region_progress_still_read() {
        let old = r#"{"app":{"app":0,"rep":0},"pid":7,"threads":[{"pid":7,"tid":7,"cpu":0,
            "run_ns":1,"wait_ns":0,"voluntary_switches":0,"involuntary_switches":0,
            "minor_faults":0,"major_faults":0}],"rss_bytes":0,
            "omp":{"in_parallel":true,"team_size":2,"regions_completed":0,
            "iterations_completed":0,"parallel_ns":0}}"#;
        let s: AppSample = serde_json::from_str(old).unwrap();
        assert_eq!((s.omp_steps, s.threads[0].omp_steps), (None, None));
        let written = serde_json::to_string(&s).unwrap();
        assert!(!written.contains("omp_steps"), "{written}");
        let new = AppSample {
            omp_steps: Some(12),
            threads: vec![ThreadSample {
                omp_steps: Some(7),
                ..ThreadSample::default()
            }],
            ..s
        };
        let back: AppSample = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(back, new);
    }
}
