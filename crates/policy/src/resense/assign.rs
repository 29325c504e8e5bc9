//! All levels of Algorithm 1, outermost first, then CPUs (ReSense §2.3).
//!
//! The paper walks the memory hierarchy "from the bottom to the top", from the
//! memory bus or controller up to the caches: deciding the FSB first and the L2
//! inside it keeps the L2 decision from undoing the FSB one (its Harpertown
//! example). Here that is a refinement: the machine is one region holding every
//! app's threads; each level splits every region into the level's instances inside
//! it ([`step`]) and each instance becomes a region of the next level with the
//! thread counts just decided. After the innermost level, each thread gets a CPU of
//! its region. Counting the apps and instances per region is the natural reading of
//! lines 2 and 6 once an outer level has confined apps to part of the machine; for
//! the outermost level it is the paper's count over the whole platform.
//!
//! Slots: while the threads fit on the cores, each core takes one thread on its
//! first PU (one thread per L1, as in the paper's runs); with more threads than
//! cores every PU takes one; with more threads than PUs every PU takes an equal
//! share, rounded up, so the algorithm runs unchanged on an oversubscribed machine
//! and "available" keeps its meaning.

use std::collections::BTreeSet;

use coloc_model::topology::SharedResource;
use coloc_model::{Cpu, CpuSet, Topology};

use super::step::{step, Case, Demand};

/// One app to place: its thread count and its score at each level (in the order of
/// the levels handed to [`assign`]).
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub threads: usize,
    /// How many of `threads` exist now (the rest are a team not yet formed).
    pub live: usize,
    pub scores: Vec<f64>,
}

/// Where every request's threads go, and which cases decided each level.
#[derive(Clone, Debug)]
pub(crate) struct Assignment {
    /// Per request, one CPU per thread.
    pub cpus: Vec<Vec<Cpu>>,
    /// Per level (same order), the cases used in its regions.
    pub cases: Vec<BTreeSet<Case>>,
}

/// A part of the machine and how many threads of which requests it holds.
struct Region {
    cpus: CpuSet,
    quota: Vec<(usize, usize)>,
}

/// Places the requests level by level on the CPUs `within` (the whole
/// machine for `resense`; what is left of it for `auto`'s partitions,
/// `auto/placement/`); `levels` go outermost first.
pub(crate) fn assign(
    topology: &Topology,
    within: &CpuSet,
    levels: &[SharedResource],
    requests: &[Request],
) -> Assignment {
    let slots = Slots::new(topology, within, requests.iter().map(|r| r.threads).sum());
    let mut regions = vec![Region {
        cpus: within.clone(),
        quota: requests
            .iter()
            .enumerate()
            .filter(|(_, r)| r.threads > 0)
            .map(|(i, r)| (i, r.threads))
            .collect(),
    }];
    let mut cases = vec![BTreeSet::new(); levels.len()];
    for (li, level) in levels.iter().enumerate() {
        let mut next = Vec::new();
        for region in regions {
            let children = children(&region.cpus, &level.instances);
            if children.len() < 2 || region.quota.is_empty() {
                next.push(region);
                continue;
            }
            let capacity: Vec<usize> = children.iter().map(|c| slots.capacity(c)).collect();
            let demands: Vec<Demand> = region
                .quota
                .iter()
                .map(|&(r, threads)| Demand {
                    threads,
                    score: requests[r].scores[li],
                })
                .collect();
            let (x, case) = step(&demands, &capacity);
            cases[li].insert(case);
            for (j, cpus) in children.into_iter().enumerate() {
                let quota: Vec<(usize, usize)> = region
                    .quota
                    .iter()
                    .zip(&x)
                    .filter(|(_, xa)| xa[j] > 0)
                    .map(|(&(r, _), xa)| (r, xa[j]))
                    .collect();
                if !quota.is_empty() {
                    next.push(Region { cpus, quota });
                }
            }
        }
        regions = next;
    }
    // Every app's live threads take CPUs before any app's threads to come, so
    // that the first thread of a serial app does not share the first free
    // slot with another serial app's thread while CPUs idle.
    // Sized up front: this runs at every decision (docs/simulator.md, Speed).
    let mut cpus: Vec<Vec<Cpu>> = requests
        .iter()
        .map(|r| Vec::with_capacity(r.threads))
        .collect();
    let mut load = Load {
        cpu: vec![0; slots.per_cpu.len()],
        core: vec![0; slots.cores],
        coreless: 0,
    };
    let mut live: Vec<usize> = requests.iter().map(|r| r.live.min(r.threads)).collect();
    let mut left: Vec<Vec<usize>> = regions
        .iter()
        .map(|g| g.quota.iter().map(|&(_, n)| n).collect())
        .collect();
    for first in [true, false] {
        for (region, left) in regions.iter().zip(&mut left) {
            for (&(r, _), n) in region.quota.iter().zip(left.iter_mut()) {
                let take = if first { (*n).min(live[r]) } else { *n };
                for _ in 0..take {
                    let cpu = slots.pick(&region.cpus, &load);
                    load.add(cpu, slots.core(cpu));
                    cpus[r].push(cpu);
                }
                *n -= take;
                if first {
                    live[r] -= take;
                }
            }
        }
    }
    Assignment { cpus, cases }
}

/// The instances of a level inside `region`, plus each CPU of the region that no
/// instance covers as an instance of its own (it shares that level with nobody).
fn children(region: &CpuSet, instances: &[CpuSet]) -> Vec<CpuSet> {
    let mut out: Vec<CpuSet> = instances
        .iter()
        .filter(|i| !i.is_disjoint(region))
        .map(|i| i.intersection(region))
        .collect();
    let mut covered = CpuSet::new();
    for c in &out {
        covered.union_with(c);
    }
    out.extend(region.difference(&covered).iter().map(CpuSet::single));
    out.sort_by_key(CpuSet::first);
    out
}

/// Thread slots per CPU of the CPUs placed on (see the module docs) and each
/// CPU's core; a core counts with its PUs among those CPUs. Indexed by CPU
/// number: `assign` runs at every decision (docs/simulator.md, Speed).
struct Slots {
    per_cpu: Vec<Option<(usize, usize)>>,
    /// How many cores the CPUs placed on reach.
    cores: usize,
}

impl Slots {
    fn new(topology: &Topology, within: &CpuSet, threads: usize) -> Self {
        // The cores with a PU among those CPUs, and those PUs, read in place
        // rather than intersected into new sets.
        let meets = |c: &&CpuSet| !c.is_disjoint(within);
        let count = topology.core_sets().filter(meets).count();
        let pus = within.len().max(1);
        let mut per_cpu = vec![None; within.iter().next_back().map_or(0, |c| c as usize + 1)];
        for (core, set) in topology.core_sets().filter(meets).enumerate() {
            for (k, cpu) in set.iter().filter(|&c| within.contains(c)).enumerate() {
                let slots = if threads <= count {
                    usize::from(k == 0)
                } else {
                    threads.div_ceil(pus)
                };
                per_cpu[cpu as usize] = Some((slots, core));
            }
        }
        Self {
            per_cpu,
            cores: count,
        }
    }

    fn of(&self, cpu: Cpu) -> Option<(usize, usize)> {
        self.per_cpu.get(cpu as usize).copied().flatten()
    }

    fn capacity(&self, cpus: &CpuSet) -> usize {
        cpus.iter().filter_map(|c| self.of(c)).map(|(s, _)| s).sum()
    }

    fn core(&self, cpu: Cpu) -> usize {
        self.of(cpu).map_or(usize::MAX, |(_, core)| core)
    }

    /// A CPU of the region with a free slot, on the least busy core, then the least
    /// busy CPU, then the lowest number; the least busy CPU when none is free.
    fn pick(&self, region: &CpuSet, load: &Load) -> Cpu {
        region
            .iter()
            .min_by_key(|&cpu| {
                let slots = self.of(cpu).map_or(0, |(s, _)| s);
                let on_cpu = Load::on(&load.cpu, cpu as usize);
                let on_core = load.on_core(self.core(cpu));
                (on_cpu >= slots, on_core, on_cpu, cpu)
            })
            .unwrap_or_default()
    }
}

/// Threads placed so far per CPU and per core, indexed by CPU and by core;
/// CPUs of no core ([`Slots::core`]'s `usize::MAX`) count as one core of
/// their own.
#[derive(Default)]
struct Load {
    cpu: Vec<usize>,
    core: Vec<usize>,
    coreless: usize,
}

impl Load {
    fn add(&mut self, cpu: Cpu, core: usize) {
        Self::bump(&mut self.cpu, cpu as usize);
        if core == usize::MAX {
            self.coreless += 1;
        } else {
            Self::bump(&mut self.core, core);
        }
    }

    fn on_core(&self, core: usize) -> usize {
        if core == usize::MAX {
            self.coreless
        } else {
            Self::on(&self.core, core)
        }
    }

    fn bump(counts: &mut Vec<usize>, i: usize) {
        if counts.len() <= i {
            counts.resize(i + 1, 0);
        }
        counts[i] += 1;
    }

    fn on(counts: &[usize], i: usize) -> usize {
        counts.get(i).copied().unwrap_or(0)
    }
}
