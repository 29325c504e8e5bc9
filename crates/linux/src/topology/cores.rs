//! Giving each core a number that is unique within its package.
//!
//! [`TopologyBuilder`](coloc_model::topology::TopologyBuilder) keys cores by
//! `(package, core number)`. The kernel's `core_id` is usually that number, but not
//! always: kernels of the Magny-Cours era reduced it modulo the cores of one die
//! (`cpu_core_id %= cores_per_node`), so the two dies of an Opteron 6174 both have
//! cores 0-5. Two CPUs are one core only if they also share the die and the NUMA
//! node; where `core_id` alone is ambiguous, that package's cores are renumbered
//! 0.. in CPU order.

use std::collections::{BTreeMap, BTreeSet};

use coloc_model::cpuset::Cpu;

/// What the kernel says about one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PuIds {
    pub cpu: Cpu,
    pub package: u32,
    pub die: Option<u32>,
    /// The NUMA node holding the CPU, if the machine has nodes.
    pub node: Option<u32>,
    pub core_id: u32,
}

/// Package, die, node and core id: everything that must match for two CPUs to be
/// SMT siblings of one core.
type CoreKey = (u32, Option<u32>, Option<u32>, u32);

impl PuIds {
    fn core_key(&self) -> CoreKey {
        (self.package, self.die, self.node, self.core_id)
    }
}

/// Each CPU's core number for the builder, in the order of `pus`.
pub(crate) fn core_numbers(pus: &[PuIds]) -> Vec<u32> {
    // Per package: the distinct cores, and whether core_id tells them apart.
    let mut cores: BTreeMap<u32, BTreeSet<CoreKey>> = BTreeMap::new();
    for p in pus {
        cores.entry(p.package).or_default().insert(p.core_key());
    }
    let ambiguous: BTreeSet<u32> = cores
        .iter()
        .filter(|(_, keys)| {
            let ids: BTreeSet<u32> = keys.iter().map(|k| k.3).collect();
            ids.len() < keys.len()
        })
        .map(|(&pkg, _)| pkg)
        .collect();
    // Renumbered cores are numbered by their first CPU.
    let mut first_cpu: BTreeMap<CoreKey, Cpu> = BTreeMap::new();
    for p in pus {
        let e = first_cpu.entry(p.core_key()).or_insert(p.cpu);
        *e = (*e).min(p.cpu);
    }
    let mut renumbered: BTreeMap<CoreKey, u32> = BTreeMap::new();
    for &pkg in &ambiguous {
        let mut keys: Vec<_> = cores[&pkg].iter().copied().collect();
        keys.sort_by_key(|k| first_cpu[k]);
        for (n, k) in (0u32..).zip(keys) {
            renumbered.insert(k, n);
        }
    }
    pus.iter()
        .map(|p| renumbered.get(&p.core_key()).copied().unwrap_or(p.core_id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pu(cpu: Cpu, package: u32, die: Option<u32>, node: Option<u32>, core_id: u32) -> PuIds {
        PuIds {
            cpu,
            package,
            die,
            node,
            core_id,
        }
    }

    #[test]
    fn numbers_cores() {
        let cases: Vec<(&str, Vec<PuIds>, Vec<u32>)> = vec![
            (
                "unique core ids are kept, even with gaps (Haswell-EP skips 6, 7)",
                vec![pu(0, 0, Some(0), Some(0), 5), pu(1, 0, Some(0), Some(0), 8)],
                vec![5, 8],
            ),
            (
                "SMT siblings share the core id",
                vec![pu(0, 0, None, Some(0), 0), pu(2, 0, None, Some(0), 0)],
                vec![0, 0],
            ),
            (
                "the same core id in two packages is two cores, and needs no renumbering",
                vec![pu(0, 0, None, Some(0), 0), pu(1, 1, None, Some(1), 0)],
                vec![0, 0],
            ),
            (
                "Magny-Cours: core ids restart per die/node inside one package",
                vec![
                    pu(0, 0, None, Some(0), 0),
                    pu(1, 0, None, Some(0), 1),
                    pu(2, 0, None, Some(1), 0),
                    pu(3, 0, None, Some(1), 1),
                ],
                vec![0, 1, 2, 3],
            ),
            (
                "dies tell cores apart too; renumbering follows CPU order",
                vec![pu(4, 0, Some(1), None, 0), pu(0, 0, Some(0), None, 0)],
                vec![1, 0],
            ),
        ];
        for (what, pus, want) in cases {
            assert_eq!(core_numbers(&pus), want, "{what}");
        }
    }
}
