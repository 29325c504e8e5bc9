//! Which runs characterize an app (ReSense §2.2, Table III).
//!
//! Problem: the sensitivity score of a shared resource R compares two solo runs of
//! the app that differ only in whether its threads share R. The paper gives the
//! configurations machine by machine (Table III); coloc must derive them for any
//! topology.
//!
//! Approach, per shared level with at least two instances:
//! - threads = the cores under one instance of R (the largest one where instances
//!   differ), one thread per core on the core's first PU, so SMT siblings never
//!   share a core in either run (the paper's "one thread per L1" in §2.2);
//! - *contention*: every thread under one instance X of R (Table III: C0,C1 on
//!   Yorkfield's L2; C0-C7 on the Xeon's L3);
//! - *baseline*: the same threads over two instances, ⌈n/2⌉ on X and ⌊n/2⌋ on the
//!   instance Y nearest to X in the tree (the one whose smallest common ancestor with
//!   X is smallest), so levels above R are shared the same way in both runs
//!   (Harpertown's L2 baseline C0,C4 stays on one FSB);
//! - inside each instance the threads take cores in tree order, which fills the
//!   levels below R the same way in both runs (Harpertown's FSB baseline uses two
//!   full L2s, like its contention run; the Opteron's socket baseline two full L3s).
//!
//! Where "everything else equal" cannot hold, the plan says so instead of hiding
//! it: a level with a single instance (this VM's L3) is not characterizable, nor is
//! one whose other instances are all too small to take half of the threads (a
//! restricted cpuset); and when ⌈n/2⌉ threads cannot fill the levels below R
//! exactly as n threads do (6 cores per L3 over L2 pairs: 3 = 2 + 1), the
//! configurations are given with a caveat naming the level and both occupancies.

use serde::{Deserialize, Serialize};

use crate::cpuset::{Cpu, CpuSet};
use crate::topology::{ObjKind, ResourceKind, SharedResource, Topology};

/// Why a level cannot be characterized on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum NotCharacterizable {
    #[error(
        "a single instance on this machine: there is no second one to spread the threads over"
    )]
    SingleInstance,
    #[error("the baseline needs a second instance with {needed} cores; the largest other one has {largest_other}")]
    TooFewCores { needed: usize, largest_other: usize },
    /// The runs were attempted and failed (the app crashed, a counter was refused).
    #[error("the characterization runs failed: {reason}")]
    Failed { reason: String },
}

/// The two runs that characterize one level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Configurations {
    pub threads: usize,
    /// Thread i runs pinned on `baseline[i]` in the baseline run.
    pub baseline: Vec<Cpu>,
    /// Thread i runs pinned on `contention[i]` in the contention run.
    pub contention: Vec<Cpu>,
    /// Other levels whose sharing differs between the two runs (empty when
    /// everything else is equal, as §2.2 requires).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

/// The characterization of one shared level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelPlan {
    pub level: ResourceKind,
    /// Kinds that cover the same CPUs and are characterized with it (L3 with the
    /// memory controller and socket on one-node-per-socket machines: the paper's
    /// "L3 cache+MC" on the Xeon).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub same_as: Vec<ResourceKind>,
    pub instances: usize,
    pub setup: Result<Configurations, NotCharacterizable>,
}

impl LevelPlan {
    /// `L3`, or `L3+MC+socket` when kinds coincide.
    pub fn label(&self) -> String {
        std::iter::once(&self.level)
            .chain(&self.same_as)
            .map(ResourceKind::label)
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// The characterization runs of every shared level of `topology`, innermost level
/// first (the order of [`Topology::shared_resources`]).
pub fn characterization_plan(topology: &Topology) -> Vec<LevelPlan> {
    let cores = cores_in_tree_order(topology);
    let levels = topology.shared_resources();
    levels
        .iter()
        .map(|r| LevelPlan {
            level: r.kind.clone(),
            same_as: r.same_as.clone(),
            instances: r.instances.len(),
            setup: configurations(topology, &cores, &levels, r),
        })
        .collect()
}

/// Each core's first PU, cores in depth-first tree order (children by first CPU), so
/// that consecutive cores share the innermost caches whatever the CPU numbering.
fn cores_in_tree_order(t: &Topology) -> Vec<(Cpu, CpuSet)> {
    let mut out = Vec::new();
    let mut stack = vec![0];
    while let Some(id) = stack.pop() {
        let o = &t.objects[id];
        if o.kind == ObjKind::Core {
            if let Some(first) = o.cpus.first() {
                out.push((first, o.cpus.clone()));
            }
            continue;
        }
        stack.extend(o.children.iter().rev());
    }
    out
}

fn configurations(
    t: &Topology,
    cores: &[(Cpu, CpuSet)],
    levels: &[SharedResource],
    r: &SharedResource,
) -> Result<Configurations, NotCharacterizable> {
    if r.instances.len() < 2 {
        return Err(NotCharacterizable::SingleInstance);
    }
    // Each instance's cores (first PUs) in tree order.
    let under: Vec<Vec<Cpu>> = r
        .instances
        .iter()
        .map(|i| {
            cores
                .iter()
                .filter(|(_, c)| c.is_subset(i))
                .map(|(first, _)| *first)
                .collect()
        })
        .collect();
    // X: the largest instance, the first of equals.
    let x = (0..under.len())
        .rev()
        .max_by_key(|&i| under[i].len())
        .unwrap_or(0);
    let n = under[x].len();
    let (on_x, on_y) = (n.div_ceil(2), n / 2);
    let y = (0..under.len())
        .filter(|&i| i != x && under[i].len() >= on_y)
        .min_by_key(|&i| (common_ancestor_size(t, &r.instances[x], &r.instances[i]), i))
        .ok_or_else(|| NotCharacterizable::TooFewCores {
            needed: on_y,
            largest_other: (0..under.len())
                .filter(|&i| i != x)
                .map(|i| under[i].len())
                .max()
                .unwrap_or(0),
        })?;
    let contention = under[x].clone();
    let baseline: Vec<Cpu> = under[x][..on_x]
        .iter()
        .chain(&under[y][..on_y])
        .copied()
        .collect();
    let caveats = levels
        .iter()
        .filter(|other| other.kind != r.kind)
        .filter_map(|other| {
            let b = occupancy(other, &baseline);
            let c = occupancy(other, &contention);
            (b != c).then(|| {
                format!(
                    "{} is not shared alike: baseline {} threads per instance, contention {}",
                    other.kind.label(),
                    join(&b),
                    join(&c)
                )
            })
        })
        .collect();
    Ok(Configurations {
        threads: n,
        baseline,
        contention,
        caveats,
    })
}

/// CPUs of the smallest object that holds both sets.
fn common_ancestor_size(t: &Topology, a: &CpuSet, b: &CpuSet) -> usize {
    let both = a.union(b);
    t.objects
        .iter()
        .filter(|o| both.is_subset(&o.cpus))
        .map(|o| o.cpus.len())
        .min()
        .unwrap_or(usize::MAX)
}

/// Threads per used instance of `level`, largest first: the shape of the sharing.
fn occupancy(level: &SharedResource, cpus: &[Cpu]) -> Vec<usize> {
    let mut v: Vec<usize> = level
        .instances
        .iter()
        .map(|i| cpus.iter().filter(|c| i.contains(**c)).count())
        .filter(|&n| n > 0)
        .collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn join(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join("+")
}

#[cfg(test)]
mod tests;
