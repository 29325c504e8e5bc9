//! Thread placement, NuPoCo Algorithm 2 (§5.3).
//!
//! Algorithm 1 gives whole units to one app, so a memory-intensive app may fill
//! a last-level cache on its own while a CPU-bound one leaves another nearly
//! idle. Every `placement_period` (50 ms in the paper) the LLC groups holding
//! Algorithm 1's cores are ranked by LLC accesses since the last round; the
//! busiest and the idlest are paired, and when the busiest sees more than
//! `threshold` (2) times the accesses of the idlest, the app with the highest
//! request rate in the busy group and the app with the lowest in the idle
//! group exchange `count` (2) cores. Then the next pair, until the list is
//! empty. Swaps accumulate round after round (hill climbing that settles, §7.5)
//! for as long as Algorithm 1's allocation stays the same; a new allocation
//! starts from scratch.
//!
//! Accesses come from the LLC-reference counters of the last observation
//! interval. Without counters they are predicted: each core of an app counts
//! its estimated MRR (the ranking is all that matters).

use std::collections::VecDeque;
use std::time::Duration;

use coloc_model::AppId;

use crate::cores::{Core, CoreMap};

/// What one round needs to know.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Round<'a, F: Fn(AppId) -> f64> {
    pub map: &'a CoreMap,
    /// LLC accesses per LLC group since the last round.
    pub access: &'a [f64],
    /// An app's memory request rate from profiling.
    pub mrr: F,
    pub threshold: f64,
    pub count: usize,
}

impl<F: Fn(AppId) -> f64> Round<'_, F> {
    /// One pass of Algorithm 2 over `owner` (Algorithm 1's cores; `None`
    /// elsewhere). Returns how many core pairs were exchanged.
    pub fn run(&self, owner: &mut [Option<AppId>]) -> usize {
        let map = self.map;
        let mut groups: Vec<usize> = (0..map.llcs)
            .filter(|&g| (0..map.len()).any(|c| map.llc[c] == g && owner[c].is_some()))
            .collect();
        groups.sort_by(|a, b| self.access[*b].total_cmp(&self.access[*a]).then(a.cmp(b)));
        let mut list: VecDeque<usize> = groups.into();
        let mut swapped = 0;
        while list.len() >= 2 {
            let (busy, idle) = (
                list.pop_front().expect("two left"),
                list.pop_back().expect("two left"),
            );
            let (hot, cold) = (self.access[busy], self.access[idle]);
            let ratio = if cold > 0.0 {
                hot / cold
            } else if hot > 0.0 {
                f64::INFINITY
            } else {
                0.0
            };
            if ratio <= self.threshold {
                continue;
            }
            let in_group = |g: usize| -> Vec<(Core, AppId)> {
                (0..map.len())
                    .filter(|&c| map.llc[c] == g)
                    .filter_map(|c| owner[c].map(|a| (c, a)))
                    .collect()
            };
            let (b, i) = (in_group(busy), in_group(idle));
            let by_rate = |x: &&(Core, AppId), y: &&(Core, AppId)| {
                (self.mrr)(x.1)
                    .total_cmp(&(self.mrr)(y.1))
                    .then(x.1.cmp(&y.1))
            };
            let (Some(&(_, busy_wl)), Some(&(_, idle_wl))) =
                (b.iter().max_by(by_rate), i.iter().min_by(by_rate))
            else {
                continue;
            };
            if busy_wl == idle_wl {
                continue;
            }
            let from: Vec<Core> = b.iter().filter(|x| x.1 == busy_wl).map(|x| x.0).collect();
            let to: Vec<Core> = i.iter().filter(|x| x.1 == idle_wl).map(|x| x.0).collect();
            for (&x, &y) in from.iter().rev().zip(to.iter().rev()).take(self.count) {
                owner[x] = Some(idle_wl);
                owner[y] = Some(busy_wl);
                swapped += 1;
            }
        }
        swapped
    }
}

/// Algorithm 2's memory between decisions.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Swaps {
    /// Algorithm 1's owners at the last decision.
    base: Vec<Option<AppId>>,
    /// The same cores after the swaps so far.
    current: Vec<Option<AppId>>,
    last_round: Option<Duration>,
}

impl Swaps {
    /// The owners to use now: Algorithm 1's `base` with the accumulated swaps
    /// (none if `base` changed), plus one round if `period` has passed since
    /// the last one. Returns them with the number of pairs this round swapped.
    pub fn place<F: Fn(AppId) -> f64>(
        &mut self,
        base: Vec<Option<AppId>>,
        now: Duration,
        period: Duration,
        round: &Round<'_, F>,
    ) -> (Vec<Option<AppId>>, usize) {
        if base != self.base {
            self.current = base.clone();
            self.base = base;
        }
        let due = self
            .last_round
            .is_none_or(|t| now.saturating_sub(t) >= period);
        let swapped = if due {
            self.last_round = Some(now);
            round.run(&mut self.current)
        } else {
            0
        };
        (self.current.clone(), swapped)
    }
}
