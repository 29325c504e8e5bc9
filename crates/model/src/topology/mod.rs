//! The machine as a tree: machine > package > NUMA node > groups (buses) > caches >
//! cores > PUs (docs/architecture.md, Topology).
//!
//! Every reader (sysfs, hwloc XML, the simulator's built-in platforms, the synthetic
//! test builder) produces the same flat description — PUs plus the CPU sets of the
//! objects above them — and [`TopologyBuilder`] nests them by set inclusion. That way
//! AMD parts where a package holds several NUMA nodes and Intel parts where one node
//! holds the package come out right without per-vendor code.
//!
//! Instruction caches are left out of the tree: they are never shared between cores,
//! so they are never a shared resource, and keeping only data/unified caches keeps
//! the tree a tree.

mod builder;
pub mod hwloc;
mod resources;
pub mod symmetry;
mod synthetic;

use std::fmt::Write as _;

pub use builder::{Group, TopologyBuilder, TopologyError};
pub use resources::{ResourceKind, SharedResource};
use serde::{Deserialize, Serialize};
pub use synthetic::SyntheticError;

use crate::cpuset::{Cpu, CpuSet};

/// Index of an object in [`Topology::objects`].
pub type ObjId = usize;

/// What a tree node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjKind {
    Machine,
    Package,
    NumaNode,
    /// A named grouping that is neither a cache nor a node: a front-side bus
    /// (Harpertown, Clovertown), a die, a cluster.
    Group,
    Cache,
    Core,
    Pu,
}

/// Attributes of a cache object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CacheInfo {
    pub level: u8,
    pub size_bytes: u64,
    /// Cache line size, where known (sysfs `coherency_line_size`).
    pub line_bytes: Option<u32>,
}

/// One node of the topology tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopoObject {
    pub kind: ObjKind,
    /// The OS's number for it: package id, NUMA node id, core id, CPU number.
    pub os_index: Option<u32>,
    /// The PUs below it.
    pub cpus: CpuSet,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheInfo>,
    /// Local memory of a NUMA node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// A label for groups (`FSB`, `die`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub parent: Option<ObjId>,
    pub children: Vec<ObjId>,
}

impl TopoObject {
    /// A short label: `Package#0`, `L3 (32 MiB)`, `Core#5`, `PU#3`.
    pub fn label(&self) -> String {
        let mut s = match (self.kind, &self.cache, &self.name) {
            (ObjKind::Cache, Some(c), _) => format!("L{}", c.level),
            (ObjKind::Group, _, Some(n)) => n.clone(),
            (kind, _, _) => kind_label(kind).to_string(),
        };
        if let Some(i) = self.os_index {
            let _ = write!(s, "#{i}");
        }
        if let Some(c) = &self.cache {
            let _ = write!(s, " ({})", human_bytes(c.size_bytes));
        }
        if let Some(m) = self.memory_bytes {
            let _ = write!(s, " ({})", human_bytes(m));
        }
        s
    }
}

fn kind_label(kind: ObjKind) -> &'static str {
    match kind {
        ObjKind::Machine => "Machine",
        ObjKind::Package => "Package",
        ObjKind::NumaNode => "NUMANode",
        ObjKind::Group => "Group",
        ObjKind::Cache => "Cache",
        ObjKind::Core => "Core",
        ObjKind::Pu => "PU",
    }
}

/// Bytes with a binary unit, as lstopo prints them.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() && v.fract() == 0.0 {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{} {}", v as u64, UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A machine's topology. Built only through [`TopologyBuilder`], so the tree
/// invariants hold: object 0 is the machine, every object's CPUs are a subset of its
/// parent's, children are ordered by their first CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Where it came from: host name, platform name, XML file.
    pub name: String,
    /// CPU model string (`/proc/cpuinfo` "model name"), part of the platform fingerprint.
    pub cpu_model: String,
    pub objects: Vec<TopoObject>,
}

impl Topology {
    pub fn root(&self) -> &TopoObject {
        &self.objects[0]
    }

    /// Every PU (logical CPU).
    pub fn cpus(&self) -> &CpuSet {
        &self.root().cpus
    }

    pub fn objects_of(&self, kind: ObjKind) -> impl Iterator<Item = (ObjId, &TopoObject)> {
        self.objects
            .iter()
            .enumerate()
            .filter(move |(_, o)| o.kind == kind)
    }

    /// Every cache of the highest level the topology has (its LLC instances),
    /// as the machine reports them.
    pub fn last_level_caches(&self) -> Vec<CacheInfo> {
        let caches: Vec<CacheInfo> = self
            .objects_of(ObjKind::Cache)
            .filter_map(|(_, o)| o.cache)
            .collect();
        let top = caches.iter().map(|c| c.level).max().unwrap_or(0);
        caches.into_iter().filter(|c| c.level == top).collect()
    }

    /// Each core's PUs, in CPU order.
    pub fn cores(&self) -> Vec<CpuSet> {
        self.core_sets().cloned().collect()
    }

    /// Each core's PUs, in CPU order, borrowed: [`Topology::cores`] without
    /// copying the sets, for what runs at every decision.
    pub fn core_sets(&self) -> impl Iterator<Item = &CpuSet> {
        self.objects_of(ObjKind::Core).map(|(_, o)| &o.cpus)
    }

    /// The core that holds `cpu`.
    pub fn core_of(&self, cpu: Cpu) -> Option<&CpuSet> {
        self.objects_of(ObjKind::Core)
            .map(|(_, o)| &o.cpus)
            .find(|c| c.contains(cpu))
    }

    /// Number of NUMA nodes (1 where the machine reports none).
    pub fn numa_nodes(&self) -> usize {
        self.objects_of(ObjKind::NumaNode).count().max(1)
    }

    /// The chain of objects from `cpu`'s PU up to the machine.
    pub fn ancestors_of_cpu(&self, cpu: Cpu) -> Vec<ObjId> {
        let Some((pu, _)) = self
            .objects_of(ObjKind::Pu)
            .find(|(_, o)| o.os_index == Some(cpu))
        else {
            return Vec::new();
        };
        let mut chain = vec![pu];
        let mut cur = pu;
        while let Some(p) = self.objects[cur].parent {
            chain.push(p);
            cur = p;
        }
        chain
    }

    /// A stable hash of the shape (kinds, CPU sets, cache sizes), independent of the
    /// name; with the CPU model it identifies a platform in the profile store.
    pub fn shape_hash(&self) -> u64 {
        // FNV-1a over a canonical text: stable across Rust versions, unlike DefaultHasher.
        let mut text = String::new();
        for o in &self.objects {
            let _ = write!(
                text,
                "{:?}|{}|{:?}|{:?};",
                o.kind,
                o.cpus.to_list(),
                o.cache.map(|c| (c.level, c.size_bytes)),
                o.name
            );
        }
        text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// An indented tree, one object a line, as `coloc topo` prints it.
    pub fn render_tree(&self) -> String {
        let mut out = String::new();
        self.render_node(0, 0, &mut out);
        out
    }

    fn render_node(&self, id: ObjId, indent: usize, out: &mut String) {
        let o = &self.objects[id];
        let _ = write!(out, "{:indent$}{}", "", o.label(), indent = indent * 2);
        if o.kind != ObjKind::Pu {
            let _ = write!(out, "  cpus {}", o.cpus);
        }
        if o.kind == ObjKind::Machine && !self.cpu_model.is_empty() {
            let _ = write!(out, "  \"{}\"", self.cpu_model);
        }
        out.push('\n');
        for &c in &o.children {
            self.render_node(c, indent + 1, out);
        }
    }
}

#[cfg(test)]
mod tests;
