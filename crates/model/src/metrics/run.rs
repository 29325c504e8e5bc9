//! Metrics of one run, from its trace.

use serde::Serialize;
use statrs::statistics::Statistics;

use super::app::{AppMetrics, Repetition};
use super::solo::SoloTimes;
use super::table::{finish, fixed, list, new_table, NONE};
use super::timeline::Timeline;
use crate::stats::Summary;
use crate::trace::{ExitStatus, Trace};

/// The whole-run figures. Times are seconds. Response time, throughput and
/// speedup count only instances that exited successfully; failed ones are counted
/// in `failed`, unfinished ones (the trace ended first) in `unfinished`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    /// Instances that arrived.
    pub instances: usize,
    pub failed: usize,
    pub unfinished: usize,
    /// Average response time (ART): the mean over instances of arrival to exit
    /// (ReSense §3, where waiting is part of the response).
    pub art_secs: Option<f64>,
    /// Sum over instances of 1 / wall time, in completions per second (ReSense §3).
    /// None when an instance took no measurable time (the sum would be infinite).
    pub throughput: Option<f64>,
    /// First arrival to last exit, failed instances included: the total
    /// turnaround time that NuPoCo §7.3 normalises into NTT.
    pub makespan_secs: Option<f64>,
    /// Harmonic mean over instances of solo mean / co-located wall time (NuPoCo
    /// §6: speedup that also reflects fairness). None unless every app with a
    /// successful instance has a positive solo time; see `solo_missing`.
    pub hmean_speedup: Option<f64>,
    /// Apps with successful instances but no (positive) solo time, in workload order.
    pub solo_missing: Vec<String>,
    /// coloc's CPU time over its wall time, percent of one core (the End event).
    pub coloc_cpu_percent: Option<f64>,
    /// Mean time the policy took per decision.
    pub mean_decide_secs: Option<f64>,
}

/// Everything `coloc report` shows about one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMetrics {
    pub policy: String,
    pub workload: String,
    /// `linux` or `sim:<platform>`, from the header.
    pub machine: String,
    /// One entry per app of the workload, in workload order.
    pub apps: Vec<AppMetrics>,
    pub figures: RunFigures,
}

impl RunMetrics {
    /// Computes every metric from the trace; `solo` gives Hmean speedup its
    /// denominators.
    pub fn from_trace(trace: &Trace, solo: Option<&SoloTimes>) -> RunMetrics {
        let tl = Timeline::of(trace);
        let apps = AppMetrics::all(&trace.header.workload, &tl.instances);
        let walls: Vec<f64> = apps.iter().flat_map(AppMetrics::wall_times_secs).collect();
        let responses: Vec<f64> = apps
            .iter()
            .flat_map(AppMetrics::response_times_secs)
            .collect();
        let decide: Vec<f64> = tl.decide.iter().map(|d| d.as_secs_f64()).collect();
        let (hmean_speedup, solo_missing) = hmean_speedup(&apps, solo);
        let figures = RunFigures {
            instances: tl.instances.values().filter(|i| i.arrive.is_some()).count(),
            failed: apps.iter().map(|a| a.failed).sum(),
            unfinished: tl.instances.values().filter(|i| i.exit.is_none()).count(),
            art_secs: Summary::of(&responses).map(|s| s.mean),
            throughput: positive(&walls).then(|| walls.iter().map(|t| 1.0 / t).sum()),
            makespan_secs: tl.makespan().map(|d| d.as_secs_f64()),
            hmean_speedup,
            solo_missing,
            coloc_cpu_percent: tl
                .usage
                .filter(|u| !u.wall.is_zero())
                .map(|u| u.percent_of_core()),
            mean_decide_secs: Summary::of(&decide).map(|s| s.mean),
        };
        RunMetrics {
            policy: trace.header.policy.clone(),
            workload: trace.header.workload.name.clone(),
            machine: trace.header.machine.clone(),
            apps,
            figures,
        }
    }

    pub fn makespan_secs(&self) -> Option<f64> {
        self.figures.makespan_secs
    }

    /// Wall time of every instance that exited successfully, app by app in
    /// workload order, repetitions in order.
    pub fn wall_times_secs(&self) -> Vec<f64> {
        self.apps
            .iter()
            .flat_map(AppMetrics::wall_times_secs)
            .collect()
    }

    /// Two tables: per app its repetitions, then the run's figures.
    pub fn render(&self) -> String {
        let mut apps = new_table(&[
            "app",
            "reps",
            "wall s (each rep)",
            "mean wall s",
            "mean response s",
            "metric (each rep)",
            "failed",
        ]);
        for a in &self.apps {
            let unit = a
                .metric_unit
                .as_deref()
                .map_or(String::new(), |u| format!(" {u}"));
            apps.add_row(vec![
                a.name.clone(),
                a.reps.len().to_string(),
                a.reps.iter().map(wall_cell).collect::<Vec<_>>().join(" "),
                fixed(a.mean_wall_secs(), 3),
                fixed(a.mean_response_secs(), 3),
                if a.reps.iter().any(|r| r.metric.is_some()) {
                    list(a.reps.iter().map(|r| r.metric), 3) + &unit
                } else {
                    NONE.to_string()
                },
                a.failed.to_string(),
            ]);
        }
        let f = &self.figures;
        let hmean = match (f.hmean_speedup, f.solo_missing.is_empty()) {
            (_, false) => format!("- (no solo time: {})", f.solo_missing.join(", ")),
            (h, true) => fixed(h, 3),
        };
        let mut figures = new_table(&["run", "value"]);
        figures.add_rows([
            vec!["instances".to_string(), f.instances.to_string()],
            vec!["failed instances".into(), f.failed.to_string()],
            vec!["unfinished instances".into(), f.unfinished.to_string()],
            vec!["ART (mean response) s".into(), fixed(f.art_secs, 3)],
            vec!["throughput (sum 1/wall) /s".into(), fixed(f.throughput, 4)],
            vec!["makespan s".into(), fixed(f.makespan_secs, 3)],
            vec!["Hmean speedup".into(), hmean],
            vec![
                "coloc CPU % of a core".into(),
                fixed(f.coloc_cpu_percent, 2),
            ],
            vec![
                "mean decision ms".into(),
                fixed(f.mean_decide_secs.map(|s| s * 1e3), 3),
            ],
        ]);
        format!("{}\n{}", finish(&apps), finish(&figures))
    }
}

/// A repetition's wall time, or why there is none worth reading.
fn wall_cell(r: &Repetition) -> String {
    match &r.status {
        Some(ExitStatus::Code(0)) => fixed(r.wall_secs, 3),
        Some(ExitStatus::Code(c)) => format!("{}(exit={c})", fixed(r.wall_secs, 3)),
        Some(ExitStatus::Signal(s)) => format!("{}(signal={s})", fixed(r.wall_secs, 3)),
        Some(ExitStatus::FailedToStart(_)) => "(not started)".into(),
        Some(ExitStatus::Unknown) => format!("{}(status unknown)", fixed(r.wall_secs, 3)),
        None => "(unfinished)".into(),
    }
}

/// At least one value and all positive: 1/t is finite for each.
fn positive(walls: &[f64]) -> bool {
    !walls.is_empty() && walls.iter().all(|t| *t > 0.0)
}

/// Hmean speedup and the apps that lack a solo time.
fn hmean_speedup(apps: &[AppMetrics], solo: Option<&SoloTimes>) -> (Option<f64>, Vec<String>) {
    let solo_of = |a: &AppMetrics| solo?.mean(&a.name).filter(|s| *s > 0.0);
    let mut missing: Vec<String> = Vec::new();
    let mut speedups = Vec::new();
    for a in apps.iter().filter(|a| a.wall_times_secs().next().is_some()) {
        match solo_of(a) {
            Some(s) => speedups.extend(a.wall_times_secs().map(|t| s / t)),
            None if !missing.contains(&a.name) => missing.push(a.name.clone()),
            None => {}
        }
    }
    // A zero wall time makes a speedup infinite: no meaningful mean then.
    let known =
        missing.is_empty() && !speedups.is_empty() && speedups.iter().all(|s| s.is_finite());
    (known.then(|| speedups.harmonic_mean()), missing)
}
