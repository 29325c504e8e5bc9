//! Whole-core allocation shared by the DoP policies (NuPoCo and its
//! Scalability baseline): the machine as NuPoCo allocates it, cores grouped by
//! memory node and by last-level cache, and the allocation units of Algorithm 1
//! (NuPoCo §5.2). [`board`] holds who owns which core during a decision and the
//! reservation rules both policies apply; [`sample`] what two observations say
//! about an app's parallel section.
//!
//! A core is allocated whole (all its PUs), so an app never has two active
//! threads on one core — NuPoCo's spatial scheduling, one active thread per core
//! (§1, §3.2). Core indices below are positions in [`CoreMap::cores`], which is
//! in topology order.

pub(crate) mod board;
pub mod lever;
pub mod reversible;
pub(crate) mod sample;

use coloc_model::calibration::memory_nodes;
use coloc_model::topology::{ObjKind, Topology};
use coloc_model::{AppView, CpuSet, Placement, Tid};

/// Index of a core in [`CoreMap::cores`].
pub(crate) type Core = usize;

/// Every core with its memory node and last-level-cache group.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CoreMap {
    /// Each core's PUs, in topology order.
    pub cores: Vec<CpuSet>,
    /// Per core: its memory node, in [`memory_nodes`] order (NuPoCo's CPU node).
    pub node: Vec<usize>,
    /// Per core: its last-level-cache group (cores sharing the highest-level
    /// cache above them; a core with no shared cache is its node's group).
    pub llc: Vec<usize>,
    pub nodes: usize,
    pub llcs: usize,
    /// Per CPU number: the first core holding it, so that [`CoreMap::core_of`]
    /// is a lookup (it runs for every thread at every decision;
    /// docs/simulator.md, Speed).
    core_at: Vec<Option<Core>>,
}

/// The granularity Algorithm 1 hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// A memory node's cores: the paper's unit ("the basic allocation unit in
    /// this stage is a CPU node", §5.2).
    Node,
    /// The cores under one last-level cache.
    Llc,
    /// One core.
    Core,
}

impl Level {
    pub fn label(self) -> &'static str {
        match self {
            Level::Node => "node",
            Level::Llc => "llc",
            Level::Core => "core",
        }
    }
}

impl CoreMap {
    pub fn new(topology: &Topology) -> Self {
        let cores = topology.cores();
        let nodes_cpus = memory_nodes(topology);
        let node: Vec<usize> = cores
            .iter()
            .map(|c| nodes_cpus.iter().position(|n| c.is_subset(n)).unwrap_or(0))
            .collect();
        // The highest-level cache object holding each core, as a group key.
        let key = |c: &CpuSet, n: usize| {
            topology
                .objects_of(ObjKind::Cache)
                .filter(|(_, o)| c.is_subset(&o.cpus) && o.cpus.len() > c.len())
                .max_by_key(|(_, o)| o.cache.map_or(0, |i| i.level))
                .map_or(usize::MAX - n, |(id, _)| id)
        };
        let mut keys: Vec<usize> = Vec::new();
        let llc = cores
            .iter()
            .zip(&node)
            .map(|(c, &n)| {
                let k = key(c, n);
                keys.iter().position(|&x| x == k).unwrap_or_else(|| {
                    keys.push(k);
                    keys.len() - 1
                })
            })
            .collect();
        let mut core_at = vec![
            None;
            cores
                .iter()
                .filter_map(|c| c.iter().next_back())
                .max()
                .map_or(0, |c| c as usize + 1)
        ];
        for (core, set) in cores.iter().enumerate() {
            for cpu in set.iter() {
                core_at[cpu as usize].get_or_insert(core);
            }
        }
        Self {
            nodes: nodes_cpus.len(),
            llcs: keys.len(),
            cores,
            node,
            llc,
            core_at,
        }
    }

    pub fn len(&self) -> usize {
        self.cores.len()
    }

    /// The core holding `cpu`.
    pub fn core_of(&self, cpu: u32) -> Option<Core> {
        self.core_at.get(cpu as usize).copied().flatten()
    }

    /// How many of `cores` are in each memory node.
    pub fn per_node(&self, cores: &[Core]) -> Vec<u32> {
        let mut n = vec![0; self.nodes];
        for &c in cores {
            n[self.node[c]] += 1;
        }
        n
    }

    /// The PUs of `cores`.
    pub fn cpus(&self, cores: &[Core]) -> CpuSet {
        let mut all = CpuSet::new();
        for &c in cores {
            all.union_with(&self.cores[c]);
        }
        all
    }

    /// `cores` reordered to alternate between memory nodes (the first core of
    /// each node, then the second of each, …), so that thread k of a team lands
    /// on node k mod nodes: under first touch its data is spread over every node
    /// the app holds, as the profiling window intends (§5.1).
    pub fn interleave(&self, cores: &[Core]) -> Vec<Core> {
        let mut rank = vec![0usize; self.nodes];
        let mut keyed: Vec<(usize, usize, Core)> = cores
            .iter()
            .map(|&c| {
                let r = rank[self.node[c]];
                rank[self.node[c]] += 1;
                (r, self.node[c], c)
            })
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, _, c)| c).collect()
    }

    /// The unit of `level` that core `c` belongs to.
    fn group(&self, c: Core, level: Level) -> usize {
        match level {
            Level::Node => self.node[c],
            Level::Llc => self.llc[c],
            Level::Core => c,
        }
    }

    /// `free` cores grouped into units of `level`, in topology order.
    pub fn units(&self, free: &[Core], level: Level) -> Vec<Vec<Core>> {
        let group = |c: Core| self.group(c, level);
        let mut keys: Vec<usize> = Vec::new();
        let mut units: Vec<Vec<Core>> = Vec::new();
        for &c in free {
            match keys.iter().position(|&k| k == group(c)) {
                Some(i) => units[i].push(c),
                None => {
                    keys.push(group(c));
                    units.push(vec![c]);
                }
            }
        }
        units
    }

    /// The unit rule. NuPoCo assumes more CPU nodes than apps, so every app in a
    /// parallel section gets at least one node (§5.2). When the free cores form
    /// fewer nodes than there are such apps, the unit becomes the last-level
    /// cache group, and when there are fewer of those too, the core: the
    /// coarsest level that still gives every app a unit of its own. Apps beyond
    /// the number of free cores cannot be given one (the caller never has more).
    pub fn level_for(&self, free: &[Core], apps: usize) -> Level {
        [Level::Node, Level::Llc]
            .into_iter()
            .find(|&l| self.unit_count(free, l) >= apps)
            .unwrap_or(Level::Core)
    }

    /// How many units of `level` the `free` cores form: [`CoreMap::units`]'
    /// length, counted without building them (every decision asks).
    fn unit_count(&self, free: &[Core], level: Level) -> usize {
        let mut seen = vec![false; self.len().max(self.nodes).max(self.llcs)];
        free.iter()
            .filter(|&&c| !std::mem::replace(&mut seen[self.group(c, level)], true))
            .count()
    }
}

/// Pins an app's threads to `cores` (in order of preference), one thread per
/// core: thread k of the team — the first `cores.len()` threads in creation
/// order, which OpenMP runs as its team — gets its own core, keeping the core it
/// already has when that core is still the app's (a moved thread pays a cache
/// refill). Threads beyond the team (sleeping workers, or the surplus threads of
/// an app whose thread count is fixed) are spread round-robin over the same
/// cores; threads created after the decision may use any of them.
pub(crate) fn pin_team(map: &CoreMap, app: &AppView, cores: &[Core]) -> Placement {
    let rest = map.cpus(cores);
    if cores.is_empty() {
        return Placement::Unmanaged;
    }
    let team = app.threads.len().min(cores.len());
    let planned = app.current.as_ref().map(|p| p.placement.by_thread());
    // The core whose PUs are exactly the thread's CPUs: cores are disjoint,
    // so it is the one holding the first of them (looked up, not searched).
    let current = |t: Tid| -> Option<Core> {
        let set = planned.as_ref()?.get(t)?;
        let c = map.core_of(set.first()?)?;
        (map.cores[c] == *set && cores.contains(&c)).then_some(c)
    };
    let mut owner: Vec<Option<Core>> = vec![None; team];
    let mut taken = vec![false; cores.len()];
    for (k, slot) in owner.iter_mut().enumerate() {
        if let Some(c) = current(app.threads[k]) {
            let i = cores.iter().position(|&x| x == c).expect("found above");
            if !taken[i] {
                taken[i] = true;
                *slot = Some(c);
            }
        }
    }
    let mut free = cores
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(&c, _)| c);
    let threads = app
        .threads
        .iter()
        .enumerate()
        .map(|(k, &tid)| {
            let core = match owner.get(k) {
                Some(Some(c)) => *c,
                Some(None) => free
                    .next()
                    .expect("as many free cores as unplaced team threads"),
                None => cores[k % cores.len()],
            };
            (tid, map.cores[core].clone())
        })
        .collect();
    Placement::PerThread { threads, rest }
}
