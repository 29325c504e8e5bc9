//! Modeled platforms (docs/simulator.md, Platforms): a topology plus the
//! few numbers the contention model needs — core frequency, cache and memory
//! latencies, memory-controller and link bandwidths.
//!
//! The topology says *what* is shared (caches, front-side buses, memory
//! controllers, sockets); [`Params`] say *how fast* it is. Built-in platforms are
//! the papers' machines ([`platforms`]); any other topology (an hwloc XML file, a
//! synthetic description) gets the documented [`Params::default`], and a TOML
//! platform file ([`PlatformFile`]) overrides any of them.

mod builtin;
mod file;

pub use builtin::{platform, platform_names, platforms};
pub use file::{PlatformError, PlatformFile};

use coloc_model::calibration::MemoryCalibration;
use coloc_model::topology::{ObjKind, Topology};
use serde::{Deserialize, Serialize};

/// Bytes per cache line and per memory request: every platform modeled here uses
/// 64-byte lines, and bandwidths are converted to request rates with it.
pub const LINE_BYTES: f64 = 64.0;

/// The performance figures of a platform. Bandwidths are sustained (what STREAM
/// reaches), not peak, because that is what NuPoCo calibrates its service rates
/// with (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Core clock, GHz.
    pub freq_ghz: f64,
    /// Latency of a last-level-cache hit, core cycles.
    pub llc_hit_cycles: f64,
    /// Unloaded latency of a local DRAM access, ns.
    pub mem_latency_ns: f64,
    /// Extra latency of an access to another NUMA node's memory, ns.
    pub remote_latency_ns: f64,
    /// Sustained bandwidth of one memory controller (NUMA node), GB/s.
    pub mc_bandwidth_gbs: f64,
    /// Sustained bandwidth of one link a memory request crosses: the
    /// socket-to-socket interconnect (QPI, HyperTransport) on NUMA machines, the
    /// front-side bus of the requesting CPUs on FSB machines, GB/s.
    pub link_bandwidth_gbs: f64,
    /// Cache-to-cache transfer of a written shared line within a package, ns.
    pub xfer_near_ns: f64,
    /// Cache-to-cache transfer across packages, ns.
    pub xfer_far_ns: f64,
    /// Cost of one barrier level (a barrier of n threads has ⌈log2 n⌉ levels), ns.
    pub barrier_ns: f64,
    /// Scheduler time slice when a CPU is time-shared, µs (CFS's minimum
    /// granularity; a plan's `slice_us` overrides it per app).
    pub slice_us: f64,
    /// Period of the Linux load-balancer model, ms.
    pub balance_ms: f64,
    /// Random migrations per second of each unpinned runnable thread (wake-up
    /// placement noise of the topology-blind balancer).
    pub jitter_per_s: f64,
}

impl Default for Params {
    /// Defaults for a platform the papers do not describe (hwloc XML, synthetic):
    /// a 2.5 GHz core, 40-cycle LLC hit, 90 ns local DRAM, +50 ns remote, 12 GB/s
    /// per memory controller and 10 GB/s per link (a DDR3-era two-socket server),
    /// 60/150 ns cache-to-cache transfers, 0.5 µs per barrier level, a 3 ms slice
    /// (CFS minimum granularity on machines with 8+ CPUs), a 10 ms balancer period
    /// and 0.5 random migrations per second.
    fn default() -> Self {
        Self {
            freq_ghz: 2.5,
            llc_hit_cycles: 40.0,
            mem_latency_ns: 90.0,
            remote_latency_ns: 50.0,
            mc_bandwidth_gbs: 12.0,
            link_bandwidth_gbs: 10.0,
            xfer_near_ns: 60.0,
            xfer_far_ns: 150.0,
            barrier_ns: 500.0,
            slice_us: 3000.0,
            balance_ms: 10.0,
            jitter_per_s: 0.5,
        }
    }
}

impl Params {
    /// Every field with its value, for validation messages and `--list-platforms`.
    pub fn fields(&self) -> [(&'static str, f64); 12] {
        [
            ("freq_ghz", self.freq_ghz),
            ("llc_hit_cycles", self.llc_hit_cycles),
            ("mem_latency_ns", self.mem_latency_ns),
            ("remote_latency_ns", self.remote_latency_ns),
            ("mc_bandwidth_gbs", self.mc_bandwidth_gbs),
            ("link_bandwidth_gbs", self.link_bandwidth_gbs),
            ("xfer_near_ns", self.xfer_near_ns),
            ("xfer_far_ns", self.xfer_far_ns),
            ("barrier_ns", self.barrier_ns),
            ("slice_us", self.slice_us),
            ("balance_ms", self.balance_ms),
            ("jitter_per_s", self.jitter_per_s),
        ]
    }

    /// The figure called `field` (the names of [`Params::fields`]), to change it
    /// by name as calibration does.
    pub fn field_mut(&mut self, field: &str) -> Option<&mut f64> {
        Some(match field {
            "freq_ghz" => &mut self.freq_ghz,
            "llc_hit_cycles" => &mut self.llc_hit_cycles,
            "mem_latency_ns" => &mut self.mem_latency_ns,
            "remote_latency_ns" => &mut self.remote_latency_ns,
            "mc_bandwidth_gbs" => &mut self.mc_bandwidth_gbs,
            "link_bandwidth_gbs" => &mut self.link_bandwidth_gbs,
            "xfer_near_ns" => &mut self.xfer_near_ns,
            "xfer_far_ns" => &mut self.xfer_far_ns,
            "barrier_ns" => &mut self.barrier_ns,
            "slice_us" => &mut self.slice_us,
            "balance_ms" => &mut self.balance_ms,
            "jitter_per_s" => &mut self.jitter_per_s,
            _ => return None,
        })
    }

    /// Checks that every figure is finite; rates and latencies must be positive,
    /// `remote_latency_ns` and `jitter_per_s` may be zero.
    pub fn validate(&self) -> Result<(), PlatformError> {
        for (field, v) in self.fields() {
            let zero_ok = matches!(field, "remote_latency_ns" | "jitter_per_s" | "barrier_ns");
            let ok = v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0));
            if !ok {
                return Err(PlatformError::Invalid {
                    field: field.to_string(),
                    reason: format!(
                        "must be a finite number {} 0, found {v}",
                        if zero_ok { ">=" } else { ">" }
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A machine the simulator can run a workload on.
#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    pub name: String,
    /// One line: the processor and its memory system.
    pub description: String,
    /// Where the figures come from (paper and table, or "defaults").
    pub source: String,
    pub topology: Topology,
    pub params: Params,
}

impl Platform {
    /// A platform for a topology the papers do not describe (an hwloc XML file, a
    /// synthetic description), with [`Params::default`]. Front-side buses are
    /// recognized by groups named `FSB`; everything else comes from the tree.
    pub fn from_topology(topology: Topology) -> Self {
        Self {
            name: topology.name.clone(),
            description: format!(
                "{} CPUs, {} NUMA node(s), default figures",
                topology.cpus().len(),
                topology.numa_nodes()
            ),
            source: "topology with default figures (Params::default)".into(),
            topology,
            params: Params::default(),
        }
    }

    /// Whether memory requests cross a front-side bus (Core 2-era Intel parts).
    pub fn has_fsb(&self) -> bool {
        self.topology
            .objects_of(ObjKind::Group)
            .any(|(_, o)| o.name.as_deref() == Some("FSB"))
    }

    /// The memory calibration the platform carries: its sustained
    /// memory-controller and link bandwidths in 64-byte requests, the rates the
    /// simulator's queueing network serves, so NuPoCo plans in the simulator
    /// with the platform's true rates as it would on a calibrated machine
    /// (NuPoCo §4.3). Front-side buses have no place in NuPoCo's network of
    /// memory nodes and links (§4); a note says their bandwidth is left out.
    pub fn memory_calibration(&self) -> MemoryCalibration {
        let p = &self.params;
        let mut c = MemoryCalibration::uniform(
            &self.topology,
            p.mc_bandwidth_gbs * 1e9,
            p.link_bandwidth_gbs * 1e9,
            LINE_BYTES as u32,
            format!(
                "the simulated platform {}'s own figures ({})",
                self.name, self.source
            ),
        );
        if self.has_fsb() {
            c.notes.push(format!(
                "the front-side buses ({} GB/s each) are outside NuPoCo's network of memory \
                 nodes and links: the simulator models them, this calibration leaves them out",
                p.link_bandwidth_gbs
            ));
        }
        c
    }
}
