//! Solo wall times: each app alone on the machine, the denominator of speedup
//! (NuPoCo §7.3 reports Hmean speedup relative to standalone execution).
//!
//! Measuring them is a measurement procedure (docs/trace-format.md,
//! Measurement procedures) with one difference: a solo run is the app alone
//! under `native`, unpinned, since the denominator is what Linux gives the
//! app alone. [`solo_runs`] plans one run per app (and per thread count with
//! `coloc solo --threads`), each with `--repeat` instances back to back in one
//! trace; the times are the wall times of the instances that succeeded, a pure
//! function of the traces ([`solo_times`], [`solo_curves`]), so `coloc solo
//! --from DIR` recomputes them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::table::{finish, fixed, new_table};
use super::{RunMetrics, SoloCurves};
use crate::stats::Summary;
use crate::trace::Trace;

/// The file name of a solo procedure's manifest in its directory.
pub const SOLO_MANIFEST: &str = "solo.json";

/// One planned solo run: app `app` alone under `native`, with `threads`
/// threads (its own count when absent), its instances' trace in `dir`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoloRun {
    pub dir: String,
    pub app: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
}

/// A solo procedure's runs, as `solo.json` holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoloManifest {
    pub runs: Vec<SoloRun>,
}

/// The runs of `apps`: one each at its own thread count when `threads` is
/// empty, else one at each of `threads`, app by app.
pub fn solo_runs(apps: &[&str], threads: &[u32]) -> Vec<SoloRun> {
    let run = |app: &str, threads: Option<u32>| SoloRun {
        dir: threads.map_or(app.to_string(), |k| format!("{app}-{k}")),
        app: app.to_string(),
        threads,
    };
    if threads.is_empty() {
        return apps.iter().map(|a| run(a, None)).collect();
    }
    apps.iter()
        .flat_map(|a| threads.iter().map(move |&k| run(a, Some(k))))
        .collect()
}

/// The wall times, in seconds, of the instances that succeeded in a solo
/// run's trace.
fn walls(trace: &Trace) -> Vec<f64> {
    RunMetrics::from_trace(trace, None).wall_times_secs()
}

/// The solo times of `runs` from their traces (in the order of `runs`).
pub fn solo_times(runs: &[SoloRun], traces: &[Trace]) -> SoloTimes {
    let mut solo = SoloTimes::default();
    for (run, trace) in runs.iter().zip(traces) {
        for wall in walls(trace) {
            solo.add(&run.app, wall);
        }
    }
    solo
}

/// The solo times per thread count of `runs` (each with its `threads`) from
/// their traces, with the CPU time of each instance whose exit recorded one;
/// a run at its own thread count has none and is left out.
pub fn solo_curves(runs: &[SoloRun], traces: &[Trace]) -> SoloCurves {
    let mut curves = SoloCurves::default();
    for (run, trace) in runs.iter().zip(traces) {
        if let Some(k) = run.threads {
            let metrics = RunMetrics::from_trace(trace, None);
            for (wall, cpu) in metrics.apps.iter().flat_map(|a| a.wall_and_cpu_secs()) {
                curves.add(&run.app, k, wall);
                if let Some(cpu) = cpu {
                    curves.add_cpu(&run.app, k, cpu);
                }
            }
        }
    }
    curves
}

/// Solo wall times in seconds per app name, as JSON `{"app": [secs, ...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SoloTimes {
    runs: BTreeMap<String, Vec<f64>>,
}

impl SoloTimes {
    /// Records one solo run of `app` that took `secs` seconds.
    pub fn add(&mut self, app: &str, secs: f64) {
        self.runs.entry(app.to_string()).or_default().push(secs);
    }

    /// Every app's runs, by name.
    pub fn runs(&self) -> impl Iterator<Item = (&str, &[f64])> + '_ {
        self.runs.iter().map(|(a, v)| (a.as_str(), v.as_slice()))
    }

    /// Mean solo wall time of `app`, if it was measured.
    pub fn mean(&self, app: &str) -> Option<f64> {
        Some(self.summary(app)?.mean)
    }

    fn summary(&self, app: &str) -> Option<Summary> {
        Summary::of(self.runs.get(app)?)
    }

    /// A table: app, runs, mean and standard deviation, by app name.
    pub fn render(&self) -> String {
        let mut table = new_table(&["app", "runs", "mean s", "sd s"]);
        for app in self.runs.keys() {
            let s = self.summary(app);
            table.add_row(vec![
                app.clone(),
                s.map_or(0, |s| s.n).to_string(),
                fixed(s.map(|s| s.mean), 3),
                fixed(s.and_then(|s| s.sd), 3),
            ]);
        }
        finish(&table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::testtrace::{trace, Ev};

    /// The plan: one run per app at its own thread count, or one per app and
    /// thread count, app by app.
    #[test]
    fn solo_runs_per_app_and_thread_count() {
        let r = |dir: &str, app: &str, threads| SoloRun {
            dir: dir.into(),
            app: app.into(),
            threads,
        };
        assert_eq!(
            solo_runs(&["a", "b"], &[]),
            [r("a", "a", None), r("b", "b", None)]
        );
        assert_eq!(
            solo_runs(&["a", "b"], &[1, 4]),
            [
                r("a-1", "a", Some(1)),
                r("a-4", "a", Some(4)),
                r("b-1", "b", Some(1)),
                r("b-4", "b", Some(4)),
            ]
        );
    }

    /// The times are the successful instances' wall times of each run's
    /// trace, by app (and thread count), with the CPU time of those whose exit
    /// recorded one; a failed instance counts for nothing.
    #[test]
    fn times_and_curves_from_traces() {
        let run = |walls: &[(f64, f64)], failed: bool| {
            let mut ev = Vec::new();
            for (rep, &(start, end)) in walls.iter().enumerate() {
                let rep = rep as u32;
                ev.push((start, Ev::Start(0, rep)));
                // The second instance's exit records 1.5 CPU-s per wall second.
                let exit = if rep == 1 {
                    Ev::ExitUsage(0, rep, ((end - start) * 1500.0) as u64, None)
                } else {
                    Ev::Exit(0, rep, 0)
                };
                ev.push((end, exit));
            }
            if failed {
                let rep = walls.len() as u32;
                ev.push((9.0, Ev::Start(0, rep)));
                ev.push((9.5, Ev::Exit(0, rep, 1)));
            }
            trace("native", &["a"], &ev)
        };
        let traces = [
            run(&[(0.0, 2.0), (2.0, 5.0)], true),
            run(&[(0.0, 1.0)], false),
        ];
        let mut want = SoloTimes::default();
        for w in [2.0, 3.0, 1.0] {
            want.add("a", w);
        }
        assert_eq!(solo_times(&solo_runs(&["a", "a"], &[]), &traces), want);
        let mut want = SoloCurves::default();
        want.add("a", 1, 2.0);
        want.add("a", 1, 3.0);
        want.add("a", 2, 1.0);
        want.add_cpu("a", 1, 4.5);
        assert_eq!(solo_curves(&solo_runs(&["a"], &[1, 2]), &traces), want);
    }

    #[test]
    fn means_and_table() {
        let mut solo = SoloTimes::default();
        solo.add("stream", 10.0);
        solo.add("stream", 12.0);
        solo.add("ep", 4.0);
        assert_eq!(solo.mean("stream"), Some(11.0));
        assert_eq!(solo.mean("ep"), Some(4.0));
        assert_eq!(solo.mean("cg"), None);
        // sd of [10, 12] = sqrt(2) = 1.414; a single run has none.
        assert_eq!(
            solo.render(),
            "| app    | runs | mean s |  sd s |\n\
             |--------|------|--------|-------|\n\
             | ep     |    1 |  4.000 |     - |\n\
             | stream |    2 | 11.000 | 1.414 |\n"
        );
    }

    #[test]
    fn json_is_a_map_of_runs() {
        let mut solo = SoloTimes::default();
        solo.add("a", 1.5);
        let json = serde_json::to_string(&solo).unwrap();
        assert_eq!(json, r#"{"a":[1.5]}"#);
        assert_eq!(serde_json::from_str::<SoloTimes>(&json).unwrap(), solo);
    }
}
