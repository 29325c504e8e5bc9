//! What a policy derives from the machine's topology alone (docs/simulator.md,
//! Speed): NuPoCo's core map and queueing network, ReSense's shared-resource
//! levels. A policy decides every epoch on the same machine, and deriving
//! them walks every core against every cache object (set inclusions), which
//! cost more than the rest of a decision on a 64-core machine. A policy keeps
//! the derivation here with the topology it was derived from and derives
//! again only when it is given another: the same values as deriving every
//! time, so the policy stays a pure function of its View and its own state.

use std::sync::Arc;

use coloc_model::topology::TopoObject;
use coloc_model::Topology;

/// One value derived from a topology, with that topology.
#[derive(Clone, Debug)]
pub(crate) struct PerTopology<T> {
    entry: Option<(Topology, Arc<T>)>,
}

impl<T> Default for PerTopology<T> {
    fn default() -> Self {
        Self { entry: None }
    }
}

impl<T> PerTopology<T> {
    /// The value `derive` gives for `topology`: derived now unless the last
    /// call was given an equal topology ([`same`]).
    pub fn get(&mut self, topology: &Topology, derive: impl FnOnce(&Topology) -> T) -> Arc<T> {
        match &self.entry {
            Some((t, value)) if same(t, topology) => Arc::clone(value),
            _ => {
                let value = Arc::new(derive(topology));
                self.entry = Some((topology.clone(), Arc::clone(&value)));
                value
            }
        }
    }
}

/// `a == b`, field by field, each object's small lists (its children, its
/// CPU set's words) compared in line. Every decision of a policy that keeps
/// a derivation here compares the topology it is given with the one it
/// derived from, and the derived comparison calls the C library's `memcmp`
/// for every such list, two or three calls per object: on the 64-core
/// `nupoco-amd64` (190 objects) that was about a sixth of `resense`'s
/// events and an eighth of `nupoco`'s in `coloc bench sim`
/// (docs/simulator.md, Speed). Destructured, so that a field added to
/// either type is not compared by accident (it does not compile until it
/// is named here).
fn same(a: &Topology, b: &Topology) -> bool {
    let Topology {
        name,
        cpu_model,
        objects,
    } = a;
    objects.len() == b.objects.len()
        && objects
            .iter()
            .zip(&b.objects)
            .all(|(x, y)| same_object(x, y))
        && *name == b.name
        && *cpu_model == b.cpu_model
}

fn same_object(a: &TopoObject, b: &TopoObject) -> bool {
    let TopoObject {
        kind,
        os_index,
        cpus,
        cache,
        memory_bytes,
        name,
        parent,
        children,
    } = a;
    *kind == b.kind
        && *os_index == b.os_index
        && *parent == b.parent
        && *memory_bytes == b.memory_bytes
        && *cache == b.cache
        && children.len() == b.children.len()
        && children.iter().zip(&b.children).all(|(x, y)| x == y)
        && *cpus == b.cpus
        && *name == b.name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(desc: &str) -> Topology {
        Topology::synthetic("t", desc).unwrap()
    }

    /// Topologies compare as `==` does: equal to a copy, unequal when one
    /// field of one object differs (each field of each kind of object, and
    /// the topology's own).
    #[test]
    fn the_topology_compares_as_equality_does() {
        let t = topo("package:2 numa:1 l3(8M):1 l2(1M):2 core:2");
        assert!(same(&t, &t.clone()));
        let changes: Vec<fn(&mut Topology)> = vec![
            |t: &mut Topology| t.name.push('x'),
            |t: &mut Topology| t.cpu_model.push('x'),
            |t: &mut Topology| {
                t.objects.pop();
            },
            |t: &mut Topology| t.objects[3].os_index = Some(99),
            |t: &mut Topology| {
                t.objects[3].cpus.insert(200);
            },
            |t: &mut Topology| t.objects[3].memory_bytes = Some(1),
            |t: &mut Topology| t.objects[3].name = Some("g".into()),
            |t: &mut Topology| t.objects[3].parent = None,
            |t: &mut Topology| t.objects[0].children.push(7),
            |t: &mut Topology| t.objects[0].children.swap(0, 1),
            |t: &mut Topology| {
                let c = t.objects.iter().position(|o| o.cache.is_some()).unwrap();
                t.objects[c].cache.as_mut().unwrap().size_bytes += 1;
            },
            |t: &mut Topology| {
                let pu = t
                    .objects
                    .iter()
                    .position(|o| o.kind != t.objects[0].kind)
                    .unwrap();
                t.objects[pu].kind = t.objects[0].kind;
            },
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = t.clone();
            change(&mut other);
            assert_ne!(t, other, "change {i}");
            assert!(!same(&t, &other) && !same(&other, &t), "change {i}");
        }
    }

    /// The derivation runs once per distinct topology: again when the
    /// topology changes, and its value is that of the topology given.
    #[test]
    fn derives_again_only_for_another_topology() {
        let (small, big) = (topo("package:1 core:2"), topo("package:2 core:4"));
        let mut memo = PerTopology::default();
        let mut calls = 0;
        for (t, want) in [(&small, 2), (&small.clone(), 2), (&big, 8), (&small, 2)] {
            let cores = memo.get(t, |t| {
                calls += 1;
                t.cores().len()
            });
            assert_eq!(*cores, want);
        }
        assert_eq!(calls, 3);
    }
}
