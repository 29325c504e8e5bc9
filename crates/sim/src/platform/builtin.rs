//! The papers' machines, described from the figures the papers give (docs/simulator.md, Platforms).
//!
//! Topologies come from the papers' platform tables and figures; where a paper
//! names no frequency or bandwidth, the figure is the vendor's for the processor
//! the paper's cache/core counts identify, and the `source` says so. Sustained
//! bandwidths are roughly 55–60 % of peak, the ratio Tang et al. measured on
//! Clovertown (STREAM 5.6 GB/s of a 10.6 GB/s FSB, §5).
//!
//! CPU numbers are depth-first (siblings under one cache are adjacent), which is
//! how Tang et al. number Clovertown's cores ({XX..XX..} shares L2s) but not how
//! ReSense's Table III numbers Harpertown's: compare mappings by sharing
//! configuration, not by raw CPU numbers.

use coloc_model::topology::Topology;

use super::{Params, Platform};

struct Builtin {
    name: &'static str,
    description: &'static str,
    source: &'static str,
    topology: &'static str,
    params: fn() -> Params,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "yorkfield",
        description: "Intel Core 2 Quad (Yorkfield): 4 cores, 2 x 6 MB L2 shared by core pairs, one FSB",
        source: "ReSense TACO 2013 Table II and Fig. 5(a); 2.83 GHz and FSB-1333 assumed (Q9550)",
        topology: "package:1 group(FSB):1 l2(6M):2 core:2",
        params: || Params {
            freq_ghz: 2.83,
            llc_hit_cycles: 15.0,
            mem_latency_ns: 100.0,
            remote_latency_ns: 0.0,
            mc_bandwidth_gbs: 6.4,
            link_bandwidth_gbs: 5.6,
            xfer_near_ns: 100.0,
            xfer_far_ns: 100.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "harpertown",
        description: "2 x Intel Xeon E54xx (Harpertown): 8 cores, 4 x 6 MB L2, 2 FSBs to one memory controller hub",
        source: "ReSense TACO 2013 Table II and Fig. 5(b); 3.0 GHz and FSB-1333 assumed (E5450)",
        topology: "package:2 group(FSB):1 l2(6M):2 core:2",
        params: || Params {
            freq_ghz: 3.0,
            llc_hit_cycles: 15.0,
            mem_latency_ns: 110.0,
            remote_latency_ns: 0.0,
            mc_bandwidth_gbs: 8.0,
            link_bandwidth_gbs: 5.6,
            xfer_near_ns: 100.0,
            xfer_far_ns: 160.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "clovertown",
        description: "2 x Intel Xeon E5345 (Clovertown): 2 x 4 cores at 2.33 GHz, 4 x 4 MB L2 shared by core pairs, one FSB per socket to one memory controller hub",
        source: "Tang et al. ISCA 2011 §3.1, Fig. 1 and §5 (FSB 10.6 GB/s peak, STREAM 5.6 GB/s)",
        topology: "package:2 group(FSB):1 l2(4M):2 core:2",
        params: || Params {
            freq_ghz: 2.33,
            llc_hit_cycles: 14.0,
            mem_latency_ns: 110.0,
            remote_latency_ns: 0.0,
            mc_bandwidth_gbs: 8.0,
            link_bandwidth_gbs: 5.6,
            xfer_near_ns: 100.0,
            xfer_far_ns: 160.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "westmere",
        description: "2 x Intel Xeon X5660 (Westmere): 2 x 6 cores at 2.8 GHz, 12 MB L3 per socket, integrated memory controller with 3 x 8.5 GB/s channels, QPI",
        source: "Tang et al. ISCA 2011 §4.3.2; QPI 6.4 GT/s (Intel ARK)",
        topology: "package:2 numa:1 l3(12M):1 core:6",
        params: || Params {
            freq_ghz: 2.8,
            llc_hit_cycles: 40.0,
            mem_latency_ns: 65.0,
            remote_latency_ns: 40.0,
            mc_bandwidth_gbs: 15.0,
            link_bandwidth_gbs: 10.0,
            xfer_near_ns: 40.0,
            xfer_far_ns: 120.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "xeon32",
        description: "4 x Intel Xeon E7-4820 (Westmere-EX): 32 cores / 64 threads at 2.0 GHz, 4 x 18 MB L3, one memory controller per socket",
        source: "ReSense TACO 2013 Table II and Fig. 6(a) (Intel-Xeon); processor identified by its 8 cores and 18 MB L3",
        topology: "package:4 numa:1 l3(18M):1 l2(256K):8 core:1 pu:2",
        params: || Params {
            freq_ghz: 2.0,
            llc_hit_cycles: 45.0,
            mem_latency_ns: 90.0,
            remote_latency_ns: 60.0,
            mc_bandwidth_gbs: 12.0,
            link_bandwidth_gbs: 10.0,
            xfer_near_ns: 45.0,
            xfer_far_ns: 150.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "opteron48",
        description: "4 x AMD Opteron 6174 (Magny-Cours): 48 cores at 2.2 GHz, 8 dies each with 6 cores, a 5 MB L3 and its own memory controller, HyperTransport",
        source: "ReSense TACO 2013 Table II and Fig. 6(b) (AMD-Opteron); 6174 identified by 12 cores per socket",
        topology: "package:4 numa:2 l3(5M):1 l2(512K):6 core:1",
        params: || Params {
            freq_ghz: 2.2,
            llc_hit_cycles: 45.0,
            mem_latency_ns: 85.0,
            remote_latency_ns: 50.0,
            mc_bandwidth_gbs: 9.0,
            link_bandwidth_gbs: 5.0,
            xfer_near_ns: 80.0,
            xfer_far_ns: 180.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "nupoco-amd64",
        description: "4 x AMD Opteron 6300 (Abu Dhabi): 64 cores at 2.5 GHz, 8 NUMA nodes of 4 two-core modules (2 MB L2 per module) with an 8 MB L3, DDR3-1600",
        source: "NuPoCo PACT 2018 §7.1",
        topology: "package:4 numa:2 l3(8M):1 l2(2M):4 core:2",
        params: || Params {
            freq_ghz: 2.5,
            llc_hit_cycles: 50.0,
            mem_latency_ns: 90.0,
            remote_latency_ns: 55.0,
            mc_bandwidth_gbs: 10.0,
            link_bandwidth_gbs: 6.0,
            xfer_near_ns: 80.0,
            xfer_far_ns: 180.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "nupoco-intel72",
        description: "4 x Intel Xeon E7-8870 v3 (Haswell-EX): 72 cores at 2.1 GHz, 45 MB L3 and one memory controller per socket, QPI, DDR at 1.6 GHz",
        source: "NuPoCo PACT 2018 §7.1",
        topology: "package:4 numa:1 l3(45M):1 l2(256K):18 core:1",
        params: || Params {
            freq_ghz: 2.1,
            llc_hit_cycles: 50.0,
            mem_latency_ns: 95.0,
            remote_latency_ns: 70.0,
            mc_bandwidth_gbs: 30.0,
            link_bandwidth_gbs: 15.0,
            xfer_near_ns: 50.0,
            xfer_far_ns: 170.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "opteron-8431",
        description: "Dell PowerEdge R905, 4 x AMD Opteron 8431 (Istanbul): 24 cores at 2.4 GHz, a 6 MB L3 and a memory controller per 6-core socket, HyperTransport; remote memory 2.5x local",
        source: "Thread Tranquilizer TACO 2012 §2.1.1 and Table II (24 cores, 6 MB L3 per 6 cores, remote 2.5x local); DDR2-800 and HT 1 GHz assumed (Opteron 8431), sustained at ~55% of peak",
        topology: "package:4 numa:1 l3(6M):1 l2(512K):6 core:1",
        params: || Params {
            freq_ghz: 2.4,
            llc_hit_cycles: 45.0,
            // 2.5x local: 70 ns + 105 ns.
            mem_latency_ns: 70.0,
            remote_latency_ns: 105.0,
            mc_bandwidth_gbs: 7.0,
            link_bandwidth_gbs: 4.5,
            xfer_near_ns: 80.0,
            xfer_far_ns: 200.0,
            ..Params::default()
        },
    },
    Builtin {
        name: "kvm-2cpu",
        description: "this development machine: a KVM guest with 2 AMD EPYC vCPUs, 512 KB L2 each, one L3 (32 MB in the hwloc capture; sysfs has also shown 8 MB)",
        source: "topology from lscpu/hwloc of the development VM; freq_ghz is the processor's clock (/proc/cpuinfo); the other figures fitted to the workload kernels solo and in pairs (coloc_sim::calibrate, data/kvm-2cpu-kernels.tsv): llc_hit and memory latency are divided by each model's memory-level parallelism, xfer_near_ns is a lock handoff's line transfer between the two vCPUs",
        topology: "package:1 l3(32M):1 l2(512K):2 core:1",
        params: || Params {
            freq_ghz: 2.45,
            llc_hit_cycles: 12.8,
            mem_latency_ns: 27.6,
            remote_latency_ns: 0.0,
            mc_bandwidth_gbs: 24.4,
            xfer_near_ns: 40.9,
            xfer_far_ns: 40.9,
            barrier_ns: 579.0,
            slice_us: 663.0,
            ..Params::default()
        },
    },
];

fn build(b: &Builtin) -> Platform {
    let topology = Topology::synthetic(b.name, b.topology)
        .expect("built-in topology descriptions are valid (tested)");
    Platform {
        name: b.name.to_string(),
        description: b.description.to_string(),
        source: b.source.to_string(),
        topology,
        params: (b.params)(),
    }
}

/// Every built-in platform, in the order `coloc sim --list-platforms` prints them.
pub fn platforms() -> Vec<Platform> {
    BUILTINS.iter().map(build).collect()
}

/// The built-in platform called `name`.
pub fn platform(name: &str) -> Option<Platform> {
    BUILTINS.iter().find(|b| b.name == name).map(build)
}

/// The built-in names, comma-separated, for error messages.
pub fn platform_names() -> String {
    BUILTINS
        .iter()
        .map(|b| b.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use coloc_model::topology::ResourceKind;

    use super::*;

    /// A platform's memory calibration is its own bandwidths in 64-byte
    /// requests; a front-side-bus platform notes that the buses are left out.
    #[test]
    fn memory_calibration_is_the_platforms_figures() {
        let kvm = platform("kvm-2cpu").unwrap();
        let c = kvm.memory_calibration();
        assert_eq!(
            c.node_service_rate,
            [kvm.params.mc_bandwidth_gbs * 1e9 / 64.0]
        );
        assert!(c.notes.is_empty());
        let harpertown = platform("harpertown").unwrap();
        assert!(harpertown.has_fsb());
        let c = harpertown.memory_calibration();
        assert!(c.notes[0].contains("front-side buses"), "{:?}", c.notes);
    }

    /// (name, CPUs, cores, shared-resource kinds with their instance counts).
    type Case = (&'static str, usize, usize, Vec<(ResourceKind, usize)>);

    /// The papers' figures: (name, CPUs, cores, shared-resource kinds with their
    /// instance counts, innermost first).
    #[test]
    fn builtins_match_the_papers() {
        let l = |level| ResourceKind::Cache { level };
        let fsb = ResourceKind::Group { name: "FSB".into() };
        let cases: Vec<Case> = vec![
            ("yorkfield", 4, 4, vec![(l(2), 2), (fsb.clone(), 1)]),
            ("harpertown", 8, 8, vec![(l(2), 4), (fsb.clone(), 2)]),
            ("clovertown", 8, 8, vec![(l(2), 4), (fsb, 2)]),
            ("westmere", 12, 12, vec![(l(3), 2)]),
            ("xeon32", 64, 32, vec![(l(3), 4)]),
            (
                "opteron48",
                48,
                48,
                vec![(l(3), 8), (ResourceKind::Package, 4)],
            ),
            (
                "nupoco-amd64",
                64,
                64,
                vec![(l(2), 32), (l(3), 8), (ResourceKind::Package, 4)],
            ),
            ("nupoco-intel72", 72, 72, vec![(l(3), 4)]),
            ("opteron-8431", 24, 24, vec![(l(3), 4)]),
            ("kvm-2cpu", 2, 2, vec![(l(3), 1)]),
        ];
        assert_eq!(platforms().len(), cases.len());
        for (name, cpus, cores, shared) in cases {
            let p = platform(name).unwrap();
            p.params.validate().unwrap();
            assert_eq!(p.topology.cpus().len(), cpus, "{name}");
            assert_eq!(p.topology.cores().len(), cores, "{name}");
            let got: Vec<(ResourceKind, usize)> = p
                .topology
                .shared_resources()
                .into_iter()
                .filter(|r| r.instances.len() > 1 || r.cores_per_instance == cores)
                .map(|r| (r.kind, r.instances.len()))
                .collect();
            assert_eq!(got, shared, "{name}");
        }
        assert_eq!(
            [
                platform("clovertown").unwrap().has_fsb(),
                platform("westmere").unwrap().has_fsb()
            ],
            [true, false]
        );
        assert!(platform("nehalem").is_none());
    }
}
