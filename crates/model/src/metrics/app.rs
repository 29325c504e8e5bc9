//! Per-app metrics: each repetition's times and metric, and coloc's reaction delays.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::table::opt_secs;
use super::timeline::Instance;
use crate::ids::AppId;
use crate::stats::Summary;
use crate::trace::ExitStatus;
use crate::workload::{AppClass, AppSpec, Workload};

/// One instance of an app (ReSense's ts(BM, k) runs an app k times back to back).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Repetition {
    pub rep: u32,
    /// Start to exit in seconds: the app's execution time (ReSense §3). None if it
    /// never started or has not exited.
    pub wall_secs: Option<f64>,
    /// Arrival to exit in seconds: time waiting to be admitted plus execution, the
    /// response time of ReSense §3. None if it has not exited.
    pub response_secs: Option<f64>,
    /// The app's own metric, read from its output at exit.
    pub metric: Option<f64>,
    /// How it ended; None when the trace ends first (an interrupted run).
    pub status: Option<ExitStatus>,
    /// CPU time in seconds over its life (its threads and the children it
    /// reaped), where the backend recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_secs: Option<f64>,
}

impl Repetition {
    fn of(rep: u32, i: &Instance) -> Repetition {
        let exit = i.exit.as_ref();
        let since = |from: Option<Duration>| Some(exit?.t.saturating_sub(from?).as_secs_f64());
        Repetition {
            rep,
            wall_secs: since(i.start),
            response_secs: since(i.arrive),
            metric: exit.and_then(|e| e.metric),
            status: exit.map(|e| e.status.clone()),
            cpu_secs: exit.and_then(|e| e.cpu_ns).map(|ns| ns as f64 / 1e9),
        }
    }

    /// Exited with status 0. Only such instances count in response time,
    /// throughput and speedup: a crashed run's time says nothing about the policy's
    /// placement, and it is reported as failed instead.
    pub fn succeeded(&self) -> bool {
        self.status.as_ref().is_some_and(ExitStatus::success)
    }

    /// Exited with another status, or could not start.
    pub fn failed(&self) -> bool {
        self.status.as_ref().is_some_and(|s| !s.success())
    }
}

/// Everything measured about one app of the workload (one `[[app]]` entry).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppMetrics {
    pub name: String,
    /// Unit of the app's metric, from the workload file.
    pub metric_unit: Option<String>,
    /// `class = "latency"` in the workload: a service whose metric's tail counts.
    pub latency: bool,
    /// The metric's `higher_is_better` (true when there is no metric).
    pub higher_is_better: bool,
    /// The metric read live over the run, every instance in repetition order
    /// (not serialized: the trace has it).
    #[serde(skip)]
    pub metric_series: Vec<f64>,
    /// Its instances that arrived, by repetition number.
    pub reps: Vec<Repetition>,
    pub failed: usize,
    /// Max over the app's instances of the delay from its Start event to the first
    /// Applied event recorded after it whose outcomes include that instance (with
    /// or without refused settings): how long a new instance ran before the
    /// policy's decision for it was in effect. Instances that exited before any
    /// such event do not count; None when no instance has one.
    #[serde(serialize_with = "opt_secs")]
    pub first_plan_delay: Option<Duration>,
    /// Max over the app's Threads events (thread set changed) of the delay to the
    /// first Applied event recorded after it whose outcomes include that instance:
    /// how long new threads ran where Linux put them. Several changes before one
    /// Applied event are measured from the earliest. None when no change was
    /// followed by such an event.
    #[serde(serialize_with = "opt_secs")]
    pub max_thread_placement_delay: Option<Duration>,
}

impl AppMetrics {
    /// One entry per workload app, in workload order, plus any app index the trace
    /// mentions beyond the workload (named by index, so nothing is dropped).
    pub(super) fn all(workload: &Workload, instances: &BTreeMap<AppId, Instance>) -> Vec<Self> {
        let listed = workload.apps.len() as u32;
        let seen = instances.keys().map(|id| id.app + 1).max().unwrap_or(0);
        (0..listed.max(seen))
            .map(|app| {
                let spec = workload.apps.get(app as usize);
                let mine = instances.range(AppId { app, rep: 0 }..=AppId { app, rep: u32::MAX });
                Self::of(spec, format!("app{app}"), mine)
            })
            .collect()
    }

    /// The metrics of the app `spec` describes (named `unnamed` when the
    /// workload does not list it) from its instances.
    fn of<'a>(
        spec: Option<&AppSpec>,
        unnamed: String,
        instances: impl Iterator<Item = (&'a AppId, &'a Instance)> + Clone,
    ) -> Self {
        let reps: Vec<Repetition> = instances
            .clone()
            .map(|(id, i)| Repetition::of(id.rep, i))
            .collect();
        let metric = spec.and_then(|s| s.metric.as_ref());
        AppMetrics {
            name: spec.map_or(unnamed, |s| s.name.clone()),
            metric_unit: metric.and_then(|m| m.unit.clone()),
            latency: spec.is_some_and(|s| s.class == AppClass::Latency),
            higher_is_better: metric.is_none_or(|m| m.higher_is_better),
            metric_series: instances
                .clone()
                .flat_map(|(_, i)| i.metric_series.iter().copied())
                .collect(),
            failed: reps.iter().filter(|r| r.failed()).count(),
            reps,
            first_plan_delay: instances
                .clone()
                .filter_map(|(_, i)| i.first_plan_delay)
                .max(),
            max_thread_placement_delay: instances
                .filter_map(|(_, i)| i.max_thread_placement_delay)
                .max(),
        }
    }

    /// Wall times of the instances that succeeded, in seconds.
    pub fn wall_times_secs(&self) -> impl Iterator<Item = f64> + '_ {
        self.succeeded().filter_map(|r| r.wall_secs)
    }

    /// Wall time and CPU time of the instances that succeeded, in seconds,
    /// the CPU time where it was recorded.
    pub fn wall_and_cpu_secs(&self) -> impl Iterator<Item = (f64, Option<f64>)> + '_ {
        self.succeeded()
            .filter_map(|r| Some((r.wall_secs?, r.cpu_secs)))
    }

    /// Response times of the instances that succeeded, in seconds.
    pub fn response_times_secs(&self) -> impl Iterator<Item = f64> + '_ {
        self.succeeded().filter_map(|r| r.response_secs)
    }

    pub fn mean_wall_secs(&self) -> Option<f64> {
        Some(Summary::of(&self.wall_times_secs().collect::<Vec<_>>())?.mean)
    }

    pub fn mean_response_secs(&self) -> Option<f64> {
        Some(Summary::of(&self.response_times_secs().collect::<Vec<_>>())?.mean)
    }

    fn succeeded(&self) -> impl Iterator<Item = &Repetition> {
        self.reps.iter().filter(|r| r.succeeded())
    }
}
