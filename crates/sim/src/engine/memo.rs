//! Solutions of recent intervals (docs/simulator.md, Speed): most events
//! change nothing the contention model reads — a balancer period that moves
//! no thread, a policy epoch that changes no plan, a parallel region that
//! ends where the next begins with the same team — and a state seen
//! recently recurs (an app alternating between its serial and parallel
//! steps). The contention model is a pure function of its inputs, so an
//! interval whose inputs equal those of a remembered one reuses that
//! solution: the same numbers as solving again, without the fixed point.
//!
//! The inputs are written as words by the engine (`Engine::contention_key`,
//! beside the code that builds the model's runners and teams from the same
//! state); an app's model is one of those words as the address of its
//! shared model, which an entry keeps alive so that the address cannot be
//! reused for another model while the entry exists.

use std::sync::Arc;

use super::contention::Solution;
use crate::model::AppModel;

/// Solutions remembered; the least recently used is forgotten first.
/// 64 holds every state of the bench's pinned runs (`coloc bench sim`:
/// 56–73 distinct states under equal, resense and nupoco) at a cost of a few
/// kilobytes each.
const CAPACITY: usize = 64;

#[derive(Clone, Debug)]
struct Entry {
    hash: u64,
    key: Vec<u64>,
    /// The models whose addresses are in `key`.
    _models: Vec<Arc<AppModel>>,
    solution: Solution,
    used: u64,
}

/// Remembered solutions, found by their inputs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memo {
    entries: Vec<Entry>,
    clock: u64,
}

/// FxHash's word step (rustc's hasher): fast, and good enough to tell keys
/// apart before comparing them whole.
fn hash(key: &[u64]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    key.iter().fold(key.len() as u64, |h, &w| {
        (h.rotate_left(5) ^ w).wrapping_mul(K)
    })
}

impl Memo {
    /// The entry remembering the solution of `key`, if any.
    pub fn find(&mut self, key: &[u64]) -> Option<usize> {
        let h = hash(key);
        self.clock += 1;
        let i = self
            .entries
            .iter()
            .position(|e| e.hash == h && e.key == key)?;
        self.entries[i].used = self.clock;
        Some(i)
    }

    /// The solution an entry remembers.
    pub fn get(&self, entry: usize) -> &Solution {
        &self.entries[entry].solution
    }

    /// Remembers `solution` as that of `key`, forgetting the least recently
    /// used entry when full; `models` are the models `key` names. Returns
    /// the entry.
    pub fn insert(&mut self, key: &[u64], models: Vec<Arc<AppModel>>, solution: Solution) -> usize {
        self.clock += 1;
        let entry = Entry {
            hash: hash(key),
            key: key.to_vec(),
            _models: models,
            solution,
            used: self.clock,
        };
        let i = if self.entries.len() < CAPACITY {
            self.entries.push(entry);
            self.entries.len() - 1
        } else {
            let (i, _) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .expect("a full memo has entries");
            self.entries[i] = entry;
            i
        };
        i
    }
}
