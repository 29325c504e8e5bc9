//! The memory system's calibration (NuPoCo §4.3): how many requests each memory
//! controller and each interconnect link serves per second.
//!
//! Problem: NuPoCo's queueing model (§3.3, §4) needs the service rate μ_m of every
//! memory controller and link_{i,m} of every path from CPU node i to memory node m.
//! They belong to the machine, not to an app, so they are measured once per
//! platform — NuPoCo runs a STREAM kernel that accesses one memory node from
//! chosen cores and measures the mean service time — and kept with the machine's
//! fingerprint so a calibration is never applied to another machine.
//!
//! Approach: `coloc calibrate` runs a stream kernel with 1..n threads on the CPUs
//! of CPU node i reading memory of node m and records the sustained rate of each
//! run ([`StreamSample`]); [`MemoryCalibration::from_stream`] turns those samples
//! into service rates. This module holds only data and that pure function;
//! [`procedure`] plans the runs and reads the samples back from their traces.
//!
//! Units: one request is one cache line (`line_bytes`, 64 on every x86 and Arm
//! server), and every rate is in **requests per second**. The policies' model
//! measures app request rates per second of CPU time, so the two meet without
//! conversion.

pub mod cache;
pub mod procedure;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::topology::{ObjKind, Topology};

/// The stream kernel's app name in every calibration run (memory paths and
/// the cache ladder).
pub const STREAM: &str = "stream";

/// Bytes in one memory request when nothing else is known (the cache line of
/// every current x86 and Arm server).
pub const DEFAULT_LINE_BYTES: u32 = 64;

/// Sustained bandwidth assumed for one memory controller when the machine was
/// never calibrated: 12 GB/s, what STREAM reaches on one node of a DDR3-era
/// two-socket server (the simulator's default platform figure too).
pub const ASSUMED_NODE_BYTES_PER_S: f64 = 12e9;

/// Sustained bandwidth assumed for one interconnect link when the machine was
/// never calibrated: 10 GB/s (one QPI / HyperTransport link of that era).
pub const ASSUMED_LINK_BYTES_PER_S: f64 = 10e9;

/// A rate a stream kernel measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "unit", content = "value")]
pub enum StreamRate {
    BytesPerSec(f64),
    RequestsPerSec(f64),
}

/// One run of the stream kernel: `threads` threads on CPUs of CPU node
/// `cpu_node`, all reading and writing memory of node `mem_node`, reached `rate`
/// together. Node indices follow [`memory_nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamSample {
    pub cpu_node: usize,
    pub mem_node: usize,
    pub threads: u32,
    pub rate: StreamRate,
}

/// Service rates of a machine's memory system, in requests per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryCalibration {
    /// μ_m for each memory node m (in [`memory_nodes`] order), requests/s.
    pub node_service_rate: Vec<f64>,
    /// `link_service_rate[i][m]`: link_{i,m} of the path from CPU node i to memory
    /// node m, requests/s; `None` where the path crosses no link that limits it
    /// (local accesses, or a remote path that was as fast as the controller).
    /// Empty on a machine with one node.
    pub link_service_rate: Vec<Vec<Option<f64>>>,
    /// Bytes per request the byte rates were divided by.
    pub line_bytes: u32,
    /// How the numbers were obtained, in words.
    pub method: String,
    /// When they were obtained, RFC 3339 (UTC, seconds).
    pub measured_at: String,
    /// [`Topology::shape_hash`] of the machine they belong to.
    pub topology_hash: u64,
    /// Caveats found while fitting (a node that did not saturate, links filled in
    /// by symmetry), for `coloc calibrate` to print.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The last-level cache capacity one thread gets, bytes, measured by the
    /// stream kernel at growing working sets ([`cache::effective_llc`]); None
    /// where it was not measured (calibrations made before it was, assumed
    /// and simulated ones) or no cache step showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_bytes: Option<u64>,
}

/// Why a calibration's stream runs give no figure (NuPoCo §4.3's service
/// rates, the cache ladder's effective LLC): what `coloc calibrate` prints or
/// notes in its place. A failed run names its directory.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationRunError {
    /// The run in directory `dir` (relative to the procedure's) gave none.
    #[error("run {dir}: {error}")]
    InRun {
        dir: String,
        error: Box<CalibrationRunError>,
    },
    #[error(transparent)]
    Finished(#[from] crate::procedure::FinishedError),
    #[error("the stream kernel printed no metric")]
    NoMetric,
    #[error("no stream run")]
    NoStreamRun,
    #[error("fitting service rates to the stream runs: {0}")]
    Fit(CalibrationError),
    #[error("no cache run")]
    NoCacheRun,
    /// No working set of the cache ladder ran `speedup` times as fast as the
    /// largest (`largest_mib`, at `largest_gbs`).
    #[error(
        "no working set ran {speedup} times as fast as the largest ({largest_mib} MiB, \
         {largest_gbs:.2} GB/s)"
    )]
    NoCacheSpeedup {
        speedup: f64,
        largest_mib: u64,
        largest_gbs: f64,
    },
}

impl CalibrationRunError {
    /// This error as the run in `dir` gave it.
    pub fn in_run(self, dir: &str) -> Self {
        CalibrationRunError::InRun {
            dir: dir.to_string(),
            error: Box::new(self),
        }
    }
}

/// Why stream samples do not make a calibration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error("sample {index}: node {node} does not exist (the machine has {nodes} memory node(s))")]
    NoSuchNode {
        index: usize,
        node: usize,
        nodes: usize,
    },
    #[error("sample {index}: the rate must be a positive finite number, found {rate}")]
    BadRate { index: usize, rate: f64 },
    #[error("sample {index}: `threads` must be at least 1")]
    NoThreads { index: usize },
    #[error("memory node {0} has no local sample (stream threads on its own CPUs)")]
    MissingNode(usize),
    #[error("`line_bytes` must be at least 1")]
    LineBytes,
}

/// The CPU nodes of NuPoCo §4 — one per NUMA node, in topology order; the whole
/// machine when it reports no NUMA node. CPU node i's local memory is memory
/// node i, so the same index names both.
pub fn memory_nodes(topology: &Topology) -> Vec<CpuSet> {
    let nodes: Vec<CpuSet> = topology
        .objects_of(ObjKind::NumaNode)
        .map(|(_, o)| o.cpus.clone())
        .collect();
    if nodes.is_empty() {
        vec![topology.cpus().clone()]
    } else {
        nodes
    }
}

/// A date for [`MemoryCalibration::measured_at`]: RFC 3339, UTC, seconds.
fn rfc3339(unix_secs: u64) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(unix_secs);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Relative gain below which the last doubling of threads counts as saturated.
const PLATEAU: f64 = 0.05;

impl MemoryCalibration {
    /// Fits service rates to stream samples (the method of `coloc calibrate`,
    /// NuPoCo §4.3).
    ///
    /// Method: a stream kernel issues requests as fast as its cores allow, so
    /// under the M/M/1/N/N model (§3.3) its throughput X(n) = μ · MCT Util(n)
    /// rises with the thread count n and levels off at the service rate μ of the
    /// slowest server on its path once that server is always busy. So:
    ///
    /// - μ_m is the highest rate of the local samples of node m (threads on node
    ///   m's CPUs). If the rate still grew by more than 5 % at the largest thread
    ///   count, the controller never saturated and μ_m is a lower bound; a note
    ///   says so.
    /// - A remote path i → m is served at μ_{i,m} = 1/(1/link_{i,m} + MRT_m)
    ///   (§4.2), and MRT_m = 1/μ_m there because controller m then has a single
    ///   customer (CPU node i), which never queues. With X_{i,m} the highest rate
    ///   of its samples, link_{i,m} = 1/(1/X_{i,m} − 1/μ_m). A path that reached
    ///   μ_m (within 5 %) has no limiting link (`None`).
    /// - Remote paths without samples get the mean of the measured links (a
    ///   symmetric interconnect); with no remote sample at all, no link is
    ///   modeled. Notes record both.
    ///
    /// The numbers are what the machine sustains, as NuPoCo plugs them into its
    /// model. They are not fitted to that model: its §4.1 queue averages a
    /// controller's load over all CPU nodes, idle ones included, so in the
    /// model one node streaming alone on an 8-node machine gets well below μ_m
    /// (0.42 μ_m at best, falling towards μ_m/8 as the offered rate grows),
    /// while on a one-node machine it reaches μ_m.
    ///
    /// `measured_unix` is the time of the measurement (seconds since the Unix
    /// epoch); the caller reads the clock, this function stays pure.
    pub fn from_stream(
        topology: &Topology,
        samples: &[StreamSample],
        line_bytes: u32,
        measured_unix: u64,
    ) -> Result<Self, CalibrationError> {
        if line_bytes == 0 {
            return Err(CalibrationError::LineBytes);
        }
        let nodes = memory_nodes(topology).len();
        // (cpu node, mem node) -> (threads, requests/s), sorted by threads.
        let mut paths: BTreeMap<(usize, usize), Vec<(u32, f64)>> = BTreeMap::new();
        for (index, s) in samples.iter().enumerate() {
            for node in [s.cpu_node, s.mem_node] {
                if node >= nodes {
                    return Err(CalibrationError::NoSuchNode { index, node, nodes });
                }
            }
            if s.threads == 0 {
                return Err(CalibrationError::NoThreads { index });
            }
            let rate = match s.rate {
                StreamRate::BytesPerSec(b) => b / f64::from(line_bytes),
                StreamRate::RequestsPerSec(r) => r,
            };
            if !(rate.is_finite() && rate > 0.0) {
                return Err(CalibrationError::BadRate { index, rate });
            }
            paths
                .entry((s.cpu_node, s.mem_node))
                .or_default()
                .push((s.threads, rate));
        }
        for v in paths.values_mut() {
            v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        }
        let mut notes = Vec::new();
        let peak = |v: &[(u32, f64)]| v.iter().map(|p| p.1).fold(0.0, f64::max);
        let mut mu = Vec::with_capacity(nodes);
        for m in 0..nodes {
            let v = paths.get(&(m, m)).ok_or(CalibrationError::MissingNode(m))?;
            if let Some(gain) = last_gain(v).filter(|g| *g > PLATEAU) {
                notes.push(format!(
                    "node {m}: the rate still grew {:.0} % at {} threads; its service rate is a lower bound",
                    gain * 100.0,
                    v[v.len() - 1].0
                ));
            }
            mu.push(peak(v));
        }
        let link_service_rate = if nodes == 1 {
            Vec::new()
        } else {
            let measured: BTreeMap<(usize, usize), Option<f64>> = paths
                .iter()
                .filter(|((i, m), _)| i != m)
                .map(|(&(i, m), v)| {
                    let x = peak(v);
                    let link = (x < mu[m] * (1.0 - PLATEAU)).then(|| 1.0 / (1.0 / x - 1.0 / mu[m]));
                    ((i, m), link)
                })
                .collect();
            let limited: Vec<f64> = measured.values().flatten().copied().collect();
            let fill =
                (!limited.is_empty()).then(|| limited.iter().sum::<f64>() / limited.len() as f64);
            let missing = (0..nodes)
                .flat_map(|i| (0..nodes).map(move |m| (i, m)))
                .filter(|(i, m)| i != m && !measured.contains_key(&(*i, *m)))
                .count();
            if missing > 0 {
                notes.push(match (measured.is_empty(), fill) {
                    (true, _) => "no remote path was measured: no link cost is modeled".to_string(),
                    (false, Some(f)) => format!(
                        "{missing} remote path(s) not measured: given the mean measured link, {f:.4e} requests/s"
                    ),
                    (false, None) => format!(
                        "{missing} remote path(s) not measured: no measured link limited its path, so none is modeled"
                    ),
                });
            }
            (0..nodes)
                .map(|i| {
                    (0..nodes)
                        .map(|m| match measured.get(&(i, m)) {
                            _ if i == m => None,
                            Some(link) => *link,
                            None if measured.is_empty() => None,
                            None => fill,
                        })
                        .collect()
                })
                .collect()
        };
        Ok(Self {
            node_service_rate: mu,
            link_service_rate,
            line_bytes,
            method: format!(
                "stream plateau: highest sustained rate of {} stream run(s) at 1..n threads per path, {line_bytes}-byte requests (NuPoCo §4.3)",
                samples.len()
            ),
            measured_at: rfc3339(measured_unix),
            topology_hash: topology.shape_hash(),
            notes,
            llc_bytes: None,
        })
    }

    /// The figures used when a machine was never calibrated: every memory node
    /// serves [`ASSUMED_NODE_BYTES_PER_S`] and every remote path crosses one link
    /// of [`ASSUMED_LINK_BYTES_PER_S`], in 64-byte requests. The method says they
    /// are assumed, so plans and reports can tell.
    pub fn assumed(topology: &Topology) -> Self {
        Self::uniform(
            topology,
            ASSUMED_NODE_BYTES_PER_S,
            ASSUMED_LINK_BYTES_PER_S,
            DEFAULT_LINE_BYTES,
            format!(
                "assumed, not measured: {} GB/s per memory node, {} GB/s per link",
                ASSUMED_NODE_BYTES_PER_S / 1e9,
                ASSUMED_LINK_BYTES_PER_S / 1e9
            ),
        )
    }

    /// Rates given rather than measured, the same for every memory node and every
    /// remote path (one link each): the assumed figures, or a simulated platform's
    /// own bandwidths, which need no measuring because the simulator serves
    /// exactly them. `measured_at` is the Unix epoch (nothing was measured);
    /// `method` says where the figures come from.
    pub fn uniform(
        topology: &Topology,
        node_bytes_per_s: f64,
        link_bytes_per_s: f64,
        line_bytes: u32,
        method: String,
    ) -> Self {
        let nodes = memory_nodes(topology).len();
        let line = f64::from(line_bytes);
        let link = link_bytes_per_s / line;
        Self {
            node_service_rate: vec![node_bytes_per_s / line; nodes],
            link_service_rate: if nodes == 1 {
                Vec::new()
            } else {
                (0..nodes)
                    .map(|i| (0..nodes).map(|m| (i != m).then_some(link)).collect())
                    .collect()
            },
            line_bytes,
            method,
            measured_at: rfc3339(0),
            topology_hash: topology.shape_hash(),
            notes: Vec::new(),
            llc_bytes: None,
        }
    }

    /// Whether it was measured on a machine of this shape.
    pub fn fits(&self, topology: &Topology) -> bool {
        self.topology_hash == topology.shape_hash()
            && self.node_service_rate.len() == memory_nodes(topology).len()
    }
}

/// Relative gain of the rate between the two largest thread counts of a path
/// (None with a single thread count).
fn last_gain(v: &[(u32, f64)]) -> Option<f64> {
    let (top, _) = *v.last()?;
    let at_top = v
        .iter()
        .filter(|p| p.0 == top)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let below = v
        .iter()
        .filter(|p| p.0 < top)
        .map(|p| p.1)
        .fold(None, |acc: Option<f64>, r| {
            Some(acc.map_or(r, |a| a.max(r)))
        })?;
    Some(at_top / below - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(desc: &str) -> Topology {
        Topology::synthetic("t", desc).unwrap()
    }

    fn local(node: usize, threads: u32, gbs: f64) -> StreamSample {
        StreamSample {
            cpu_node: node,
            mem_node: node,
            threads,
            rate: StreamRate::BytesPerSec(gbs * 1e9),
        }
    }

    fn remote(i: usize, m: usize, gbs: f64) -> StreamSample {
        StreamSample {
            cpu_node: i,
            mem_node: m,
            threads: 8,
            rate: StreamRate::BytesPerSec(gbs * 1e9),
        }
    }

    /// One node saturating at 12.8 GB/s: μ = 12.8e9 / 64 = 2e8 requests/s, no
    /// links, the fingerprint and the date recorded.
    #[test]
    fn single_node_plateau() {
        let t = topo("package:1 l3(8M):1 core:8");
        let samples = [
            local(0, 1, 4.0),
            local(0, 2, 8.0),
            local(0, 4, 12.5),
            local(0, 8, 12.8),
        ];
        let c = MemoryCalibration::from_stream(&t, &samples, 64, 86_400).unwrap();
        assert_eq!(c.node_service_rate, [2e8]);
        assert!(c.link_service_rate.is_empty());
        assert_eq!(c.topology_hash, t.shape_hash());
        assert_eq!(c.measured_at, "1970-01-02T00:00:00Z");
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        assert!(c.fits(&t));
        assert!(!c.fits(&topo("package:2 numa:1 core:4")));
    }

    /// Two nodes of 12.8 GB/s (2e8 req/s). Path 0 → 1 peaks at 6.4 GB/s = 1e8
    /// req/s, so link = 1/(1/1e8 − 1/2e8) = 2e8; path 1 → 0 reaches 12.5 GB/s,
    /// within 5 % of the controller, so no link limits it.
    #[test]
    fn links_from_remote_paths() {
        let t = topo("package:2 numa:1 core:4");
        let samples = [
            local(0, 4, 12.8),
            local(1, 2, 12.2),
            local(1, 4, 12.8),
            remote(0, 1, 6.4),
            remote(1, 0, 12.5),
        ];
        let c = MemoryCalibration::from_stream(&t, &samples, 64, 0).unwrap();
        assert_eq!(c.node_service_rate, [2e8, 2e8]);
        let link = c.link_service_rate[0][1].unwrap();
        assert!((link - 2e8).abs() < 1e-3, "{link}");
        assert_eq!(c.link_service_rate[1], [None, None]);
        assert_eq!(c.link_service_rate[0][0], None);
    }

    /// Four nodes with only 0 → 1 measured: the other ten remote paths get its
    /// link by symmetry, and a note says so. Requests/s samples need no line size.
    #[test]
    fn unmeasured_links_are_filled_by_symmetry() {
        let t = topo("package:2 numa:2 core:2");
        let mut samples: Vec<StreamSample> = (0..4).map(|n| local(n, 2, 12.8)).collect();
        samples.push(StreamSample {
            rate: StreamRate::RequestsPerSec(1e8),
            ..remote(0, 1, 0.0)
        });
        let c = MemoryCalibration::from_stream(&t, &samples, 64, 0).unwrap();
        for i in 0..4 {
            for m in 0..4 {
                let want = (i != m).then_some(2e8);
                let got = c.link_service_rate[i][m];
                assert!(
                    got.zip(want)
                        .map_or(got == want, |(g, w)| (g - w).abs() < 1e-3),
                    "{i}->{m}: {got:?}"
                );
            }
        }
        assert!(
            c.notes[0].starts_with("11 remote path(s) not measured"),
            "{:?}",
            c.notes
        );
    }

    /// A node whose rate still rose 20 % from 4 to 8 threads is flagged.
    #[test]
    fn unsaturated_node_is_noted() {
        let t = topo("package:1 core:8");
        let samples = [local(0, 4, 10.0), local(0, 8, 12.0)];
        let c = MemoryCalibration::from_stream(&t, &samples, 64, 0).unwrap();
        assert!(c.notes[0].contains("lower bound"), "{:?}", c.notes);
    }

    /// Each kind of bad input names what is wrong.
    #[test]
    fn errors_name_the_problem() {
        let t = topo("package:2 numa:1 core:4");
        let cases: Vec<(Vec<StreamSample>, u32, CalibrationError)> = vec![
            (vec![local(0, 4, 1.0)], 64, CalibrationError::MissingNode(1)),
            (
                vec![local(2, 4, 1.0)],
                64,
                CalibrationError::NoSuchNode {
                    index: 0,
                    node: 2,
                    nodes: 2,
                },
            ),
            (
                vec![local(0, 0, 1.0)],
                64,
                CalibrationError::NoThreads { index: 0 },
            ),
            (
                vec![local(0, 1, -1.0)],
                64,
                CalibrationError::BadRate {
                    index: 0,
                    rate: -1e9 / 64.0,
                },
            ),
            (vec![local(0, 1, 1.0)], 0, CalibrationError::LineBytes),
        ];
        for (samples, line, want) in cases {
            assert_eq!(
                MemoryCalibration::from_stream(&t, &samples, line, 0).unwrap_err(),
                want
            );
        }
    }

    /// The assumed figures: 12e9/64 = 1.875e8 requests/s per node, 10e9/64 =
    /// 1.5625e8 per link, local paths without a link; it serializes and reads back.
    #[test]
    fn assumed_figures_round_trip() {
        let t = topo("package:4 numa:2 l3(5M):1 core:6");
        let c = MemoryCalibration::assumed(&t);
        assert_eq!(c.node_service_rate, vec![1.875e8; 8]);
        assert_eq!(c.link_service_rate[3][3], None);
        assert_eq!(c.link_service_rate[3][4], Some(1.5625e8));
        assert!(c.method.starts_with("assumed"));
        let json = serde_json::to_string(&c).unwrap();
        let back: MemoryCalibration = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }

    /// Given figures in another line size: 25.6 GB/s / 128 B = 2e8 requests/s
    /// per node, 12.8 GB/s / 128 B = 1e8 per link; the method is kept as given.
    #[test]
    fn uniform_figures() {
        let t = topo("package:2 numa:1 core:4");
        let c = MemoryCalibration::uniform(&t, 25.6e9, 12.8e9, 128, "given".into());
        assert_eq!(c.node_service_rate, [2e8, 2e8]);
        assert_eq!(c.link_service_rate, [[None, Some(1e8)], [Some(1e8), None]]);
        assert_eq!((c.line_bytes, c.method.as_str()), (128, "given"));
        assert!(c.fits(&t));
    }

    /// Machines without NUMA objects are one node holding every CPU.
    #[test]
    fn memory_nodes_of_fixture_shapes() {
        assert_eq!(memory_nodes(&topo("package:1 core:2")).len(), 1);
        let n = memory_nodes(&topo("package:4 numa:2 l3(5M):1 core:6"));
        assert_eq!(n.len(), 8);
        assert_eq!(n[1].to_list(), "6-11");
    }
}
