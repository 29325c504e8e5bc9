//! Reference points for a mix, from each app's solo times at every thread
//! count: how good any policy could be, so that a policy's figures read as
//! "x% above what is possible" rather than only against another policy.
//!
//! - The CPU-work lower bound of the makespan. No schedule finishes an app
//!   before its arrival plus its fastest solo time, and none does the work of
//!   the apps that arrive at or after time `a` before `a` plus that work spread
//!   over every CPU, where an app's work is its cheapest CPU time,
//!   `min_k k · T(k)`. The bound is the largest of these.
//! - An SJF reference for the average response time: the apps run one at a
//!   time, each at its fastest, shortest first among those that have arrived
//!   (non-preemptive shortest job first, optimal for one server without
//!   preemption). Space sharing with sublinear apps can beat it; it is a
//!   reference, not a bound.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::table::{finish, fixed, new_table};
use crate::stats::Summary;

/// Solo wall times of apps at each thread count, in seconds, as JSON
/// `{"app": {"1": [secs, ...], "2": [...]}}` (`coloc solo --threads`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SoloCurves {
    runs: BTreeMap<String, BTreeMap<u32, Vec<f64>>>,
}

impl SoloCurves {
    /// Records one solo run of `app` with `threads` threads that took `secs`.
    pub fn add(&mut self, app: &str, threads: u32, secs: f64) {
        self.runs
            .entry(app.to_string())
            .or_default()
            .entry(threads)
            .or_default()
            .push(secs);
    }

    /// Mean solo time of `app` at each thread count measured.
    pub fn curve(&self, app: &str) -> Option<BTreeMap<u32, f64>> {
        let by = self.runs.get(app)?;
        let curve: BTreeMap<u32, f64> = by
            .iter()
            .filter_map(|(k, v)| Some((*k, Summary::of(v)?.mean)))
            .collect();
        (!curve.is_empty()).then_some(curve)
    }

    /// A table: app, then the mean solo time at each thread count.
    pub fn render(&self) -> String {
        let counts: std::collections::BTreeSet<u32> =
            self.runs.values().flat_map(|b| b.keys().copied()).collect();
        let mut head = vec!["app".to_string()];
        head.extend(counts.iter().map(|k| format!("{k} thr s")));
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let mut table = new_table(&head);
        for app in self.runs.keys() {
            let curve = self.curve(app).unwrap_or_default();
            let mut row = vec![app.clone()];
            row.extend(counts.iter().map(|k| fixed(curve.get(k).copied(), 3)));
            table.add_row(row);
        }
        finish(&table)
    }
}

/// One app of a mix for the reference points.
#[derive(Clone, Debug, PartialEq)]
pub struct MixApp {
    /// Arrival, seconds after the mix starts.
    pub arrive: f64,
    /// Solo wall time at each thread count measured, seconds.
    pub solo: BTreeMap<u32, f64>,
}

impl MixApp {
    /// Its fastest solo time, at any thread count up to `cpus`.
    fn fastest(&self, cpus: u32) -> Option<f64> {
        self.solo
            .iter()
            .filter(|(k, _)| **k <= cpus)
            .map(|(_, t)| *t)
            .min_by(f64::total_cmp)
    }

    /// Its cheapest CPU work, `min_k k · T(k)` over thread counts up to `cpus`.
    fn work(&self, cpus: u32) -> Option<f64> {
        self.solo
            .iter()
            .filter(|(k, _)| **k <= cpus)
            .map(|(k, t)| f64::from(*k) * t)
            .min_by(f64::total_cmp)
    }
}

/// The CPU-work lower bound of the makespan of `apps` on `cpus` CPUs,
/// arrival-aware; None when an app has no solo time at `cpus` or fewer threads.
pub fn makespan_lower_bound(apps: &[MixApp], cpus: u32) -> Option<f64> {
    let cpus = cpus.max(1);
    let mut bound: f64 = 0.0;
    for a in apps {
        bound = bound.max(a.arrive + a.fastest(cpus)?);
    }
    for a in apps {
        let later: f64 = apps
            .iter()
            .filter(|b| b.arrive >= a.arrive)
            .map(|b| b.work(cpus))
            .sum::<Option<f64>>()?;
        bound = bound.max(a.arrive + later / f64::from(cpus));
    }
    Some(bound)
}

/// The average response time of non-preemptive shortest-job-first with each
/// app at its fastest; None when an app has no solo time.
pub fn sjf_art(apps: &[MixApp], cpus: u32) -> Option<f64> {
    if apps.is_empty() {
        return None;
    }
    let mut left: Vec<(f64, f64)> = apps
        .iter()
        .map(|a| Some((a.arrive, a.fastest(cpus.max(1))?)))
        .collect::<Option<_>>()?;
    let (mut now, mut total) = (0.0f64, 0.0);
    while !left.is_empty() {
        let first = left.iter().map(|a| a.0).fold(f64::INFINITY, f64::min);
        now = now.max(first);
        let next = left
            .iter()
            .enumerate()
            .filter(|(_, a)| a.0 <= now)
            .min_by(|x, y| x.1 .1.total_cmp(&y.1 .1))
            .map(|(i, _)| i)
            .expect("an app has arrived by now");
        let (arrive, secs) = left.swap_remove(next);
        now += secs;
        total += now - arrive;
    }
    Some(total / apps.len() as f64)
}

/// One policy's figures against the reference points.
#[derive(Clone, Debug, PartialEq)]
pub struct AgainstReference {
    pub policy: String,
    /// Mean makespan over the lower bound.
    pub makespan_over_bound: Option<f64>,
    /// Mean ART over the SJF reference.
    pub art_over_sjf: Option<f64>,
}

/// Each policy's mean makespan and ART over the reference points.
pub fn against_reference(
    policies: &[super::PolicyStats],
    bound: Option<f64>,
    sjf: Option<f64>,
) -> Vec<AgainstReference> {
    let ratio = |s: Option<&Summary>, r: Option<f64>| {
        let r = r.filter(|r| *r > 0.0)?;
        Some(s?.mean / r)
    };
    policies
        .iter()
        .map(|p| AgainstReference {
            policy: p.policy.clone(),
            makespan_over_bound: ratio(p.makespan.as_ref(), bound),
            art_over_sjf: ratio(p.art.as_ref(), sjf),
        })
        .collect()
}

/// `policy`'s mean makespan over the best mean makespan of the other
/// policies (the best choice in hindsight), with that policy's name; None
/// when either is missing.
pub fn over_best_other(policies: &[super::PolicyStats], policy: &str) -> Option<(f64, String)> {
    let own = policies
        .iter()
        .find(|p| p.policy == policy)?
        .makespan
        .as_ref()?
        .mean;
    let best = policies
        .iter()
        .filter(|p| p.policy != policy)
        .filter_map(|p| Some((p.makespan.as_ref()?.mean, p.policy.clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    (best.0 > 0.0).then(|| (own / best.0, best.1))
}

/// The geometric mean of positive ratios (across mixes, the mean of
/// "x times the reference"); None for none.
pub fn geometric_mean(ratios: &[f64]) -> Option<f64> {
    if ratios.is_empty() || ratios.iter().any(|r| *r <= 0.0) {
        return None;
    }
    Some((ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp())
}

/// A table of [`against_reference`]'s rows, with the reference points in the
/// header.
pub fn render_against_reference(
    rows: &[AgainstReference],
    bound: Option<f64>,
    sjf: Option<f64>,
) -> String {
    let head_bound = format!("makespan / bound ({} s)", fixed(bound, 2));
    let head_sjf = format!("ART / SJF ({} s)", fixed(sjf, 2));
    let mut table = new_table(&["policy", &head_bound, &head_sjf]);
    for r in rows {
        table.add_row(vec![
            r.policy.clone(),
            fixed(r.makespan_over_bound, 3),
            fixed(r.art_over_sjf, 3),
        ]);
    }
    finish(&table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(arrive: f64, solo: &[(u32, f64)]) -> MixApp {
        MixApp {
            arrive,
            solo: solo.iter().copied().collect(),
        }
    }

    /// Two apps on 2 CPUs, both at 0. A scales perfectly (10 s alone, 5 s on
    /// 2: work 10 CPU-s either way); B not at all (8 s on 1 or 2: work 8).
    /// Bound: max(5, 8, (10 + 8) / 2 = 9) = 9.
    #[test]
    fn the_bound_is_the_larger_of_the_longest_app_and_the_work() {
        let apps = [
            app(0.0, &[(1, 10.0), (2, 5.0)]),
            app(0.0, &[(1, 8.0), (2, 8.0)]),
        ];
        assert_eq!(makespan_lower_bound(&apps, 2), Some(9.0));
        // One app alone: its fastest time (work 10 / 2 = 5 as well).
        assert_eq!(makespan_lower_bound(&apps[..1], 2), Some(5.0));
        // On 1 CPU only the 1-thread times count: 10 + 8.
        assert_eq!(makespan_lower_bound(&apps, 1), Some(18.0));
    }

    /// A late arrival: B (work 8, fastest 8) arrives at 6 s, so the makespan is
    /// at least 6 + 8 = 14, whatever A does.
    #[test]
    fn the_bound_is_arrival_aware() {
        let apps = [
            app(0.0, &[(1, 10.0), (2, 5.0)]),
            app(6.0, &[(1, 8.0), (2, 8.0)]),
        ];
        assert_eq!(makespan_lower_bound(&apps, 2), Some(14.0));
        // Arriving at 1 s instead: 1 + 8 = 9, and the work after 0 is 18 / 2 = 9.
        let apps = [
            app(0.0, &[(1, 10.0), (2, 5.0)]),
            app(1.0, &[(1, 8.0), (2, 8.0)]),
        ];
        assert_eq!(makespan_lower_bound(&apps, 2), Some(9.0));
    }

    #[test]
    fn an_app_without_a_usable_solo_time_gives_no_bound() {
        let apps = [app(0.0, &[(4, 3.0)])];
        assert_eq!(makespan_lower_bound(&apps, 2), None);
        assert_eq!(sjf_art(&apps, 2), None);
        assert_eq!(sjf_art(&[], 2), None);
    }

    /// Fastest times 5 (A), 8 (B), 2 (C, arriving at 1 s). SJF at 0 picks A
    /// (B is longer, C not there): A ends at 5; then C (2): ends at 7, response
    /// 6; then B: ends at 15, response 15. ART = (5 + 6 + 15) / 3 = 26 / 3.
    #[test]
    fn sjf_runs_the_shortest_arrived_app_next() {
        let apps = [
            app(0.0, &[(1, 10.0), (2, 5.0)]),
            app(0.0, &[(2, 8.0)]),
            app(1.0, &[(1, 2.0)]),
        ];
        let art = sjf_art(&apps, 2).unwrap();
        assert!((art - 26.0 / 3.0).abs() < 1e-12, "{art}");
        // An idle gap: one app arriving at 10 s runs at once.
        let apps = [app(10.0, &[(1, 2.0)])];
        assert_eq!(sjf_art(&apps, 2), Some(2.0));
    }

    #[test]
    fn geometric_mean_of_ratios() {
        // (1.0 * 1.21)^(1/2) = 1.1
        let gm = geometric_mean(&[1.0, 1.21]).unwrap();
        assert!((gm - 1.1).abs() < 1e-12, "{gm}");
        assert_eq!(geometric_mean(&[]), None);
        assert_eq!(geometric_mean(&[1.0, 0.0]), None);
    }

    #[test]
    fn curves_average_runs_per_thread_count() {
        let mut c = SoloCurves::default();
        c.add("xz", 1, 4.0);
        c.add("xz", 1, 6.0);
        c.add("xz", 2, 3.0);
        assert_eq!(
            c.curve("xz"),
            Some([(1, 5.0), (2, 3.0)].into_iter().collect())
        );
        assert_eq!(c.curve("zstd"), None);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"xz":{"1":[4.0,6.0],"2":[3.0]}}"#);
        assert_eq!(serde_json::from_str::<SoloCurves>(&json).unwrap(), c);
        assert_eq!(
            c.render(),
            "| app | 1 thr s | 2 thr s |\n\
             |-----|---------|---------|\n\
             | xz  |   5.000 |   3.000 |\n"
        );
    }
}
