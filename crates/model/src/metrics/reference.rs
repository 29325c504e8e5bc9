//! Reference points for a mix, from each app's solo times at every thread
//! count: how good any policy could be, so that a policy's figures read as
//! "x% above what is possible" rather than only against another policy.
//!
//! - The CPU-work lower bound of the makespan. No schedule finishes an app
//!   before its arrival plus its fastest solo time, and none does the work of
//!   the apps that arrive at or after time `a` before `a` plus that work spread
//!   over every CPU, where an app's work is its cheapest CPU time,
//!   `min_k k · T(k)`. The bound is the largest of these.
//! - The same bound with an app's work its least CPU time measured alone,
//!   where the solo runs recorded one: `k · T(k)` is the CPU time only of an
//!   app that keeps exactly `k` CPUs busy, and a pipeline of processes keeps
//!   more.
//! - An SJF reference for the average response time: the apps run one at a
//!   time, each at its fastest, shortest first among those that have arrived
//!   (non-preemptive shortest job first, optimal for one server without
//!   preemption). Space sharing with sublinear apps can beat it; it is a
//!   reference, not a bound.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::table::{finish, fixed, new_table};
use crate::stats::Summary;

/// Runs per app name and thread count: seconds per run.
type PerThreads = BTreeMap<String, BTreeMap<u32, Vec<f64>>>;

/// Solo runs of apps at each thread count: their wall times, and the CPU
/// time each used where its trace recorded one (`coloc solo --threads`), in
/// seconds, as JSON `{"wall": {"app": {"1": [secs, ...]}}, "cpu": {...}}`.
/// A pipeline of processes can use more CPUs than it has threads, and an app
/// that sleeps fewer, so the CPU time is its work where `threads × wall`
/// is only an estimate of it. Files written before CPU times were recorded
/// hold the wall map alone and still read.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SoloCurves {
    wall: PerThreads,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    cpu: PerThreads,
}

/// Reads either layout. Through a JSON value: serde's untagged enums cannot
/// read the thread counts, which are map keys.
impl<'de> Deserialize<'de> for SoloCurves {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut value = serde_json::Value::deserialize(d)?;
        let map = |v: serde_json::Value| {
            serde_json::from_value::<PerThreads>(v).map_err(D::Error::custom)
        };
        match value.as_object_mut() {
            Some(o) if o.contains_key("wall") => Ok(SoloCurves {
                wall: map(o.remove("wall").unwrap_or_default())?,
                cpu: match o.remove("cpu") {
                    Some(cpu) => map(cpu)?,
                    None => PerThreads::new(),
                },
            }),
            _ => Ok(SoloCurves {
                wall: map(value)?,
                cpu: PerThreads::new(),
            }),
        }
    }
}

/// The mean of `app`'s runs at each thread count in `runs`.
fn means(runs: &PerThreads, app: &str) -> Option<BTreeMap<u32, f64>> {
    let curve: BTreeMap<u32, f64> = runs
        .get(app)?
        .iter()
        .filter_map(|(k, v)| Some((*k, Summary::of(v)?.mean)))
        .collect();
    (!curve.is_empty()).then_some(curve)
}

impl SoloCurves {
    /// Records one solo run of `app` with `threads` threads that took `secs`.
    pub fn add(&mut self, app: &str, threads: u32, secs: f64) {
        push(&mut self.wall, app, threads, secs);
    }

    /// Records the CPU time, in seconds, one solo run of `app` with
    /// `threads` threads used.
    pub fn add_cpu(&mut self, app: &str, threads: u32, secs: f64) {
        push(&mut self.cpu, app, threads, secs);
    }

    /// Whether no solo time is known.
    pub fn is_empty(&self) -> bool {
        self.wall.is_empty()
    }

    /// Every run: app, thread count, wall time and, where every run of that
    /// app and count recorded one, its CPU time.
    pub fn runs(&self) -> impl Iterator<Item = (&str, u32, f64, Option<f64>)> + '_ {
        self.wall.iter().flat_map(move |(app, by_k)| {
            by_k.iter().flat_map(move |(k, walls)| {
                let cpus = self
                    .cpu
                    .get(app)
                    .and_then(|c| c.get(k))
                    .filter(|c| c.len() == walls.len());
                walls
                    .iter()
                    .enumerate()
                    .map(move |(i, w)| (app.as_str(), *k, *w, cpus.map(|c| c[i])))
            })
        })
    }

    /// Mean solo time of `app` at each thread count measured.
    pub fn curve(&self, app: &str) -> Option<BTreeMap<u32, f64>> {
        means(&self.wall, app)
    }

    /// Mean CPU time of `app`'s solo runs at each thread count where it was
    /// recorded.
    pub fn cpu_curve(&self, app: &str) -> Option<BTreeMap<u32, f64>> {
        means(&self.cpu, app)
    }

    /// `app`'s fastest mean solo time at `cpus` or fewer threads.
    pub fn fastest(&self, app: &str, cpus: u32) -> Option<f64> {
        least(&self.curve(app)?, cpus.max(1), |_, t| t)
    }

    /// `app`'s least CPU work alone at `cpus` or fewer threads: its least
    /// CPU time where the runs recorded one (a pipeline of processes keeps
    /// more CPUs busy than it has threads), else `min_k k · T(k)`.
    pub fn least_work(&self, app: &str, cpus: u32) -> Option<f64> {
        let cpus = cpus.max(1);
        match self.cpu_curve(app) {
            Some(cpu) => least(&cpu, cpus, |_, t| t),
            None => least(&self.curve(app)?, cpus, |k, t| f64::from(k) * t),
        }
    }

    /// A table: app, then the mean solo time at each thread count, then the
    /// mean CPU time at each where any was recorded.
    pub fn render(&self) -> String {
        let counts = |runs: &PerThreads| -> std::collections::BTreeSet<u32> {
            runs.values().flat_map(|b| b.keys().copied()).collect()
        };
        let (walls, cpus) = (counts(&self.wall), counts(&self.cpu));
        let mut head = vec!["app".to_string()];
        head.extend(walls.iter().map(|k| format!("{k} thr s")));
        head.extend(cpus.iter().map(|k| format!("{k} thr CPU-s")));
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let mut table = new_table(&head);
        for app in self.wall.keys() {
            let wall = self.curve(app).unwrap_or_default();
            let cpu = self.cpu_curve(app).unwrap_or_default();
            let mut row = vec![app.clone()];
            row.extend(walls.iter().map(|k| fixed(wall.get(k).copied(), 3)));
            row.extend(cpus.iter().map(|k| fixed(cpu.get(k).copied(), 3)));
            table.add_row(row);
        }
        finish(&table)
    }
}

/// Records one run of `app` with `threads` threads in `runs`.
fn push(runs: &mut PerThreads, app: &str, threads: u32, secs: f64) {
    runs.entry(app.to_string())
        .or_default()
        .entry(threads)
        .or_default()
        .push(secs);
}

/// One app of a mix for the reference points.
#[derive(Clone, Debug, PartialEq)]
pub struct MixApp {
    /// Arrival, seconds after the mix starts.
    pub arrive: f64,
    /// Solo wall time at each thread count measured, seconds.
    pub solo: BTreeMap<u32, f64>,
    /// Solo CPU time at each thread count where it was recorded, seconds.
    pub cpu: BTreeMap<u32, f64>,
}

impl MixApp {
    /// Its fastest solo time, at any thread count up to `cpus`.
    fn fastest(&self, cpus: u32) -> Option<f64> {
        least(&self.solo, cpus, |_, t| t)
    }

    /// Its cheapest CPU work, `min_k k · T(k)` over thread counts up to `cpus`.
    fn work(&self, cpus: u32) -> Option<f64> {
        least(&self.solo, cpus, |k, t| f64::from(k) * t)
    }

    /// Its least CPU time measured alone, over thread counts up to `cpus`.
    fn cpu_time(&self, cpus: u32) -> Option<f64> {
        least(&self.cpu, cpus, |_, t| t)
    }
}

/// The least of `f(k, x)` over the entries of `curve` at `cpus` or fewer
/// threads.
fn least(curve: &BTreeMap<u32, f64>, cpus: u32, f: impl Fn(u32, f64) -> f64) -> Option<f64> {
    curve
        .iter()
        .filter(|(k, _)| **k <= cpus)
        .map(|(k, x)| f(*k, *x))
        .min_by(f64::total_cmp)
}

/// The CPU-work lower bound of the makespan of `apps` on `cpus` CPUs,
/// arrival-aware, with an app's work `min_k k · T(k)`; None when an app has
/// no solo time at `cpus` or fewer threads.
pub fn makespan_lower_bound(apps: &[MixApp], cpus: u32) -> Option<f64> {
    bound_with(apps, cpus, |a, cpus| a.work(cpus))
}

/// The same bound with an app's work its least CPU time measured alone: the
/// work itself, where `k · T(k)` counts a pipeline of processes that keeps
/// more than `k` CPUs busy (`xz -T1 | xz -d | cmp` used 1.16 CPUs on this
/// project's machine) as less than it is, and an app that sleeps as more.
/// None when an app has no CPU time recorded at `cpus` or fewer threads.
pub fn cpu_time_lower_bound(apps: &[MixApp], cpus: u32) -> Option<f64> {
    bound_with(apps, cpus, |a, cpus| a.cpu_time(cpus))
}

/// No schedule ends an app before its arrival plus its fastest time, nor the
/// work of the apps arriving at or after `a` before `a` plus that work spread
/// over the CPUs; `work` gives an app's work.
fn bound_with(
    apps: &[MixApp],
    cpus: u32,
    work: impl Fn(&MixApp, u32) -> Option<f64>,
) -> Option<f64> {
    let cpus = cpus.max(1);
    let mut bound: f64 = 0.0;
    for a in apps {
        bound = bound.max(a.arrive + a.fastest(cpus)?);
    }
    for a in apps {
        let later: f64 = apps
            .iter()
            .filter(|b| b.arrive >= a.arrive)
            .map(|b| work(b, cpus))
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

/// A mix's reference points, in seconds, where its solo runs give them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Points {
    /// [`makespan_lower_bound`].
    pub bound: Option<f64>,
    /// [`cpu_time_lower_bound`].
    pub cpu_bound: Option<f64>,
    /// [`sjf_art`].
    pub sjf: Option<f64>,
}

impl Points {
    /// The reference points of `apps` on `cpus` CPUs.
    pub fn of(apps: &[MixApp], cpus: u32) -> Points {
        Points {
            bound: makespan_lower_bound(apps, cpus),
            cpu_bound: cpu_time_lower_bound(apps, cpus),
            sjf: sjf_art(apps, cpus),
        }
    }
}

/// One policy's figures against the reference points.
#[derive(Clone, Debug, PartialEq)]
pub struct AgainstReference {
    pub policy: String,
    /// Mean makespan over the lower bound.
    pub makespan_over_bound: Option<f64>,
    /// Mean makespan over the CPU-time lower bound.
    pub makespan_over_cpu_bound: Option<f64>,
    /// Mean ART over the SJF reference.
    pub art_over_sjf: Option<f64>,
}

/// Each policy's mean makespan and ART over the reference points.
pub fn against_reference(policies: &[super::PolicyStats], at: Points) -> Vec<AgainstReference> {
    let ratio = |s: Option<&Summary>, r: Option<f64>| {
        let r = r.filter(|r| *r > 0.0)?;
        Some(s?.mean / r)
    };
    policies
        .iter()
        .map(|p| AgainstReference {
            policy: p.policy.clone(),
            makespan_over_bound: ratio(p.makespan.as_ref(), at.bound),
            makespan_over_cpu_bound: ratio(p.makespan.as_ref(), at.cpu_bound),
            art_over_sjf: ratio(p.art.as_ref(), at.sjf),
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
/// header; the CPU-time bound's column only where the solo runs recorded CPU
/// times.
pub fn render_against_reference(rows: &[AgainstReference], at: Points) -> String {
    let mut head = vec![
        "policy".to_string(),
        format!("makespan / bound ({} s)", fixed(at.bound, 2)),
    ];
    if at.cpu_bound.is_some() {
        head.push(format!(
            "makespan / CPU-time bound ({} s)",
            fixed(at.cpu_bound, 2)
        ));
    }
    head.push(format!("ART / SJF ({} s)", fixed(at.sjf, 2)));
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut table = new_table(&head);
    for r in rows {
        let mut row = vec![r.policy.clone(), fixed(r.makespan_over_bound, 3)];
        if at.cpu_bound.is_some() {
            row.push(fixed(r.makespan_over_cpu_bound, 3));
        }
        row.push(fixed(r.art_over_sjf, 3));
        table.add_row(row);
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
            cpu: BTreeMap::new(),
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
        assert_eq!(c.cpu_curve("xz"), None);
        // Fastest 3 s on 2 threads; least work min(1 · 5, 2 · 3) = 5 CPU-s,
        // on 1 CPU only the 1-thread run counts.
        assert_eq!(c.fastest("xz", 2), Some(3.0));
        assert_eq!(c.fastest("xz", 1), Some(5.0));
        assert_eq!(c.least_work("xz", 2), Some(5.0));
        assert_eq!(c.least_work("zstd", 2), None);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"wall":{"xz":{"1":[4.0,6.0],"2":[3.0]}}}"#);
        assert_eq!(serde_json::from_str::<SoloCurves>(&json).unwrap(), c);
        // A file written before CPU times were recorded: the wall map alone.
        let old = r#"{"xz":{"1":[4.0,6.0],"2":[3.0]}}"#;
        assert_eq!(serde_json::from_str::<SoloCurves>(old).unwrap(), c);
        assert_eq!(
            c.render(),
            "| app | 1 thr s | 2 thr s |\n\
             |-----|---------|---------|\n\
             | xz  |   5.000 |   3.000 |\n"
        );
        // CPU times: their means, a column per count, and a round trip.
        c.add_cpu("xz", 1, 5.0);
        c.add_cpu("xz", 1, 7.0);
        assert_eq!(c.cpu_curve("xz"), Some([(1, 6.0)].into_iter().collect()));
        // Recorded CPU time is the work: 6 CPU-s, more than 1 · 5.
        assert_eq!(c.least_work("xz", 2), Some(6.0));
        assert_eq!(
            c.render(),
            "| app | 1 thr s | 2 thr s | 1 thr CPU-s |\n\
             |-----|---------|---------|-------------|\n\
             | xz  |   5.000 |   3.000 |       6.000 |\n"
        );
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<SoloCurves>(&json).unwrap(), c);
        assert!(serde_json::from_str::<SoloCurves>(r#"{"xz":{"one":[1.0]}}"#).is_err());
    }

    /// A pipeline keeps more CPUs busy than it has threads: P takes 8 s on 1
    /// thread using 10 CPU-s, and 6 s on 2 using 11; A scales perfectly (10 s
    /// on 1, 5 on 2, 10 CPU-s). `k · T(k)` counts P's work as 8, the bound
    /// (10 + 8) / 2 = 9; its CPU time counts 10: (10 + 10) / 2 = 10.
    #[test]
    fn the_cpu_time_bound_counts_what_the_apps_used() {
        let mut p = app(0.0, &[(1, 8.0), (2, 6.0)]);
        p.cpu = [(1, 10.0), (2, 11.0)].into_iter().collect();
        let mut a = app(0.0, &[(1, 10.0), (2, 5.0)]);
        a.cpu = [(1, 10.0), (2, 10.0)].into_iter().collect();
        let apps = [a, p];
        assert_eq!(makespan_lower_bound(&apps, 2), Some(9.0));
        assert_eq!(cpu_time_lower_bound(&apps, 2), Some(10.0));
        // On 1 CPU only the 1-thread runs count: 10 + 10.
        assert_eq!(cpu_time_lower_bound(&apps, 1), Some(20.0));
        // An app with no CPU time recorded: no such bound, the other stands.
        let apps = [apps[0].clone(), app(0.0, &[(1, 8.0)])];
        assert_eq!(cpu_time_lower_bound(&apps, 2), None);
        assert_eq!(makespan_lower_bound(&apps, 2), Some(9.0));
    }
}
