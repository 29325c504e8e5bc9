//! The last-level cache capacity one thread actually gets, measured: what
//! Thread Tranquilizer's no-counter classification compares an app's resident
//! set with (docs/policies/tranquilizer.md, Without hardware counters).
//!
//! Problem: sysfs can say nothing useful about it. A KVM guest may report the
//! host's whole L3 (480 MiB on this project's development VM), shared with
//! every other tenant of the socket; there a 192 MiB STREAM triad already runs
//! at the speed of memory, so "resident set larger than the LLC" called every
//! app CPU-intensive.
//!
//! Approach: the `stream` kernel, one thread, at working sets (three arrays)
//! doubling from 3 MiB to at least twice the LLC sysfs reports, `repeat`
//! rounds of the whole ladder, each run's GB/s from its trace's `exit`, the
//! best of the rounds per size (as STREAM does). The largest working set is
//! served by memory; the effective capacity is the largest working set that
//! still ran at least [`CACHE_SPEEDUP`] times as fast ([`effective_llc`]).
//! Like the rest of the calibration it is a pure function of the traces.

use serde::{Deserialize, Serialize};

use super::CalibrationRunError;
use super::STREAM;
use crate::procedure::{finished, PinnedApp, PlannedRun};
use crate::topology::Topology;
use crate::trace::Trace;

/// Role of a run of the cache ladder.
pub const CACHE_RUN: &str = "cache";

/// A working set counts as cache-served when it ran at least this many times
/// as fast as the largest one: 1.25 sits between the 1.0–1.1 that sizes
/// already in memory differ by and the 1.9 of the development VM's 48 MiB
/// (24.7 GB/s) against its memory (12.0 GB/s at 1.2 GiB).
pub const CACHE_SPEEDUP: f64 = 1.25;

/// Bytes each run streams through, so that a run of any size lasts about
/// as long (6 GiB: a fraction of a second at memory speed).
const TRAFFIC_MIB: u64 = 6 << 10;

/// One run of the ladder: the stream kernel with `mib` MiB per array.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheRun {
    /// MiB per array; the working set is three arrays.
    pub mib: u64,
    pub run: PlannedRun,
}

impl CacheRun {
    /// The working set: three arrays.
    pub fn working_set_bytes(&self) -> u64 {
        (3 * self.mib) << 20
    }
}

/// The ladder on `topology`: `repeat` rounds of array sizes 1, 2, 4, … MiB
/// up to the first whose three arrays are at least twice the LLC sysfs
/// reports (and at least 64 MiB), one thread on the first CPU, each run
/// sized to stream `TRAFFIC_MIB` (6 GiB).
pub fn cache_runs(topology: &Topology, repeat: u32) -> Vec<CacheRun> {
    let cpu = topology.cpus().iter().next().unwrap_or(0);
    let llc_mib = topology
        .last_level_caches()
        .iter()
        .map(|c| c.size_bytes >> 20)
        .max()
        .unwrap_or(0);
    let mut sizes = vec![1u64];
    while *sizes.last().unwrap() < 64 || 3 * sizes.last().unwrap() < 2 * llc_mib {
        sizes.push(sizes.last().unwrap() * 2);
    }
    (0..repeat)
        .flat_map(|rep| {
            sizes.iter().map(move |&mib| CacheRun {
                mib,
                run: PlannedRun {
                    dir: format!("{mib}mib-{rep}"),
                    role: CACHE_RUN.into(),
                    apps: vec![PinnedApp {
                        name: STREAM.into(),
                        cpus: vec![cpu],
                        args: vec![
                            "--mb".into(),
                            mib.to_string(),
                            "--iters".into(),
                            (TRAFFIC_MIB / (3 * mib)).max(5).to_string(),
                        ],
                    }],
                },
            })
        })
        .collect()
}

/// One size's best bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheSample {
    pub working_set_bytes: u64,
    pub gbs: f64,
}

/// The best GB/s of each working set of `runs`, from their traces (in the
/// order of `runs`), smallest first.
pub fn cache_samples(
    runs: &[CacheRun],
    traces: &[Trace],
) -> Result<Vec<CacheSample>, CalibrationRunError> {
    let mut best: Vec<CacheSample> = Vec::new();
    for (run, trace) in runs.iter().zip(traces) {
        let gbs = finished(trace, STREAM)
            .map_err(CalibrationRunError::from)
            .and_then(|f| f.metric.ok_or(CalibrationRunError::NoMetric))
            .map_err(|e| e.in_run(&run.run.dir))?;
        let bytes = run.working_set_bytes();
        match best.iter_mut().find(|s| s.working_set_bytes == bytes) {
            Some(s) => s.gbs = s.gbs.max(gbs),
            None => best.push(CacheSample {
                working_set_bytes: bytes,
                gbs,
            }),
        }
    }
    best.sort_by_key(|s| s.working_set_bytes);
    Ok(best)
}

/// The effective capacity: the largest working set that ran at least
/// [`CACHE_SPEEDUP`] times as fast as the largest of all (memory); or why
/// there is none.
pub fn effective_llc(samples: &[CacheSample]) -> Result<u64, CalibrationRunError> {
    let memory = samples
        .iter()
        .max_by_key(|s| s.working_set_bytes)
        .ok_or(CalibrationRunError::NoCacheRun)?;
    samples
        .iter()
        .filter(|s| s.gbs >= CACHE_SPEEDUP * memory.gbs)
        .map(|s| s.working_set_bytes)
        .max()
        .ok_or(CalibrationRunError::NoCacheSpeedup {
            speedup: CACHE_SPEEDUP,
            largest_mib: memory.working_set_bytes >> 20,
            largest_gbs: memory.gbs,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::testtrace::{trace, Ev};
    use crate::procedure::FinishedError;
    use crate::trace::ExitStatus;

    /// The ladder doubles to at least twice the reported LLC: 32 MiB reported,
    /// so up to 64 MiB per array (192 MiB ≥ 64 MiB, and the 64 MiB floor);
    /// 480 MiB reported, up to 512 MiB per array (1.5 GiB ≥ 960 MiB). Rounds
    /// go over the whole ladder; iterations keep 6 GiB per run, at least 5.
    #[test]
    fn the_ladder_reaches_past_twice_the_reported_llc() {
        let small = Topology::synthetic("t", "l3(32M):1 core:2").unwrap();
        let kvm = Topology::synthetic("t", "l3(480M):1 core:2").unwrap();
        let sizes = |runs: &[CacheRun]| runs.iter().map(|r| r.mib).collect::<Vec<_>>();
        assert_eq!(
            sizes(&cache_runs(&small, 2)),
            [1, 2, 4, 8, 16, 32, 64, 1, 2, 4, 8, 16, 32, 64]
        );
        let runs = cache_runs(&kvm, 1);
        assert_eq!(sizes(&runs), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
        let first = &runs[0].run;
        assert_eq!(
            (first.dir.as_str(), first.role.as_str()),
            ("1mib-0", CACHE_RUN)
        );
        // 6144 MiB / 3 MiB = 2048 sweeps; 6144 / 1536 = 4, raised to 5.
        assert_eq!(first.apps[0].args, ["--mb", "1", "--iters", "2048"]);
        assert_eq!(runs[9].apps_args(), ["--mb", "512", "--iters", "5"]);
        assert_eq!(first.apps[0].cpus, vec![0]);
        assert_eq!(runs[9].working_set_bytes(), 1536 << 20);
    }

    impl CacheRun {
        fn apps_args(&self) -> &[String] {
            &self.run.apps[0].args
        }
    }

    /// The development VM's figures (GB/s): 3 MiB 29.5, 48 MiB 24.7,
    /// 192 MiB 13.0, 480 MiB 12.7, 1.2 GiB 12.0. Memory is 12.0; 1.25 × 12.0
    /// = 15.0, so 48 MiB is the largest cache-served working set.
    #[test]
    fn the_capacity_is_the_largest_working_set_clearly_faster_than_memory() {
        let s = |mib: u64, gbs| CacheSample {
            working_set_bytes: mib << 20,
            gbs,
        };
        let vm = [
            s(3, 29.5),
            s(48, 24.7),
            s(192, 13.0),
            s(480, 12.7),
            s(1200, 12.0),
        ];
        assert_eq!(effective_llc(&vm), Ok(48 << 20));
        // A machine where nothing is faster than memory has no cache step.
        let flat = [s(3, 12.5), s(1200, 12.0)];
        let e = effective_llc(&flat).unwrap_err();
        let want = CalibrationRunError::NoCacheSpeedup {
            speedup: CACHE_SPEEDUP,
            largest_mib: 1200,
            largest_gbs: 12.0,
        };
        assert_eq!(e, want);
        assert!(e.to_string().contains("1200 MiB, 12.00 GB/s"), "{e}");
        assert_eq!(effective_llc(&[]), Err(CalibrationRunError::NoCacheRun));
    }

    /// Each size keeps its best run; a failed run names its directory.
    #[test]
    fn samples_keep_the_best_of_rounds() {
        let topo = Topology::synthetic("t", "l3(8M):1 core:2").unwrap();
        let runs: Vec<CacheRun> = cache_runs(&topo, 2);
        let n = runs.len() / 2;
        let ok = |gbs| {
            trace(
                "static",
                &[STREAM],
                &[(0.0, Ev::Start(0, 0)), (1.0, Ev::ExitMetric(0, 0, gbs))],
            )
        };
        // Round 0 at 10 GB/s, round 1 at 20 GB/s for the 1 MiB arrays only.
        let traces: Vec<Trace> = (0..runs.len())
            .map(|k| ok(if k == n { 20.0 } else { 10.0 }))
            .collect();
        let samples = cache_samples(&runs, &traces).unwrap();
        assert_eq!(samples.len(), n);
        assert_eq!(
            (samples[0].working_set_bytes, samples[0].gbs),
            (3 << 20, 20.0)
        );
        assert!(samples[1..].iter().all(|s| s.gbs == 10.0));
        let failed = trace(
            "static",
            &[STREAM],
            &[(0.0, Ev::Start(0, 0)), (1.0, Ev::Exit(0, 0, 1))],
        );
        let e = cache_samples(&runs[..1], &[failed]).unwrap_err();
        assert_eq!(
            e,
            CalibrationRunError::Finished(FinishedError::Failed(ExitStatus::Code(1)))
                .in_run("1mib-0")
        );
        assert_eq!(e.to_string(), "run 1mib-0: exited with code 1");
    }
}
