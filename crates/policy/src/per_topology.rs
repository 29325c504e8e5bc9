//! What a policy derives from the machine's topology alone (docs/simulator.md,
//! Speed): NuPoCo's core map and queueing network, ReSense's shared-resource
//! levels. A policy decides every epoch on the same machine, and deriving
//! them walks every core against every cache object (set inclusions), which
//! cost more than the rest of a decision on a 64-core machine. A policy keeps
//! the derivation here with the topology it was derived from and derives
//! again only when it is given another: the same values as deriving every
//! time, so the policy stays a pure function of its View and its own state.

use std::sync::Arc;

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
    /// call was given an equal topology.
    pub fn get(&mut self, topology: &Topology, derive: impl FnOnce(&Topology) -> T) -> Arc<T> {
        match &self.entry {
            Some((t, value)) if t == topology => Arc::clone(value),
            _ => {
                let value = Arc::new(derive(topology));
                self.entry = Some((topology.clone(), Arc::clone(&value)));
                value
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(desc: &str) -> Topology {
        Topology::synthetic("t", desc).unwrap()
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
