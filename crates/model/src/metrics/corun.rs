//! How fast two apps ran beside each other, measured from earlier runs'
//! traces: what solo times cannot say. `auto`'s admission reads it
//! (`docs/policies/auto.md`, Admission).
//!
//! Problem: two programs sharing a machine slow each other beyond their
//! share of the CPUs (caches, memory bandwidth, and on a VM its vCPUs), so a
//! makespan estimated from solo times favours sharing where running one
//! after the other is faster. On this project's 2-vCPU machine `xz -T2`
//! beside OpenBLAS `dgemm` did, in its 6.4 s beside it, the work of 2.9 s
//! alone; `dgemm`, on one CPU, that of 3.4 s. Together 0.98 of a machine:
//! running them one after the other would have been faster, while solo times
//! predicted 1.09.
//!
//! Approach: in a trace, an instance whose life overlapped exactly one other
//! instance's, which overlapped no third, is a clean pair. Each ran alone for
//! the rest of its life, where it is taken to run as fast as alone on the
//! whole machine (its fastest solo time `T`), so during the overlap `O` it did
//! `T - alone` of solo work: its rate beside the other is `(T - alone) / O`,
//! a share of its speed alone. The two rates summed are the machine's
//! throughput while they share it (weighted speedup, as in symbiotic job
//! scheduling): below 1, sharing did less than one app at a time would.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::reference::SoloCurves;
use super::timeline::Timeline;
use crate::stats::Summary;
use crate::trace::Trace;

/// Overlaps shorter than this say too little to record.
const MIN_OVERLAP: Duration = Duration::from_millis(500);

/// One clean pair of a run: the two apps' names and each one's rate beside
/// the other, as a share of its speed alone on the whole machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairRun {
    pub apps: [String; 2],
    pub rates: [f64; 2],
}

/// Pairs measured in earlier runs, as JSON `[{"apps": [a, b], "rates": [x, y]}, ...]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CoRuns {
    pairs: Vec<PairRun>,
}

impl CoRuns {
    /// The clean pairs of `trace` (module docs), with each app's fastest solo
    /// time on `cpus` CPUs or fewer threads from `solo`; pairs with an app
    /// that has none, an overlap under half a second, or a rate outside
    /// (0, 2] are left out.
    pub fn from_trace(trace: &Trace, solo: &SoloCurves, cpus: u32) -> CoRuns {
        let tl = Timeline::of(trace);
        let apps = &trace.header.workload.apps;
        // (app name, start, exit) of each instance that succeeded.
        let lives: Vec<(String, Duration, Duration)> = tl
            .instances
            .iter()
            .filter_map(|(id, i)| {
                let exit = i.exit.as_ref().filter(|e| e.status.success())?;
                let name = apps.get(id.app as usize)?.name.clone();
                Some((name, i.start?, exit.t))
            })
            .collect();
        let overlap = |i: usize, j: usize| {
            let (a, b) = (&lives[i], &lives[j]);
            a.2.min(b.2).saturating_sub(a.1.max(b.1))
        };
        // Each life's overlapping others, found once.
        let partners: Vec<Vec<usize>> = (0..lives.len())
            .map(|i| {
                (0..lives.len())
                    .filter(|&j| j != i && !overlap(i, j).is_zero())
                    .collect()
            })
            .collect();
        let mut pairs = Vec::new();
        for i in 0..lives.len() {
            let [j] = partners[i][..] else { continue };
            if j < i || partners[j] != [i] {
                continue;
            }
            let o = overlap(i, j);
            if o < MIN_OVERLAP {
                continue;
            }
            let rate = |x: &(String, Duration, Duration)| -> Option<f64> {
                let alone = (x.2 - x.1).saturating_sub(o).as_secs_f64();
                let r = (solo.fastest(&x.0, cpus)? - alone) / o.as_secs_f64();
                (r > 0.0 && r <= 2.0).then_some(r)
            };
            if let (Some(ri), Some(rj)) = (rate(&lives[i]), rate(&lives[j])) {
                pairs.push(PairRun {
                    apps: [lives[i].0.clone(), lives[j].0.clone()],
                    rates: [ri, rj],
                });
            }
        }
        CoRuns { pairs }
    }

    /// Pairs measured elsewhere (a policy's tests script them).
    pub fn of(pairs: Vec<PairRun>) -> CoRuns {
        CoRuns { pairs }
    }

    /// Adds the pairs of another run.
    pub fn extend(&mut self, other: CoRuns) {
        self.pairs.extend(other.pairs);
    }

    /// The mean rates of `a` and of `b` beside each other over the runs that
    /// measured them, with how many; None when none did.
    pub fn rates(&self, a: &str, b: &str) -> Option<(f64, f64, usize)> {
        let (ra, rb): (Vec<f64>, Vec<f64>) = self
            .pairs
            .iter()
            .filter_map(|p| match (&p.apps[0], &p.apps[1]) {
                (x, y) if x == a && y == b => Some((p.rates[0], p.rates[1])),
                (x, y) if x == b && y == a => Some((p.rates[1], p.rates[0])),
                _ => None,
            })
            .unzip();
        Some((Summary::of(&ra)?.mean, Summary::of(&rb)?.mean, ra.len()))
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::testtrace::{trace, Ev};

    fn solo() -> SoloCurves {
        let mut s = SoloCurves::default();
        for (app, one, two) in [("dgemm", 6.2, 3.4), ("xz", 7.76, 5.26), ("c", 4.0, 2.0)] {
            s.add(app, 1, one);
            s.add(app, 2, two);
        }
        s
    }

    /// The blas-xz pair of the module docs: both start at 0, dgemm exits at
    /// 6.44 s, xz at 8.79 s. dgemm did 3.4 s of solo work in 6.44 s (0.528);
    /// xz ran 2.35 s alone, so 5.26 - 2.35 = 2.91 s of it in 6.44 s (0.452).
    #[test]
    fn a_clean_pair_gives_each_its_rate_beside_the_other() {
        let t = trace(
            "equal",
            &["dgemm", "xz"],
            &[
                (0.0, Ev::Start(0, 0)),
                (0.0, Ev::Start(1, 0)),
                (6.44, Ev::Exit(0, 0, 0)),
                (8.79, Ev::Exit(1, 0, 0)),
            ],
        );
        let c = CoRuns::from_trace(&t, &solo(), 2);
        let (d, x, n) = c.rates("dgemm", "xz").unwrap();
        assert_eq!(n, 1);
        assert!((d - 3.4 / 6.44).abs() < 1e-9, "{d}");
        assert!((x - 2.91 / 6.44).abs() < 1e-9, "{x}");
        // Asked the other way round, the same rates swapped.
        let (x2, d2, _) = c.rates("xz", "dgemm").unwrap();
        assert_eq!((x2, d2), (x, d));
        assert_eq!(c.rates("dgemm", "c"), None);
        // On 1 CPU the fastest solo time is the 1-thread one.
        let (d1, _, _) = CoRuns::from_trace(&t, &solo(), 1)
            .rates("dgemm", "xz")
            .unwrap();
        assert!((d1 - 6.2 / 6.44).abs() < 1e-9, "{d1}");
        // JSON round trip, and a second run averages in.
        let json = serde_json::to_string(&c).unwrap();
        let mut back: CoRuns = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        back.extend(c.clone());
        assert_eq!(back.rates("dgemm", "xz").unwrap().2, 2);
    }

    /// No clean pair: three lives overlapping, one app failing, an overlap
    /// under half a second, an app without solo times.
    #[test]
    fn only_clean_pairs_are_recorded() {
        type Case = (&'static [&'static str], &'static [(f64, Ev)]);
        let cases: [Case; 4] = [
            (
                &["dgemm", "xz", "c"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (0.0, Ev::Start(1, 0)),
                    (1.0, Ev::Start(2, 0)),
                    (5.0, Ev::Exit(0, 0, 0)),
                    (6.0, Ev::Exit(1, 0, 0)),
                    (7.0, Ev::Exit(2, 0, 0)),
                ],
            ),
            (
                &["dgemm", "xz"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (0.0, Ev::Start(1, 0)),
                    (5.0, Ev::Exit(0, 0, 1)),
                    (6.0, Ev::Exit(1, 0, 0)),
                ],
            ),
            (
                &["dgemm", "xz"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (3.2, Ev::Start(1, 0)),
                    (3.5, Ev::Exit(0, 0, 0)),
                    (8.0, Ev::Exit(1, 0, 0)),
                ],
            ),
            (
                &["dgemm", "other"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (0.0, Ev::Start(1, 0)),
                    (5.0, Ev::Exit(0, 0, 0)),
                    (6.0, Ev::Exit(1, 0, 0)),
                ],
            ),
        ];
        for (apps, events) in cases {
            let c = CoRuns::from_trace(&trace("equal", apps, events), &solo(), 2);
            assert!(c.is_empty(), "{apps:?}: {c:?}");
        }
    }
}
