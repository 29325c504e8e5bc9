//! Shared resources: every object that two or more cores share (docs/architecture.md, Topology).
//!
//! ReSense characterizes an app once per shared-resource *level* (§2.2), NuPoCo
//! models each memory controller (§3.3), Tang et al. distinguish cache, bus and
//! memory-controller sharing (§3): all of them need the same list — for each kind of
//! resource, its instances and the CPUs each instance serves.

use serde::{Deserialize, Serialize};

use super::{ObjKind, Topology};
use crate::cpuset::CpuSet;

/// The kind of a shared resource, with its level where it has one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ResourceKind {
    /// A cache shared by several cores (L2 on Core 2 parts, L3 on most since).
    Cache { level: u8 },
    /// A named bus or group, such as a front-side bus.
    Group { name: String },
    /// A NUMA node's memory controller.
    MemoryController,
    /// A socket, and with it the interconnect link to the others.
    Package,
}

impl ResourceKind {
    /// Short name used in tables and profiles: `L2`, `FSB`, `MC`, `socket`.
    pub fn label(&self) -> String {
        match self {
            ResourceKind::Cache { level } => format!("L{level}"),
            ResourceKind::Group { name } => name.clone(),
            ResourceKind::MemoryController => "MC".into(),
            ResourceKind::Package => "socket".into(),
        }
    }
}

/// One kind of shared resource and its instances.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedResource {
    pub kind: ResourceKind,
    /// Each instance's CPUs, in CPU order.
    pub instances: Vec<CpuSet>,
    /// Other kinds whose instances cover exactly the same CPUs (on most one-node-per-
    /// socket servers L3, memory controller and socket coincide); they are one level
    /// for every policy, named by the innermost kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub same_as: Vec<ResourceKind>,
    /// Cores under one instance (the same for all instances on symmetric machines;
    /// the smallest where they differ).
    pub cores_per_instance: usize,
}

impl Topology {
    /// Shared resources from the innermost (smallest instances) to the outermost,
    /// as ReSensor walks them bottom-up (ReSense Algorithm 1).
    ///
    /// An object kind counts when some instance spans two or more cores. Kinds with a
    /// single instance (one L3 on a one-socket machine) are included: they are shared,
    /// but cannot be characterized, which callers report.
    pub fn shared_resources(&self) -> Vec<SharedResource> {
        let cores = self.cores();
        let core_count = |cpus: &CpuSet| cores.iter().filter(|c| c.is_subset(cpus)).count();
        let mut by_kind: Vec<(ResourceKind, Vec<CpuSet>)> = Vec::new();
        for o in &self.objects {
            let kind = match (o.kind, &o.cache, &o.name) {
                (ObjKind::Cache, Some(c), _) => ResourceKind::Cache { level: c.level },
                (ObjKind::Group, _, Some(n)) => ResourceKind::Group { name: n.clone() },
                (ObjKind::Group, _, None) => ResourceKind::Group {
                    name: "group".into(),
                },
                (ObjKind::NumaNode, _, _) => ResourceKind::MemoryController,
                (ObjKind::Package, _, _) => ResourceKind::Package,
                _ => continue,
            };
            match by_kind.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, v)) => v.push(o.cpus.clone()),
                None => by_kind.push((kind, vec![o.cpus.clone()])),
            }
        }
        by_kind.sort_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(ResourceKind, Vec<ResourceKind>, Vec<CpuSet>)> = Vec::new();
        for (kind, mut instances) in by_kind {
            instances.sort();
            match merged.iter_mut().find(|(_, _, i)| *i == instances) {
                Some((_, same, _)) => same.push(kind),
                None => merged.push((kind, Vec::new(), instances)),
            }
        }
        let mut out: Vec<SharedResource> = merged
            .into_iter()
            .filter_map(|(kind, same_as, instances)| {
                let per = instances.iter().map(core_count).min().unwrap_or(0);
                let max = instances.iter().map(core_count).max().unwrap_or(0);
                (max >= 2).then_some(SharedResource {
                    kind,
                    instances,
                    same_as,
                    cores_per_instance: per,
                })
            })
            .collect();
        // Innermost first: fewer cores per instance, then more instances.
        out.sort_by(|a, b| {
            a.cores_per_instance
                .cmp(&b.cores_per_instance)
                .then(b.instances.len().cmp(&a.instances.len()))
                .then(a.kind.cmp(&b.kind))
        });
        out
    }
}
