//! A model of the Linux load balancer for threads coloc does not pin (docs/simulator.md,
//! The engine): topology-blind, by load only, with seeded randomness.
//!
//! - **Placement** of a new or woken thread whose CPU is not allowed: the
//!   least-loaded allowed CPU, ties broken at random — which L2/L3 or socket it
//!   lands on is chance, the run-to-run variation Tang et al. §2.2 and ReSense §3
//!   attribute to the OS mapping.
//! - **Periodic balancing** every `balance_ms`: while some thread's allowed set
//!   holds a CPU with at least two fewer runnable threads than its own, one thread
//!   (chosen at random) moves there.
//! - **Jitter**: each unpinned runnable thread moves with probability
//!   `jitter_per_s × period` per period to a random allowed CPU that is no busier,
//!   swapping with a thread there if it has one — wake-up placement noise that
//!   keeps reshuffling which threads share a cache.
//! - **Memory affinity**: a thread whose pages were first-touched on another
//!   memory node than the one it now runs on goes back to the least-loaded
//!   allowed CPU of its home node when that CPU is no busier than its own —
//!   the scheduler's preference for a thread's home (OpenSolaris's home
//!   lgroup, Thread Tranquilizer §2.1.2 and §2.2; Linux's NUMA balancing
//!   moves a task to its pages' node the same way). The move can unbalance
//!   the load, which the next period's balancing corrects by moving some
//!   thread of the busier CPU, possibly away from its own home: affinity and
//!   balancing then ping-pong threads between nodes, each move a cold cache.
//!   Except off a CPU the thread has to itself onto a busy one: that would
//!   leave an idle CPU beside a queue of two for a whole period, and neither
//!   scheduler lets that last — an idle CPU steals a waiting thread at once
//!   (Linux's new-idle balancing, OpenSolaris's idle stealing), and Linux's
//!   NUMA placement moves a task to an idle CPU of its preferred node or swaps
//!   it with a task there (`task_numa_find_cpu`). Without this exception a team
//!   given CPUs on two nodes after first-touching its pages on one (AToM
//!   trying a spread mapping, docs/policies/tang-atom.md) ran at half speed:
//!   each period one of its CPUs idled while another ran two of its threads.
//!   A thread whose pages are interleaved has no home node and is left where
//!   it is (Thread Tranquilizer §2.2.2).
//!
//! Every move across last-level caches costs the mover a refill of its private
//! working set (bounded by the cache size): lines / MLP × memory latency, and
//! as many LLC misses (docs/simulator.md, Cold caches).

use coloc_model::CpuSet;
use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;

use super::layout::{CpuIdx, Layout};

/// A thread the balancer may move.
#[derive(Clone, Debug)]
pub(crate) struct Movable<'a> {
    /// Index in the caller's thread list.
    pub id: usize,
    pub cpu: CpuIdx,
    /// Allowed CPUs (indices), at least two.
    pub allowed: &'a [CpuIdx],
    /// Memory node of its first-touched pages, when it has run and its
    /// pages are not interleaved.
    pub home: Option<usize>,
}

/// The least-loaded CPU among `allowed`, ties broken at random.
pub(crate) fn pick(allowed: &[CpuIdx], load: &[usize], rng: &mut Xoshiro256PlusPlus) -> CpuIdx {
    let min = allowed.iter().map(|&c| load[c]).min().unwrap_or(0);
    let ties: Vec<CpuIdx> = allowed
        .iter()
        .copied()
        .filter(|&c| load[c] == min)
        .collect();
    ties[rng.random_range(0..ties.len())]
}

/// CPU indices of a set (all CPUs when `None`).
pub(crate) fn allowed_indices(layout: &Layout, set: Option<&CpuSet>) -> Vec<CpuIdx> {
    match set {
        None => (0..layout.cpus.len()).collect(),
        Some(s) => s.iter().filter_map(|c| layout.idx(c)).collect(),
    }
}

/// One balancer period: returns the moves (thread id, new CPU) in order.
pub(crate) fn tick(
    movable: &[Movable<'_>],
    mem_node: &[usize],
    load: &mut [usize],
    jitter_p: f64,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<(usize, CpuIdx)> {
    let mut cpu: Vec<CpuIdx> = movable.iter().map(|m| m.cpu).collect();
    let mut moves = Vec::new();
    // Imbalance: bounded by the number of threads, each move lowers the spread.
    for _ in 0..movable.len() {
        // No CPU is below the least-loaded one, so a thread on a CPU less
        // than two above it has no target: it is passed over before its
        // allowed CPUs are searched (the same candidates, in the same
        // order, without a search per thread when the load is even).
        let least = load.iter().copied().min().unwrap_or(0);
        let candidates: Vec<(usize, CpuIdx)> = movable
            .iter()
            .enumerate()
            .filter(|&(k, _)| load[cpu[k]] >= least + 2)
            .filter_map(|(k, m)| {
                let target = m.allowed.iter().copied().min_by_key(|&c| load[c])?;
                (load[target] + 2 <= load[cpu[k]]).then_some((k, target))
            })
            .collect();
        if candidates.is_empty() {
            break;
        }
        let busiest = candidates
            .iter()
            .map(|&(k, _)| load[cpu[k]])
            .max()
            .unwrap_or(0);
        let top: Vec<&(usize, CpuIdx)> = candidates
            .iter()
            .filter(|(k, _)| load[cpu[*k]] == busiest)
            .collect();
        let &(k, target) = top[rng.random_range(0..top.len())];
        load[cpu[k]] -= 1;
        load[target] += 1;
        cpu[k] = target;
        moves.push((movable[k].id, target));
    }
    // Jitter.
    for k in 0..movable.len() {
        if rng.random::<f64>() >= jitter_p {
            continue;
        }
        let here = cpu[k];
        let options: Vec<CpuIdx> = movable[k]
            .allowed
            .iter()
            .copied()
            .filter(|&c| c != here && load[c] <= load[here])
            .collect();
        if options.is_empty() {
            continue;
        }
        let target = options[rng.random_range(0..options.len())];
        let partner = (0..movable.len()).find(|&o| {
            cpu[o] == target && load[target] == load[here] && movable[o].allowed.contains(&here)
        });
        match partner {
            Some(o) => {
                cpu[o] = here;
                moves.push((movable[o].id, here));
            }
            None if load[target] < load[here] => {
                load[here] -= 1;
                load[target] += 1;
            }
            // An equally busy CPU without a partner to swap with: moving would
            // unbalance the load, which the real balancer would undo at once.
            None => continue,
        }
        cpu[k] = target;
        moves.push((movable[k].id, target));
    }
    // Memory affinity.
    for (k, m) in movable.iter().enumerate() {
        let Some(home) = m.home.filter(|&h| mem_node[cpu[k]] != h) else {
            continue;
        };
        let at_home: Vec<CpuIdx> = m
            .allowed
            .iter()
            .copied()
            .filter(|&c| mem_node[c] == home)
            .collect();
        if at_home.is_empty() {
            continue;
        }
        let target = pick(&at_home, load, rng);
        // Never to a busier CPU; and never off a CPU it has to itself onto a
        // busy one: that would leave its CPU idle beside a queue, which an
        // idle CPU ends at once by stealing (see the module doc).
        let alone = load[cpu[k]] == 1;
        if load[target] > load[cpu[k]] || (alone && load[target] > 0) {
            continue;
        }
        load[cpu[k]] -= 1;
        load[target] += 1;
        cpu[k] = target;
        moves.push((m.id, target));
    }
    moves
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    /// Four threads stacked on CPU 0 of four: balancing moves one at a time from
    /// the busiest CPU while the gap is two or more: loads 4,0,0,0 → 1,1,1,1 in
    /// three moves (4−1 = 3 threads leave CPU 0), whatever the seed.
    #[test]
    fn balancing_spreads_by_load() {
        for seed in 0..5 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let movable: Vec<Movable> = (0..4)
                .map(|id| Movable {
                    id,
                    cpu: 0,
                    allowed: &[0, 1, 2, 3],
                    home: None,
                })
                .collect();
            let mut load = vec![4, 0, 0, 0];
            let moves = tick(&movable, &[0; 4], &mut load, 0.0, &mut rng);
            assert_eq!(moves.len(), 3, "seed {seed}");
            assert_eq!(load, [1, 1, 1, 1], "seed {seed}");
        }
    }

    /// Jitter with probability 1 keeps loads balanced (moves go to no busier CPU,
    /// swaps keep both loads) but changes which thread runs where.
    #[test]
    fn jitter_keeps_balance() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let movable: Vec<Movable> = (0..2)
            .map(|id| Movable {
                id,
                cpu: id,
                allowed: &[0, 1, 2, 3],
                home: None,
            })
            .collect();
        let mut load = vec![1, 1, 0, 0];
        let moves = tick(&movable, &[0; 4], &mut load, 1.0, &mut rng);
        assert!(!moves.is_empty());
        assert_eq!(load.iter().sum::<usize>(), 2);
        assert!(load.iter().all(|&l| l <= 1));
    }

    /// A thread away from its pages' node goes back to the least-loaded CPU
    /// there when it is no busier (loads 2,1 | 1,0 on nodes 0 | 1: the
    /// thread on CPU 0 with pages on node 1 goes to CPU 3, load 0 ≤ 2); a
    /// thread whose home CPUs are all busier, or whose pages are
    /// interleaved (no home), stays.
    #[test]
    fn memory_affinity_brings_a_thread_home_when_no_busier() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mem_node = [0, 0, 1, 1];
        let thread = |id, cpu, home| Movable {
            id,
            cpu,
            allowed: &[0, 1, 2, 3],
            home,
        };
        let movable = vec![
            thread(0, 0, Some(1)),
            thread(1, 0, Some(0)),
            thread(2, 1, None),
        ];
        let mut load = vec![2, 1, 1, 0];
        let moves = tick(&movable, &mem_node, &mut load, 0.0, &mut rng);
        assert_eq!(moves, [(0, 3)]);
        assert_eq!(load, [1, 1, 1, 1]);
        // Home CPUs busier than its own: it stays.
        let movable = vec![thread(0, 0, Some(1))];
        let mut load = vec![1, 0, 2, 2];
        assert!(tick(&movable, &mem_node, &mut load, 0.0, &mut rng).is_empty());
        // Interleaved pages: no home to go to.
        let movable = vec![thread(0, 0, None)];
        let mut load = vec![1, 0, 0, 0];
        assert!(tick(&movable, &mem_node, &mut load, 0.0, &mut rng).is_empty());
    }

    /// A thread alone on its CPU away from home is not stacked on a busy home
    /// CPU (loads 1,1 | 1,0: it stays on CPU 2 rather than leave it idle
    /// beside a queue of two), but goes to an idle one (loads 1,0 | 1,0: CPU
    /// 1); a thread sharing its CPU still goes to a home CPU as busy as its
    /// own (loads 2,2 | 2,2: to CPU 0 or 1), the ping-pong the balancer then
    /// answers.
    #[test]
    fn memory_affinity_leaves_no_cpu_idle_beside_a_queue() {
        let mem_node = [0, 0, 1, 1];
        let away = vec![Movable {
            id: 0,
            cpu: 2,
            allowed: &[0, 1, 2, 3],
            home: Some(0),
        }];
        for seed in 0..5 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut load = vec![1, 1, 1, 0];
            assert!(tick(&away, &mem_node, &mut load, 0.0, &mut rng).is_empty());
            let mut load = vec![1, 0, 1, 0];
            assert_eq!(tick(&away, &mem_node, &mut load, 0.0, &mut rng), [(0, 1)]);
            let mut load = vec![2, 2, 2, 2];
            let moves = tick(&away, &mem_node, &mut load, 0.0, &mut rng);
            assert!(matches!(moves[..], [(0, 0 | 1)]), "seed {seed}: {moves:?}");
        }
    }
}
