//! The paper's two sharing levels on any topology tree (docs/policies/tang-atom.md,
//! Levels).
//!
//! Problem: Algorithm 1 (Tang et al. §5.1) decides share-or-distribute at the
//! last-level cache and at the front-side bus of a Clovertown; coloc runs on
//! trees with L3 groups, NUMA nodes, packages and no FSB at all.
//!
//! Approach: the *LLC level* is the outermost shared cache of
//! [`Topology::shared_resources`] (each core its own instance when no cache is
//! shared); the *bus level* is the innermost shared level whose instances hold
//! more CPUs than one LLC instance — the FSB on Clovertown, the memory controller
//! or socket elsewhere — and the whole machine when there is none. Where the LLC
//! level coincides with the memory controller or socket (Westmere's L3+MC+socket)
//! the bus level is that same level: both decisions act on one grouping and the
//! LLC decision, taken first, decides. Cores are the unit: a thread per core, on
//! all its PUs.

use coloc_model::topology::{ResourceKind, Topology};
use coloc_model::CpuSet;

/// Share (pack the app's threads under as few instances as possible) or
/// distribute (spread them over as many as possible).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    Share,
    Distribute,
}

/// A decision at both levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub llc: Sharing,
    pub bus: Sharing,
}

impl Choice {
    /// `share LLC, distribute bus`, as plan notes say it.
    pub fn label(&self) -> String {
        let s = |x: Sharing| match x {
            Sharing::Share => "share",
            Sharing::Distribute => "distribute",
        };
        format!("{} LLC, {} bus", s(self.llc), s(self.bus))
    }
}

/// Every core with its LLC and bus instance.
#[derive(Clone, Debug, PartialEq)]
pub struct Levels {
    /// Each core's PUs, in topology order.
    pub cores: Vec<CpuSet>,
    /// Per core: index of its LLC instance.
    pub llc: Vec<usize>,
    /// Per core: index of its bus instance.
    pub bus: Vec<usize>,
    /// Names of the two levels, for notes (`L2`, `FSB`).
    pub llc_label: String,
    pub bus_label: String,
    /// The two levels are one (Westmere's L3+MC+socket): the LLC decision
    /// decides both.
    pub coincide: bool,
}

impl Levels {
    pub fn new(topology: &Topology) -> Self {
        let cores = topology.cores();
        let shared = topology.shared_resources();
        let llc_at = shared
            .iter()
            .rposition(|r| matches!(r.kind, ResourceKind::Cache { .. }));
        let coincides =
            |k: &ResourceKind| matches!(k, ResourceKind::MemoryController | ResourceKind::Package);
        let (llc_inst, llc_label): (Vec<CpuSet>, String) = match llc_at {
            Some(i) => (shared[i].instances.clone(), shared[i].kind.label()),
            None => (cores.clone(), "core".into()),
        };
        let llc_size = llc_inst.iter().map(CpuSet::len).max().unwrap_or(1);
        let coincide = llc_at.is_some_and(|i| shared[i].same_as.iter().any(coincides));
        let (bus_inst, bus_label): (Vec<CpuSet>, String) = match llc_at {
            Some(_) if coincide => (llc_inst.clone(), llc_label.clone()),
            _ => shared
                .iter()
                .skip(llc_at.map_or(0, |i| i + 1))
                .find(|r| r.instances.iter().all(|x| x.len() > llc_size))
                .map(|r| (r.instances.clone(), r.kind.label()))
                .unwrap_or_else(|| (vec![topology.cpus().clone()], "machine".into())),
        };
        let index = |sets: &[CpuSet], c: &CpuSet| sets.iter().position(|s| c.is_subset(s));
        let llc = cores
            .iter()
            .enumerate()
            .map(|(k, c)| index(&llc_inst, c).unwrap_or(llc_inst.len() + k))
            .collect();
        let bus = cores
            .iter()
            .map(|c| index(&bus_inst, c).unwrap_or(0))
            .collect();
        Self {
            cores,
            llc,
            bus,
            llc_label,
            bus_label,
            coincide,
        }
    }

    /// The CPUs of `cores`.
    pub fn cpus(&self, cores: &[usize]) -> CpuSet {
        cores
            .iter()
            .fold(CpuSet::new(), |acc, &c| acc.union(&self.cores[c]))
    }

    /// `n` cores out of `free` (core indices) laid out as `choice` says:
    /// - bus *share*: fill the bus instances with the most free cores first,
    ///   as few as hold `n`; *distribute*: deal the threads over every bus
    ///   instance with free cores, one at a time (most free first), so the
    ///   counts differ by at most one where room allows;
    /// - then within each bus instance the same for its LLC instances.
    ///
    /// Returns fewer than `n` only when `free` holds fewer.
    pub fn place(&self, free: &[usize], n: usize, choice: Choice) -> Vec<usize> {
        let mut out = Vec::new();
        let bus = if self.coincide {
            choice.llc
        } else {
            choice.bus
        };
        let by_bus = groups(free, &self.bus);
        for (bus_cores, k) in allot(&by_bus, n, bus) {
            let by_llc = groups(&bus_cores, &self.llc);
            for (llc_cores, j) in allot(&by_llc, k, choice.llc) {
                out.extend(llc_cores.into_iter().take(j));
            }
        }
        out.sort_unstable();
        out
    }
}

/// `cores` grouped by their instance in `of`, groups in order of first core.
fn groups(cores: &[usize], of: &[usize]) -> Vec<Vec<usize>> {
    let mut keys: Vec<usize> = Vec::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for &c in cores {
        match keys.iter().position(|&k| k == of[c]) {
            Some(i) => out[i].push(c),
            None => {
                keys.push(of[c]);
                out.push(vec![c]);
            }
        }
    }
    out
}

/// How many of `n` threads each group takes, with the group: packed into the
/// largest groups first, or dealt one by one over all groups (largest first).
/// Groups that take none are left out.
fn allot(groups: &[Vec<usize>], n: usize, how: Sharing) -> Vec<(Vec<usize>, usize)> {
    let mut order: Vec<usize> = (0..groups.len()).collect();
    // Largest first; equal sizes keep topology order.
    order.sort_by_key(|&g| std::cmp::Reverse(groups[g].len()));
    let mut take = vec![0usize; groups.len()];
    let mut left = n;
    match how {
        Sharing::Share => {
            for &g in &order {
                let k = left.min(groups[g].len());
                take[g] = k;
                left -= k;
            }
        }
        Sharing::Distribute => {
            while left > 0 {
                let mut placed = false;
                for &g in &order {
                    if left > 0 && take[g] < groups[g].len() {
                        take[g] += 1;
                        left -= 1;
                        placed = true;
                    }
                }
                if !placed {
                    break;
                }
            }
        }
    }
    order
        .into_iter()
        .filter(|&g| take[g] > 0)
        .map(|g| (groups[g].clone(), take[g]))
        .collect()
}
