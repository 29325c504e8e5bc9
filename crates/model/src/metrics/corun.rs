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
//!
//! Apps that never ran as a clean pair (three arrivals that always overlap)
//! still shared the machine. For every instance that shared it, its rate
//! beside others is taken the same way over its whole life, with each span
//! shared by `n` apps counted as `2 / n` of a span shared by two: the CPUs
//! are split `n` ways instead of two, so its rate beside one other is taken
//! as `n / 2` times its rate among `n`. An app's mean rate beside others
//! stands in for its rate beside a partner it was never measured with
//! alone ([`CoRuns::rates`]); it cannot see what one partner costs more than
//! another.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::reference::SoloCurves;
use super::timeline::Timeline;
use crate::stats::Summary;
use crate::trace::Trace;

/// Overlaps shorter than this say too little to record.
const MIN_OVERLAP: Duration = Duration::from_millis(500);

/// Records kept per pair of apps, and per app of its shared instances
/// ([`CoRuns::extend`]): a comparison of five runs under each of five
/// policies adds up to 25 of an app's, so the rates read about its last
/// comparison and a half.
pub const KEPT: usize = 32;

/// One clean pair of a run: the two apps' names and each one's rate beside
/// the other, as a share of its speed alone on the whole machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairRun {
    pub apps: [String; 2],
    pub rates: [f64; 2],
}

/// One instance that shared the machine: its app's name and its rate beside
/// one other app, over its whole life (module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedRun {
    pub app: String,
    pub rate: f64,
}

/// A record of one run: a clean pair or an instance that shared the machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CoRun {
    Pair(PairRun),
    Shared(SharedRun),
}

/// Records of earlier runs, as JSON `[{"apps": [a, b], "rates": [x, y]},
/// {"app": a, "rate": x}, ...]` (files of clean pairs alone still read).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CoRuns {
    runs: Vec<CoRun>,
}

/// Where the rates of two apps come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RatesFrom {
    /// Clean pairs of the two, this many.
    Pairs(usize),
    /// Each app's instances that shared the machine with any others, this
    /// many of the first and of the second.
    Shared(usize, usize),
}

/// Two apps' rates beside each other ([`CoRuns::rates`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    pub a: f64,
    pub b: f64,
    pub from: RatesFrom,
}

impl CoRuns {
    /// The clean pairs of `trace` and its instances that shared the machine
    /// (module docs), with each app's fastest solo time on `cpus` CPUs or
    /// fewer threads from `solo`; pairs with an app that has none, an overlap
    /// under half a second, or a rate outside (0, 2] are left out, and so are
    /// instances with less than half a second shared.
    pub fn from_trace(trace: &Trace, solo: &SoloCurves, cpus: u32) -> CoRuns {
        let tl = Timeline::of(trace);
        let apps = &trace.header.workload.apps;
        // (app name, start, exit) of each instance that succeeded.
        let lives: Vec<Life> = tl
            .instances
            .iter()
            .filter_map(|(id, i)| {
                let exit = i.exit.as_ref().filter(|e| e.status.success())?;
                let name = apps.get(id.app as usize)?.name.clone();
                Some((name, i.start?, exit.t))
            })
            .collect();
        // The rate of `x` over `over` seconds (weighted) shared, with
        // `shared` seconds of its life shared and the rest alone.
        let rate = |x: &Life, shared: f64, over: f64| -> Option<f64> {
            let alone = (x.2 - x.1).as_secs_f64() - shared;
            let r = (solo.fastest(&x.0, cpus)? - alone) / over;
            (r > 0.0 && r <= 2.0).then_some(r)
        };
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
        let mut runs = Vec::new();
        for i in 0..lives.len() {
            let [j] = partners[i][..] else { continue };
            if j < i || partners[j] != [i] {
                continue;
            }
            let o = overlap(i, j);
            if o < MIN_OVERLAP {
                continue;
            }
            let o = o.as_secs_f64();
            if let (Some(ri), Some(rj)) = (rate(&lives[i], o, o), rate(&lives[j], o, o)) {
                runs.push(CoRun::Pair(PairRun {
                    apps: [lives[i].0.clone(), lives[j].0.clone()],
                    rates: [ri, rj],
                }));
            }
        }
        for x in &lives {
            let (shared, weighted) = overlapped(&lives, x);
            if weighted < MIN_OVERLAP.as_secs_f64() {
                continue;
            }
            if let Some(r) = rate(x, shared, weighted) {
                runs.push(CoRun::Shared(SharedRun {
                    app: x.0.clone(),
                    rate: r,
                }));
            }
        }
        CoRuns { runs }
    }

    /// Records made elsewhere (a policy's tests script them).
    pub fn of(runs: Vec<CoRun>) -> CoRuns {
        CoRuns { runs }
    }

    /// Adds the records of another run, keeping the latest [`KEPT`] of each
    /// pair of apps and of each app's shared instances: the rates follow a
    /// program whose input or version changed, and the file stays small.
    pub fn extend(&mut self, other: CoRuns) {
        self.runs.extend(other.runs);
        let mut seen: BTreeMap<(Option<&str>, &str), usize> = BTreeMap::new();
        let keep: Vec<bool> = self
            .runs
            .iter()
            .rev()
            .map(|r| {
                let key = match r {
                    CoRun::Pair(p) => {
                        let [x, y] = &p.apps;
                        (Some(x.min(y).as_str()), x.max(y).as_str())
                    }
                    CoRun::Shared(s) => (None, s.app.as_str()),
                };
                let n = seen.entry(key).or_default();
                *n += 1;
                *n <= KEPT
            })
            .collect();
        let mut keep = keep.into_iter().rev();
        self.runs.retain(|_| keep.next().unwrap_or(true));
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// The mean rates of `a` and of `b` beside each other: over their clean
    /// pairs where there are any, else each one's mean rate beside others
    /// (module docs); None when neither is known for both.
    pub fn rates(&self, a: &str, b: &str) -> Option<Rates> {
        let (ra, rb): (Vec<f64>, Vec<f64>) = self
            .runs
            .iter()
            .filter_map(|r| match r {
                CoRun::Pair(p) if p.apps[0] == a && p.apps[1] == b => {
                    Some((p.rates[0], p.rates[1]))
                }
                CoRun::Pair(p) if p.apps[0] == b && p.apps[1] == a => {
                    Some((p.rates[1], p.rates[0]))
                }
                _ => None,
            })
            .unzip();
        if let (Some(sa), Some(sb)) = (Summary::of(&ra), Summary::of(&rb)) {
            return Some(Rates {
                a: sa.mean,
                b: sb.mean,
                from: RatesFrom::Pairs(ra.len()),
            });
        }
        let shared = |app: &str| -> Vec<f64> {
            self.runs
                .iter()
                .filter_map(|r| match r {
                    CoRun::Shared(s) if s.app == app => Some(s.rate),
                    _ => None,
                })
                .collect()
        };
        let (ra, rb) = (shared(a), shared(b));
        Some(Rates {
            a: Summary::of(&ra)?.mean,
            b: Summary::of(&rb)?.mean,
            from: RatesFrom::Shared(ra.len(), rb.len()),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

/// An instance's app name, start and exit.
type Life = (String, Duration, Duration);

/// The seconds of `x`'s life that other lives overlapped, as they are and
/// weighted: each span shared by `n` apps counted as `2 / n` of one shared
/// by two (module docs).
fn overlapped(lives: &[Life], x: &Life) -> (f64, f64) {
    spans(lives, x)
        .filter(|(_, n)| *n > 1)
        .fold((0.0, 0.0), |(plain, weighted), (dt, n)| {
            (plain + dt, weighted + dt * 2.0 / f64::from(n))
        })
}

/// `x`'s life cut at every start and exit: each span's seconds and how many
/// lives, `x`'s included, it saw.
fn spans<'a>(lives: &'a [Life], x: &'a Life) -> impl Iterator<Item = (f64, u32)> + 'a {
    let mut cuts: Vec<Duration> = lives
        .iter()
        .flat_map(|l| [l.1, l.2])
        .filter(|t| *t >= x.1 && *t <= x.2)
        .collect();
    cuts.sort();
    cuts.dedup();
    let windows: Vec<(Duration, Duration)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    windows.into_iter().map(move |(t0, t1)| {
        let n = lives.iter().filter(|l| l.1 <= t0 && l.2 >= t1).count() as u32;
        ((t1 - t0).as_secs_f64(), n)
    })
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
        let r = c.rates("dgemm", "xz").unwrap();
        assert_eq!(r.from, RatesFrom::Pairs(1));
        assert!((r.a - 3.4 / 6.44).abs() < 1e-9, "{r:?}");
        assert!((r.b - 2.91 / 6.44).abs() < 1e-9, "{r:?}");
        // Each also shared the machine with one other: the same rates.
        assert_eq!(shared(&c), [("dgemm", r.a), ("xz", r.b)]);
        // Asked the other way round, the same rates swapped.
        let r2 = c.rates("xz", "dgemm").unwrap();
        assert_eq!((r2.a, r2.b), (r.b, r.a));
        assert_eq!(c.rates("dgemm", "c"), None);
        // On 1 CPU the fastest solo time is the 1-thread one.
        let d1 = CoRuns::from_trace(&t, &solo(), 1)
            .rates("dgemm", "xz")
            .unwrap()
            .a;
        assert!((d1 - 6.2 / 6.44).abs() < 1e-9, "{d1}");
        // JSON round trip, and a second run averages in.
        let json = serde_json::to_string(&c).unwrap();
        let mut back: CoRuns = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        back.extend(c.clone());
        assert_eq!(back.rates("dgemm", "xz").unwrap().from, RatesFrom::Pairs(2));
        // A file of clean pairs alone, as written before shared instances
        // were recorded, still reads.
        let old: CoRuns =
            serde_json::from_str(r#"[{"apps": ["dgemm", "xz"], "rates": [0.5, 0.4]}]"#).unwrap();
        let r = old.rates("xz", "dgemm").unwrap();
        assert_eq!((r.a, r.b, r.from), (0.4, 0.5, RatesFrom::Pairs(1)));
    }

    /// The latest [`KEPT`] records of each pair and of each app's shared
    /// instances are kept, in the order they came; others are untouched.
    #[test]
    fn only_the_latest_records_of_each_pair_and_app_are_kept() {
        let pair = |x: &str, y: &str, r: f64| {
            CoRun::Pair(PairRun {
                apps: [x.into(), y.into()],
                rates: [r, r],
            })
        };
        let one = |app: &str, r: f64| {
            CoRun::Shared(SharedRun {
                app: app.into(),
                rate: r,
            })
        };
        let mut c = CoRuns::of(vec![pair("a", "b", 0.0), one("a", 0.0), one("c", 0.5)]);
        for i in 1..=40 {
            // The pair comes in both orders: one pair of apps.
            let (x, y) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
            c.extend(CoRuns::of(vec![
                pair(x, y, f64::from(i)),
                one("a", f64::from(i)),
            ]));
        }
        assert_eq!(c.len(), 2 * KEPT + 1);
        // The latest 32 of 41 are 9..=40, in order.
        let a: Vec<f64> = shared(&c)
            .into_iter()
            .filter(|(app, _)| *app == "a")
            .map(|(_, r)| r)
            .collect();
        assert_eq!(a, (9..=40).map(f64::from).collect::<Vec<_>>());
        assert_eq!(shared(&c).iter().filter(|(app, _)| *app == "c").count(), 1);
        let r = c.rates("a", "b").unwrap();
        assert_eq!((r.a, r.from), (24.5, RatesFrom::Pairs(KEPT)));
    }

    /// The instances that shared the machine, as (app, rate).
    fn shared(c: &CoRuns) -> Vec<(&str, f64)> {
        c.runs
            .iter()
            .filter_map(|r| match r {
                CoRun::Shared(s) => Some((s.app.as_str(), s.rate)),
                CoRun::Pair(_) => None,
            })
            .collect()
    }

    /// Three lives overlapping: no clean pair, but each instance's rate
    /// beside others, a span shared by three counting 2/3. dgemm (0–5 s,
    /// 3.4 s alone) shared 1 s with xz and 4 s with both: 3.4 / (1 + 8/3).
    /// xz (0–6 s, 5.26 s) also 1 s with c at the end: 5.26 / (2 + 8/3). c
    /// (1–7 s, 2.0 s) ran its last second alone: (2.0 - 1) / (8/3 + 1).
    /// Apps never measured as a pair get these rates.
    #[test]
    fn instances_that_shared_with_several_give_each_its_rate_beside_others() {
        let t = trace(
            "equal",
            &["dgemm", "xz", "c"],
            &[
                (0.0, Ev::Start(0, 0)),
                (0.0, Ev::Start(1, 0)),
                (1.0, Ev::Start(2, 0)),
                (5.0, Ev::Exit(0, 0, 0)),
                (6.0, Ev::Exit(1, 0, 0)),
                (7.0, Ev::Exit(2, 0, 0)),
            ],
        );
        let c = CoRuns::from_trace(&t, &solo(), 2);
        let third = 8.0 / 3.0;
        let want = [
            ("dgemm", 3.4 / (1.0 + third)),
            ("xz", 5.26 / (2.0 + third)),
            ("c", 1.0 / (third + 1.0)),
        ];
        let got = shared(&c);
        assert_eq!(got.len(), 3, "{c:?}");
        for ((app, r), (want_app, want_r)) in got.iter().zip(want) {
            assert_eq!(*app, want_app);
            assert!((r - want_r).abs() < 1e-9, "{app}: {r} vs {want_r}");
        }
        let r = c.rates("c", "dgemm").unwrap();
        assert_eq!(r.from, RatesFrom::Shared(1, 1));
        assert!((r.a - want[2].1).abs() < 1e-9 && (r.b - want[0].1).abs() < 1e-9);
        // A clean pair of the two, measured in another run, is preferred.
        let mut with_pair = c.clone();
        with_pair.extend(CoRuns::of(vec![CoRun::Pair(PairRun {
            apps: ["dgemm".into(), "c".into()],
            rates: [0.6, 0.7],
        })]));
        let r = with_pair.rates("c", "dgemm").unwrap();
        assert_eq!((r.a, r.b, r.from), (0.7, 0.6, RatesFrom::Pairs(1)));
    }

    /// No clean pair: three lives overlapping, one app failing, an overlap
    /// under half a second, an app without solo times. The first and the
    /// last still record the instances that shared the machine for half a
    /// second or more and have solo times (the test above): three and one.
    #[test]
    fn only_clean_pairs_are_recorded() {
        type Case = (&'static [&'static str], &'static [(f64, Ev)], usize);
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
                3,
            ),
            (
                &["dgemm", "xz"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (0.0, Ev::Start(1, 0)),
                    (5.0, Ev::Exit(0, 0, 1)),
                    (6.0, Ev::Exit(1, 0, 0)),
                ],
                0,
            ),
            (
                &["dgemm", "xz"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (3.2, Ev::Start(1, 0)),
                    (3.5, Ev::Exit(0, 0, 0)),
                    (8.0, Ev::Exit(1, 0, 0)),
                ],
                0,
            ),
            (
                &["dgemm", "other"],
                &[
                    (0.0, Ev::Start(0, 0)),
                    (0.0, Ev::Start(1, 0)),
                    (5.0, Ev::Exit(0, 0, 0)),
                    (6.0, Ev::Exit(1, 0, 0)),
                ],
                1,
            ),
        ];
        for (apps, events, instances) in cases {
            let c = CoRuns::from_trace(&trace("equal", apps, events), &solo(), 2);
            let pairs = c.runs.iter().filter(|r| matches!(r, CoRun::Pair(_)));
            assert_eq!(pairs.count(), 0, "{apps:?}: {c:?}");
            assert_eq!(shared(&c).len(), instances, "{apps:?}: {c:?}");
        }
    }
}
