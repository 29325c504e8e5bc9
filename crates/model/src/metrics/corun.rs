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
//! Approach: the rates are computed from the records the knowledge store
//! keeps of every managed instance (`coloc_model::knowledge::derive`, where the
//! arithmetic is): an instance's rate beside others is the solo work it did
//! while sharing over the time it shared, a share of its speed alone on the
//! whole machine, with each span shared by `n` apps counted as `2 / n` of a
//! span shared by two (the CPUs were split `n` ways rather than two). An
//! instance whose life overlapped exactly one other's is also a measurement
//! of its rate beside that program. Two rates summed are the machine's
//! throughput while they share it (weighted speedup, as in symbiotic job
//! scheduling): below 1, sharing did less than one app at a time would. An
//! app's mean rate beside others stands in for its rate beside a partner it
//! was never measured with alone ([`CoRuns::rates`]); it cannot see what one
//! partner costs more than another.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// One clean pair of a run: the two apps' names and each one's rate beside
/// the other, as a share of its speed alone on the whole machine (the co-run
/// files of earlier coloc versions, which the knowledge store migrates).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairRun {
    pub apps: [String; 2],
    pub rates: [f64; 2],
}

/// One instance whose life overlapped exactly one other's: its app's rate
/// beside the other's app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BesideRun {
    pub app: String,
    pub partner: String,
    pub rate: f64,
}

/// One instance that shared the machine: its app's name and its rate beside
/// one other app, over its whole life (module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedRun {
    pub app: String,
    pub rate: f64,
}

/// A record of one run: a clean pair, an instance beside one partner, or an
/// instance that shared the machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CoRun {
    Pair(PairRun),
    Beside(BesideRun),
    Shared(SharedRun),
}

/// Records of earlier runs, as JSON `[{"apps": [a, b], "rates": [x, y]},
/// {"app": a, "partner": b, "rate": x}, {"app": a, "rate": x}, ...]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CoRuns {
    runs: Vec<CoRun>,
}

/// Where the rates of two apps come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RatesFrom {
    /// Runs of each beside the other alone: this many (the fewer of the
    /// two's, a clean pair counting one for each).
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
    /// Records made elsewhere (the knowledge store's, a policy's tests).
    pub fn of(runs: Vec<CoRun>) -> CoRuns {
        CoRuns { runs }
    }

    /// The records, oldest first.
    pub fn runs(&self) -> &[CoRun] {
        &self.runs
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// `x`'s rates beside `y` alone: from clean pairs and from its instances
    /// whose only co-runner was `y`.
    fn beside(&self, x: &str, y: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|r| match r {
                CoRun::Pair(p) if p.apps == [x, y] => Some(p.rates[0]),
                CoRun::Pair(p) if p.apps == [y, x] => Some(p.rates[1]),
                CoRun::Beside(b) if b.app == x && b.partner == y => Some(b.rate),
                _ => None,
            })
            .collect()
    }

    /// The mean rates of `a` and of `b` beside each other: over their runs
    /// beside each other alone where both have some, else each one's mean
    /// rate beside others (module docs); None when neither is known for both.
    pub fn rates(&self, a: &str, b: &str) -> Option<Rates> {
        let (ra, rb) = (self.beside(a, b), self.beside(b, a));
        if let (Some(sa), Some(sb)) = (Summary::of(&ra), Summary::of(&rb)) {
            return Some(Rates {
                a: sa.mean,
                b: sb.mean,
                from: RatesFrom::Pairs(ra.len().min(rb.len())),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(x: &str, y: &str, rx: f64, ry: f64) -> CoRun {
        CoRun::Pair(PairRun {
            apps: [x.into(), y.into()],
            rates: [rx, ry],
        })
    }

    fn one(app: &str, r: f64) -> CoRun {
        CoRun::Shared(SharedRun {
            app: app.into(),
            rate: r,
        })
    }

    fn beside(app: &str, partner: &str, r: f64) -> CoRun {
        CoRun::Beside(BesideRun {
            app: app.into(),
            partner: partner.into(),
            rate: r,
        })
    }

    /// Runs beside each other come first, from clean pairs (of earlier
    /// files) and one-sided records alike, the pair asked either way round;
    /// without them each one's rate beside others; without those, nothing.
    #[test]
    fn rates_beside_each_other_then_beside_others() {
        let c = CoRuns::of(vec![
            pair("dgemm", "xz", 0.5, 0.4),
            beside("dgemm", "xz", 0.7),
            beside("xz", "dgemm", 0.6),
            one("dgemm", 0.9),
            one("c", 0.3),
        ]);
        let r = c.rates("xz", "dgemm").unwrap();
        assert_eq!((r.a, r.b, r.from), (0.5, 0.6, RatesFrom::Pairs(2)));
        let r = c.rates("c", "dgemm").unwrap();
        assert_eq!((r.a, r.b, r.from), (0.3, 0.9, RatesFrom::Shared(1, 1)));
        // One side measured beside the other is not a pair.
        let lopsided = CoRuns::of(vec![beside("c", "dgemm", 0.8), one("c", 0.3)]);
        assert_eq!(lopsided.rates("c", "dgemm"), None);
        assert_eq!(c.rates("c", "nobody"), None);
        // An earlier coloc's file of clean pairs and shared instances reads.
        let old: CoRuns = serde_json::from_str(
            r#"[{"apps": ["dgemm", "xz"], "rates": [0.5, 0.4]}, {"app": "c", "rate": 0.3}]"#,
        )
        .unwrap();
        assert_eq!(old.runs, vec![pair("dgemm", "xz", 0.5, 0.4), one("c", 0.3)]);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<CoRuns>(&json).unwrap(), c);
    }
}
