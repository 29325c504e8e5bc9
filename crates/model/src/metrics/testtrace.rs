//! Builds small traces for the metrics' tests from (seconds, event) pairs.

use std::time::Duration;

use crate::ids::AppId;
use crate::observation::{AppSample, MetricSample, Observation};
use crate::plan::Plan;
use crate::testutils::app_spec;
use crate::topology::Topology;
use crate::trace::{ApplyOutcome, ExitStatus, Header, SelfUsage, Trace, TraceEvent, TRACE_VERSION};
use crate::view::Trigger;
use crate::workload::Workload;

/// An event with the instance as (app index, repetition).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    Arrive(u32, u32),
    Start(u32, u32),
    Threads(u32, u32),
    /// A decision that took this many milliseconds.
    Plan(u64),
    Applied(&'static [(u32, u32)]),
    /// Exit with this code.
    Exit(u32, u32, i32),
    /// Successful exit that reported this app metric.
    ExitMetric(u32, u32, f64),
    /// Successful exit with this whole-life usage: CPU milliseconds, cycles.
    ExitUsage(u32, u32, u64, Option<u64>),
    /// coloc could not start it.
    NoStart(u32, u32),
    /// An observation: the instance's metric read live is this value, after
    /// this many matching lines.
    Metric(u32, u32, f64, u64),
    /// coloc used this much CPU over this much wall time, in milliseconds.
    End(u64, u64),
}

fn id((app, rep): (u32, u32)) -> AppId {
    AppId { app, rep }
}

fn exit(t: Duration, at: (u32, u32), status: ExitStatus, metric: Option<f64>) -> TraceEvent {
    TraceEvent::Exit {
        t,
        app: id(at),
        status,
        metric,
        usage: None,
    }
}

/// A trace of `policy` running apps named `apps` (workload order).
pub(crate) fn trace(policy: &str, apps: &[&str], events: &[(f64, Ev)]) -> Trace {
    let header = TraceEvent::Header(Box::new(Header {
        version: TRACE_VERSION,
        coloc_version: "test".into(),
        policy: policy.into(),
        machine: "sim:test".into(),
        workload: Workload {
            name: "w".into(),
            epoch: None,
            apps: apps.iter().map(|n| app_spec(n, 2)).collect(),
        },
        topology: Topology::synthetic("t", "package:1 core:2").expect("valid"),
        epoch: Duration::from_millis(100),
        seed: None,
        started_unix: 0.0,
    }));
    let body = events.iter().map(|&(secs, ev)| {
        let t = Duration::from_secs_f64(secs);
        match ev {
            Ev::Arrive(a, r) => TraceEvent::Arrive {
                t,
                app: id((a, r)),
                name: None,
            },
            Ev::Start(a, r) => TraceEvent::Start {
                t,
                app: id((a, r)),
                pid: 100 + a,
                threads_requested: 2,
                argv: vec!["true".into()],
                levers: None,
            },
            Ev::Threads(a, r) => TraceEvent::Threads {
                t,
                app: id((a, r)),
                tids: vec![1, 2, 3],
            },
            Ev::Plan(ms) => TraceEvent::Plan {
                t,
                trigger: Trigger::Epoch,
                plan: Plan::default(),
                decide: Duration::from_millis(ms),
            },
            Ev::Applied(ids) => TraceEvent::Applied {
                t,
                outcomes: ids
                    .iter()
                    .map(|&i| ApplyOutcome {
                        app: id(i),
                        ..Default::default()
                    })
                    .collect(),
            },
            Ev::Exit(a, r, code) => exit(t, (a, r), ExitStatus::Code(code), None),
            Ev::ExitMetric(a, r, m) => exit(t, (a, r), ExitStatus::Code(0), Some(m)),
            Ev::ExitUsage(a, r, cpu_ms, cycles) => TraceEvent::Exit {
                t,
                app: id((a, r)),
                status: ExitStatus::Code(0),
                metric: None,
                usage: Some(crate::InstanceUsage {
                    cpu_ns: cpu_ms * 1_000_000,
                    cycles,
                    llc: None,
                }),
            },
            Ev::NoStart(a, r) => exit(
                t,
                (a, r),
                ExitStatus::FailedToStart("no such file".into()),
                None,
            ),
            Ev::Metric(a, r, value, lines) => TraceEvent::Obs(Box::new(Observation {
                at: t,
                apps: vec![AppSample {
                    app: id((a, r)),
                    metric: Some(MetricSample { value, lines }),
                    ..AppSample::default()
                }],
                ..Observation::default()
            })),
            Ev::End(cpu, wall) => TraceEvent::End {
                t,
                usage: SelfUsage {
                    cpu: Duration::from_millis(cpu),
                    wall: Duration::from_millis(wall),
                },
            },
        }
    });
    Trace::from_events(std::iter::once(header).chain(body).collect()).expect("starts with a header")
}

/// A run of one app that arrives and starts at 0 and exits successfully after
/// `makespan` seconds: its makespan, ART and wall time all equal `makespan`.
pub(super) fn simple_run(policy: &str, makespan: f64) -> Trace {
    trace(
        policy,
        &["a"],
        &[
            (0.0, Ev::Arrive(0, 0)),
            (0.0, Ev::Start(0, 0)),
            (makespan, Ev::Exit(0, 0, 0)),
        ],
    )
}

/// Runs of `policy` whose makespans (and ARTs: one instance each) are
/// `makespans`, as a comparison takes them.
pub(crate) fn runs(policy: &str, makespans: &[f64]) -> (String, Vec<super::RunMetrics>) {
    let runs = makespans
        .iter()
        .map(|m| super::RunMetrics::from_trace(&simple_run(policy, *m), None))
        .collect();
    (policy.to_string(), runs)
}
