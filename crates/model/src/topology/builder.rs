//! Nesting flat object descriptions into a tree by CPU-set inclusion.

use std::collections::BTreeMap;

use super::{CacheInfo, ObjId, ObjKind, TopoObject, Topology};
use crate::cpuset::{Cpu, CpuSet};

/// An object above the cores, described by the PUs it covers.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub kind: ObjKind,
    pub os_index: Option<u32>,
    pub cpus: CpuSet,
    pub cache: Option<CacheInfo>,
    pub memory_bytes: Option<u64>,
    pub name: Option<String>,
}

impl Group {
    pub fn new(kind: ObjKind, os_index: Option<u32>, cpus: CpuSet) -> Self {
        Self {
            kind,
            os_index,
            cpus,
            cache: None,
            memory_bytes: None,
            name: None,
        }
    }

    pub fn cache(level: u8, size_bytes: u64, cpus: CpuSet) -> Self {
        Self {
            cache: Some(CacheInfo {
                level,
                size_bytes,
                line_bytes: None,
            }),
            ..Self::new(ObjKind::Cache, None, cpus)
        }
    }
}

/// Why a description could not become a topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("the topology has no CPUs (after restricting to the allowed CPUs)")]
    NoCpus,
    #[error("CPU {0} is listed twice")]
    DuplicateCpu(Cpu),
    #[error("{kind:?} object covers CPUs {cpus} that are not PUs of this machine")]
    UnknownCpus { kind: ObjKind, cpus: CpuSet },
    #[error("{0}")]
    Invalid(String),
}

/// Collects PUs (with their package and core ids) and groups, then builds the tree.
#[derive(Clone, Debug, Default)]
pub struct TopologyBuilder {
    name: String,
    cpu_model: String,
    /// cpu → (package id, core id within package)
    pus: BTreeMap<Cpu, (u32, u32)>,
    groups: Vec<Group>,
}

impl TopologyBuilder {
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    pub fn cpu_model(mut self, model: impl Into<String>) -> Self {
        self.cpu_model = model.into();
        self
    }

    /// Adds a PU. PUs with the same `(package, core)` are SMT siblings of one core.
    pub fn pu(&mut self, cpu: Cpu, package: u32, core: u32) -> Result<&mut Self, TopologyError> {
        if self.pus.insert(cpu, (package, core)).is_some() {
            return Err(TopologyError::DuplicateCpu(cpu));
        }
        Ok(self)
    }

    /// Adds an object above the cores. Packages need not be added: they are derived
    /// from the PUs' package ids unless given explicitly (to carry attributes).
    pub fn group(&mut self, group: Group) -> &mut Self {
        self.groups.push(group);
        self
    }

    /// Builds the tree, keeping only the CPUs in `allowed` (when given) and dropping
    /// objects left without CPUs.
    pub fn build(&self, allowed: Option<&CpuSet>) -> Result<Topology, TopologyError> {
        let pus: BTreeMap<Cpu, (u32, u32)> = self
            .pus
            .iter()
            .filter(|(c, _)| allowed.is_none_or(|a| a.contains(**c)))
            .map(|(c, v)| (*c, *v))
            .collect();
        if pus.is_empty() {
            return Err(TopologyError::NoCpus);
        }
        let all: CpuSet = pus.keys().copied().collect();

        let mut flat: Vec<Group> = Vec::new();
        for g in &self.groups {
            let unknown = g.cpus.difference(&self.pus.keys().copied().collect());
            if !unknown.is_empty() {
                return Err(TopologyError::UnknownCpus {
                    kind: g.kind,
                    cpus: unknown,
                });
            }
            let cpus = g.cpus.intersection(&all);
            if !cpus.is_empty() {
                flat.push(Group { cpus, ..g.clone() });
            }
        }
        // Packages and cores from the PU ids, unless a package was given explicitly.
        let mut packages: BTreeMap<u32, CpuSet> = BTreeMap::new();
        let mut cores: BTreeMap<(u32, u32), CpuSet> = BTreeMap::new();
        for (&cpu, &(pkg, core)) in &pus {
            packages.entry(pkg).or_default().insert(cpu);
            cores.entry((pkg, core)).or_default().insert(cpu);
        }
        for (pkg, cpus) in packages {
            let given = flat
                .iter()
                .any(|g| g.kind == ObjKind::Package && g.os_index == Some(pkg));
            if !given {
                flat.push(Group::new(ObjKind::Package, Some(pkg), cpus));
            }
        }
        for ((_, core), cpus) in cores {
            flat.push(Group::new(ObjKind::Core, Some(core), cpus));
        }
        for &cpu in pus.keys() {
            flat.push(Group::new(ObjKind::Pu, Some(cpu), CpuSet::single(cpu)));
        }

        // Larger sets first; among equal sets, the kind that nests outside first.
        flat.sort_by(|a, b| {
            b.cpus
                .len()
                .cmp(&a.cpus.len())
                .then(rank(a).cmp(&rank(b)))
                .then(a.cpus.first().cmp(&b.cpus.first()))
        });

        let mut objects = vec![TopoObject {
            kind: ObjKind::Machine,
            os_index: None,
            cpus: all,
            cache: None,
            memory_bytes: None,
            name: None,
            parent: None,
            children: Vec::new(),
        }];
        for g in flat {
            // The most recently added superset is the deepest one: sets only shrink.
            let parent = (0..objects.len())
                .rev()
                .find(|&i| g.cpus.is_subset(&objects[i].cpus))
                .unwrap_or(0);
            let id = objects.len();
            objects.push(TopoObject {
                kind: g.kind,
                os_index: g.os_index,
                cpus: g.cpus,
                cache: g.cache,
                memory_bytes: g.memory_bytes,
                name: g.name,
                parent: Some(parent),
                children: Vec::new(),
            });
            objects[parent].children.push(id);
        }
        for i in 0..objects.len() {
            let mut kids = std::mem::take(&mut objects[i].children);
            kids.sort_by_key(|&k: &ObjId| objects[k].cpus.first());
            objects[i].children = kids;
        }
        Ok(Topology {
            name: self.name.clone(),
            cpu_model: self.cpu_model.clone(),
            objects,
        })
    }
}

/// Nesting order for objects that cover the same CPUs.
fn rank(g: &Group) -> u32 {
    match g.kind {
        ObjKind::Machine => 0,
        ObjKind::Package => 1,
        ObjKind::NumaNode => 2,
        ObjKind::Group => 3,
        // L3 outside L2 outside L1.
        ObjKind::Cache => 10 - u32::from(g.cache.map_or(0, |c| c.level)).min(5),
        ObjKind::Core => 20,
        ObjKind::Pu => 21,
    }
}
