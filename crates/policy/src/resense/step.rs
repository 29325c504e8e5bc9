//! One level of Algorithm 1 (ReSense §2.3, lines 5–35) inside one region.
//!
//! The outer levels have already decided how many threads of each app go into the
//! region; this step splits those threads over the instances of the current level
//! that lie in it ("children"), counting threads, not yet choosing CPUs. A child's
//! capacity is the number of thread slots under it (one per core while the
//! machine is not oversubscribed), so "available cores" of the paper are the free
//! slots of a child.

use std::cmp::Reverse;

/// How an app wants to use a level, from the sign of its score there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    /// Positive score: share the instance with its siblings (the paper's `[C+]`).
    Share,
    /// Negative score: keep siblings apart (the paper's `[C−]`).
    Spread,
    /// Zero (or unknown): any core (line 20), the least loaded instance first —
    /// where Linux's balancer would put the thread.
    Any,
}

impl Want {
    pub(crate) fn of(score: f64) -> Self {
        if score > 0.0 {
            Want::Share
        } else if score < 0.0 {
            Want::Spread
        } else {
            Want::Any
        }
    }
}

/// Which case of Algorithm 1 decided a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Case {
    /// Case 1 (line 11): at least as many instances as apps; each app by its sign.
    Enough = 1,
    /// Case 2 (line 23): fewer instances than apps; most with least sensitive.
    Pairs = 2,
}

/// One app's threads in the region and its score for the level.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Demand {
    pub threads: usize,
    pub score: f64,
}

/// Splits the demands over children with the given capacities; returns
/// `x[app][child]`, threads of each app under each child, and the case used.
///
/// Apps are taken in descending order of |score| (line 10), ties in the order
/// given (arrival order). In case 2 the i-th most sensitive app is paired with the
/// i-th least sensitive (lines 25–34) and the pair follows the sign of the more
/// sensitive one; with an odd number of apps the middle one, which the paper's loop
/// leaves out, is placed last by its own sign as in case 1.
pub(crate) fn step(demands: &[Demand], capacity: &[usize]) -> (Vec<Vec<usize>>, Case) {
    let mut s = Split {
        free: capacity.to_vec(),
        x: vec![vec![0; capacity.len()]; demands.len()],
    };
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by(|&a, &b| demands[b].score.abs().total_cmp(&demands[a].score.abs()));
    let n = order.len();
    if capacity.len() >= n {
        for &a in &order {
            s.place(a, demands[a]);
        }
        return (s.x, Case::Enough);
    }
    for i in 0..n / 2 {
        let (m, l) = (order[i], order[n - 1 - i]);
        let (dm, dl) = (demands[m], demands[l]);
        match Want::of(dm.score) {
            Want::Share => s.pack(&[(m, dm.threads), (l, dl.threads)]),
            Want::Spread => {
                s.spread(m, dm.threads, None);
                s.spread(l, dl.threads, Some(m));
            }
            Want::Any => {
                s.any(m, dm.threads);
                s.any(l, dl.threads);
            }
        }
    }
    if n % 2 == 1 {
        let mid = order[n / 2];
        s.place(mid, demands[mid]);
    }
    (s.x, Case::Pairs)
}

/// The split being built: free slots per child and threads per app and child.
struct Split {
    free: Vec<usize>,
    x: Vec<Vec<usize>>,
}

impl Split {
    /// One app by the sign of its score (lines 14–21).
    fn place(&mut self, app: usize, d: Demand) {
        match Want::of(d.score) {
            Want::Share => self.pack(&[(app, d.threads)]),
            Want::Spread => self.spread(app, d.threads, None),
            Want::Any => self.any(app, d.threads),
        }
    }

    fn put(&mut self, app: usize, child: usize, n: usize) {
        self.x[app][child] += n;
        self.free[child] = self.free[child].saturating_sub(n);
    }

    /// `[C+]`: the apps' threads, in the order given, into as few children as
    /// possible — the fullest child that still takes all that is left (best fit,
    /// which keeps larger children for later apps), else the emptiest child, filled,
    /// and so on. When no child has two free slots this is the paper's fallback
    /// to any core.
    fn pack(&mut self, apps: &[(usize, usize)]) {
        let mut queue: Vec<(usize, usize)> = apps.iter().copied().filter(|a| a.1 > 0).collect();
        while let Some(&(_, left)) = queue.first() {
            let total: usize = left + queue[1..].iter().map(|a| a.1).sum::<usize>();
            let child = (0..self.free.len())
                .filter(|&j| self.free[j] >= total)
                .min_by_key(|&j| (self.free[j], j))
                .unwrap_or_else(|| self.emptiest());
            // With no free slot anywhere (never, when capacities cover the
            // demand) everything left goes to the emptiest child.
            let mut room = if self.free[child] == 0 {
                total
            } else {
                self.free[child].min(total)
            };
            while room > 0 && !queue.is_empty() {
                let (app, left) = queue[0];
                let n = left.min(room);
                self.put(app, child, n);
                room -= n;
                if n == left {
                    queue.remove(0);
                } else {
                    queue[0].1 -= n;
                }
            }
        }
    }

    /// `[C−]`: one thread at a time to the child holding the fewest of this app's
    /// threads, the emptiest among those. With `near`, children that hold threads
    /// of that app (the more sensitive partner of a case-2 pair) come first, so the
    /// pair shares instances as Algorithm 1 intends.
    fn spread(&mut self, app: usize, threads: usize, near: Option<usize>) {
        for _ in 0..threads {
            let child = (0..self.free.len())
                .min_by_key(|&j| {
                    (
                        self.free[j] == 0,
                        near.is_some_and(|m| self.x[m][j] == 0),
                        self.x[app][j],
                        Reverse(self.free[j]),
                        j,
                    )
                })
                .unwrap_or(0);
            self.put(app, child, 1);
        }
    }

    /// Any core (lines 20 and 32): each thread to the emptiest child.
    fn any(&mut self, app: usize, threads: usize) {
        for _ in 0..threads {
            let child = self.emptiest();
            self.put(app, child, 1);
        }
    }

    fn emptiest(&self) -> usize {
        (0..self.free.len())
            .min_by_key(|&j| (Reverse(self.free[j]), j))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(threads: usize, score: f64) -> Demand {
        Demand { threads, score }
    }

    /// (demands, capacities, expected x, expected case).
    type Row = (Vec<Demand>, Vec<usize>, Vec<Vec<usize>>, Case);

    /// Comments give the reasoning of each row.
    #[test]
    fn splits() {
        let cases: Vec<Row> = vec![
            // Fig. 4(a): two negative apps over two L2s of 2 slots: one thread of
            // each app under each L2.
            (
                vec![d(2, -5.0), d(2, -1.0)],
                vec![2, 2],
                vec![vec![1, 1], vec![1, 1]],
                Case::Enough,
            ),
            // Fig. 4(b): positive A packs into one L2, negative B gets the rest.
            (
                vec![d(2, 5.0), d(2, -1.0)],
                vec![2, 2],
                vec![vec![2, 0], vec![0, 2]],
                Case::Enough,
            ),
            // The more sensitive goes first: here B (−5) spreads before A (+1),
            // so A cannot pack: the fallback leaves it on the free slots.
            (
                vec![d(2, 1.0), d(2, -5.0)],
                vec![2, 2],
                vec![vec![1, 1], vec![1, 1]],
                Case::Enough,
            ),
            // Best fit: a 2-thread sharer goes to the child with exactly 2 free
            // slots, keeping the 4-slot child whole.
            (vec![d(2, 3.0)], vec![4, 2], vec![vec![0, 2]], Case::Enough),
            // Fig. 4(c): [C +c, A −a, B +b, D −d] over two L2s: (C, D) share the
            // first L2, (A, B) the second.
            (
                vec![d(1, -4.0), d(1, 3.0), d(1, 5.0), d(1, -1.0)],
                vec![2, 2],
                vec![vec![0, 1], vec![0, 1], vec![1, 0], vec![1, 0]],
                Case::Pairs,
            ),
            // Odd count: the pair (−9, 0.5) spreads over both children, the middle
            // app (+2) packs into what is left.
            (
                vec![d(2, -9.0), d(2, 0.5), d(2, 2.0)],
                vec![3, 3],
                vec![vec![1, 1], vec![1, 1], vec![1, 1]],
                Case::Pairs,
            ),
            // Zero scores: least loaded first, like Linux.
            (vec![d(3, 0.0)], vec![2, 2], vec![vec![2, 1]], Case::Enough),
            // Oversubscribed beyond the capacities (never happens in the policy):
            // every thread is still placed.
            (
                vec![d(3, 1.0), d(2, -1.0)],
                vec![1, 1],
                vec![vec![2, 1], vec![1, 1]],
                Case::Enough,
            ),
        ];
        for (demands, cap, want_x, want_case) in cases {
            let (x, case) = step(&demands, &cap);
            assert_eq!((&x, case), (&want_x, want_case), "{demands:?} over {cap:?}");
        }
    }
}
