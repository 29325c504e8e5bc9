//! The memory calibration as a measurement procedure (NuPoCo §4.3;
//! docs/trace-format.md, Measurement procedures; [`crate::procedure`]).
//!
//! Every path (CPU node i, memory node m) at 1, 2, … threads up to the node's
//! CPUs (or a cap) is one planned run of the `stream` kernel: thread k pinned
//! on node i's k-th CPU, its arrays bound to node m (`--mem-node`, where the
//! machine reports NUMA nodes; one that reports none has one node, where
//! memory needs no binding). Repetitions go round all paths before any path
//! runs again, so a slow drift of the machine hits every path alike. A run's
//! sample is the GB/s the kernel reported at its exit ([`stream_sample`]), and
//! the calibration is [`MemoryCalibration::from_stream`] of the samples: a
//! pure function of the traces ([`calibration_from_traces`]), so `coloc
//! calibrate --from DIR` recomputes it.

use serde::{Deserialize, Serialize};

use super::CalibrationRunError;
use super::{memory_nodes, MemoryCalibration, StreamRate, StreamSample};
use crate::procedure::{finished, PinnedApp, PlannedRun};
use crate::profile::PlatformFingerprint;
use crate::topology::{ObjKind, Topology};
use crate::trace::Trace;

pub use super::STREAM;

/// Role of a calibration run.
pub const STREAM_RUN: &str = "stream";

/// The file name of a calibration's manifest in its directory.
pub const MANIFEST: &str = "calibration.json";

/// One planned stream run and the path it measures (node indices follow
/// [`memory_nodes`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamRun {
    pub cpu_node: usize,
    pub mem_node: usize,
    pub threads: u32,
    pub run: PlannedRun,
}

/// What a calibration's directory holds besides the traces (`STREAM/DIR`):
/// enough to recompute the calibration from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrationManifest {
    pub platform: PlatformFingerprint,
    /// Bytes per request the kernel's GB/s are divided by.
    pub line_bytes: u32,
    pub runs: Vec<StreamRun>,
    /// The cache ladder ([`super::cache`]); traces under `cache/DIR`. Empty
    /// in calibrations made before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_runs: Vec<super::cache::CacheRun>,
}

/// The planned runs on `topology`: `repeat` rounds of every path at 1..=n
/// threads, n the CPU node's CPUs capped by `max_threads`.
pub fn calibration_runs(
    topology: &Topology,
    max_threads: Option<u32>,
    repeat: u32,
) -> Vec<StreamRun> {
    let nodes = memory_nodes(topology);
    // The OS number of each memory node, for `--mem-node`.
    let os_node: Vec<Option<u32>> = topology
        .objects_of(ObjKind::NumaNode)
        .map(|(_, o)| o.os_index)
        .collect();
    let mut runs = Vec::new();
    for rep in 0..repeat {
        for (cpu_node, cpus) in nodes.iter().enumerate() {
            let cpus: Vec<_> = cpus.iter().collect();
            let top = max_threads.map_or(cpus.len() as u32, |n| n.min(cpus.len() as u32));
            for mem_node in 0..nodes.len() {
                let args = match os_node.get(mem_node).copied().flatten() {
                    Some(os) => vec!["--mem-node".to_string(), os.to_string()],
                    None => Vec::new(),
                };
                runs.extend((1..=top).map(|threads| StreamRun {
                    cpu_node,
                    mem_node,
                    threads,
                    run: PlannedRun {
                        dir: format!("cpu{cpu_node}-mem{mem_node}-{threads}t-{rep}"),
                        role: STREAM_RUN.into(),
                        apps: vec![PinnedApp {
                            name: STREAM.into(),
                            cpus: cpus[..threads as usize].to_vec(),
                            args: args.clone(),
                        }],
                    },
                }));
            }
        }
    }
    runs
}

/// The sample of one stream run from its trace: the GB/s the kernel reported
/// at its exit; or why the run gives none.
pub fn stream_sample(run: &StreamRun, trace: &Trace) -> Result<StreamSample, CalibrationRunError> {
    let gbs = finished(trace, STREAM)?
        .metric
        .ok_or(CalibrationRunError::NoMetric)?;
    Ok(StreamSample {
        cpu_node: run.cpu_node,
        mem_node: run.mem_node,
        threads: run.threads,
        rate: StreamRate::BytesPerSec(gbs * 1e9),
    })
}

/// The samples of `runs` from their traces (in the order of `runs`) and the
/// calibration fitted to them, on the topology the traces recorded, dated by
/// the first run's start.
pub fn calibration_from_traces(
    runs: &[StreamRun],
    line_bytes: u32,
    traces: &[Trace],
) -> Result<(Vec<StreamSample>, MemoryCalibration), CalibrationRunError> {
    let first = traces.first().ok_or(CalibrationRunError::NoStreamRun)?;
    let samples = runs
        .iter()
        .zip(traces)
        .map(|(run, trace)| stream_sample(run, trace).map_err(|e| e.in_run(&run.run.dir)))
        .collect::<Result<Vec<_>, CalibrationRunError>>()?;
    let calibration = MemoryCalibration::from_stream(
        &first.header.topology,
        &samples,
        line_bytes,
        first.header.started_unix as u64,
    )
    .map_err(CalibrationRunError::Fit)?;
    Ok((samples, calibration))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::Cpu;
    use crate::metrics::testtrace::{trace, Ev};

    /// Directory, path, threads, CPUs and extra arguments of each run.
    type Outline = (String, usize, usize, u32, Vec<Cpu>, Vec<String>);

    fn outline(runs: &[StreamRun]) -> Vec<Outline> {
        runs.iter()
            .map(|r| {
                assert_eq!(r.run.role, STREAM_RUN);
                assert_eq!(r.run.apps.len(), 1);
                let a = &r.run.apps[0];
                assert_eq!(a.name, STREAM);
                (
                    r.run.dir.clone(),
                    r.cpu_node,
                    r.mem_node,
                    r.threads,
                    a.cpus.clone(),
                    a.args.clone(),
                )
            })
            .collect()
    }

    /// The plan: every path at every thread count up to the node's CPUs or
    /// the cap, thread k on the node's k-th CPU, memory bound to the path's
    /// node by its OS number where the machine has NUMA nodes, repetitions
    /// round all paths.
    #[test]
    fn runs_cover_every_path_and_thread_count_and_alternate() {
        let two = Topology::synthetic("t", "numa:2 core:2").unwrap();
        let flat = Topology::synthetic("t", "core:3").unwrap();
        let bind = |n: &str| vec!["--mem-node".to_string(), n.to_string()];
        let o = |dir: &str, c, m, t, cpus: &[Cpu], args: Vec<String>| {
            (dir.to_string(), c, m, t, cpus.to_vec(), args)
        };
        assert_eq!(
            outline(&calibration_runs(&two, Some(1), 2)),
            vec![
                o("cpu0-mem0-1t-0", 0, 0, 1, &[0], bind("0")),
                o("cpu0-mem1-1t-0", 0, 1, 1, &[0], bind("1")),
                o("cpu1-mem0-1t-0", 1, 0, 1, &[2], bind("0")),
                o("cpu1-mem1-1t-0", 1, 1, 1, &[2], bind("1")),
                o("cpu0-mem0-1t-1", 0, 0, 1, &[0], bind("0")),
                o("cpu0-mem1-1t-1", 0, 1, 1, &[0], bind("1")),
                o("cpu1-mem0-1t-1", 1, 0, 1, &[2], bind("0")),
                o("cpu1-mem1-1t-1", 1, 1, 1, &[2], bind("1")),
            ]
        );
        assert_eq!(
            outline(&calibration_runs(&flat, None, 1)),
            vec![
                o("cpu0-mem0-1t-0", 0, 0, 1, &[0], vec![]),
                o("cpu0-mem0-2t-0", 0, 0, 2, &[0, 1], vec![]),
                o("cpu0-mem0-3t-0", 0, 0, 3, &[0, 1, 2], vec![]),
            ]
        );
        assert_eq!(calibration_runs(&flat, Some(9), 1).len(), 3);
    }

    /// A run's sample is the kernel's GB/s at exit; a failed run or one
    /// without a metric names its directory; the calibration is fitted on the
    /// traces' topology.
    #[test]
    fn samples_and_calibration_from_traces() {
        let flat = Topology::synthetic("t", "core:2").unwrap();
        let runs = calibration_runs(&flat, None, 1);
        let run = |gbs| {
            trace(
                "static",
                &[STREAM],
                &[(0.0, Ev::Start(0, 0)), (1.0, Ev::ExitMetric(0, 0, gbs))],
            )
        };
        let mut traces = vec![run(6.4), run(12.8)];
        for t in &mut traces {
            t.header.topology = flat.clone();
        }
        let (samples, c) = calibration_from_traces(&runs, 64, &traces).unwrap();
        let rates: Vec<(u32, StreamRate)> = samples.iter().map(|s| (s.threads, s.rate)).collect();
        assert_eq!(
            rates,
            [
                (1, StreamRate::BytesPerSec(6.4e9)),
                (2, StreamRate::BytesPerSec(12.8e9))
            ]
        );
        let want = MemoryCalibration::from_stream(
            &flat,
            &samples,
            64,
            traces[0].header.started_unix as u64,
        )
        .unwrap();
        assert_eq!(c, want);
        let failed = trace(
            "static",
            &[STREAM],
            &[(0.0, Ev::Start(0, 0)), (1.0, Ev::Exit(0, 0, 1))],
        );
        let e = calibration_from_traces(&runs, 64, &[run(6.4), failed]).unwrap_err();
        let code_1 = crate::procedure::FinishedError::Failed(crate::trace::ExitStatus::Code(1));
        let code_1 = CalibrationRunError::Finished(code_1);
        assert_eq!(e, code_1.in_run("cpu0-mem0-2t-0"));
        assert_eq!(e.to_string(), "run cpu0-mem0-2t-0: exited with code 1");
    }
}
