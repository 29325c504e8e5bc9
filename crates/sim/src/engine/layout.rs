//! The platform flattened for the contention model: per CPU, which last-level
//! cache, CPU node, memory node and package it belongs to, and the service
//! rates of the memory controllers and links (`memory.rs`) from the
//! platform's figures.

use coloc_model::queueing::NumaSystem;
use coloc_model::topology::{ObjId, ObjKind, Topology};
use coloc_model::Cpu;

use crate::platform::{Platform, LINE_BYTES};

/// LLC capacity assumed for CPUs the topology shows no cache for, bytes: the
/// contention model needs one, and 8 MiB is a typical per-socket L3.
const DEFAULT_LLC_BYTES: f64 = 8.0 * 1024.0 * 1024.0;

/// Index of a CPU in [`Layout::cpus`].
pub(crate) type CpuIdx = usize;

#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub cpus: Vec<Cpu>,
    /// Per CPU number, its index in `cpus`: a lookup in a table, as every
    /// placement change asks it for each CPU of each thread's set
    /// (docs/simulator.md, Speed).
    index: Vec<Option<CpuIdx>>,
    /// Per CPU: its last-level cache instance.
    pub llc: Vec<usize>,
    pub llc_bytes: Vec<f64>,
    /// Per CPU: its CPU node — the front-side bus on FSB machines, else the NUMA
    /// node — the unit whose requests share a path to memory (NuPoCo §4.2).
    pub cpu_node: Vec<usize>,
    /// Per CPU: its local memory node.
    pub mem_node: Vec<usize>,
    pub package: Vec<usize>,
    pub mem_nodes: usize,
    /// Service rates of the controllers (`mu`) and of the links from each CPU
    /// node to each memory node (`link`, infinite where none is crossed), and
    /// the CPUs of each CPU node.
    pub numa: NumaSystem,
}

/// The ancestor of `cpu` of the given kind, as an index among objects of that
/// kind (so node 0, node 1, ... in CPU order).
fn ancestor_index(topo: &Topology, chain: &[ObjId], pick: impl Fn(ObjId) -> bool) -> Option<ObjId> {
    chain.iter().copied().find(|&o| pick(o)).map(|o| {
        let kind = topo.objects[o].kind;
        topo.objects_of(kind)
            .position(|(id, _)| id == o)
            .unwrap_or(0)
    })
}

impl Layout {
    pub fn new(platform: &Platform) -> Self {
        let topo = &platform.topology;
        let p = &platform.params;
        let fsb = platform.has_fsb();
        let cpus: Vec<Cpu> = topo.cpus().iter().collect();
        let mut llc_ids: Vec<ObjId> = Vec::new();
        let (mut llc, mut llc_bytes) = (Vec::new(), Vec::new());
        let (mut cpu_node, mut mem_node, mut package) = (Vec::new(), Vec::new(), Vec::new());
        for &cpu in &cpus {
            let chain = topo.ancestors_of_cpu(cpu);
            // The last-level cache: the highest-level cache above the CPU.
            let last = chain
                .iter()
                .copied()
                .filter(|&o| topo.objects[o].kind == ObjKind::Cache)
                .max_by_key(|&o| topo.objects[o].cache.map_or(0, |c| c.level));
            let key = last.unwrap_or(usize::MAX - cpu as usize);
            let i = llc_ids.iter().position(|&k| k == key).unwrap_or_else(|| {
                llc_ids.push(key);
                llc_bytes.push(
                    last.and_then(|o| topo.objects[o].cache)
                        .map_or(DEFAULT_LLC_BYTES, |c| c.size_bytes as f64),
                );
                llc_ids.len() - 1
            });
            llc.push(i);
            let mem = ancestor_index(topo, &chain, |o| topo.objects[o].kind == ObjKind::NumaNode)
                .unwrap_or(0);
            mem_node.push(mem);
            let bus = ancestor_index(topo, &chain, |o| {
                topo.objects[o].kind == ObjKind::Group
                    && topo.objects[o].name.as_deref() == Some("FSB")
            });
            cpu_node.push(if fsb { bus.unwrap_or(0) } else { mem });
            package.push(
                ancestor_index(topo, &chain, |o| topo.objects[o].kind == ObjKind::Package)
                    .unwrap_or(0),
            );
        }
        let mem_nodes = topo.numa_nodes();
        let cpu_nodes = cpu_node.iter().max().map_or(1, |m| m + 1);
        let rate = |gbs: f64| gbs * 1e9 / LINE_BYTES;
        let link = (0..cpu_nodes)
            .map(|i| {
                (0..mem_nodes)
                    .map(|m| {
                        if fsb || i != m {
                            rate(p.link_bandwidth_gbs)
                        } else {
                            f64::INFINITY
                        }
                    })
                    .collect()
            })
            .collect();
        let cores = (0..cpu_nodes)
            .map(|i| cpu_node.iter().filter(|&&n| n == i).count() as u32)
            .collect();
        let mut index = vec![None; cpus.iter().max().map_or(0, |&c| c as usize + 1)];
        for (i, &c) in cpus.iter().enumerate() {
            index[c as usize] = Some(i);
        }
        Self {
            cpus,
            index,
            llc,
            llc_bytes,
            cpu_node,
            mem_node,
            package,
            mem_nodes,
            numa: NumaSystem {
                mu: vec![rate(p.mc_bandwidth_gbs); mem_nodes],
                link,
                cores,
            },
        }
    }

    pub fn idx(&self, cpu: Cpu) -> Option<CpuIdx> {
        self.index.get(cpu as usize).copied().flatten()
    }

    pub fn llcs(&self) -> usize {
        self.llc_bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::platform;

    /// Clovertown: 4 L2s of 4 MiB over CPU pairs, 2 FSBs (CPU nodes) over CPU
    /// quads, one memory node; every path crosses its FSB (5.6 GB/s / 64 B =
    /// 87.5 M requests/s). Westmere: one L3 and one node per socket, local paths
    /// cross no link.
    #[test]
    fn layouts_of_fsb_and_numa_machines() {
        let c = Layout::new(&platform("clovertown").unwrap());
        assert_eq!(c.llc, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(c.llc_bytes, [4194304.0; 4]);
        assert_eq!(c.cpu_node, [0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!((c.mem_nodes, c.numa.cores.len()), (1, 2));
        assert_eq!(c.numa.link, [[87.5e6], [87.5e6]]);
        let w = Layout::new(&platform("westmere").unwrap());
        assert_eq!(w.mem_node, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]);
        assert_eq!(w.llcs(), 2);
        assert_eq!(w.numa.link[0][0], f64::INFINITY);
        assert_eq!(w.numa.cores, [6, 6]);
    }
}
